// Triangle meshes (boxes, plates, links, planes), vertex stage: world-space vertices with a
// normal and a color.

@vertex
fn main(
    @location(0) position: vec3<f32>,
    @location(1) normal: vec3<f32>,
    @location(2) color: vec4<f32>,
) -> MeshVarying {
    var out: MeshVarying;
    out.clip = view.view_proj * vec4<f32>(position, 1.0);
    out.world = position;
    out.normal = normal;
    out.color = color;
    return out;
}
