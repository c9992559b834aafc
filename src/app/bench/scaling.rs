//! `signorini bench scaling`: time per simulation step against the number of bodies, as
//! `simulate` runs it ([`crate::app::run::run`], no snapshots), split into collision
//! detection, assembly (problem and prepared system), solve and output (`steps.csv`), on
//! cubic packings of touching spheres ([`packing_scene`]) that have about three contacts per
//! body from the first step. `jacobi-gpu` takes the GPU-resident step there: its rows add
//! the host time per step and the GPU time of its two stages (detection with assembly;
//! iterations with integration), each waited for, and its device memory.

use std::path::Path;

use serde::Serialize;

use super::problems::packing_scene;
use super::report::{Cell, Plot, Section, Table, distinct, loglog_plot};
use super::solver_runs;
use crate::app::run::{Outputs, Pipeline, run as simulate};
use crate::error::{Error, Result};
use crate::gpu::GpuContext;
use crate::gpu::step::StepSolver;
use crate::registry::Device;
use crate::sim::Resident;
use crate::sim::scene::Scene;
use crate::solver::Runner;

/// What to measure.
#[derive(Debug, Clone, PartialEq)]
pub struct Config {
    /// Solver names or `all` ([`super::solver_runs`]).
    pub solvers: Vec<String>,
    /// Numbers of bodies.
    pub sizes: Vec<usize>,
    /// Devices to run on.
    pub devices: Vec<Device>,
    /// Steps per run.
    pub steps: usize,
    /// Iteration cap of each step's solve (the stepper's tolerance, 1e-6 m/s, may stop it
    /// earlier).
    pub max_iter: usize,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            solvers: vec!["pgs".into(), "jacobi".into()],
            sizes: vec![1000, 4000, 16_000],
            devices: vec![Device::Cpu, Device::Gpu],
            steps: 10,
            max_iter: 100,
        }
    }
}

/// One simulation run.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Row {
    /// Registry name of the solver.
    pub solver: String,
    /// `cpu` or `gpu`.
    pub device: &'static str,
    /// Bodies (the packing and the container's walls).
    pub bodies: usize,
    /// Most contacts of a step.
    pub max_contacts: usize,
    /// Steps run.
    pub steps: usize,
    /// Mean solver iterations per step.
    pub mean_iterations: f64,
    /// Wall time per step, s (all phases).
    pub step_s: f64,
    /// Collision detection per step, s.
    pub collision_s: f64,
    /// Assembly per step, s.
    pub assembly_s: f64,
    /// Solve per step, s.
    pub solve_s: f64,
    /// Output (`steps.csv`) per step, s.
    pub output_s: f64,
    /// Where the steps ran (`cpu`, `gpu-solve`, `gpu-resident`).
    pub pipeline: &'static str,
    /// Host time per step outside outputs and waits on the GPU, s ([`crate::app::run::Summary::host_s`]).
    pub host_s: f64,
    /// GPU-resident step: broad and narrow phase, assembly, warm start, s per step.
    pub gpu_detect_s: Option<f64>,
    /// GPU-resident step: the iterations, residual, integration and statistics, s per step.
    pub gpu_solve_s: Option<f64>,
    /// GPU-resident step: bytes of device memory per body.
    pub gpu_bytes_per_body: Option<f64>,
}

/// The GPU time of one kernel in the GPU-resident step.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct KernelRow {
    /// The solver of the step.
    pub solver: &'static str,
    /// Bodies of the scene.
    pub bodies: usize,
    /// The kernel's registry name.
    pub kernel: &'static str,
    /// GPU time per step, s (summed over its dispatches).
    pub s_per_step: f64,
    /// Its share of the step's summed kernel time.
    pub share: f64,
}

/// Steps timed stage by stage on the GPU-resident pipeline (after one untimed), then as
/// many kernel by kernel.
const TIMED_STEPS: usize = 3;

/// What [`stages`] measures.
struct Stages {
    detect_s: f64,
    solve_s: f64,
    bytes_per_body: f64,
    kernels: Vec<KernelRow>,
    timestamps: bool,
}

/// The stage times (detection, solve; s per step, each waited for), the GPU time of each
/// kernel and the device bytes per body of the GPU-resident step of `scene` solved by
/// `method`.
fn stages(ctx: &std::sync::Arc<GpuContext>, scene: &Scene, method: StepSolver) -> Result<Stages> {
    let mut res = Resident::on_device_with(ctx.clone(), &scene.world, method)?;
    res.step()?;
    res.flush()?;
    let (mut detect, mut solve) = (0.0, 0.0);
    let mut sums: Vec<(&'static str, f64)> = Vec::new();
    for _ in 0..TIMED_STEPS {
        let t = res.pipeline_mut().step_timed()?;
        detect += t.detect_s;
        solve += t.solve_s;
    }
    for _ in 0..TIMED_STEPS {
        for (kernel, t) in res.pipeline_mut().step_profiled()? {
            match sums.iter_mut().find(|(k, _)| *k == kernel) {
                Some((_, sum)) => *sum += t,
                None => sums.push((kernel, t)),
            }
        }
    }
    res.flush()?;
    let n = TIMED_STEPS as f64;
    let bodies = scene.world.bodies.len();
    let total: f64 = sums.iter().map(|(_, t)| t).sum();
    let kernels = sums
        .into_iter()
        .map(|(kernel, t)| KernelRow {
            solver: method.name(),
            bodies,
            kernel,
            s_per_step: t / n,
            share: t / total,
        })
        .collect();
    Ok(Stages {
        detect_s: detect / n,
        solve_s: solve / n,
        bytes_per_body: res.memory_bytes() as f64 / bodies as f64,
        kernels,
        timestamps: res.pipeline_mut().has_timestamps(),
    })
}

/// The result of a run.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Scaling {
    /// The measurements.
    pub rows: Vec<Row>,
    /// The GPU-resident step's time by kernel, per scene size.
    pub kernels: Vec<KernelRow>,
    /// Whether the kernels were timed by the GPU's timestamps (else wall time per dispatch).
    pub timestamps: bool,
    /// What was skipped and why.
    pub notes: Vec<String>,
}

/// Runs the suite; `gpu` says whether GPU runs are possible. The runs' `steps.csv` go to a
/// temporary folder, removed afterwards.
pub fn run(config: &Config, gpu: bool, progress: &mut dyn FnMut(&str)) -> Result<Scaling> {
    if config.steps == 0 || config.max_iter == 0 {
        return Err(Error::InvalidSetting {
            name: "steps",
            value: format!("{} (iterations {})", config.steps, config.max_iter),
            message: "at least one step of at least one iteration".into(),
        });
    }
    let mut notes = Vec::new();
    let runs = solver_runs(&config.solvers, &config.devices, gpu, &mut notes)?;
    let scratch = std::env::temp_dir().join(format!("signorini-scaling-{}", std::process::id()));
    let outputs = Outputs {
        dir: scratch.clone(),
        ..Outputs::default()
    };
    let mut rows = Vec::new();
    let mut kernels = Vec::new();
    let mut timestamps = false;
    let mut ctx = None;
    for &size in &config.sizes {
        for sr in &runs {
            progress(&format!(
                "{} on {size} bodies, {} steps",
                sr.solver, config.steps
            ));
            let mut scene = packing_scene(size, config.max_iter)?;
            let solver = sr.solver()?;
            let s = simulate(
                &mut scene,
                &mut Runner::new(solver),
                config.steps,
                &outputs,
                |_| {},
            )?;
            let per_step = |t: f64| t / s.steps as f64;
            let (gpu_detect_s, gpu_solve_s, gpu_bytes_per_body) = if s.pipeline
                == Pipeline::GpuResident
            {
                let ctx = match &ctx {
                    Some(ctx) => ctx,
                    None => ctx.insert(std::sync::Arc::new(GpuContext::new()?)),
                };
                let method = StepSolver::named(&s.solver)
                    .ok_or_else(|| Error::Gpu(format!("{} ran the GPU-resident step", s.solver)))?;
                let st = stages(ctx, &packing_scene(size, config.max_iter)?, method)?;
                timestamps = st.timestamps;
                kernels.extend(st.kernels);
                (Some(st.detect_s), Some(st.solve_s), Some(st.bytes_per_body))
            } else {
                (None, None, None)
            };
            rows.push(Row {
                solver: sr.solver.clone(),
                device: sr.device,
                bodies: s.bodies,
                max_contacts: s.max_contacts,
                steps: s.steps,
                mean_iterations: s.mean_iterations,
                step_s: per_step(s.wall_s),
                collision_s: per_step(s.collision_s),
                assembly_s: per_step(s.assembly_s),
                solve_s: per_step(s.solve_s),
                output_s: per_step(s.output_s),
                pipeline: s.pipeline.name(),
                host_s: s.host_s,
                gpu_detect_s,
                gpu_solve_s,
                gpu_bytes_per_body,
            });
        }
    }
    // Best effort: the folder holds only the runs' steps.csv.
    let _ = std::fs::remove_dir_all(&scratch);
    Ok(Scaling {
        rows,
        kernels,
        timestamps,
        notes,
    })
}

impl Scaling {
    /// The report's section: the table (`scaling.csv`) and the log-log chart of time per
    /// step against bodies, total and solve per run plus collision and assembly
    /// (`scaling.png`, written into `dir`).
    pub fn section(&self, dir: &Path) -> Result<Section> {
        let table = Table::of(
            "scaling",
            "Time per step of `simulate` on packings of touching spheres, split by phase.",
            &self.rows,
            &[
                ("solver", |r| Cell::text(&r.solver)),
                ("device", |r| Cell::text(r.device)),
                ("bodies", |r| Cell::int(r.bodies)),
                ("contacts (max)", |r| Cell::int(r.max_contacts)),
                ("steps", |r| Cell::int(r.steps)),
                ("iterations/step", |r| Cell::Num(r.mean_iterations)),
                ("s/step", |r| Cell::Num(r.step_s)),
                ("collision s/step", |r| Cell::Num(r.collision_s)),
                ("assembly s/step", |r| Cell::Num(r.assembly_s)),
                ("solve s/step", |r| Cell::Num(r.solve_s)),
                ("output s/step", |r| Cell::Num(r.output_s)),
                ("solve share", |r| Cell::Num(r.solve_s / r.step_s)),
                ("pipeline", |r| Cell::text(r.pipeline)),
                ("host s/step", |r| Cell::Num(r.host_s)),
                ("host share", |r| Cell::Num(r.host_s / r.step_s)),
                ("GPU detect s/step", |r| {
                    r.gpu_detect_s.map_or(Cell::Missing, Cell::Num)
                }),
                ("GPU solve s/step", |r| {
                    r.gpu_solve_s.map_or(Cell::Missing, Cell::Num)
                }),
                ("GPU bytes/body", |r| {
                    r.gpu_bytes_per_body.map_or(Cell::Missing, Cell::Num)
                }),
            ],
        );
        let mut tables = vec![table];
        if !self.kernels.is_empty() {
            let how = if self.timestamps {
                "the GPU's timestamps around each dispatch"
            } else {
                "wall time of each dispatch submitted alone (no timestamp queries on this adapter)"
            };
            tables.push(Table::of(
                "scaling_kernels",
                &format!("GPU time of the resident step by kernel ({how}), per step."),
                &self.kernels,
                &[
                    ("solver", |r| Cell::text(r.solver)),
                    ("bodies", |r| Cell::int(r.bodies)),
                    ("kernel", |r| Cell::text(r.kernel)),
                    ("GPU s/step", |r| Cell::Num(r.s_per_step)),
                    ("share", |r| Cell::Num(r.share)),
                ],
            ));
        }
        let solvers = distinct(self.rows.iter().map(|r| r.solver.as_str()));
        let curve = |solver: &str, f: fn(&Row) -> f64| -> Vec<(f64, f64)> {
            self.rows
                .iter()
                .filter(|r| r.solver == solver)
                .map(|r| (r.bodies as f64, f(r)))
                .collect()
        };
        let mut lines = Vec::new();
        for &solver in &solvers {
            lines.push((format!("{solver}: step"), curve(solver, |r| r.step_s)));
            lines.push((format!("{solver}: solve"), curve(solver, |r| r.solve_s)));
        }
        // Collision and assembly do not depend on the solver: drawn once, from the first.
        if let Some(&first) = solvers.first() {
            lines.push(("collision".into(), curve(first, |r| r.collision_s)));
            lines.push(("assembly".into(), curve(first, |r| r.assembly_s)));
        }
        let plot = Plot {
            file: "scaling.png".into(),
            caption: "Seconds per step against bodies, by phase (log-log)".into(),
        };
        let plots = loglog_plot(
            dir,
            plot,
            "time per step against bodies",
            ("bodies", "seconds per step"),
            &lines,
        )?;
        Ok(Section {
            heading: "Scaling".into(),
            text: vec![
                "Each run simulates a cubic packing of touching spheres in an open box (μ = 0.5, \
                 h = 10 ms, warm start) as `simulate` does, without snapshots; the phases are \
                 the stepper's timers: collision detection, assembly (Jacobians, free \
                 velocities and the prepared system), the solve, and the output of `steps.csv`. \
                 `jacobi-gpu`, `spg-gpu` and `apgd-gpu` take the GPU-resident step (pipeline \
                 `gpu-resident`): its whole \
                 step counts as solve; its two stages are timed apart over a few more steps, \
                 each waited for (wall time), with its device memory per body; host time is \
                 what the host spends outside the waits. Then a few more steps run each \
                 dispatch in a compute pass of its own, timed kernel by kernel."
                    .into(),
            ],
            tables,
            plots,
            notes: self.notes.clone(),
        })
    }
}
