//! The kernels of one GPU solver with their buffers ([`GpuKernels`]), the solve loop they
//! share (residual on the GPU every [`READBACK_EVERY`] iterations, `f64` certification of
//! the returned impulses on the CPU), and the device and kernel cache of a solver.

use std::sync::{Arc, Mutex, OnceLock};

use super::context::GpuContext;
use super::data::{Monitor, ProblemData};
use super::engine::{Engine, GpuStats, Step};
use crate::error::{Error, Result};
use crate::problem::System;
use crate::problem::merit::{self, Residual};
use crate::solver::progress::{Progress, biased_velocity};
use crate::solver::{Report, Settings, Status};

/// Iterations recorded per command buffer; the residual (a few scalars) is read back after
/// each submission only, the impulses once at the end.
pub const READBACK_EVERY: usize = 10;

/// One GPU solver as a fixed schedule of dispatches.
pub(crate) trait Program: Send {
    /// Dispatches once per solve, before the first iteration.
    fn start(&self) -> &[Step];
    /// Dispatches of iteration `k` (0-based).
    fn iteration(&self, k: usize) -> Vec<&Step>;
    /// Products with `N` spent by iteration `k`.
    fn products(&self, k: usize) -> usize;
    /// Dispatches measuring the iterate after `k` iterations (residual, best iterate).
    fn measure(&self, k: usize) -> &[Step];
    /// The buffer holding the iterate after `k` iterations.
    fn iterate(&self, k: usize) -> &wgpu::Buffer;
    /// The buffer holding the best measured iterate.
    fn best(&self) -> &wgpu::Buffer;
    /// Writes the initial iterate and scalar state of `data` (after an upload).
    fn reset(&self, engine: &Engine, data: &ProblemData);
}

/// The kernels of one GPU solver (`jacobi-gpu`, `spg-gpu` or `apgd-gpu`) with the problem's
/// buffers uploaded.
///
/// [`GpuKernels::run`] records a number of iterations without any convergence test (the
/// throughput benchmark times it with [`GpuKernels::wait`]); the solvers drive them with
/// residuals measured on the GPU.
pub struct GpuKernels {
    engine: Engine,
    program: Box<dyn Program>,
    /// Iterations recorded since the start of the solve.
    done: usize,
    started: bool,
}

impl GpuKernels {
    pub(crate) fn new(
        ctx: &GpuContext,
        data: &ProblemData,
        build: impl FnOnce(&Engine) -> Result<Box<dyn Program>>,
    ) -> Result<Self> {
        let engine = Engine::new(ctx, data)?;
        let program = build(&engine)?;
        program.reset(&engine, data);
        Ok(GpuKernels {
            engine,
            program,
            done: 0,
            started: false,
        })
    }

    /// Replaces the problem by `data` when it has the same sizes (the buffers and kernels are
    /// kept, the data uploaded again) and returns `true`; `false` leaves everything as is.
    pub fn reload(&mut self, data: &ProblemData) -> bool {
        if !self.engine.fits(data) {
            return false;
        }
        self.engine.upload(data);
        self.program.reset(&self.engine, data);
        self.done = 0;
        self.started = false;
        true
    }

    fn record_iterations(&mut self, encoder: &mut wgpu::CommandEncoder, iterations: usize) {
        let mut steps: Vec<&Step> = Vec::new();
        if !self.started {
            steps.extend(self.program.start());
        }
        for k in self.done..self.done + iterations {
            steps.extend(self.program.iteration(k));
        }
        Engine::record(encoder, steps);
        self.started = true;
        self.done += iterations;
    }

    /// Records `iterations` iterations in one command buffer and submits it, with no
    /// convergence test and nothing read back (the first call also records the solver's
    /// start, e.g. the initial gradient).
    pub fn run(&mut self, iterations: usize) {
        let mut encoder = self.engine.encoder();
        self.record_iterations(&mut encoder, iterations);
        self.engine.submit(encoder);
    }

    /// Blocks until the submitted work is done.
    pub fn wait(&self) -> Result<()> {
        self.engine.wait()
    }

    /// Reads the current iterate back.
    pub fn read_gamma(&mut self) -> Result<Vec<f32>> {
        let buffer = self.program.iterate(self.done).clone();
        self.engine.read_vector(&buffer)
    }

    /// Reads `w = M⁻¹ Jᵀ x` of the last factored product back (6 entries per body; empty
    /// for an assembled problem).
    pub fn read_w(&mut self) -> Result<Vec<f32>> {
        match self.engine.w().cloned() {
            Some(w) => {
                let len = 6 * self.engine.bodies();
                self.engine.read(&w, len)
            }
            None => Ok(Vec::new()),
        }
    }

    /// Counters of the submissions and readbacks so far.
    pub fn stats(&self) -> GpuStats {
        self.engine.stats
    }

    /// Bytes one iteration moves at least: the storage buffers each of its dispatches binds,
    /// each read or written once (the bound of the bandwidth figure of the benchmark).
    pub fn bytes_per_iteration(&self) -> u64 {
        self.program.iteration(1).into_iter().map(Step::bytes).sum()
    }

    fn read_monitors(&mut self, first: bool) -> Result<Vec<Monitor>> {
        self.engine.read_monitors(if first { 2 } else { 1 })
    }

    /// Solves the problem of `data` (uploaded, same as `sys` under `settings`): chunks of
    /// [`READBACK_EVERY`] iterations, each followed by the residual and the best-iterate
    /// bookkeeping on the GPU and one readback of a [`Monitor`]; the first submission also
    /// measures the initial iterate. The returned impulses (the last iterate if converged,
    /// else the best one) are read back once and their residual measured in `f64` on the
    /// CPU: the report's residual and merit certify the result.
    pub(crate) fn solve(
        &mut self,
        name: &'static str,
        sys: &System,
        settings: &Settings,
        data: &ProblemData,
    ) -> Result<Report> {
        let mut state: Option<(Progress, Option<Status>)> = None;
        let outcome = loop {
            let first = state.is_none();
            let done = state.as_ref().map_or(0, |(p, _)| p.iterations());
            let chunk = READBACK_EVERY.min(settings.max_iter - done);
            let mut encoder = self.engine.encoder();
            if first {
                let steps = self.program.start().iter().chain(self.program.measure(0));
                Engine::record(&mut encoder, steps);
                self.started = true;
                self.engine.record_monitor(&mut encoder, 0);
            }
            self.record_iterations(&mut encoder, chunk);
            Engine::record(&mut encoder, self.program.measure(self.done));
            self.engine.record_monitor(&mut encoder, u64::from(first));
            self.engine.submit(encoder);
            let monitors = self.read_monitors(first)?;
            let last = monitors[monitors.len() - 1];
            if first {
                let (progress, mut status) =
                    Progress::new(settings, &data.gamma_f64, residual(&monitors[0]));
                if settings.max_iter == 0 && status.is_none() {
                    status = Some(Status::MaxIterations);
                }
                if let Some(status) = status {
                    // Decided on the initial iterate, which the host still holds.
                    break (progress, status, None);
                }
                state = Some((progress, None));
            }
            let (progress, _) = state.as_mut().expect("set above");
            let products = (done..done + chunk).map(|k| self.program.products(k)).sum();
            let (status, _) =
                progress.observe(residual(&last), f64::from(last.gamma_inf), chunk, products);
            if let Some(status) = status {
                let (progress, _) = state.take().expect("set above");
                let buffer = if status == Status::Converged {
                    self.program.iterate(self.done)
                } else {
                    self.program.best()
                };
                break (progress, status, Some(buffer.clone()));
            }
        };
        let (progress, status, buffer) = outcome;
        let gamma = match buffer {
            Some(buffer) => self
                .engine
                .read_vector(&buffer)?
                .into_iter()
                .map(f64::from)
                .collect(),
            None => data.gamma_f64.clone(),
        };
        let u = biased_velocity(sys, settings, &gamma);
        let certified = merit::residual(sys, &gamma, &u, settings.friction, &data.eta);
        Ok(progress.report(name, sys, status, gamma, certified))
    }
}

/// The residual of a monitor, widened.
fn residual(m: &Monitor) -> Residual {
    Residual {
        inf: f64::from(m.inf),
        two: f64::from(m.two),
        relative: f64::from(m.relative),
        velocity: f64::from(m.velocity),
    }
}

/// A GPU solver's device (opened at its first solve) and its kernels, kept between solves:
/// a problem of the same sizes as the previous one (the next step of a simulation, the next
/// outer round of the Coulomb fixed point) only uploads its data.
#[derive(Default)]
pub(crate) struct Device {
    context: OnceLock<std::result::Result<Arc<GpuContext>, String>>,
    cache: Mutex<(Option<GpuKernels>, GpuStats)>,
}

impl std::fmt::Debug for Device {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Device").finish_non_exhaustive()
    }
}

impl Device {
    /// A device already opened.
    pub(crate) fn with_context(context: Arc<GpuContext>) -> Self {
        Device {
            context: OnceLock::from(Ok(context)),
            cache: Mutex::default(),
        }
    }

    /// The same device without its kernels.
    pub(crate) fn without_kernels(self) -> Self {
        Device {
            context: self.context,
            cache: Mutex::default(),
        }
    }

    /// The device, opened at the first call; `name` labels the error.
    pub(crate) fn context(&self, name: &str) -> Result<&GpuContext> {
        self.context
            .get_or_init(|| {
                GpuContext::new().map(Arc::new).map_err(|e| match e {
                    Error::Gpu(m) => m,
                    other => other.to_string(),
                })
            })
            .as_deref()
            .map_err(|m| Error::Gpu(format!("{name}: {m}")))
    }

    /// Zeroes the traffic counters (at the start of a solve).
    pub(crate) fn reset_stats(&self) {
        self.cache.lock().unwrap_or_else(|e| e.into_inner()).1 = GpuStats::default();
    }

    /// The traffic counters since [`Device::reset_stats`].
    pub(crate) fn stats(&self) -> GpuStats {
        self.cache.lock().unwrap_or_else(|e| e.into_inner()).1
    }

    /// Runs `f` on the cached kernels reloaded with `data` when it fits them, else on new
    /// ones from `build`.
    pub(crate) fn with_kernels<T>(
        &self,
        name: &str,
        data: &ProblemData,
        build: impl FnOnce(&GpuContext) -> Result<GpuKernels>,
        f: impl FnOnce(&mut GpuKernels) -> Result<T>,
    ) -> Result<T> {
        let ctx = self.context(name)?;
        let mut cache = self.cache.lock().unwrap_or_else(|e| e.into_inner());
        let (kernels, stats) = &mut *cache;
        let reused = kernels.as_mut().is_some_and(|k| k.reload(data));
        if !reused {
            *kernels = None;
            *kernels = Some(build(ctx)?);
        }
        let k = kernels.as_mut().expect("set above");
        let before = k.stats();
        let out = f(k);
        let after = k.stats();
        stats.submissions += after.submissions - before.submissions;
        stats.readbacks += after.readbacks - before.readbacks;
        stats.reused = reused;
        out
    }
}
