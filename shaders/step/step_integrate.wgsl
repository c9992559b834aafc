// Semi-implicit Euler, one invocation per sphere (`World::step_with_report` then
// `RigidBody::integrate`): v = v_free + M^-1 J^T gamma (w from `step_gather`, its angular
// part W = -r w_ang in the world frame: w_body = R^T W / (-r)), then
// x += h v and q = q (x) exp(h w_body), renormalized. Nothing moves in a step whose contacts
// overflowed the capacity (the host grows the buffers and takes the step again). Mirror: `src/gpu/cpu/step.rs::step_integrate`.

@group(0) @binding(0) var<uniform> params: StepParams;
@group(0) @binding(1) var<storage, read> offsets: array<u32>;
@group(0) @binding(2) var<storage, read> w: array<f32>;
@group(0) @binding(3) var<storage, read_write> bodies: array<GpuBody>;

@compute @workgroup_size(256)
fn main(
    @builtin(global_invocation_id) gid: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
) {
    let i = flat_index(gid, nwg);
    if i >= params.n_bodies || offsets[params.n_bodies] > params.capacity {
        return;
    }
    var b = bodies[i];
    let h = params.dt;
    let vf = free_velocity(b, h, params.gravity);
    let v = vf.lin + vec3<f32>(w[6u * i], w[6u * i + 1u], w[6u * i + 2u]);
    let wa = vec3<f32>(w[6u * i + 3u], w[6u * i + 4u], w[6u * i + 5u]) / (-b.pos.w);
    let om = vf.ang + rotate(vec4<f32>(-b.quat.xyz, b.quat.w), wa);
    b.vel = vec4<f32>(v, b.vel.w);
    b.omega = vec4<f32>(om, b.omega.w);
    b.pos = vec4<f32>(b.pos.xyz + h * v, b.pos.w);
    // exp(a) of the scaled axis a = h w: (sin(|a|/2) a/|a|, cos(|a|/2)).
    let a = h * om;
    let angle = sqrt(dot3(a, a));
    var rot = vec4<f32>(0.0, 0.0, 0.0, 1.0);
    if angle > 0.0 {
        rot = vec4<f32>(a * (sin(angle / 2.0) / angle), cos(angle / 2.0));
    }
    let q = b.quat;
    let prod = vec4<f32>(
        q.w * rot.xyz + rot.w * q.xyz + cross3(q.xyz, rot.xyz),
        q.w * rot.w - dot3(q.xyz, rot.xyz),
    );
    b.quat = prod / sqrt(prod.x * prod.x + prod.y * prod.y + prod.z * prod.z + prod.w * prod.w);
    bodies[i] = b;
}
