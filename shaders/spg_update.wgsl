// One invocation per row: x += lambda d and g += lambda A d (the gradient of the quadratic is
// affine), unless the line search left lambda = 0. Mirror: `src/gpu/cpu.rs::spg_update`.

@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(1) var<storage, read> state: SpgState;
@group(0) @binding(2) var<storage, read> d: array<f32>;
@group(0) @binding(3) var<storage, read> ad: array<f32>;
@group(0) @binding(4) var<storage, read_write> x: array<f32>;
@group(0) @binding(5) var<storage, read_write> g: array<f32>;

@compute @workgroup_size(256)
fn main(
    @builtin(global_invocation_id) gid: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
) {
    let i = flat_index(gid, nwg);
    let lambda = state.lambda;
    if i < params.n_rows && lambda != 0.0 {
        x[i] = x[i] + lambda * d[i];
        g[i] = g[i] + lambda * ad[i];
    }
}
