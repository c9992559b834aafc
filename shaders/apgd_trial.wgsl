// APGD trial step, one invocation per block: x_new = Proj_K(y - t g_y) with t = 1/L, and
// d = x_new - y (`projected_move`). Mirror: `src/gpu/cpu.rs::apgd_trial`.

@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(1) var<storage, read> blocks: array<GpuBlock>;
@group(0) @binding(2) var<storage, read> state: ApgdState;
@group(0) @binding(3) var<storage, read> y: array<f32>;
@group(0) @binding(4) var<storage, read> g_y: array<f32>;
@group(0) @binding(5) var<storage, read_write> x_new: array<f32>;
@group(0) @binding(6) var<storage, read_write> d: array<f32>;

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
    let t = state.step;
    var yk = vec3<f32>(0.0);
    var s = vec3<f32>(0.0);
    for (var i = 0u; i < b.dim; i++) {
        yk[i] = y[b.row + i];
        s[i] = -(t * g_y[b.row + i]);
    }
    let dk = projected_move(b.kind, b.mu, yk, s);
    let v = project(b.kind, b.mu, yk + s);
    for (var i = 0u; i < b.dim; i++) {
        let row = b.row + i;
        x_new[row] = v[i];
        d[row] = dk[i];
    }
}
