//! The mirrors of the P-SPG-FB kernels (`spg-gpu`).

use super::projected_move;
use super::reduce::partials;
use crate::gpu::data::{GpuBlock, Params, Partial, SLOT_A, SLOT_B, SLOT_C, SpgConfig, SpgState};

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
