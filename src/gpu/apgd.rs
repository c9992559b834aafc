//! APGD on the GPU (`apgd-gpu`), the iteration of [`crate::solver::Apgd`] as a fixed
//! schedule: trial point from `y`, `A d`, the curvature and restart products (one tree
//! reduction), one single-invocation kernel for the acceptance test, restart, momentum and
//! `L`, and the update; `u` and `g_y` recomputed every [`crate::solver::Apgd::REFRESH`]
//! iterations.

use super::context::GpuContext;
use super::data::{ApgdState, ProblemData, SLOT_A};
use super::engine::Engine;
use super::kernels::{APGD_CURVATURE, APGD_SCALARS, APGD_TRIAL, APGD_UPDATE, Access};
use super::program::{
    GpuKernels, GpuSolver, Initial, Method, Phase, Program, Start, descent, initial_gamma,
};
use crate::error::Result;
use crate::problem::System;
use crate::solver::{Apgd, Bias, Settings};

/// The iteration of APGD; `start` computes `u = A x + b` and `g_y = A y + b`.
fn program(ctx: &GpuContext, engine: &Engine) -> Result<Program> {
    let [x, u, y, g_y, x_new, d, ad, best] =
        ["x", "u", "y", "g_y", "x_new", "d", "ad", "best"].map(|l| engine.vector(l));
    let (x, u, y, g_y, x_new, d, ad, best) = (x?, u?, y?, g_y?, x_new?, d?, ad?, best?);
    let state = engine.buffer(
        "apgd state",
        Access::Write,
        &[0; std::mem::size_of::<ApgdState>()],
    );
    let own = [
        ("x", &x),
        ("u", &u),
        ("y", &y),
        ("g_y", &g_y),
        ("x_new", &x_new),
        ("d", &d),
        ("ad", &ad),
        ("state", &state),
    ];
    let mut iterate = vec![engine.step(ctx, &APGD_TRIAL, &own)?];
    let kernels = [&APGD_CURVATURE, &APGD_SCALARS, &APGD_UPDATE].map(|k| (k, &own[..]));
    iterate.extend(descent(ctx, engine, [&d, &ad], SLOT_A, kernels)?);
    let mut start = engine.apply(ctx, &x, &u, true)?;
    start.extend(engine.apply(ctx, &y, &g_y, true)?);
    // The initial estimate of `L` and its step, the momentum reset.
    let initial_state: Initial = Box::new(|data| {
        let state = ApgdState {
            lipschitz: data.lipschitz,
            step: 1.0 / data.lipschitz,
            theta: 1.0,
            beta: 0.0,
            accepted: 0,
            pad: [0; 3],
        };
        bytemuck::bytes_of(&state).to_vec()
    });
    let phase = Phase::new(iterate, engine.measure(ctx, &x, &u, &best)?, x.clone());
    let initial = vec![
        (x, initial_gamma()),
        (y, initial_gamma()),
        (state, initial_state),
    ];
    let start = Start::every(Apgd::REFRESH, 2, start);
    Ok(Program::new(start, vec![phase], best, initial))
}

impl GpuKernels {
    /// The APGD kernels on `data` (whose [`ProblemData::lipschitz`] must be set).
    pub fn apgd(ctx: &GpuContext, data: &ProblemData) -> Result<Self> {
        GpuKernels::new(ctx, data, 1.0, |engine| program(ctx, engine))
    }
}

/// APGD on the GPU in `f32`; registry name `apgd-gpu`.
///
/// Same settings and best-iterate fallback as [`Apgd`] (initial `L = ‖(N + E) 1‖ / √m`,
/// shrink 0.9, gradient restart), on factored and assembled problems, the Coulomb model by
/// the outer De Saxcé fixed point of the CPU solvers. One trial step per iteration: where the CPU
/// doubles `L` and retries within an iteration, `apgd-gpu` spends that iteration (and its
/// product) on the rejected trial and leaves the iterate in place.
pub type ApgdGpu = GpuSolver<ApgdMethod>;

/// The APGD kernels as a GPU [`Method`].
#[derive(Debug, Clone, Copy, Default)]
pub struct ApgdMethod;

impl Method for ApgdMethod {
    const NAME: &'static str = "apgd-gpu";
    const OUTER_COULOMB: bool = true;

    /// The data with the initial Lipschitz estimate of [`Apgd`].
    fn data(&self, sys: &System, settings: &Settings, bias: Bias) -> Result<ProblemData> {
        Ok(ProblemData::for_device(sys, settings, bias)?.with_lipschitz(sys))
    }

    fn kernels(&self, ctx: &GpuContext, data: &ProblemData, room: f64) -> Result<GpuKernels> {
        GpuKernels::new(ctx, data, room, |engine| program(ctx, engine))
    }
}
