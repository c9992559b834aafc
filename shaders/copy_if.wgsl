// One invocation per row: dst = src when the last measure improved on the best iterate.
// Mirror: `src/gpu/cpu.rs::copy_if`.

@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(1) var<storage, read> monitor: Monitor;
@group(0) @binding(2) var<storage, read> src: array<f32>;
@group(0) @binding(3) var<storage, read_write> dst: array<f32>;

@compute @workgroup_size(256)
fn main(
    @builtin(global_invocation_id) gid: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
) {
    let i = flat_index(gid, nwg);
    if i < params.n_rows && monitor.improved == 1u {
        dst[i] = src[i];
    }
}
