// One invocation per dynamic body: w_i = sum over the (block, side) links of body i, in block
// order, of minv_jac rows times x of that block. Fixed order, no atomics.
// Mirror: `src/gpu/cpu.rs::factored_bodies`.

@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(1) var<storage, read> links_ptr: array<u32>;
// Two entries per link: block, side.
@group(0) @binding(2) var<storage, read> links: array<u32>;
@group(0) @binding(3) var<storage, read> blocks: array<GpuBlock>;
@group(0) @binding(4) var<storage, read> minv_jac: array<f32>;
@group(0) @binding(5) var<storage, read> x: array<f32>;
@group(0) @binding(6) var<storage, read_write> w: array<f32>;

@compute @workgroup_size(256)
fn main(@builtin(global_invocation_id) gid: vec3<u32>) {
    let i = gid.x;
    if i >= params.n_bodies {
        return;
    }
    var acc: array<f32, 6>;
    for (var c = 0u; c < 6u; c++) {
        acc[c] = 0.0;
    }
    for (var l = links_ptr[i]; l < links_ptr[i + 1u]; l++) {
        let b = blocks[links[2u * l]];
        let side = links[2u * l + 1u];
        let first = b.jac + side * b.dim;
        for (var r = 0u; r < b.dim; r++) {
            let g = x[b.row + r];
            for (var c = 0u; c < 6u; c++) {
                acc[c] = acc[c] + minv_jac[6u * (first + r) + c] * g;
            }
        }
    }
    for (var c = 0u; c < 6u; c++) {
        w[6u * i + c] = acc[c];
    }
}
