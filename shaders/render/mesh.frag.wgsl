// Triangle meshes, fragment stage: two-sided Lambert + ambient shading (the normal is turned
// towards the eye, so planes are lit from either side); alpha is the mesh's opacity.

struct MeshIn {
    @builtin(position) clip: vec4<f32>,
    @location(0) world: vec3<f32>,
    @location(1) normal: vec3<f32>,
    @location(2) color: vec4<f32>,
};

@fragment
fn main(in: MeshIn) -> @location(0) vec4<f32> {
    var n = normalize(in.normal);
    if dot(n, view.eye.xyz - in.world) < 0.0 {
        n = -n;
    }
    return vec4<f32>(shade(in.color.rgb, n), in.color.a);
}
