// Shared declarations of every kernel; prepended to each kernel's source.
// Keep the structs in sync with `src/gpu/data.rs` (same names, fields and order).

const WORKGROUP: u32 = 256u;

// The index of an invocation, and of its workgroup, in a dispatch grid of `nwg` workgroups:
// two-dimensional when a domain exceeds 65535 workgroups (`kernels::grid`). Invocations past
// a domain's end are guarded by each kernel.
fn flat_index(gid: vec3<u32>, nwg: vec3<u32>) -> u32 {
    return gid.x + gid.y * nwg.x * WORKGROUP;
}

fn flat_group(wid: vec3<u32>, nwg: vec3<u32>) -> u32 {
    return wid.x + wid.y * nwg.x;
}
// Slots of the `scalars` buffer (reduction results): keep in sync with `SLOT_*`.
const SLOT_RESIDUAL: u32 = 0u;
const SLOT_A: u32 = 1u;
const SLOT_B: u32 = 2u;
const SLOT_C: u32 = 3u;

struct Params {
    n_bodies: u32,
    n_blocks: u32,
    n_rows: u32,
    // 1: Coulomb friction model (De Saxce shift), 0: CCP.
    coulomb: u32,
    omega: f32,
    // ||r||_2 of the problem, the normalization of the relative residual.
    r_norm: f32,
    // 0: relative residual, 1: velocity residual.
    criterion: u32,
    // Largest block dimension: Jacobian slots per side of the factored form's `jac`.
    max_dim: u32,
}

// One (block, side) link of a body (factored form).
struct GpuLink {
    // First row of this side of the block in minv_jac.
    minv_row: u32,
    // First row of the block in x.
    row: u32,
    dim: u32,
    pad: u32,
}

struct GpuBlock {
    // 0: bilateral, 1: unilateral, 2: Coulomb.
    kind: u32,
    dim: u32,
    // First row of the block in gamma, r and compliance.
    row: u32,
    // First row of the block in minv_jac (dim rows per side, side by side).
    jac: u32,
    // Body of each side, -1 for none.
    body0: i32,
    body1: i32,
    mu: f32,
    eta: f32,
}

struct Partial {
    sums: vec4<f32>,
    maxes: vec4<f32>,
}

struct Monitor {
    inf: f32,
    two: f32,
    relative: f32,
    velocity: f32,
    value: f32,
    gamma_inf: f32,
    best: f32,
    gamma_scale: f32,
    improved: u32,
    measures: u32,
    pad0: u32,
    pad1: u32,
}

struct Apply {
    add_r: u32,
    pad0: u32,
    pad1: u32,
    pad2: u32,
}

struct SpgConfig {
    alpha_min: f32,
    alpha_max: f32,
    armijo: f32,
    sigma_min: f32,
    sigma_max: f32,
    n_gll: u32,
    fallback: u32,
    pad: u32,
}

struct SpgState {
    alpha: f32,
    lambda: f32,
    j: u32,
    hist_len: u32,
    hist_head: u32,
    pad0: u32,
    pad1: u32,
    pad2: u32,
    // f_i - f of the GLL memory (ring buffer).
    history: array<f32, 32>,
}

struct ApgdState {
    lipschitz: f32,
    step: f32,
    theta: f32,
    beta: f32,
    accepted: u32,
    pad0: u32,
    pad1: u32,
    pad2: u32,
}

fn zero_partial() -> Partial {
    return Partial(vec4<f32>(0.0), vec4<f32>(0.0));
}

// Euclidean projection on the cone of a block (src/problem/cone.rs): identity, R+, or the
// circular cone {|t| <= mu n} with Siconos' three cases.
fn project(kind: u32, mu: f32, v: vec3<f32>) -> vec3<f32> {
    var x = v;
    if kind == 1u {
        x.x = max(x.x, 0.0);
    } else if kind == 2u {
        let a = mu;
        let n = x.x;
        let s = sqrt(x.y * x.y + x.z * x.z);
        // n >= 0 too: with a = 0 a negative normal and zero tangents also meet s <= a n.
        if s <= a * n && n >= 0.0 {
            // Inside the cone.
        } else if a * s <= -n {
            x = vec3<f32>(0.0);
        } else {
            let n_new = (a * s + n) / (1.0 + a * a);
            let scale = a * n_new / s;
            x = vec3<f32>(n_new, x.y * scale, x.z * scale);
        }
    }
    return x;
}

// d = Proj_K(x + s) - x without the cancellation of the subtraction where the projection is
// the identity (d = s) or zero (d = -x): in f32 the rounding of x in v - x otherwise swamps
// d . g near the solution, and with it the descent test of the gradient methods. A unilateral
// block of 3 rows (R+ x R^2, the tangent half-space of a sliding contact in the rotated frame
// of a refinement round, src/gpu/refine.rs) clamps its first row only.
fn projected_move(kind: u32, mu: f32, x: vec3<f32>, s: vec3<f32>) -> vec3<f32> {
    let v = x + s;
    if kind == 1u {
        if v.x >= 0.0 {
            return s;
        }
        return vec3<f32>(-x.x, s.y, s.z);
    }
    if kind == 2u {
        let a = mu;
        let n = v.x;
        let t = sqrt(v.y * v.y + v.z * v.z);
        if t <= a * n && n >= 0.0 {
            return s;
        }
        if a * t <= -n {
            return -x;
        }
        return project(kind, mu, v) - x;
    }
    return s;
}

// u_hat: u shifted by De Saxce's term mu ||u_t|| under the Coulomb model.
fn model_velocity(b: GpuBlock, coulomb: u32, u: vec3<f32>) -> vec3<f32> {
    var v = u;
    if coulomb == 1u && b.kind == 2u {
        v.x = v.x + b.mu * sqrt(v.y * v.y + v.z * v.z);
    }
    return v;
}

// The natural-map residual's terms of block b with impulse g and velocity v (`dim` rows
// used, the others zero), for `residual.wgsl` and `step_residual.wgsl`:
// sums = (||e||^2, ||g||^2, ||v||^2, 0), maxes = (||e||_inf, ||e_eta||_inf, ||g||_inf, 0)
// with e = g - Proj(g - v_hat), e_eta = (g - Proj(g - eta v_hat)) / eta (unit step where
// eta = 0). Mirror: `src/gpu/cpu/measure.rs::block_residual`.
fn block_residual(b: GpuBlock, coulomb: u32, g: vec3<f32>, v: vec3<f32>) -> Partial {
    var p = zero_partial();
    let uh = model_velocity(b, coulomb, v);
    var step = 1.0;
    if b.eta > 0.0 {
        step = b.eta;
    }
    var unit = vec3<f32>(0.0);
    var scaled = vec3<f32>(0.0);
    for (var i = 0u; i < b.dim; i++) {
        unit[i] = g[i] - uh[i];
        scaled[i] = g[i] - step * uh[i];
    }
    unit = project(b.kind, b.mu, unit);
    scaled = project(b.kind, b.mu, scaled);
    for (var i = 0u; i < b.dim; i++) {
        let e = g[i] - unit[i];
        let e_eta = (g[i] - scaled[i]) / step;
        p.sums = p.sums + vec4<f32>(e * e, g[i] * g[i], v[i] * v[i], 0.0);
        p.maxes = max(p.maxes, vec4<f32>(abs(e), abs(e_eta), abs(g[i]), 0.0));
    }
    return p;
}

// One Jacobi rotation that zeroes a[p][q] of the symmetric 3x3 matrix a (row-major),
// r the third index (Numerical Recipes 11.1: t = sgn(theta) / (|theta| + sqrt(theta^2 + 1))).
fn rotate_pair(a: ptr<function, array<f32, 9>>, p: u32, q: u32) {
    let apq = (*a)[3u * p + q];
    if apq == 0.0 {
        return;
    }
    let theta = ((*a)[4u * q] - (*a)[4u * p]) / (2.0 * apq);
    var t = 0.5 / abs(theta);
    if abs(theta) < 1e18 {
        t = 1.0 / (abs(theta) + sqrt(theta * theta + 1.0));
    }
    if theta < 0.0 {
        t = -t;
    }
    let c = 1.0 / sqrt(t * t + 1.0);
    let s = t * c;
    let r = 3u - p - q;
    let arp = (*a)[3u * r + p];
    let arq = (*a)[3u * r + q];
    (*a)[4u * p] = (*a)[4u * p] - t * apq;
    (*a)[4u * q] = (*a)[4u * q] + t * apq;
    (*a)[3u * p + q] = 0.0;
    (*a)[3u * q + p] = 0.0;
    let rp = c * arp - s * arq;
    let rq = s * arp + c * arq;
    (*a)[3u * r + p] = rp;
    (*a)[3u * p + r] = rp;
    (*a)[3u * r + q] = rq;
    (*a)[3u * q + r] = rq;
}

// Largest eigenvalue of the symmetric 3x3 matrix m (row-major): four cyclic Jacobi sweeps
// (quadratic convergence: f32 precision), then the largest diagonal entry.
fn max_eigenvalue(m: array<f32, 9>) -> f32 {
    var a = m;
    for (var sweep = 0u; sweep < 4u; sweep++) {
        rotate_pair(&a, 0u, 1u);
        rotate_pair(&a, 0u, 2u);
        rotate_pair(&a, 1u, 2u);
    }
    return max(a[0], max(a[4], a[8]));
}
