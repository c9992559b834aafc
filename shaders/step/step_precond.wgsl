// The diagonal preconditioner of `spg-gpu` in the GPU-resident step, one invocation per
// contact k: P = diag(N + E) averaged within the block (paper 004; `ProblemData::precond`).
// Of a sphere side (1/m, r^2/I of `step_grid`'s constants; isotropic inertia): the normal
// row's diagonal is 1/m, a tangent row's 1/m + r^2/I (|r n x t|^2 = r^2), so the block's mean
// is the sum over its spheres of 1/m + (dim - 1)/dim r^2/I, plus the compliance.
// Mirror: `src/gpu/cpu/step.rs::step_precond`.

@group(0) @binding(0) var<uniform> solver: Params;
@group(0) @binding(1) var<uniform> params: StepParams;
@group(0) @binding(2) var<storage, read> contacts: array<GpuContact>;
@group(0) @binding(3) var<storage, read> consts: array<vec2<f32>>;
@group(0) @binding(4) var<storage, read_write> precond: array<f32>;

@compute @workgroup_size(256)
fn main(
    @builtin(global_invocation_id) gid: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
) {
    let k = flat_index(gid, nwg);
    if k >= solver.n_blocks {
        return;
    }
    let dim = params.dim;
    let share = f32(dim - 1u) / f32(dim);
    let c = contacts[k];
    let a = consts[c.owner];
    var mean = a.x + share * a.y;
    if c.other < params.n_bodies {
        let b = consts[c.other];
        mean = mean + (b.x + share * b.y);
    }
    mean = mean + params.compliance;
    var p = 1.0;
    if mean > 0.0 {
        p = mean;
    }
    for (var i = 0u; i < dim; i++) {
        precond[dim * k + i] = p;
    }
}
