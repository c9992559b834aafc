// The solver's `Params` of this step, written on the GPU from the contact count (no
// readback): copied into the uniform the solver kernels (`factored_bodies`, `factored_rows`,
// `jacobi_step`) read, whose dispatches cover the contact capacity. A count beyond the
// capacity gives no blocks. Mirror: `src/gpu/cpu/step.rs::step_solver_params`.

@group(0) @binding(0) var<uniform> params: StepParams;
@group(0) @binding(1) var<storage, read> offsets: array<u32>;
@group(0) @binding(2) var<storage, read_write> solver: array<Params>;

@compute @workgroup_size(256)
fn main(@builtin(local_invocation_id) lid: vec3<u32>) {
    if lid.x != 0u {
        return;
    }
    var count = offsets[params.n_bodies];
    if count > params.capacity {
        count = 0u;
    }
    solver[0] = Params(
        params.n_bodies, count, params.dim * count, params.coulomb, params.omega, 0.0,
        params.criterion, params.dim);
}
