//! APGD on the GPU (`apgd-gpu`), the iteration of [`crate::solver::Apgd`] as a fixed
//! schedule: trial point from `y`, `A d`, the curvature and restart products (one tree
//! reduction), one single-invocation kernel for the acceptance test, restart, momentum and
//! `L`, and the update; `u` and `g_y` recomputed every [`crate::solver::Apgd::REFRESH`]
//! iterations.

use super::context::GpuContext;
use super::data::{ApgdState, ProblemData, SLOT_A};
use super::engine::{Engine, Step};
use super::kernels::{APGD_CURVATURE, APGD_SCALARS, APGD_TRIAL, APGD_UPDATE, Domain};
use super::program::{GpuKernels, GpuSolver, Method, Program};
use crate::error::Result;
use crate::problem::System;
use crate::solver::{Apgd, Bias, Settings};

struct ApgdProgram {
    x: wgpu::Buffer,
    y: wgpu::Buffer,
    best: wgpu::Buffer,
    state: wgpu::Buffer,
    /// `u = A x + b`, `g_y = A y + b`.
    start: Vec<Step>,
    iterate: Vec<Step>,
    measure: Vec<Step>,
}

impl ApgdProgram {
    fn new(ctx: &GpuContext, engine: &Engine) -> Result<Self> {
        let [x, u, y, g_y, x_new, d, ad, best] =
            ["x", "u", "y", "g_y", "x_new", "d", "ad", "best"].map(|l| engine.vector(l));
        let (x, u, y, g_y, x_new, d, ad, best) = (x?, u?, y?, g_y?, x_new?, d?, ad?, best?);
        let state = engine.scalar_buffer("apgd state", &[0; std::mem::size_of::<ApgdState>()]);
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
        iterate.extend(engine.apply(ctx, &d, &ad, false)?);
        iterate.extend([
            engine.step(ctx, &APGD_CURVATURE, &own)?,
            engine.reduce(ctx, Domain::Rows, SLOT_A)?,
            engine.step(ctx, &APGD_SCALARS, &own)?,
            engine.step(ctx, &APGD_UPDATE, &own)?,
        ]);
        let mut start = engine.apply(ctx, &x, &u, true)?;
        start.extend(engine.apply(ctx, &y, &g_y, true)?);
        Ok(ApgdProgram {
            measure: engine.measure(ctx, &x, &u, &best)?,
            start,
            iterate,
            x,
            y,
            best,
            state,
        })
    }

    fn refresh(k: usize) -> bool {
        (k + 1) % Apgd::REFRESH == 0
    }
}

impl Program for ApgdProgram {
    fn start(&self) -> &[Step] {
        &self.start
    }

    fn iteration(&self, k: usize) -> Vec<&Step> {
        let refresh = if Self::refresh(k) {
            &self.start[..]
        } else {
            &[]
        };
        self.iterate.iter().chain(refresh).collect()
    }

    fn products(&self, k: usize) -> usize {
        1 + 2 * usize::from(Self::refresh(k))
    }

    fn measure(&self, _k: usize) -> &[Step] {
        &self.measure
    }

    fn iterate(&self, _k: usize) -> &wgpu::Buffer {
        &self.x
    }

    fn best(&self) -> &wgpu::Buffer {
        &self.best
    }

    fn reset(&self, engine: &Engine, data: &ProblemData) {
        let gamma = bytemuck::cast_slice(&data.gamma);
        engine.write(&self.x, gamma);
        engine.write(&self.y, gamma);
        let state = ApgdState {
            lipschitz: data.lipschitz,
            step: 1.0 / data.lipschitz,
            theta: 1.0,
            beta: 0.0,
            accepted: 0,
            pad: [0; 3],
        };
        engine.write(&self.state, bytemuck::bytes_of(&state));
    }
}

impl GpuKernels {
    /// The APGD kernels on `data` (whose [`ProblemData::lipschitz`] must be set).
    pub fn apgd(ctx: &GpuContext, data: &ProblemData) -> Result<Self> {
        GpuKernels::new(ctx, data, |engine| {
            Ok(Box::new(ApgdProgram::new(ctx, engine)?))
        })
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
        Ok(ProblemData::shifted(sys, settings, bias)?.with_lipschitz(sys))
    }

    fn kernels(&self, ctx: &GpuContext, data: &ProblemData) -> Result<GpuKernels> {
        GpuKernels::apgd(ctx, data)
    }
}
