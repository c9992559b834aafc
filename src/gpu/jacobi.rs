//! Projected Jacobi on the GPU (`jacobi-gpu`): per iteration `u = (N + E) γ + r` (one or
//! two dispatches, [`super::engine::Engine::apply`]) and the projected step over blocks into
//! the other of two ping-pong `γ` buffers.

use super::context::GpuContext;
use super::data::ProblemData;
use super::engine::{Engine, Step};
use super::kernels::JACOBI_STEP;
use super::program::{GpuKernels, GpuSolver, Method, Program};
use crate::error::Result;

struct JacobiProgram {
    gamma: [wgpu::Buffer; 2],
    best: wgpu::Buffer,
    /// Iteration from `gamma[i]` into `gamma[1 − i]`.
    iterate: [Vec<Step>; 2],
    /// Residual of `gamma[i]`.
    measure: [Vec<Step>; 2],
}

impl JacobiProgram {
    fn new(ctx: &GpuContext, engine: &Engine) -> Result<Self> {
        let gamma = [engine.vector("gamma0")?, engine.vector("gamma1")?];
        let (u, best) = (engine.vector("u")?, engine.vector("best")?);
        let iterate = |i: usize| -> Result<Vec<Step>> {
            let mut steps = engine.apply(ctx, &gamma[i], &u, true)?;
            steps.push(engine.step(
                ctx,
                &JACOBI_STEP,
                &[
                    ("u", &u),
                    ("gamma_in", &gamma[i]),
                    ("gamma_out", &gamma[1 - i]),
                ],
            )?);
            Ok(steps)
        };
        let measure = |i: usize| -> Result<Vec<Step>> {
            let mut steps = engine.apply(ctx, &gamma[i], &u, true)?;
            steps.extend(engine.measure(ctx, &gamma[i], &u, &best)?);
            Ok(steps)
        };
        Ok(JacobiProgram {
            iterate: [iterate(0)?, iterate(1)?],
            measure: [measure(0)?, measure(1)?],
            gamma,
            best,
        })
    }
}

impl Program for JacobiProgram {
    fn start(&self) -> &[Step] {
        &[]
    }

    fn iteration(&self, k: usize) -> Vec<&Step> {
        self.iterate[k % 2].iter().collect()
    }

    fn products(&self, _k: usize) -> usize {
        1
    }

    fn measure(&self, k: usize) -> &[Step] {
        &self.measure[k % 2]
    }

    fn iterate(&self, k: usize) -> &wgpu::Buffer {
        &self.gamma[k % 2]
    }

    fn best(&self) -> &wgpu::Buffer {
        &self.best
    }

    fn reset(&self, engine: &Engine, data: &ProblemData) {
        engine.write(&self.gamma[0], bytemuck::cast_slice(&data.gamma));
    }
}

impl GpuKernels {
    /// The projected Jacobi kernels on `data` (`ω` and `η_k` from its settings).
    pub fn jacobi(ctx: &GpuContext, data: &ProblemData) -> Result<Self> {
        GpuKernels::new(ctx, data, |engine| {
            Ok(Box::new(JacobiProgram::new(ctx, engine)?))
        })
    }
}

/// The projected Jacobi kernels as a GPU [`Method`].
#[derive(Debug, Clone, Copy, Default)]
pub struct JacobiMethod;

impl Method for JacobiMethod {
    const NAME: &'static str = "jacobi-gpu";
    // The De Saxcé shift is part of the projected step.
    const OUTER_COULOMB: bool = false;

    fn kernels(&self, ctx: &GpuContext, data: &ProblemData) -> Result<GpuKernels> {
        GpuKernels::jacobi(ctx, data)
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
