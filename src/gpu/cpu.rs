//! CPU mirrors of the kernels of `shaders/`: the same `f32` operations in the same order,
//! buffers in binding order (uniforms by reference, read buffers as slices, written buffers
//! as mutable slices). The parity tests run each kernel once on seeded random inputs and
//! compare with these.

use super::data::{
    ApgdState, Apply, CONE_COULOMB, CONE_UNILATERAL, GpuBlock, GpuLink, Monitor, Params, Partial,
    Reduce, SLOT_A, SLOT_B, SLOT_C, SLOT_RESIDUAL, SpgConfig, SpgState,
};
use super::kernels::WORKGROUP;

const WG: usize = WORKGROUP as usize;

/// `project` of `shaders/common.wgsl`: the projection on the cone of a block.
pub fn project(kind: u32, mu: f32, v: [f32; 3]) -> [f32; 3] {
    let mut x = v;
    if kind == CONE_UNILATERAL {
        x[0] = x[0].max(0.0);
    } else if kind == CONE_COULOMB {
        let (a, n) = (mu, x[0]);
        let s = (x[1] * x[1] + x[2] * x[2]).sqrt();
        if s <= a * n {
            // Inside the cone.
        } else if a * s <= -n {
            x = [0.0; 3];
        } else {
            let n_new = (a * s + n) / (1.0 + a * a);
            let scale = a * n_new / s;
            x = [n_new, x[1] * scale, x[2] * scale];
        }
    }
    x
}

/// `projected_move` of `shaders/common.wgsl`: `Π_K(x + s) − x`, exactly `s` or `−x` where
/// the projection is the identity or zero.
pub fn projected_move(kind: u32, mu: f32, x: [f32; 3], s: [f32; 3]) -> [f32; 3] {
    let v: [f32; 3] = std::array::from_fn(|i| x[i] + s[i]);
    let neg = x.map(|xi| -xi);
    if kind == CONE_UNILATERAL {
        return if v[0] >= 0.0 { s } else { neg };
    }
    if kind == CONE_COULOMB {
        let (a, n) = (mu, v[0]);
        let t = (v[1] * v[1] + v[2] * v[2]).sqrt();
        if t <= a * n {
            return s;
        }
        if a * t <= -n {
            return neg;
        }
        let p = project(kind, mu, v);
        return std::array::from_fn(|i| p[i] - x[i]);
    }
    s
}

/// `model_velocity` of `shaders/common.wgsl`: the De Saxcé shift under the Coulomb model.
pub fn model_velocity(b: &GpuBlock, coulomb: u32, u: [f32; 3]) -> [f32; 3] {
    let mut v = u;
    if coulomb == 1 && b.kind == CONE_COULOMB {
        v[0] += b.mu * (v[1] * v[1] + v[2] * v[2]).sqrt();
    }
    v
}

fn add(a: [f32; 4], b: [f32; 4]) -> [f32; 4] {
    std::array::from_fn(|i| a[i] + b[i])
}

fn max4(a: [f32; 4], b: [f32; 4]) -> [f32; 4] {
    std::array::from_fn(|i| a[i].max(b[i]))
}

/// `workgroup_reduce` of `shaders/tree.wgsl` over one workgroup's values (at most
/// [`WORKGROUP`], the rest zero).
pub fn workgroup_tree(values: &[Partial]) -> Partial {
    let mut t = [Partial::default(); WG];
    t[..values.len()].copy_from_slice(values);
    let mut s = WG / 2;
    while s > 0 {
        for lid in 0..s {
            t[lid] = Partial {
                sums: add(t[lid].sums, t[lid + s].sums),
                maxes: max4(t[lid].maxes, t[lid + s].maxes),
            };
        }
        s /= 2;
    }
    t[0]
}

/// The workgroup partials of a kernel whose invocation `i` contributes `values[i]`.
fn partials(values: &[Partial], parts: &mut [Partial]) {
    for (p, chunk) in parts.iter_mut().zip(values.chunks(WG)) {
        *p = workgroup_tree(chunk);
    }
}

fn load(v: &[f32], b: &GpuBlock) -> [f32; 3] {
    let mut out = [0.0; 3];
    for (i, o) in out.iter_mut().enumerate().take(b.dim as usize) {
        *o = v[b.row as usize + i];
    }
    out
}

/// `shaders/factored_bodies.wgsl`: `w_i = Σ_links minv_jac rows · x`, 6 entries per body,
/// each summed in link order.
pub fn factored_bodies(
    params: &Params,
    links_ptr: &[u32],
    links: &[GpuLink],
    minv_jac: &[f32],
    x: &[f32],
    w: &mut [f32],
) {
    for i in 0..params.n_bodies as usize {
        let mut acc = [0.0f32; 6];
        for link in &links[links_ptr[i] as usize..links_ptr[i + 1] as usize] {
            for r in 0..link.dim as usize {
                let g = x[link.row as usize + r];
                let row = 6 * (link.minv_row as usize + r);
                for (c, a) in acc.iter_mut().enumerate() {
                    *a += minv_jac[row + c] * g;
                }
            }
        }
        w[6 * i..6 * i + 6].copy_from_slice(&acc);
    }
}

/// Row `slot` of block `k` of the component-major Jacobian times `w` of `body`.
fn dot6(params: &Params, jac: &[f32], w: &[f32], k: usize, slot: u32, body: i32) -> f32 {
    let (n, slot, body) = (params.n_blocks as usize, slot as usize, body as usize);
    let mut s = 0.0f32;
    for c in 0..6 {
        s += jac[(slot * 6 + c) * n + k] * w[6 * body + c];
    }
    s
}

/// `shaders/factored_rows.wgsl`: `y_k = Σ_sides J rows · w + compliance · x_k (+ r_k)`.
#[allow(clippy::too_many_arguments)] // one argument per binding, as in the shader
pub fn factored_rows(
    params: &Params,
    apply: &Apply,
    blocks: &[GpuBlock],
    jac: &[f32],
    w: &[f32],
    r: &[f32],
    compliance: &[f32],
    x: &[f32],
    y: &mut [f32],
) {
    for (k, b) in blocks[..params.n_blocks as usize].iter().enumerate() {
        for i in 0..b.dim {
            let mut acc = 0.0f32;
            if b.body0 >= 0 {
                acc += dot6(params, jac, w, k, i, b.body0);
            }
            if b.body1 >= 0 {
                acc += dot6(params, jac, w, k, params.max_dim + i, b.body1);
            }
            let row = (b.row + i) as usize;
            let mut v = acc + compliance[row] * x[row];
            if apply.add_r == 1 {
                v += r[row];
            }
            y[row] = v;
        }
    }
}

/// `shaders/csr_rows.wgsl`: `y_i = Σ_j N_ij x_j + compliance_i x_i (+ r_i)`.
#[allow(clippy::too_many_arguments)] // one argument per binding, as in the shader
pub fn csr_rows(
    params: &Params,
    apply: &Apply,
    indptr: &[u32],
    indices: &[u32],
    values: &[f32],
    r: &[f32],
    compliance: &[f32],
    x: &[f32],
    y: &mut [f32],
) {
    for i in 0..params.n_rows as usize {
        let mut acc = 0.0f32;
        for e in indptr[i] as usize..indptr[i + 1] as usize {
            acc += values[e] * x[indices[e] as usize];
        }
        let mut v = acc + compliance[i] * x[i];
        if apply.add_r == 1 {
            v += r[i];
        }
        y[i] = v;
    }
}

/// `shaders/jacobi_step.wgsl`: `γ_out,k = Π_K(γ_in,k − ω η_k û_k)`.
pub fn jacobi_step(
    params: &Params,
    blocks: &[GpuBlock],
    u: &[f32],
    gamma_in: &[f32],
    gamma_out: &mut [f32],
) {
    for b in &blocks[..params.n_blocks as usize] {
        let (g, v) = (load(gamma_in, b), load(u, b));
        let uh = model_velocity(b, params.coulomb, v);
        let step = params.omega * b.eta;
        let mut x = [0.0f32; 3];
        for i in 0..b.dim as usize {
            x[i] = g[i] - step * uh[i];
        }
        let x = project(b.kind, b.mu, x);
        for i in 0..b.dim as usize {
            gamma_out[b.row as usize + i] = x[i];
        }
    }
}

/// `shaders/residual.wgsl`: workgroup partials of the natural-map residual.
pub fn residual(
    params: &Params,
    blocks: &[GpuBlock],
    gamma: &[f32],
    u: &[f32],
    parts: &mut [Partial],
) {
    let values: Vec<Partial> = blocks[..params.n_blocks as usize]
        .iter()
        .map(|b| {
            let mut p = Partial::default();
            let (g, v) = (load(gamma, b), load(u, b));
            let uh = model_velocity(b, params.coulomb, v);
            let step = if b.eta > 0.0 { b.eta } else { 1.0 };
            let (mut unit, mut scaled) = ([0.0f32; 3], [0.0f32; 3]);
            for i in 0..b.dim as usize {
                unit[i] = g[i] - uh[i];
                scaled[i] = g[i] - step * uh[i];
            }
            let (unit, scaled) = (project(b.kind, b.mu, unit), project(b.kind, b.mu, scaled));
            for i in 0..b.dim as usize {
                let e = g[i] - unit[i];
                let e_eta = (g[i] - scaled[i]) / step;
                p.sums = add(p.sums, [e * e, g[i] * g[i], v[i] * v[i], 0.0]);
                p.maxes = max4(p.maxes, [e.abs(), e_eta.abs(), g[i].abs(), 0.0]);
            }
            p
        })
        .collect();
    partials(&values, parts);
}

/// `shaders/reduce.wgsl`: `scalars[slot]` from `count` partials.
pub fn reduce(cfg: &Reduce, parts: &[Partial], scalars: &mut [Partial]) {
    let mut lanes = [Partial::default(); WG];
    for (t, lane) in lanes.iter_mut().enumerate() {
        for p in parts[..cfg.count as usize].iter().skip(t).step_by(WG) {
            lane.sums = add(lane.sums, p.sums);
            lane.maxes = max4(lane.maxes, p.maxes);
        }
    }
    scalars[cfg.slot as usize] = workgroup_tree(&lanes);
}

/// `shaders/measure.wgsl`: the residual and the best-iterate bookkeeping.
pub fn measure(params: &Params, scalars: &[Partial], monitor: &mut Monitor) {
    let p = scalars[SLOT_RESIDUAL as usize];
    let m = monitor;
    m.inf = p.maxes[0];
    m.two = p.sums[0].sqrt();
    m.velocity = p.maxes[1];
    m.gamma_inf = p.maxes[2];
    let scale = params.r_norm.max(p.sums[1].sqrt().max(p.sums[2].sqrt()));
    m.relative = if scale > 0.0 { m.two / scale } else { m.two };
    m.value = if params.criterion == 1 {
        m.velocity
    } else {
        m.relative
    };
    if m.measures == 0 {
        m.best = m.value;
        m.gamma_scale = m.gamma_inf;
        m.improved = 1;
    } else {
        if m.measures == 1 {
            m.gamma_scale = m.gamma_scale.max(m.gamma_inf);
        }
        let finite = m.value.abs() <= f32::MAX;
        let bounded = m.gamma_inf <= 1e12 * m.gamma_scale;
        m.improved = u32::from(finite && bounded && m.value < m.best);
        if m.improved == 1 {
            m.best = m.value;
        }
    }
    m.measures += 1;
}

/// `shaders/copy_if.wgsl`: `dst = src` when the last measure improved.
pub fn copy_if(params: &Params, monitor: &Monitor, src: &[f32], dst: &mut [f32]) {
    if monitor.improved == 1 {
        let n = params.n_rows as usize;
        dst[..n].copy_from_slice(&src[..n]);
    }
}

/// `shaders/spg_direction.wgsl`: the P-SPG-FB direction and its `d · g` partials.
#[allow(clippy::too_many_arguments)] // one argument per binding, as in the shader
pub fn spg_direction(
    params: &Params,
    cfg: &SpgConfig,
    blocks: &[GpuBlock],
    scalars: &[Partial],
    state: &SpgState,
    x: &[f32],
    g: &[f32],
    precond: &[f32],
    d: &mut [f32],
    parts: &mut [Partial],
) {
    let fallback = cfg.fallback == 1;
    let active = !fallback || scalars[SLOT_A as usize].sums[0] >= 0.0;
    let values: Vec<Partial> = blocks[..params.n_blocks as usize]
        .iter()
        .map(|b| {
            let mut p = Partial::default();
            if !active {
                return p;
            }
            let (mut xk, mut sk) = ([0.0f32; 3], [0.0f32; 3]);
            for i in 0..b.dim as usize {
                let row = b.row as usize + i;
                xk[i] = x[row];
                sk[i] = if fallback {
                    -(state.alpha * g[row])
                } else {
                    -(state.alpha * g[row] / precond[row])
                };
            }
            let dk = projected_move(b.kind, b.mu, xk, sk);
            for (i, di) in dk.iter().enumerate().take(b.dim as usize) {
                let row = b.row as usize + i;
                d[row] = *di;
                let pd = if fallback { *di } else { precond[row] * di };
                p.sums[0] += di * g[row];
                p.sums[1] += pd * di;
            }
            p
        })
        .collect();
    partials(&values, parts);
}

/// `shaders/spg_curvature.wgsl`: partials of `(d·Ad, d·Pd, Ad·P⁻¹Ad, 0)`.
pub fn spg_curvature(
    params: &Params,
    precond: &[f32],
    d: &[f32],
    ad: &[f32],
    parts: &mut [Partial],
) {
    let values: Vec<Partial> = (0..params.n_rows as usize)
        .map(|i| Partial {
            sums: [
                d[i] * ad[i],
                d[i] * precond[i] * d[i],
                ad[i] * ad[i] / precond[i],
                0.0,
            ],
            maxes: [0.0; 4],
        })
        .collect();
    partials(&values, parts);
}

/// `shaders/spg_scalars.wgsl`: line search, BB step and GLL memory.
pub fn spg_scalars(cfg: &SpgConfig, scalars: &[Partial], state: &mut SpgState) {
    let s = state;
    let mut dir = scalars[SLOT_A as usize].sums;
    if dir[0] >= 0.0 {
        dir = scalars[SLOT_B as usize].sums;
    }
    let dg = dir[0].min(-dir[1] / s.alpha);
    // Not a descent direction, or NaN: `!(dg < 0)` in the shader.
    if dg.is_nan() || dg >= 0.0 {
        s.lambda = 0.0;
        return;
    }
    let c = scalars[SLOT_C as usize].sums;
    let dad = c[0];
    if s.hist_len == 0 {
        s.history[0] = 0.0;
        s.hist_len = 1;
        s.hist_head = 1 % cfg.n_gll;
    }
    let mut gap = s.history[0];
    for i in 1..s.hist_len as usize {
        gap = gap.max(s.history[i]);
    }
    let mut lambda = 1.0f32;
    let mut gain = dg + 0.5 * dad;
    while gain > gap + cfg.armijo * lambda * dg && lambda > 1e-12 {
        let curvature = gain - lambda * dg;
        let mut lq = cfg.sigma_max * lambda;
        if curvature > 0.0 {
            lq = -0.5 * lambda * lambda * dg / curvature;
        }
        lambda = lq.clamp(cfg.sigma_min * lambda, cfg.sigma_max * lambda);
        gain = lambda * dg + 0.5 * lambda * lambda * dad;
    }
    let mut alpha = cfg.alpha_max;
    if dad > 0.0 {
        alpha = if s.j % 2 == 1 { c[1] / dad } else { dad / c[2] };
    }
    s.alpha = alpha.clamp(cfg.alpha_min, cfg.alpha_max);
    for h in &mut s.history[..s.hist_len as usize] {
        *h -= gain;
    }
    s.history[s.hist_head as usize] = 0.0;
    s.hist_head = (s.hist_head + 1) % cfg.n_gll;
    s.hist_len = (s.hist_len + 1).min(cfg.n_gll);
    s.lambda = lambda;
    s.j += 1;
}

/// `shaders/spg_update.wgsl`: `x += λd`, `g += λAd`.
pub fn spg_update(
    params: &Params,
    state: &SpgState,
    d: &[f32],
    ad: &[f32],
    x: &mut [f32],
    g: &mut [f32],
) {
    if state.lambda != 0.0 {
        for i in 0..params.n_rows as usize {
            x[i] += state.lambda * d[i];
            g[i] += state.lambda * ad[i];
        }
    }
}

/// `shaders/apgd_trial.wgsl`: `x_new = Π_K(y − t g_y)`, `d = x_new − y`.
pub fn apgd_trial(
    params: &Params,
    blocks: &[GpuBlock],
    state: &ApgdState,
    y: &[f32],
    g_y: &[f32],
    x_new: &mut [f32],
    d: &mut [f32],
) {
    for b in &blocks[..params.n_blocks as usize] {
        let (yb, gb) = (load(y, b), load(g_y, b));
        let sk = gb.map(|gi| -(state.step * gi));
        let dk = projected_move(b.kind, b.mu, yb, sk);
        let v = project(b.kind, b.mu, std::array::from_fn(|i| yb[i] + sk[i]));
        for i in 0..b.dim as usize {
            let row = b.row as usize + i;
            x_new[row] = v[i];
            d[row] = dk[i];
        }
    }
}

/// `shaders/apgd_curvature.wgsl`: partials of `(d·Ad, d·d, g_y·(x_new − x), 0)`.
pub fn apgd_curvature(
    params: &Params,
    d: &[f32],
    ad: &[f32],
    g_y: &[f32],
    x: &[f32],
    x_new: &[f32],
    parts: &mut [Partial],
) {
    let values: Vec<Partial> = (0..params.n_rows as usize)
        .map(|i| Partial {
            sums: [d[i] * ad[i], d[i] * d[i], g_y[i] * (x_new[i] - x[i]), 0.0],
            maxes: [0.0; 4],
        })
        .collect();
    partials(&values, parts);
}

/// `shaders/apgd_scalars.wgsl`: acceptance, restart, momentum and `L`.
pub fn apgd_scalars(scalars: &[Partial], state: &mut ApgdState) {
    let s = state;
    let c = scalars[SLOT_A as usize].sums;
    let (dad, dd) = (c[0], c[1]);
    let accept = dad <= s.lipschitz * dd || dd == 0.0;
    if !accept {
        s.lipschitz *= 2.0;
        s.step = 1.0 / s.lipschitz;
        s.accepted = 0;
        return;
    }
    let restart = c[2] > 0.0;
    let theta = s.theta;
    let theta_new = 0.5 * (-theta * theta + theta * (theta * theta + 4.0).sqrt());
    if restart {
        s.beta = 0.0;
        s.theta = 1.0;
    } else {
        s.beta = theta * (1.0 - theta) / (theta * theta + theta_new);
        s.theta = theta_new;
    }
    s.lipschitz *= 0.9;
    s.step = 1.0 / s.lipschitz;
    s.accepted = 1;
}

/// `shaders/apgd_update.wgsl`: the accepted step and the momentum.
#[allow(clippy::too_many_arguments)] // one argument per binding, as in the shader
pub fn apgd_update(
    params: &Params,
    state: &ApgdState,
    x_new: &[f32],
    ad: &[f32],
    x: &mut [f32],
    u: &mut [f32],
    y: &mut [f32],
    g_y: &mut [f32],
) {
    if state.accepted == 0 {
        return;
    }
    let beta = state.beta;
    for i in 0..params.n_rows as usize {
        let u_new = g_y[i] + ad[i];
        let xn = x_new[i];
        y[i] = xn + beta * (xn - x[i]);
        g_y[i] = u_new + beta * (u_new - u[i]);
        x[i] = xn;
        u[i] = u_new;
    }
}
