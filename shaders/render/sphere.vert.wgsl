// Spheres as ray-cast impostors, vertex stage: one camera-facing quad per instance, in the
// plane through the center perpendicular to the line of sight, just large enough to hold the
// silhouette (the tangent cone from the eye cuts that plane in a circle of radius
// `r d / sqrt(d² − r²)`).

@vertex
fn main(
    @builtin(vertex_index) vertex: u32,
    @location(0) sphere: vec4<f32>,
    @location(1) color: vec4<f32>,
) -> SphereVarying {
    let center = sphere.xyz;
    let r = sphere.w;
    let to_eye = view.eye.xyz - center;
    let d2 = dot(to_eye, to_eye);
    var out: SphereVarying;
    out.center = center;
    out.radius = r;
    out.color = color.rgb;
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
