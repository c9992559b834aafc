// The projected Jacobi step of `step_jacobi_pass.wgsl`, writing each contact's velocity
// u_k = J_k w + E x_k + r_k for the residual that follows (a check, or the answer's).
// Mirror: `src/gpu/cpu/step.rs::step_jacobi`.

@group(0) @binding(0) var<uniform> solver: Params;
@group(0) @binding(1) var<uniform> params: StepParams;
@group(0) @binding(2) var<storage, read> contacts: array<GpuContact>;
@group(0) @binding(3) var<storage, read> w: array<f32>;
@group(0) @binding(4) var<storage, read> r: array<f32>;
@group(0) @binding(5) var<storage, read> x: array<f32>;
@group(0) @binding(6) var<storage, read_write> u: array<f32>;
@group(0) @binding(7) var<storage, read_write> gamma_out: array<f32>;

fn keep_velocity(row: u32, v: f32) {
    u[row] = v;
}
