// Device-to-device copy, 16 bytes per invocation: the memory bandwidth the solver kernels are
// measured against (`src/gpu/bandwidth.rs`). The grid is two-dimensional because one
// dimension holds at most 65535 workgroups.

@group(0) @binding(0) var<storage, read> src: array<vec4<f32>>;
@group(0) @binding(1) var<storage, read_write> dst: array<vec4<f32>>;

@compute @workgroup_size(256)
fn main(
    @builtin(global_invocation_id) gid: vec3<u32>,
    @builtin(num_workgroups) groups: vec3<u32>,
) {
    let i = gid.y * groups.x * 256u + gid.x;
    if i < arrayLength(&src) {
        dst[i] = src[i];
    }
}
