// Triangle meshes, fragment stage: two-sided Lambert + ambient shading (the normal is turned
// towards the eye, so planes are lit from either side); alpha is the mesh's opacity.

@fragment
fn main(in: MeshVarying) -> @location(0) vec4<f32> {
    var n = normalize(in.normal);
    if dot(n, view.eye.xyz - in.world) < 0.0 {
        n = -n;
    }
    return vec4<f32>(shade(in.color.rgb, n), in.color.a);
}
