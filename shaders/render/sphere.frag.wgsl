// Spheres as ray-cast impostors, fragment stage: the ray from the eye through the fragment
// hits the sphere (exact silhouette, exact depth written to the depth buffer) or the fragment
// is discarded. The fraction of the pixel inside the silhouette goes to alpha, which the
// pipeline turns into MSAA coverage (alpha to coverage): antialiased edges.

struct SphereFragment {
    @location(0) color: vec4<f32>,
    @builtin(frag_depth) depth: f32,
};

@fragment
fn main(in: SphereVarying) -> SphereFragment {
    let eye = view.eye.xyz;
    let dir = normalize(in.world - eye);
    let oc = eye - in.center;
    let b = dot(oc, dir);
    let r2 = in.radius * in.radius;
    // Distance from the center to the ray: q² = |oc|² − b².
    let q = sqrt(max(dot(oc, oc) - b * b, 0.0));
    let pixel = max(fwidth(q), 1e-12);
    let coverage = clamp((in.radius - q) / pixel + 0.5, 0.0, 1.0);
    if coverage <= 0.0 {
        discard;
    }
    let t = -b - sqrt(max(r2 - q * q, 0.0));
    let hit = eye + t * dir;
    let n = normalize(hit - in.center);
    let clip = view.view_proj * vec4<f32>(hit, 1.0);
    var out: SphereFragment;
    out.color = vec4<f32>(shade(in.color, n), coverage);
    out.depth = clamp(clip.z / clip.w, 0.0, 1.0);
    return out;
}
