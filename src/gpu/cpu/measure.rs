//! The mirrors of the kernels that measure an iterate: the natural-map residual's partials,
//! the monitor (residual and best-iterate bookkeeping), and the copy of an improved iterate.

use super::reduce::{add, max4, partials};
use super::{load, model_velocity, project};
use crate::gpu::data::{GpuBlock, Monitor, Params, Partial, SLOT_RESIDUAL};

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
        .map(|b| block_residual(b, params.coulomb, load(gamma, b), load(u, b)))
        .collect();
    partials(&values, parts);
}

/// `block_residual` of `shaders/common.wgsl`: the natural-map residual's terms of block `b`
/// with impulse `g` and velocity `v`.
pub(super) fn block_residual(b: &GpuBlock, coulomb: u32, g: [f32; 3], v: [f32; 3]) -> Partial {
    let mut p = Partial::default();
    let uh = model_velocity(b, coulomb, v);
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
        m.gamma_scale = m.gamma_scale.max(m.gamma_inf);
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
