// One invocation per row, after an accepted trial: u_new = g_y + A d (= grad f(x_new)),
// y = x_new + beta (x_new - x), g_y = u_new + beta (u_new - u), x = x_new, u = u_new.
// Mirror: `src/gpu/cpu.rs::apgd_update`.

@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(1) var<storage, read> state: ApgdState;
@group(0) @binding(2) var<storage, read> x_new: array<f32>;
@group(0) @binding(3) var<storage, read> ad: array<f32>;
@group(0) @binding(4) var<storage, read_write> x: array<f32>;
@group(0) @binding(5) var<storage, read_write> u: array<f32>;
@group(0) @binding(6) var<storage, read_write> y: array<f32>;
@group(0) @binding(7) var<storage, read_write> g_y: array<f32>;

@compute @workgroup_size(256)
fn main(
    @builtin(global_invocation_id) gid: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
) {
    let i = flat_index(gid, nwg);
    if i >= params.n_rows || state.accepted == 0u {
        return;
    }
    let beta = state.beta;
    let u_new = g_y[i] + ad[i];
    let xn = x_new[i];
    y[i] = xn + beta * (xn - x[i]);
    g_y[i] = u_new + beta * (u_new - u[i]);
    x[i] = xn;
    u[i] = u_new;
}
