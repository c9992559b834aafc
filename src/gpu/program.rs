//! The kernels of one GPU solver with their buffers ([`GpuKernels`]), the solve loop they
//! share (residual on the GPU every [`READBACK_EVERY`] iterations, `f64` certification of
//! the returned impulses on the CPU), and the one solver shell of the three GPU solvers
//! ([`GpuSolver`] over a [`Method`], with its [`GpuSession`] that keeps the kernels and
//! buffers while the problem's sizes stand).

use std::sync::{Arc, OnceLock};

use super::context::GpuContext;
use super::data::{Monitor, OperatorData, ProblemData};
use super::engine::{Engine, GpuStats, Step, record};
use super::kernels::{BLOCK_STEPS, Domain, Kernel};
use super::refine;
use crate::error::{Error, Result};
use crate::problem::System;
use crate::problem::merit::{self, Residual};
use crate::solver::progress::{Progress, biased_velocity, norm_inf};
use crate::solver::{Bias, Report, Session, Settings, Solver, Status, block_steps, coulomb};

/// The buffers a session makes when its problem outgrows the last ones: this many times the
/// new sizes (a simulation's contact count drifts from step to step).
const ROOM: f64 = 1.25;

/// Iterations recorded per command buffer; the residual (a few scalars) is read back after
/// each submission only, the impulses once at the end.
pub const READBACK_EVERY: usize = 10;

/// What a solver writes before each solve: the initial contents of one of its buffers, from
/// the problem's data.
pub(crate) type Initial = Box<dyn Fn(&ProblemData) -> Vec<u8> + Send>;

/// The initial impulses ([`ProblemData::gamma`]).
pub(crate) fn initial_gamma() -> Initial {
    Box::new(|data| bytemuck::cast_slice(&data.gamma).to_vec())
}

/// What a solver dispatches before its first iteration, and again every `every` iterations
/// (0: never again) to recompute what the updates carry forward (e.g. the gradient).
pub(crate) struct Start {
    steps: Vec<Step>,
    /// Products with `N` it spends.
    products: usize,
    every: usize,
}

impl Start {
    /// `steps`, spending `products` products, run again every `every` iterations.
    pub(crate) fn every(every: usize, products: usize, steps: Vec<Step>) -> Self {
        Start {
            steps,
            products,
            every,
        }
    }
}

/// One iteration of a solver from the iterate in `iterate`: its dispatches (one product with
/// `N`), and the dispatches that measure that iterate (residual, best iterate).
pub(crate) struct Phase {
    steps: Vec<Step>,
    measure: Vec<Step>,
    iterate: wgpu::Buffer,
}

impl Phase {
    /// The iteration `steps` from `iterate`, measured by `measure`.
    pub(crate) fn new(steps: Vec<Step>, measure: Vec<Step>, iterate: wgpu::Buffer) -> Self {
        Phase {
            steps,
            measure,
            iterate,
        }
    }
}

/// The dispatches that end an iteration of a descent method (SPG, APGD) once its direction
/// is in `d`: `ad = (N + E) d`, the `curvature` kernel's partials reduced into `scalars[slot]`,
/// the `scalars` kernel (step length, acceptance), and the `update` of the iterate. Each
/// kernel comes with its own buffers ([`Engine::step`]).
pub(crate) fn descent(
    ctx: &GpuContext,
    engine: &Engine,
    [d, ad]: [&wgpu::Buffer; 2],
    slot: u32,
    [curvature, scalars, update]: [(&Kernel, &[(&str, &wgpu::Buffer)]); 3],
) -> Result<Vec<Step>> {
    let mut steps = engine.apply(ctx, d, ad, false)?;
    steps.push(engine.step(ctx, curvature.0, curvature.1)?);
    steps.push(engine.reduce(ctx, Domain::Rows, slot)?);
    steps.push(engine.step(ctx, scalars.0, scalars.1)?);
    steps.push(engine.step(ctx, update.0, update.1)?);
    Ok(steps)
}

/// One GPU solver as a fixed schedule of dispatches: its [`Start`], then iteration `k`
/// (0-based) runs phase `k % len` (ping-pong buffers alternate phases).
pub(crate) struct Program {
    start: Start,
    phases: Vec<Phase>,
    /// The best measured iterate.
    best: wgpu::Buffer,
    /// The buffers written before each solve, with their contents.
    initial: Vec<(wgpu::Buffer, Initial)>,
}

impl Program {
    /// The schedule of `start` and `phases`, its best iterate in `best`, and the buffers
    /// written before each solve.
    pub(crate) fn new(
        start: Start,
        phases: Vec<Phase>,
        best: wgpu::Buffer,
        initial: Vec<(wgpu::Buffer, Initial)>,
    ) -> Self {
        Program {
            start,
            phases,
            best,
            initial,
        }
    }

    fn phase(&self, k: usize) -> &Phase {
        &self.phases[k % self.phases.len()]
    }

    fn refreshes(&self, k: usize) -> bool {
        self.start.every > 0 && (k + 1).is_multiple_of(self.start.every)
    }

    /// Dispatches of iteration `k` (0-based).
    fn iteration(&self, k: usize) -> impl Iterator<Item = &Step> {
        let refresh = if self.refreshes(k) {
            &self.start.steps[..]
        } else {
            &[]
        };
        self.phase(k).steps.iter().chain(refresh)
    }

    /// Products with `N` spent by iteration `k`.
    fn products(&self, k: usize) -> usize {
        1 + self.start.products * usize::from(self.refreshes(k))
    }

    /// Dispatches measuring the iterate after `k` iterations.
    fn measure(&self, k: usize) -> &[Step] {
        &self.phase(k).measure
    }

    /// The buffer holding the iterate after `k` iterations.
    fn iterate(&self, k: usize) -> &wgpu::Buffer {
        &self.phase(k).iterate
    }

    /// Writes the initial iterate and scalar state of `data` (after an upload).
    fn reset(&self, engine: &Engine, data: &ProblemData) {
        for (buffer, contents) in &self.initial {
            engine.write(buffer, &contents(data));
        }
    }
}

/// The kernels of one GPU solver (`jacobi-gpu`, `spg-gpu` or `apgd-gpu`) with the problem's
/// buffers uploaded.
///
/// [`GpuKernels::run`] records a number of iterations without any convergence test (the
/// throughput benchmark times it with [`GpuKernels::wait`]); the solvers drive them with
/// residuals measured on the GPU.
pub struct GpuKernels {
    engine: Engine,
    program: Program,
    /// The blocks' steps and preconditioner on the device (factored form), dispatched before
    /// the start of a solve whose data leaves them to it ([`ProblemData::device_steps`]).
    block_steps: Option<Step>,
    device_steps: bool,
    /// Iterations recorded since the start of the solve.
    done: usize,
    started: bool,
}

impl GpuKernels {
    /// The kernels `build` makes on buffers for `room` times the sizes of `data` (at least
    /// 1; see [`Engine::new`]), with `data` uploaded.
    pub(crate) fn new(
        ctx: &GpuContext,
        data: &ProblemData,
        room: f64,
        build: impl FnOnce(&Engine) -> Result<Program>,
    ) -> Result<Self> {
        let engine = Engine::new(ctx, data, room)?;
        let program = build(&engine)?;
        program.reset(&engine, data);
        let block_steps = match data.op {
            OperatorData::Factored { .. } => Some(engine.step(ctx, &BLOCK_STEPS, &[])?),
            OperatorData::Csr { .. } => None,
        };
        Ok(GpuKernels {
            engine,
            program,
            block_steps,
            device_steps: data.device_steps,
            done: 0,
            started: false,
        })
    }

    /// What a solve dispatches first: the blocks' steps when the device computes them, then
    /// the solver's start.
    fn start_steps(&self) -> impl Iterator<Item = &Step> {
        self.block_steps
            .iter()
            .filter(|_| self.device_steps)
            .chain(&self.program.start.steps)
    }

    /// Replaces the problem by `data` when it has the same sizes (the buffers and kernels are
    /// kept, the data uploaded again) and returns `true`; `false` leaves everything as is.
    pub fn reload(&mut self, data: &ProblemData) -> bool {
        if !self.engine.fits(data) {
            return false;
        }
        self.engine.upload(data);
        self.program.reset(&self.engine, data);
        self.device_steps = data.device_steps;
        self.done = 0;
        self.started = false;
        true
    }

    fn record_iterations(&mut self, encoder: &mut wgpu::CommandEncoder, iterations: usize) {
        let mut steps: Vec<&Step> = Vec::new();
        if !self.started {
            steps.extend(self.start_steps());
        }
        for k in self.done..self.done + iterations {
            steps.extend(self.program.iteration(k));
        }
        record(encoder, steps);
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
        self.engine.read(&buffer, self.engine.rows())
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
        self.program.iteration(1).map(Step::bytes).sum()
    }

    /// Iterates on the problem of `data` (uploaded) under `settings`: chunks of
    /// [`READBACK_EVERY`] iterations, each followed by the residual and the best-iterate
    /// bookkeeping on the GPU and one readback of a [`Monitor`]; the first submission also
    /// measures the initial iterate. Returns the progress, the status, the impulses (the
    /// last iterate if converged, else the best one), read back once and widened, and the
    /// GPU's `f32` measure of their residual.
    pub(crate) fn iterate<'a>(
        &mut self,
        settings: &'a Settings,
        data: &ProblemData,
    ) -> Result<(Progress<'a>, Status, Vec<f64>, Residual)> {
        let mut state: Option<(Progress, Option<Status>)> = None;
        let outcome = loop {
            let first = state.is_none();
            let done = state.as_ref().map_or(0, |(p, _)| p.iterations());
            let chunk = READBACK_EVERY.min(settings.max_iter - done);
            let mut encoder = self.engine.encoder();
            if first {
                let steps = self.start_steps().chain(self.program.measure(0));
                record(&mut encoder, steps);
                self.started = true;
                self.engine.record_monitor(&mut encoder)?;
            }
            self.record_iterations(&mut encoder, chunk);
            record(&mut encoder, self.program.measure(self.done));
            self.engine.record_monitor(&mut encoder)?;
            self.engine.submit(encoder);
            let monitors = self.engine.read_monitors()?;
            let last = monitors[monitors.len() - 1];
            if first {
                let (progress, mut status) = Progress::observing(
                    settings,
                    norm_inf(&data.gamma_f64),
                    residual(&monitors[0]),
                );
                if settings.max_iter == 0 && status.is_none() {
                    status = Some(Status::MaxIterations);
                }
                if let Some(status) = status {
                    // Decided on the initial iterate, which the host still holds.
                    break (progress, status, None, residual(&monitors[0]));
                }
                state = Some((progress.with_scale(data.gamma_scale), None));
            }
            let (progress, _) = state.as_mut().expect("set above");
            let products = (done..done + chunk).map(|k| self.program.products(k)).sum();
            let (status, _) =
                progress.observe(residual(&last), f64::from(last.gamma_inf), chunk, products);
            if let Some(status) = status {
                let (progress, _) = state.take().expect("set above");
                let (buffer, measured) = if status == Status::Converged {
                    (self.program.iterate(self.done), residual(&last))
                } else {
                    (&self.program.best, progress.best_residual())
                };
                break (progress, status, Some(buffer.clone()), measured);
            }
        };
        let (progress, status, buffer, measured) = outcome;
        let gamma = match buffer {
            Some(buffer) => self
                .engine
                .read(&buffer, self.engine.rows())?
                .into_iter()
                .map(f64::from)
                .collect(),
            None => data.gamma_f64.clone(),
        };
        Ok((progress, status, gamma, measured))
    }

    /// Solves the problem of `data` (uploaded, same as `sys` with `bias` under `settings`)
    /// by [`GpuKernels::iterate`]; with [`Settings::certify`], then measures the residual
    /// of the returned impulses in `f64` on the CPU, so that the report's residual certifies
    /// the result (else it is the GPU's `f32` measure).
    pub(crate) fn solve(
        &mut self,
        name: &'static str,
        sys: &System,
        settings: &Settings,
        bias: Bias,
        data: &ProblemData,
    ) -> Result<Report> {
        let (progress, status, gamma, measured) = self.iterate(settings, data)?;
        let residual = if settings.certify {
            let u = biased_velocity(sys, bias, &gamma);
            merit::residual(
                sys,
                &gamma,
                &u,
                settings.friction,
                &host_steps(sys, settings, data),
            )
        } else {
            measured
        };
        Ok(progress.report(name, sys, status, gamma, residual, None))
    }
}

/// The blocks' steps `η_k` in `f64` of `data`'s problem: its own, or computed now when the
/// device computed them ([`ProblemData::device_steps`]).
fn host_steps<'a>(
    sys: &System,
    settings: &Settings,
    data: &'a ProblemData,
) -> std::borrow::Cow<'a, [f64]> {
    if data.eta.len() == sys.blocks() {
        std::borrow::Cow::Borrowed(&data.eta)
    } else {
        std::borrow::Cow::Owned(block_steps(sys, settings.block_step))
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

/// What tells one GPU solver from another: its name, parameters, the data its kernels read
/// and the kernels themselves. [`GpuSolver`] and [`GpuSession`] are the shell they share.
pub trait Method: Clone + Default + std::fmt::Debug + Send + Sync + 'static {
    /// The registry name.
    const NAME: &'static str;
    /// Whether the Coulomb model runs as the outer De Saxcé fixed point of the CPU solvers
    /// (`solver::coulomb`) around CCP solves, rather than inside the kernels.
    const OUTER_COULOMB: bool;

    /// Checks the parameters.
    fn check(&self) -> Result<()> {
        Ok(())
    }

    /// The data of `sys` with `bias` added to `r`, under `settings` (the blocks' steps left
    /// to the device where it computes them).
    fn data(&self, sys: &System, settings: &Settings, bias: Bias) -> Result<ProblemData> {
        ProblemData::for_device(sys, settings, bias)
    }

    /// The kernels on `data`, on buffers for `room` times its sizes (at least 1).
    fn kernels(&self, ctx: &GpuContext, data: &ProblemData, room: f64) -> Result<GpuKernels>;
}

/// A GPU solver: a [`Method`] and its device, opened at the first [`Solver::prepare`]
/// (without an adapter that is an [`Error::Gpu`]) and shared by its sessions.
#[derive(Debug, Default)]
pub struct GpuSolver<M> {
    method: M,
    context: OnceLock<std::result::Result<Arc<GpuContext>, String>>,
}

impl<M: Method> GpuSolver<M> {
    /// The solver on an already opened device.
    pub fn with_context(context: Arc<GpuContext>) -> Self {
        GpuSolver {
            method: M::default(),
            context: OnceLock::from(Ok(context)),
        }
    }

    /// The method (parameters).
    pub(crate) fn method(&self) -> &M {
        &self.method
    }

    /// The same solver with another method, on the same device.
    pub(crate) fn map_method(self, method: M) -> Self {
        GpuSolver {
            method,
            context: self.context,
        }
    }

    /// The device, opened at the first call.
    fn context(&self) -> Result<Arc<GpuContext>> {
        self.context
            .get_or_init(|| {
                GpuContext::new().map(Arc::new).map_err(|e| match e {
                    Error::Gpu(m) => m,
                    other => other.to_string(),
                })
            })
            .clone()
            .map_err(|m| Error::Gpu(format!("{}: {m}", M::NAME)))
    }

    /// A session on the device (opened if needed), after checking the parameters.
    pub fn session(&self) -> Result<GpuSession<M>> {
        self.method.check()?;
        Ok(GpuSession {
            method: self.method.clone(),
            context: self.context()?,
            kernels: None,
            correction: None,
            stats: GpuStats::default(),
            analyses: 0,
        })
    }

    /// [`Solver::solve`] that also returns the host–GPU traffic counters.
    pub fn solve_with_stats(
        &self,
        sys: &System,
        settings: &Settings,
    ) -> Result<(Report, GpuStats)> {
        self.session()?.solve_with_stats(sys, settings)
    }
}

impl<M: Method> Solver for GpuSolver<M> {
    fn name(&self) -> &'static str {
        M::NAME
    }

    fn prepare(&self, _sys: &System, _settings: &Settings) -> Result<Box<dyn Session>> {
        Ok(Box::new(self.session()?))
    }
}

/// A GPU solver's session: the kernels and buffers of the last problem, kept while the
/// problem's sizes stand (the next step of a simulation, the next outer round of the
/// Coulomb fixed point only upload their data) and rebuilt when they change; and those of the
/// correction problems of mixed-precision refinement ([`super::refine`]), kept likewise.
pub struct GpuSession<M> {
    method: M,
    context: Arc<GpuContext>,
    kernels: Option<GpuKernels>,
    correction: Option<GpuKernels>,
    /// Traffic of the last solve.
    stats: GpuStats,
    analyses: usize,
}

/// The kernels of `slot` on `data`: reloaded when the sizes fit, else built anew (counted in
/// `analyses`); with whether they were reused.
fn kernels_for<'a, M: Method>(
    method: &M,
    context: &GpuContext,
    slot: &'a mut Option<GpuKernels>,
    data: &ProblemData,
    analyses: &mut usize,
) -> Result<(&'a mut GpuKernels, bool)> {
    let reused = slot.as_mut().is_some_and(|k| k.reload(data));
    if !reused {
        // A session whose problem changed size (the next step of a simulation) takes
        // buffers with room to spare, so that the steps after it reuse them.
        let room = if slot.is_some() { ROOM } else { 1.0 };
        *slot = None;
        *slot = Some(method.kernels(context, data, room)?);
        *analyses += 1;
    }
    Ok((slot.as_mut().expect("set above"), reused))
}

/// Adds the traffic of `run` on `kernels` to `stats`.
fn counted<T>(
    stats: &mut GpuStats,
    kernels: &mut GpuKernels,
    run: impl FnOnce(&mut GpuKernels) -> T,
) -> T {
    let before = kernels.stats();
    let out = run(kernels);
    let after = kernels.stats();
    stats.submissions += after.submissions - before.submissions;
    stats.readbacks += after.readbacks - before.readbacks;
    out
}

impl<M: Method> GpuSession<M> {
    /// [`Session::solve`] that also returns the host–GPU traffic counters of this solve.
    ///
    /// A tolerance below [`super::refine::F32_REACH`] refines the `f32` answer to `f64`
    /// accuracy ([`super::refine`]); the Coulomb model then runs as the outer De Saxcé fixed
    /// point for every method, each inner CCP solve refined.
    pub fn solve_with_stats(
        &mut self,
        sys: &System,
        settings: &Settings,
    ) -> Result<(Report, GpuStats)> {
        settings.validate(sys.rows())?;
        self.stats = GpuStats::default();
        let refined = refine::enabled(settings);
        let GpuSession {
            method,
            context,
            kernels,
            correction,
            stats,
            analyses,
        } = self;
        let mut solve = |s: &Settings, bias: Bias| -> Result<Report> {
            let mut data = method.data(sys, s, bias)?;
            if refined {
                // The correction problems and their certification take the steps in f64.
                data.eta = host_steps(sys, s, &data).into_owned();
            }
            let (k, reused) = kernels_for(method, context, kernels, &data, analyses)?;
            stats.reused = reused;
            if !refined {
                return counted(stats, k, |k| k.solve(M::NAME, sys, s, bias, &data));
            }
            let first_settings = refine::first_settings(s);
            let first = counted(stats, k, |k| {
                k.solve(M::NAME, sys, &first_settings, bias, &data)
            })?;
            refine::refine(sys, s, bias, &data, first, |cdata, cs| {
                let (k, _) = kernels_for(method, context, correction, cdata, analyses)?;
                let (progress, _, delta, _) = counted(stats, k, |k| k.iterate(cs, cdata))?;
                Ok(refine::Round {
                    iterations: progress.iterations(),
                    products: progress.products(),
                    delta,
                })
            })
        };
        let report = if M::OUTER_COULOMB || refined {
            coulomb::solve(M::NAME, sys, settings, coulomb::Rounds::Exact, solve)?
        } else {
            solve(settings, None)?
        };
        Ok((report, self.stats))
    }
}

impl<M: Method> Session for GpuSession<M> {
    fn name(&self) -> &'static str {
        M::NAME
    }

    fn solve(&mut self, sys: &System, settings: &Settings) -> Result<Report> {
        self.solve_with_stats(sys, settings)
            .map(|(report, _)| report)
    }

    fn analyses(&self) -> usize {
        self.analyses
    }
}
