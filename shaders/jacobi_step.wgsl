// One invocation per block: gamma_out_k = Proj_K(gamma_in_k - omega eta_k u_hat_k), u_hat the
// model velocity of u = (N + E) gamma_in + r (paper 001 eq. (3)); ping-pong buffers.
// Mirror: `src/gpu/cpu.rs::jacobi_step`.

@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(1) var<storage, read> blocks: array<GpuBlock>;
@group(0) @binding(2) var<storage, read> u: array<f32>;
@group(0) @binding(3) var<storage, read> gamma_in: array<f32>;
@group(0) @binding(4) var<storage, read_write> gamma_out: array<f32>;

@compute @workgroup_size(256)
fn main(
    @builtin(global_invocation_id) gid: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
) {
    let k = flat_index(gid, nwg);
    if k >= params.n_blocks {
        return;
    }
    let b = blocks[k];
    var g = vec3<f32>(0.0);
    var v = vec3<f32>(0.0);
    for (var i = 0u; i < b.dim; i++) {
        g[i] = gamma_in[b.row + i];
        v[i] = u[b.row + i];
    }
    let uh = model_velocity(b, params.coulomb, v);
    let step = params.omega * b.eta;
    var x = vec3<f32>(0.0);
    for (var i = 0u; i < b.dim; i++) {
        x[i] = g[i] - step * uh[i];
    }
    x = project(b.kind, b.mu, x);
    for (var i = 0u; i < b.dim; i++) {
        gamma_out[b.row + i] = x[i];
    }
}
