// Shared by every stage of the renderer (src/render): the camera and the light, and the
// shading. World positions are relative to the camera's target (f32 precision near the view).

struct View {
    // Projection times view matrix.
    view_proj: mat4x4<f32>,
    // Eye position (xyz).
    eye: vec4<f32>,
    // Unit direction towards the light (xyz) and the ambient fraction (w).
    light: vec4<f32>,
};

@group(0) @binding(0) var<uniform> view: View;

// Lambert + ambient: `base (a + (1 − a) max(n·l, 0))`.
fn shade(base: vec3<f32>, n: vec3<f32>) -> vec3<f32> {
    let lambert = max(dot(n, view.light.xyz), 0.0);
    return base * (view.light.w + (1.0 - view.light.w) * lambert);
}

// What the sphere vertex stage hands the fragment stage: the quad's world point, and the
// sphere (flat over the quad).
struct SphereVarying {
    @builtin(position) clip: vec4<f32>,
    @location(0) world: vec3<f32>,
    @location(1) @interpolate(flat) center: vec3<f32>,
    @location(2) @interpolate(flat) radius: f32,
    @location(3) @interpolate(flat) color: vec3<f32>,
};

// What the mesh vertex stage hands the fragment stage.
struct MeshVarying {
    @builtin(position) clip: vec4<f32>,
    @location(0) world: vec3<f32>,
    @location(1) normal: vec3<f32>,
    @location(2) color: vec4<f32>,
};
