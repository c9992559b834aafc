//! P-SPG-FB on the GPU (`spg-gpu`), the iteration of [`crate::solver::Spg`] as a fixed
//! schedule: preconditioned direction and `d · g` (a tree reduction), the unpreconditioned
//! fallback direction (dispatched every iteration, idle unless `d · g ≥ 0`), `A d`, the
//! curvature and BB products, one single-invocation kernel for the GLL line search and the
//! BB step, and the update of `x` and `g`; `g = A x + b` recomputed every
//! [`crate::solver::Spg::REFRESH`] iterations.

use super::context::GpuContext;
use super::data::{MAX_GLL, ProblemData, SLOT_A, SLOT_B, SLOT_C, SpgConfig, SpgState};
use super::engine::Engine;
use super::kernels::{Access, Domain, SPG_CURVATURE, SPG_DIRECTION, SPG_SCALARS, SPG_UPDATE};
use super::program::{
    GpuKernels, GpuSolver, Initial, Method, Phase, Program, Start, descent, initial_gamma,
};
use crate::error::{Error, Result};
use crate::solver::{Spg, SpgParams};

/// The configuration of `spg_direction` (`fallback` 1: the unpreconditioned direction) and
/// `spg_scalars` from `p`; an `N_GLL` above [`MAX_GLL`] is an [`Error::InvalidSetting`].
pub(crate) fn config(p: &SpgParams, fallback: u32) -> Result<SpgConfig> {
    if p.n_gll > MAX_GLL {
        return Err(Error::InvalidSetting {
            name: "spg.n_gll",
            value: p.n_gll.to_string(),
            message: format!("spg-gpu keeps at most {MAX_GLL} values"),
        });
    }
    Ok(SpgConfig {
        alpha_min: p.alpha_min as f32,
        alpha_max: p.alpha_max as f32,
        armijo: p.armijo as f32,
        sigma_min: p.sigma_min as f32,
        sigma_max: p.sigma_max as f32,
        n_gll: p.n_gll as u32,
        fallback,
        pad: 0,
    })
}

/// The state of a solve's first iteration: the step `α_0`, an empty GLL memory.
pub(crate) fn initial_state(params: &SpgParams) -> SpgState {
    SpgState {
        alpha: params.alpha_0 as f32,
        lambda: 0.0,
        j: 0,
        hist_len: 0,
        hist_head: 0,
        pad: [0; 3],
        history: [0.0; MAX_GLL],
    }
}

/// The iteration of P-SPG-FB; `start` computes `g = A x + b`.
fn program(ctx: &GpuContext, engine: &Engine, params: &SpgParams) -> Result<Program> {
    let [x, g, d, ad, best] = ["x", "g", "d", "ad", "best"].map(|l| engine.vector(l));
    let (x, g, d, ad, best) = (x?, g?, d?, ad?, best?);
    let initial = initial_state(params);
    let state = engine.buffer("spg state", Access::Write, bytemuck::bytes_of(&initial));
    let [cfg, cfg_fallback] = [0, 1].map(|fallback| {
        config(params, fallback)
            .map(|c| engine.buffer("spg config", Access::Uniform, bytemuck::bytes_of(&c)))
    });
    let (cfg, cfg_fallback) = (cfg?, cfg_fallback?);
    let vectors = [
        ("x", &x),
        ("g", &g),
        ("d", &d),
        ("ad", &ad),
        ("state", &state),
    ];
    let [own, own_fallback] = [&cfg, &cfg_fallback].map(|cfg| {
        let mut own = vectors.to_vec();
        own.push(("cfg", cfg));
        own
    });
    let mut iterate = vec![
        engine.step(ctx, &SPG_DIRECTION, &own)?,
        engine.reduce(ctx, Domain::Blocks, SLOT_A)?,
        engine.step(ctx, &SPG_DIRECTION, &own_fallback)?,
        engine.reduce(ctx, Domain::Blocks, SLOT_B)?,
    ];
    let kernels = [
        (&SPG_CURVATURE, &vectors[..]),
        (&SPG_SCALARS, &own[..]),
        (&SPG_UPDATE, &vectors[..]),
    ];
    iterate.extend(descent(ctx, engine, [&d, &ad], SLOT_C, kernels)?);
    let start = Start::every(Spg::REFRESH, 1, engine.apply(ctx, &x, &g, true)?);
    let phase = Phase::new(iterate, engine.measure(ctx, &x, &g, &best)?, x.clone());
    let state_bytes = bytemuck::bytes_of(&initial).to_vec();
    let state: (_, Initial) = (state, Box::new(move |_| state_bytes.clone()));
    let initial = vec![(x, initial_gamma()), state];
    Ok(Program::new(start, vec![phase], best, initial))
}

impl GpuKernels {
    /// The P-SPG-FB kernels on `data` with `params` (`N_GLL` at most [`MAX_GLL`]).
    pub fn spg(ctx: &GpuContext, data: &ProblemData, params: &SpgParams) -> Result<Self> {
        GpuKernels::new(ctx, data, 1.0, |engine| program(ctx, engine, params))
    }
}

/// P-SPG-FB on the GPU in `f32`; registry name `spg-gpu`.
///
/// Same settings, parameters, defaults and best-iterate fallback as [`Spg`], on factored and
/// assembled problems; the Coulomb model by the same outer De Saxcé fixed point
/// of the CPU solvers, each inner CCP solve on the GPU (reusing the buffers). Differences of
/// detail, all for `f32`: the GLL memory holds differences `f_i − f` (the same test in exact
/// arithmetic), `d · g` is bounded by `−d · P d / α` (true in exact arithmetic; near the
/// solution the rounding of `d · g` would make a good direction look ascending), the moves of
/// blocks whose projection is the identity or zero are computed without cancellation, and the
/// gradient is refreshed on the iteration count (the CPU counts line searches, which differ
/// only after a stationary step).
pub type SpgGpu = GpuSolver<SpgMethod>;

/// The P-SPG-FB kernels with their parameters as a GPU [`Method`].
#[derive(Debug, Clone, Copy, Default)]
pub struct SpgMethod {
    params: SpgParams,
}

impl Method for SpgMethod {
    const NAME: &'static str = "spg-gpu";
    const OUTER_COULOMB: bool = true;

    fn check(&self) -> Result<()> {
        Spg {
            params: self.params,
        }
        .check()?;
        config(&self.params, 0).map(|_| ())
    }

    fn kernels(&self, ctx: &GpuContext, data: &ProblemData, room: f64) -> Result<GpuKernels> {
        GpuKernels::new(ctx, data, room, |engine| program(ctx, engine, &self.params))
    }
}

impl SpgGpu {
    /// The same solver with `params`, on the same device.
    pub fn with_params(self, params: SpgParams) -> Self {
        self.map_method(SpgMethod { params })
    }

    /// The parameters.
    pub fn params(&self) -> &SpgParams {
        &self.method().params
    }
}
