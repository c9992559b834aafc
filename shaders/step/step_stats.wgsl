// Per-step statistics, one invocation per sphere, then the workgroup tree: sums of the
// kinetic energy, of the heights and of the non-finite state entries (the NaN flag), and
// the largest penetration of the contacts the sphere owns. `reduce` then combines the
// workgroup partials. Mirror: `src/gpu/cpu/step.rs::step_stats`.

@group(0) @binding(0) var<uniform> params: StepParams;
@group(0) @binding(1) var<storage, read> offsets: array<u32>;
@group(0) @binding(2) var<storage, read> bodies: array<GpuBody>;
@group(0) @binding(3) var<storage, read> contacts: array<GpuContact>;
@group(0) @binding(4) var<storage, read_write> parts: array<Partial>;

// 1 when x is an infinity or a NaN (exponent bits all set), else 0.
fn non_finite(x: f32) -> f32 {
    return select(0.0, 1.0, (bitcast<u32>(x) & 0x7f800000u) == 0x7f800000u);
}

fn non_finite3(v: vec3<f32>) -> f32 {
    return non_finite(v.x) + non_finite(v.y) + non_finite(v.z);
}

@compute @workgroup_size(256)
fn main(
    @builtin(global_invocation_id) gid: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
    @builtin(local_invocation_id) lid: vec3<u32>,
    @builtin(workgroup_id) wid: vec3<u32>,
) {
    let i = flat_index(gid, nwg);
    var p = zero_partial();
    if i < params.n_bodies {
        let b = bodies[i];
        let v = b.vel.xyz;
        let om = b.omega.xyz;
        let inertia = b.props.yzw;
        let energy = 0.5 * b.props.x * dot3(v, v) + 0.5 * dot3(om * inertia, om);
        let bad = non_finite3(b.pos.xyz) + non_finite3(b.quat.xyz) + non_finite(b.quat.w)
            + non_finite3(v) + non_finite3(om);
        var pen = 0.0;
        if offsets[params.n_bodies] <= params.capacity {
            for (var k = offsets[i]; k < offsets[i + 1u]; k++) {
                pen = max(pen, -contacts[k].normal.w);
            }
        }
        p.sums = vec4<f32>(energy, b.pos.z, bad, 0.0);
        p.maxes = vec4<f32>(pen, 0.0, 0.0, 0.0);
    }
    let total = workgroup_reduce(lid.x, p);
    let group = flat_group(wid, nwg);
    if lid.x == 0u && group < arrayLength(&parts) {
        parts[group] = total;
    }
}
