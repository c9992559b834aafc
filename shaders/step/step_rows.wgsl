// The step's operator product, one invocation per contact k on the sphere rows without
// stored blocks: y_k = J_k w + E x_k (+ r_k when apply.add_r), w = M^-1 J^T x from
// `step_gather` (`factored_rows` of the matrix-free rows): the A x of `spg-gpu` and
// `apgd-gpu` in the GPU-resident step. Mirror: `src/gpu/cpu/step.rs::step_rows`.

@group(0) @binding(0) var<uniform> solver: Params;
@group(0) @binding(1) var<uniform> params: StepParams;
@group(0) @binding(2) var<uniform> apply: Apply;
@group(0) @binding(3) var<storage, read> contacts: array<GpuContact>;
@group(0) @binding(4) var<storage, read> w: array<f32>;
@group(0) @binding(5) var<storage, read> r: array<f32>;
@group(0) @binding(6) var<storage, read> x: array<f32>;
@group(0) @binding(7) var<storage, read_write> y: array<f32>;

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
    let jw = contact_jw(contacts[k]);
    for (var i = 0u; i < dim; i++) {
        let row = dim * k + i;
        var v = jw[i] + params.compliance * x[row];
        if apply.add_r == 1u {
            v = v + r[row];
        }
        y[row] = v;
    }
}
