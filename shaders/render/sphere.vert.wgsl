// Spheres as ray-cast impostors, vertex stage: one instance per sphere (center relative to the
// view's origin, radius, linear color), drawn by `impostor` (common.wgsl).

@vertex
fn main(
    @builtin(vertex_index) vertex: u32,
    @location(0) sphere: vec4<f32>,
    @location(1) color: vec4<f32>,
) -> SphereVarying {
    return impostor(vertex, sphere, color.rgb);
}
