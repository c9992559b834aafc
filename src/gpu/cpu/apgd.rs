//! The mirrors of the APGD kernels (`apgd-gpu`).

use super::reduce::partials;
use super::{load, project, projected_move};
use crate::gpu::data::{ApgdState, GpuBlock, Params, Partial, SLOT_A};

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
