// Spheres straight from the state of the GPU time step (src/gpu/step: `GpuBody` of
// shaders/step/step_common.wgsl, which the renderer prepends, in scene order), vertex stage: instance `i` is body `i`, drawn by `impostor` (common.wgsl), colored
// by its speed on the viridis scale of `tint` (the table of src/render/color.rs, sRGB bytes
// interpolated, then made linear as the CPU path does).

struct Tint {
    // The view's origin (xyz): positions are drawn relative to it.
    origin: vec4<f32>,
    // The lowest speed of the scale (x) and 1 / (highest − lowest) (y).
    scale: vec4<f32>,
    // Viridis at nine evenly spaced points, sRGB bytes (xyz).
    viridis: array<vec4<f32>, 9>,
};

@group(1) @binding(0) var<storage, read> bodies: array<GpuBody>;
@group(1) @binding(1) var<uniform> tint: Tint;

// An sRGB byte value (0–255) as linear intensity.
fn linear(c: vec3<f32>) -> vec3<f32> {
    let s = c / 255.0;
    return select(pow((s + 0.055) / 1.055, vec3<f32>(2.4)), s / 12.92, s <= vec3<f32>(0.04045));
}

fn speed_color(v: vec3<f32>) -> vec3<f32> {
    let t = clamp((length(v) - tint.scale.x) * tint.scale.y, 0.0, 1.0);
    let x = t * 8.0;
    let k = u32(min(floor(x), 7.0));
    let c = mix(tint.viridis[k].xyz, tint.viridis[k + 1u].xyz, x - f32(k));
    return linear(round(c));
}

@vertex
fn main(
    @builtin(vertex_index) vertex: u32,
    @builtin(instance_index) i: u32,
) -> SphereVarying {
    let b = bodies[i];
    let sphere = vec4<f32>(b.pos.xyz - tint.origin.xyz, b.pos.w);
    return impostor(vertex, sphere, speed_color(b.vel.xyz));
}
