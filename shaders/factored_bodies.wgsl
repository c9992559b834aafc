// Six invocations per dynamic body, one per component c: w_i[c] = sum over the links of body
// i, in block order, of minv_jac rows[c] times x of that block. Fixed order, no atomics;
// neighbouring invocations read neighbouring words of minv_jac.
// Mirror: `src/gpu/cpu.rs::factored_bodies`.

@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(1) var<storage, read> links_ptr: array<u32>;
@group(0) @binding(2) var<storage, read> links: array<GpuLink>;
@group(0) @binding(3) var<storage, read> minv_jac: array<f32>;
@group(0) @binding(4) var<storage, read> x: array<f32>;
@group(0) @binding(5) var<storage, read_write> w: array<f32>;

@compute @workgroup_size(256)
fn main(
    @builtin(global_invocation_id) gid: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
) {
    let g = flat_index(gid, nwg);
    let i = g / 6u;
    let c = g % 6u;
    if i >= params.n_bodies {
        return;
    }
    var acc = 0.0;
    for (var l = links_ptr[i]; l < links_ptr[i + 1u]; l++) {
        let link = links[l];
        for (var r = 0u; r < link.dim; r++) {
            acc = acc + minv_jac[6u * (link.minv_row + r) + c] * x[link.row + r];
        }
    }
    w[6u * i + c] = acc;
}
