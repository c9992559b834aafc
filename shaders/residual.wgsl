// One invocation per block, one partial per workgroup: the natural-map residual of
// `merit::residual` in f32 (`block_residual` of `common.wgsl`).
// Mirror: `src/gpu/cpu/measure.rs::residual`.

@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(1) var<storage, read> blocks: array<GpuBlock>;
@group(0) @binding(2) var<storage, read> gamma: array<f32>;
@group(0) @binding(3) var<storage, read> u: array<f32>;
@group(0) @binding(4) var<storage, read_write> parts: array<Partial>;

@compute @workgroup_size(256)
fn main(
    @builtin(global_invocation_id) gid: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
    @builtin(local_invocation_id) lid: vec3<u32>,
    @builtin(workgroup_id) wid: vec3<u32>,
) {
    var p = zero_partial();
    let k = flat_index(gid, nwg);
    if k < params.n_blocks {
        let b = blocks[k];
        var g = vec3<f32>(0.0);
        var v = vec3<f32>(0.0);
        for (var i = 0u; i < b.dim; i++) {
            g[i] = gamma[b.row + i];
            v[i] = u[b.row + i];
        }
        p = block_residual(b, params.coulomb, g, v);
    }
    let total = workgroup_reduce(lid.x, p);
    let group = flat_group(wid, nwg);
    if lid.x == 0u && group < arrayLength(&parts) {
        parts[group] = total;
    }
}
