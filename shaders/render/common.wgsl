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

// Vertex `vertex` (0..6) of the impostor quad of `sphere` (center xyz, radius w) colored
// `color`: a camera-facing quad in the plane through the center perpendicular to the line of
// sight, just large enough to hold the silhouette (the tangent cone from the eye cuts that
// plane in a circle of radius `r d / sqrt(d² − r²)`).
fn impostor(vertex: u32, sphere: vec4<f32>, color: vec3<f32>) -> SphereVarying {
    let center = sphere.xyz;
    let r = sphere.w;
    let to_eye = view.eye.xyz - center;
    let d2 = dot(to_eye, to_eye);
    var out: SphereVarying;
    out.center = center;
    out.radius = r;
    out.color = color;
    if d2 <= r * r {
        // The eye is inside: nothing to draw (a degenerate quad).
        out.clip = vec4<f32>(0.0, 0.0, 2.0, 1.0);
        out.world = center;
        return out;
    }
    let w = to_eye * inverseSqrt(d2);
    let helper = select(vec3<f32>(0.0, 0.0, 1.0), vec3<f32>(1.0, 0.0, 0.0), abs(w.z) > 0.9);
    let u = normalize(cross(helper, w));
    let v = cross(w, u);
    // Two triangles: (-1,-1) (1,-1) (1,1) and (-1,-1) (1,1) (-1,1).
    let xs = array<f32, 6>(-1.0, 1.0, 1.0, -1.0, 1.0, -1.0);
    let ys = array<f32, 6>(-1.0, -1.0, 1.0, -1.0, 1.0, 1.0);
    let half = r * sqrt(d2 / (d2 - r * r));
    out.world = center + half * (xs[vertex] * u + ys[vertex] * v);
    out.clip = view.view_proj * vec4<f32>(out.world, 1.0);
    return out;
}
