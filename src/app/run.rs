//! Running a scene: steps, per-step statistics to `steps.csv` (and, with a prescribed linear
//! drive, its force and displacement to `force_displacement.csv`), rendered snapshots (and their
//! animation) and VTK frames, and the totals of the run, with how many steps met the solver's tolerance.
//!
//! The output folder is touched only once there is something to write: a run into a used
//! folder first removes the previous run's files (`steps.csv`, frames, dumped problems), and
//! a run that fails before its first step leaves nothing behind.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;

use serde::Serialize;

use super::report::drives::{self, DrivesCsv};
use super::report::frame::{FrameOptions, RunFrames};
use super::report::trajectory::TrajectoryWriter;
use super::report::{SceneView, StepsCsv, write_pvd, write_vtk};
use crate::error::{Error, Result};
use crate::gpu::GpuContext;
use crate::gpu::step::StepSolver;
use crate::problem::io::Format;
use crate::render::StateSpheres;
use crate::sim::fe::Solid;
use crate::sim::resident::{self, Resident};
use crate::sim::scene::Scene;
use crate::sim::{Pose, Shape, StepStats, World};
use crate::solver::{Criterion, Runner, Status};

/// What a run writes besides `steps.csv`.
#[derive(Debug, Clone, Default)]
pub struct Outputs {
    /// Folder of `steps.csv`, `frame_XXXX.png` and the VTK frames.
    pub dir: PathBuf,
    /// Snapshot interval in steps (0 = none).
    pub snapshot_every: usize,
    /// How the snapshots are rendered, and the animation made of them.
    pub frames: FrameOptions,
    /// Render no PNG frames at the snapshots (the trajectory or the VTK frames only).
    pub no_frames: bool,
    /// Also write VTK frames (and `frames.pvd`) at the snapshot interval.
    pub vtk: bool,
    /// Also stream the bodies' poses at the snapshot interval (and at the start) to this
    /// trajectory file ([`super::report::trajectory`]).
    pub trajectory: Option<PathBuf>,
    /// Steps (1-based) whose problem is written as `problem_XXXX.<ext>` before it is solved.
    pub dump_steps: Vec<usize>,
    /// Also dump the problem of every `dump_every`-th step (0 = none).
    pub dump_every: usize,
    /// The format of the dumped problems.
    pub dump_format: Format,
    /// Keep collision detection and assembly on the CPU (the `gpu-solve` pipeline) even
    /// where the scene qualifies for the GPU-resident step.
    pub gpu_solve_only: bool,
}

/// Where a run's steps happen.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Pipeline {
    /// Collision, assembly, solve and integration on the CPU.
    #[default]
    Cpu,
    /// Collision and assembly on the CPU, the solve on the GPU.
    GpuSolve,
    /// The whole step on the GPU, the state resident there ([`crate::sim::resident`]).
    GpuResident,
}

impl Pipeline {
    /// Its name in the summary and the JSON (`cpu`, `gpu-solve`, `gpu-resident`).
    pub fn name(self) -> &'static str {
        match self {
            Pipeline::Cpu => "cpu",
            Pipeline::GpuSolve => "gpu-solve",
            Pipeline::GpuResident => "gpu-resident",
        }
    }
}

impl Outputs {
    /// Whether the problem of step `k` (1-based) is dumped.
    fn dumps(&self, k: usize) -> bool {
        self.dump_steps.contains(&k) || (self.dump_every > 0 && k.is_multiple_of(self.dump_every))
    }
}

/// Totals of a run.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Summary {
    /// Scene name.
    pub scene: String,
    /// Solver name.
    pub solver: String,
    /// Where the steps ran.
    pub pipeline: Pipeline,
    /// Why the run did not take the GPU-resident pipeline with a GPU solver (empty
    /// otherwise).
    pub pipeline_note: String,
    /// Steps taken.
    pub steps: usize,
    /// Bodies.
    pub bodies: usize,
    /// Simulated time, s.
    pub simulated_time: f64,
    /// Largest number of contacts in a step.
    pub max_contacts: usize,
    /// Bilateral rows per step.
    pub bilateral_rows: usize,
    /// Mean solver iterations per step.
    pub mean_iterations: f64,
    /// Most solver iterations in a step.
    pub max_iterations: usize,
    /// Mean outer rounds of the Coulomb model's De Saxcé fixed point per step (0 under the
    /// CCP model).
    pub mean_rounds: f64,
    /// Largest velocity residual of a step's answer, m/s.
    pub max_residual: f64,
    /// The solver's tolerance, on `criterion`.
    pub tolerance: f64,
    /// The residual the tolerance applies to.
    pub criterion: Criterion,
    /// Steps whose solve did not meet the tolerance (every status but `converged`).
    pub steps_not_converged: usize,
    /// Of those, steps stopped at the iteration cap (`max_iterations`).
    pub steps_at_cap: usize,
    /// Of those, steps whose residual stopped improving (`stalled`).
    pub steps_stalled: usize,
    /// Of those, steps without a usable answer (`numerical_error`, `no_solution`,
    /// `infeasible`).
    pub steps_without_answer: usize,
    /// Largest value of the criterion's residual among the steps that missed the tolerance.
    pub worst_missed_residual: f64,
    /// Largest penetration seen, m.
    pub max_penetration: f64,
    /// Kinetic energy at the end, J.
    pub final_kinetic_energy: f64,
    /// Wall time of the whole run, s.
    pub wall_s: f64,
    /// Time in collision detection, s.
    pub collision_s: f64,
    /// Time in assembly (problem and prepared system), s.
    pub assembly_s: f64,
    /// Time in the solver, s.
    pub solve_s: f64,
    /// Time in outputs (CSV, snapshots, VTK), s.
    pub output_s: f64,
    /// Host time per step outside outputs and outside waiting on the GPU, s. On the
    /// GPU-resident pipeline: recording, submitting and reading back the statistics; on
    /// the CPU: the whole step; on `gpu-solve`: collision, assembly and the solve's host
    /// side including its waits (an upper bound).
    pub host_s: f64,
    /// Device memory of the GPU-resident step's buffers at the end of the run (the room for
    /// contacts as it grew), bytes; 0 on the other pipelines.
    pub gpu_memory_bytes: u64,
    /// The step at which the run stopped early and why (a non-finite state), if it did.
    pub stopped: Option<String>,
    /// Snapshots written.
    pub snapshots: usize,
}

impl Summary {
    /// Counts the status of one step.
    fn count(&mut self, status: Status, residual: f64) {
        if status == Status::Converged {
            return;
        }
        self.steps_not_converged += 1;
        self.worst_missed_residual = self.worst_missed_residual.max(residual);
        match status {
            Status::MaxIterations => self.steps_at_cap += 1,
            Status::Stalled => self.steps_stalled += 1,
            _ => self.steps_without_answer += 1,
        }
    }

    /// The convergence line of the summary: `tolerance 1e-3 (velocity): 98 of 100 steps
    /// stopped at the iteration cap, worst residual 7.6e-2`.
    pub fn convergence_line(&self) -> String {
        let criterion = match self.criterion {
            Criterion::Relative => "relative",
            Criterion::Velocity => "velocity",
        };
        let head = format!("tolerance {:e} ({criterion})", self.tolerance);
        if self.steps_not_converged == 0 {
            return format!("{head}: all {} steps converged", self.steps);
        }
        let n = self.steps;
        let parts: Vec<String> = [
            (self.steps_at_cap, "stopped at the iteration cap"),
            (self.steps_stalled, "stalled"),
            (self.steps_without_answer, "gave no usable answer"),
        ]
        .iter()
        .filter(|(k, _)| *k > 0)
        .map(|(k, what)| format!("{k} of {n} steps {what}"))
        .collect();
        format!(
            "{head}: {}, worst residual {:.1e}",
            parts.join(", "),
            self.worst_missed_residual
        )
    }
}

/// The files a run writes into its folder: what a new run removes first.
fn is_run_output(name: &str) -> bool {
    name == "steps.csv"
        || name == drives::FILE
        || name == "frames.pvd"
        || ((name.starts_with("frame_") || name.starts_with("problem_"))
            && [".png", ".vtk", ".json", ".bin", ".hdf5"]
                .iter()
                .any(|ext| name.ends_with(ext)))
}

/// The output folder of a run, prepared at its first write.
struct Folder {
    dir: PathBuf,
    /// Whether this run created the folder.
    created: bool,
    prepared: bool,
}

impl Folder {
    /// Creates the folder, or removes the previous run's files from it, once.
    fn prepare(&mut self) -> Result<&Path> {
        if !self.prepared {
            let io = |source| Error::Io {
                path: self.dir.clone(),
                source,
            };
            self.created = !self.dir.exists();
            std::fs::create_dir_all(&self.dir).map_err(io)?;
            for entry in std::fs::read_dir(&self.dir).map_err(io)? {
                let entry = entry.map_err(io)?;
                if entry.file_name().to_str().is_some_and(is_run_output) {
                    std::fs::remove_file(entry.path()).map_err(io)?;
                }
            }
            self.prepared = true;
        }
        Ok(&self.dir)
    }

    /// After a failure before the first step: removes what this run wrote.
    fn clean_up(&self) {
        if !self.prepared {
            return;
        }
        if self.created {
            let _ = std::fs::remove_dir_all(&self.dir);
        } else if let Ok(entries) = std::fs::read_dir(&self.dir) {
            for entry in entries.flatten() {
                if entry.file_name().to_str().is_some_and(is_run_output) {
                    let _ = std::fs::remove_file(entry.path());
                }
            }
        }
    }
}

/// The view of a world's bodies and solids for the writers.
fn view<'a>(
    shapes: &'a [Shape],
    poses: &'a [Pose],
    speeds: &'a [f64],
    solids: &'a [Solid],
) -> SceneView<'a> {
    SceneView {
        shapes,
        poses,
        speeds,
        solids,
    }
}

/// Runs `steps` steps of `scene` with `solver` (one session for the whole run), writing the
/// outputs; `on_step` sees each step's statistics (a progress bar, a test). A run that fails
/// before its first step is complete leaves nothing in the output folder.
pub fn run(
    scene: &mut Scene,
    solver: &mut Runner,
    steps: usize,
    outputs: &Outputs,
    on_step: impl FnMut(&StepStats),
) -> Result<Summary> {
    let mut folder = Folder {
        dir: outputs.dir.clone(),
        created: false,
        prepared: false,
    };
    let mut summary = Summary::default();
    let result = steps_of(
        scene,
        solver,
        steps,
        outputs,
        &mut folder,
        &mut summary,
        on_step,
    );
    if result.is_err() && summary.steps == 0 {
        folder.clean_up();
    }
    result.map(|()| summary)
}

/// The loop of [`run`], filling `summary` as the steps are taken.
fn steps_of(
    scene: &mut Scene,
    solver: &mut Runner,
    steps: usize,
    outputs: &Outputs,
    folder: &mut Folder,
    summary: &mut Summary,
    mut on_step: impl FnMut(&StepStats),
) -> Result<()> {
    let start = Instant::now();
    if outputs.snapshot_every == 0 && outputs.frames.animation.is_some() {
        return Err(Error::InvalidSetting {
            name: "--animation",
            value: format!("{:?}", outputs.frames.animation),
            message: "an animation is made of the snapshots: set --snapshot-every".into(),
        });
    }
    if outputs.snapshot_every == 0 && outputs.trajectory.is_some() {
        return Err(Error::InvalidSetting {
            name: "--trajectory",
            value: format!("{:?}", outputs.trajectory),
            message: "its frames are taken at the snapshots: set --snapshot-every".into(),
        });
    }
    let world = &mut scene.world;
    *summary = Summary {
        scene: scene.name.clone(),
        solver: solver.name().to_string(),
        bodies: world.bodies.len(),
        tolerance: world.settings.tol,
        criterion: world.settings.criterion,
        ..Summary::default()
    };
    let mut csv: Option<StepsCsv> = None;
    let mut drive_csv: Option<DrivesCsv> = None;
    let has_drives = !drives::linear_drives(world).is_empty();
    let shapes: Vec<_> = world.bodies.iter().map(|b| b.shape).collect();
    let opened = (outputs.snapshot_every > 0 && !outputs.no_frames)
        .then(|| {
            let count = steps / outputs.snapshot_every;
            RunFrames::new(&scene.name, world, solver.name(), &outputs.frames, count)
        })
        .transpose();
    // Frames need a Vulkan adapter (lavapipe will do); without one, a run that did not ask
    // for an animation goes on without its pictures, and says so.
    let mut snapshots = match opened {
        Err(Error::Gpu(message)) if outputs.frames.animation.is_none() => {
            eprintln!("note: no frames are rendered: {message}");
            None
        }
        other => other?,
    };
    let mut trajectory = match &outputs.trajectory {
        Some(path) => {
            let mut t = TrajectoryWriter::create(path, &scene.name, solver.name(), world)?;
            t.write(world)?;
            Some(t)
        }
        None => None,
    };
    let mut frames = Vec::new();
    let (mut total_iterations, mut total_rounds) = (0, 0);
    let ctx = snapshots.as_ref().map(RunFrames::context);
    let mut resident = resident_for(world, solver, outputs, summary, ctx)?;
    let first = world.steps;
    let every = outputs.snapshot_every;
    let mut host_s = 0.0;
    'run: for k in 1..=steps {
        let due = every > 0 && (first + k).is_multiple_of(every);
        let rows = match &mut resident {
            None => {
                if outputs.dumps(k) {
                    let problem = world.problem().problem;
                    let ext = outputs.dump_format.extension();
                    let path = folder.prepare()?.join(format!("problem_{k:04}.{ext}"));
                    crate::problem::io::write(&problem, &path, Some(outputs.dump_format))?;
                }
                if has_drives && drive_csv.is_none() {
                    let path = folder.prepare()?.join(drives::FILE);
                    drive_csv = Some(DrivesCsv::create(&path, world)?);
                }
                let (stats, report) = world.step_with_report(solver)?;
                host_s += stats.collision_s + stats.assembly_s + stats.solve_s;
                if let Some(d) = &mut drive_csv {
                    d.write(world)?;
                }
                vec![(stats, world.settings.criterion.of(&report.residual))]
            }
            Some(res) => {
                let mut rows = res.step()?;
                if due || k == steps {
                    rows.extend(res.flush()?);
                }
                rows
            }
        };
        let out_start = Instant::now();
        for (stats, residual) in rows {
            let csv = match &mut csv {
                Some(csv) => csv,
                None => csv.insert(StepsCsv::create(&folder.prepare()?.join("steps.csv"))?),
            };
            csv.write(&stats)?;
            summary.steps = stats.step;
            summary.count(stats.status, residual);
            summary.max_contacts = summary.max_contacts.max(stats.contacts);
            summary.bilateral_rows = stats.bilateral_rows;
            total_iterations += stats.iterations;
            total_rounds += stats.rounds;
            summary.max_iterations = summary.max_iterations.max(stats.iterations);
            summary.max_residual = summary.max_residual.max(stats.residual);
            summary.max_penetration = summary.max_penetration.max(stats.max_penetration);
            summary.final_kinetic_energy = stats.kinetic_energy;
            summary.collision_s += stats.collision_s;
            summary.assembly_s += stats.assembly_s;
            summary.solve_s += stats.solve_s;
            on_step(&stats);
            if resident.is_some() && stats.status == Status::NumericalError {
                // The state on the GPU is no longer finite: stop, keeping the frames so far.
                summary.stopped = Some(format!(
                    "step {}: numerical_error (an infinity or a NaN in the state on the GPU)",
                    stats.step
                ));
                summary.output_s += out_start.elapsed().as_secs_f64();
                break 'run;
            }
        }
        if due && (snapshots.is_some() || outputs.vtk || trajectory.is_some()) {
            // A frame colored by speed of the GPU-resident step is drawn from its state on
            // the device; the other outputs need the spheres read back.
            let from_state = !outputs.vtk
                && trajectory.is_none()
                && snapshots.as_ref().is_some_and(RunFrames::colors_by_speed);
            match &mut resident {
                Some(res) if from_state => res.sync_clock(world),
                Some(res) => res.sync(world)?,
                None => {}
            }
            let name = format!("frame_{:04}", first + k);
            if let Some(shots) = &mut snapshots {
                let path = folder.prepare()?.join(format!("{name}.png"));
                match resident.as_ref().filter(|_| from_state) {
                    Some(res) => {
                        let (buffer, count) = res.state();
                        shots.write_state(world, StateSpheres { buffer, count }, &path)?;
                    }
                    None => shots.write(world, &path)?,
                }
            }
            if let Some(t) = &mut trajectory {
                t.write(world)?;
            }
            if outputs.vtk {
                let poses: Vec<_> = world.bodies.iter().map(|b| b.pose).collect();
                let speeds: Vec<f64> = world.bodies.iter().map(|b| b.velocity.norm()).collect();
                let v = view(&shapes, &poses, &speeds, &world.solids);
                write_vtk(&folder.prepare()?.join(format!("{name}.vtk")), &v)?;
                frames.push((world.time, format!("{name}.vtk")));
            }
            summary.snapshots += 1;
        }
        summary.output_s += out_start.elapsed().as_secs_f64();
    }
    if let Some(res) = &mut resident {
        res.sync(world)?;
        host_s += res.host_s();
        summary.gpu_memory_bytes = res.memory_bytes();
    }
    if let Some(csv) = csv {
        csv.finish()?;
    }
    if let Some(d) = drive_csv {
        d.finish()?;
    }
    if let Some(shots) = snapshots {
        shots.finish()?;
    }
    if let Some(t) = trajectory {
        t.finish()?;
    }
    if outputs.vtk {
        write_pvd(&folder.prepare()?.join("frames.pvd"), &frames)?;
    }
    summary.simulated_time = world.time;
    summary.mean_iterations = total_iterations as f64 / summary.steps.max(1) as f64;
    summary.mean_rounds = total_rounds as f64 / summary.steps.max(1) as f64;
    summary.host_s = host_s / summary.steps.max(1) as f64;
    summary.wall_s = start.elapsed().as_secs_f64();
    Ok(())
}

/// The GPU-resident step of `world` when `solver` is `jacobi-gpu`, `spg-gpu` or `apgd-gpu`
/// ([`StepSolver::named`]) and the scene qualifies for it
/// (and no problem is dumped, which needs the CPU's assembly), on the device `ctx` (the
/// frames' device, so that they draw its state) or a new one; the pipeline taken and, for
/// a GPU solver that does not take it, why, go into `summary`.
fn resident_for(
    world: &World,
    solver: &Runner,
    outputs: &Outputs,
    summary: &mut Summary,
    ctx: Option<Arc<GpuContext>>,
) -> Result<Option<Resident>> {
    let entry = crate::registry::entry(solver.name());
    let gpu = entry.is_ok_and(|e| e.device == crate::registry::Device::Gpu);
    summary.pipeline = if gpu {
        Pipeline::GpuSolve
    } else {
        Pipeline::Cpu
    };
    if !gpu {
        return Ok(None);
    }
    let dumps = outputs.dump_steps.iter().any(|&k| k > 0) || outputs.dump_every > 0;
    let chosen = match StepSolver::named(solver.name()) {
        _ if outputs.gpu_solve_only => Err("asked for (--pipeline gpu-solve)".to_string()),
        None => Err(format!(
            "the GPU-resident step solves with jacobi-gpu, spg-gpu or apgd-gpu only, not {}",
            solver.name()
        )),
        Some(_) if world.settings.certify => {
            Err("the answers are certified in f64 (--certify), which needs them on the host".into())
        }
        Some(_) if dumps => Err("problems are dumped, which needs the CPU's assembly".into()),
        Some(method) => resident::unqualified(world).map_or(Ok(method), Err),
    };
    let method = match chosen {
        Ok(method) => method,
        Err(why) => {
            summary.pipeline_note = why;
            return Ok(None);
        }
    };
    let ctx = match ctx {
        Some(ctx) => ctx,
        None => Arc::new(GpuContext::new()?),
    };
    let res = Resident::on_device_with(ctx, world, method)?;
    summary.pipeline = Pipeline::GpuResident;
    Ok(Some(res))
}
