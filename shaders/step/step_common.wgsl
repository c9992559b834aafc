// Shared declarations of the time-step kernels (issue 14), prepended to each of them after
// `shaders/common.wgsl`. Keep the structs in sync with `src/gpu/step/data.rs`.

struct StepParams {
    // Dynamic spheres (GPU bodies 0..n_bodies); planes follow as ids n_bodies + p.
    n_bodies: u32,
    n_planes: u32,
    // Buckets of the grid's hash table minus one (a power of two minus one).
    mask: u32,
    // Room for contacts: a larger contact count writes nothing and is reported.
    capacity: u32,
    // Side of a grid cell: at least the largest diameter plus the envelope.
    cell: f32,
    envelope: f32,
    dt: f32,
    max_recovery: f32,
    // xyz: gravity; w: 1 with the gyroscopic term.
    gravity: vec4<f32>,
    // Rows of every contact block: 3 (Coulomb) when any surface has friction, else 1.
    dim: u32,
    compliance: f32,
    // 1: Coulomb friction model (De Saxce shift), 0: CCP.
    coulomb: u32,
    // Relaxation of the projected Jacobi iterations.
    omega: f32,
    // Tolerance of the solve on the residual `criterion` (0: relative, 1: velocity).
    tol: f32,
    criterion: u32,
    // Iterations of a step at most.
    max_iter: u32,
    pad: u32,
}

// Where a step's iterations stand: the iterations done when they stopped (max_iter until
// then), whether they stopped on the tolerance, the convergence tests run, and the tests in
// a row without improvement (under the stall rule of the Coulomb model's outer rounds).
struct StepGate {
    iterations: u32,
    converged: u32,
    checks: u32,
    stalled: u32,
}

// Sizes of a generic sort or scan dispatch, and the pass of the narrow phase.
struct Span {
    count: u32,
    keys: u32,
    mode: u32,
    pad: u32,
}

struct GpuBody {
    // xyz: position; w: radius.
    pos: vec4<f32>,
    // Orientation body -> world (x, y, z, w).
    quat: vec4<f32>,
    // xyz: linear velocity (world); w: friction coefficient.
    vel: vec4<f32>,
    // xyz: angular velocity (body frame); w: 0.
    omega: vec4<f32>,
    // 1/m, then 1/I (principal).
    inv: vec4<f32>,
    // m, then I (principal).
    props: vec4<f32>,
}

struct GpuPlane {
    // xyz: unit normal (out of the solid); w: friction coefficient.
    normal: vec4<f32>,
    // xyz: a point of the plane.
    point: vec4<f32>,
    // xyz: velocity of a kinematic plane over the step.
    velocity: vec4<f32>,
}

struct GpuContact {
    // The sphere that owns the contact (the smaller sphere id of a pair).
    owner: u32,
    // The other sphere, or n_bodies + plane.
    other: u32,
    // Friction coefficient and block step 1/lambda_max, written by `step_contact_rows`.
    mu: f32,
    eta: f32,
    // xyz: unit normal from A to B (A = owner, or the plane); w: signed gap.
    normal: vec4<f32>,
}

struct Twist {
    lin: vec3<f32>,
    ang: vec3<f32>,
}

fn cross3(a: vec3<f32>, b: vec3<f32>) -> vec3<f32> {
    return vec3<f32>(a.y * b.z - a.z * b.y, a.z * b.x - a.x * b.z, a.x * b.y - a.y * b.x);
}

fn dot3(a: vec3<f32>, b: vec3<f32>) -> f32 {
    return a.x * b.x + a.y * b.y + a.z * b.z;
}

// q v q*, for a unit quaternion q = (x, y, z, w).
fn rotate(q: vec4<f32>, v: vec3<f32>) -> vec3<f32> {
    let t = 2.0 * cross3(q.xyz, v);
    return v + q.w * t + cross3(q.xyz, t);
}

// The grid cell of a point.
fn cell_of(p: vec3<f32>, side: f32) -> vec3<i32> {
    return vec3<i32>(floor(p / side));
}

// The hash bucket of a cell.
fn bucket_of(c: vec3<i32>, mask: u32) -> u32 {
    let h = (u32(c.x) * 73856093u) ^ (u32(c.y) * 19349663u) ^ (u32(c.z) * 83492791u);
    return h & mask;
}

// v + h g and, with the gyroscopic term, w + h (-(w x I w)) / I (`RigidBody::free_velocity`).
fn free_velocity(b: GpuBody, h: f32, gravity: vec4<f32>) -> Twist {
    let lin = b.vel.xyz + h * gravity.xyz;
    var ang = b.omega.xyz;
    if gravity.w == 1.0 {
        let inertia = b.props.yzw;
        let torque = -cross3(ang, inertia * ang);
        ang = ang + h * (torque / inertia);
    }
    return Twist(lin, ang);
}

// `tangent_frame` of `src/sim/joint.rs`: t1 = n x helper / |n x helper|, t2 = n x t1.
fn tangents(n: vec3<f32>) -> array<vec3<f32>, 2> {
    var helper = vec3<f32>(0.0, 1.0, 0.0);
    if abs(n.x) < 0.6 {
        helper = vec3<f32>(1.0, 0.0, 0.0);
    }
    let c = cross3(n, helper);
    let t1 = c / sqrt(dot3(c, c));
    return array<vec3<f32>, 2>(t1, cross3(n, t1));
}

// Cone kinds of a `GpuBlock` (`CONE_UNILATERAL`, `CONE_COULOMB` of `src/gpu/data.rs`).
const CONE_UNILATERAL: u32 = 1u;
const CONE_COULOMB: u32 = 2u;

