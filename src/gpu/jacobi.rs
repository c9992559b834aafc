//! Projected Jacobi on the GPU (`jacobi-gpu`): per iteration `u = (N + E) γ + r` (one or
//! two dispatches, [`super::engine::Engine::apply`]) and the projected step over blocks into
//! the other of two ping-pong `γ` buffers.

use super::context::GpuContext;
use super::data::ProblemData;
use super::engine::Engine;
use super::kernels::JACOBI_STEP;
use super::program::{GpuKernels, GpuSolver, Method, Phase, Program, Start, initial_gamma};
use crate::error::Result;

/// Per iteration `u = (N + E) γ_i + r`, then the projected step into `γ_{1−i}`.
fn program(ctx: &GpuContext, engine: &Engine) -> Result<Program> {
    let gamma = [engine.vector("gamma0")?, engine.vector("gamma1")?];
    let (u, best) = (engine.vector("u")?, engine.vector("best")?);
    let mut phases = Vec::new();
    for i in 0..2 {
        let (from, to) = (&gamma[i], &gamma[1 - i]);
        let mut steps = engine.apply(ctx, from, &u, true)?;
        let own = [("u", &u), ("gamma_in", from), ("gamma_out", to)];
        steps.push(engine.step(ctx, &JACOBI_STEP, &own)?);
        let mut measure = engine.apply(ctx, from, &u, true)?;
        measure.extend(engine.measure(ctx, from, &u, &best)?);
        phases.push(Phase::new(steps, measure, from.clone()));
    }
    let initial = vec![(gamma[0].clone(), initial_gamma())];
    Ok(Program::new(
        Start::every(0, 0, Vec::new()),
        phases,
        best,
        initial,
    ))
}

impl GpuKernels {
    /// The projected Jacobi kernels on `data` (`ω` and `η_k` from its settings).
    pub fn jacobi(ctx: &GpuContext, data: &ProblemData) -> Result<Self> {
        GpuKernels::new(ctx, data, 1.0, |engine| program(ctx, engine))
    }
}

/// The projected Jacobi kernels as a GPU [`Method`].
#[derive(Debug, Clone, Copy, Default)]
pub struct JacobiMethod;

impl Method for JacobiMethod {
    const NAME: &'static str = "jacobi-gpu";
    // The De Saxcé shift is part of the projected step.
    const OUTER_COULOMB: bool = false;

    fn kernels(&self, ctx: &GpuContext, data: &ProblemData, room: f64) -> Result<GpuKernels> {
        GpuKernels::new(ctx, data, room, |engine| program(ctx, engine))
    }
}

/// Projected Jacobi on the GPU in `f32`; registry name `jacobi-gpu`.
///
/// Same iteration as [`crate::solver::Jacobi`] (`ω` default 0.3, `η_k` from the settings'
/// block step rule, the Coulomb model by De Saxcé's shift in the step), on factored and
/// assembled problems. The residual is measured on the GPU every
/// [`super::READBACK_EVERY`] iterations, so the iteration count is a multiple of it (or
/// `max_iter`); the returned impulses are certified in `f64` on the CPU. The device is opened
/// at the first solve (without an adapter every solve is an [`crate::Error::Gpu`]); a
/// session keeps kernels and buffers for the next problem of the same sizes.
pub type JacobiGpu = GpuSolver<JacobiMethod>;
