//! Running a scene: steps, per-step statistics to `steps.csv`, rendered snapshots (and their
//! animation) and VTK frames, and the totals of the run.

use std::path::PathBuf;
use std::time::Instant;

use serde::Serialize;

use super::report::frame::{FrameOptions, RunFrames};
use super::report::{SceneView, StepsCsv, write_pvd, write_vtk};
use crate::error::{Error, Result};
use crate::problem::io::Format;
use crate::sim::scene::Scene;
use crate::sim::{Pose, Shape, StepStats};
use crate::solver::Runner;

/// What a run writes besides `steps.csv`.
#[derive(Debug, Clone, Default)]
pub struct Outputs {
    /// Folder of `steps.csv`, `frame_XXXX.png` and the VTK frames.
    pub dir: PathBuf,
    /// Snapshot interval in steps (0 = none).
    pub snapshot_every: usize,
    /// How the snapshots are rendered, and the animation made of them.
    pub frames: FrameOptions,
    /// Also write VTK frames (and `frames.pvd`) at the snapshot interval.
    pub vtk: bool,
    /// Steps (1-based) whose problem is written as `problem_XXXX.<ext>` before it is solved.
    pub dump_steps: Vec<usize>,
    /// Also dump the problem of every `dump_every`-th step (0 = none).
    pub dump_every: usize,
    /// The format of the dumped problems.
    pub dump_format: Format,
}

impl Outputs {
    /// Whether the problem of step `k` (1-based) is dumped.
    fn dumps(&self, k: usize) -> bool {
        self.dump_steps.contains(&k) || (self.dump_every > 0 && k % self.dump_every == 0)
    }
}

/// Totals of a run.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Summary {
    /// Scene name.
    pub scene: String,
    /// Solver name.
    pub solver: String,
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
    /// Largest velocity residual of a step's answer, m/s.
    pub max_residual: f64,
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
    /// Snapshots written.
    pub snapshots: usize,
}

/// The view of a world's bodies for the writers.
fn view<'a>(shapes: &'a [Shape], poses: &'a [Pose], speeds: &'a [f64]) -> SceneView<'a> {
    SceneView {
        shapes,
        poses,
        speeds,
    }
}

/// Runs `steps` steps of `scene` with `solver` (one session for the whole run), writing the
/// outputs; `on_step` sees each step's statistics (a progress bar, a test).
pub fn run(
    scene: &mut Scene,
    solver: &mut Runner,
    steps: usize,
    outputs: &Outputs,
    mut on_step: impl FnMut(&StepStats),
) -> Result<Summary> {
    let start = Instant::now();
    if outputs.snapshot_every == 0 && outputs.frames.animation.is_some() {
        return Err(Error::InvalidSetting {
            name: "--animation",
            value: format!("{:?}", outputs.frames.animation),
            message: "an animation is made of the snapshots: set --snapshot-every".into(),
        });
    }
    std::fs::create_dir_all(&outputs.dir).map_err(|source| Error::Io {
        path: outputs.dir.clone(),
        source,
    })?;
    let mut csv = StepsCsv::create(&outputs.dir.join("steps.csv"))?;
    let world = &mut scene.world;
    let mut summary = Summary {
        scene: scene.name.clone(),
        solver: solver.name().to_string(),
        bodies: world.bodies.len(),
        ..Summary::default()
    };
    let shapes: Vec<_> = world.bodies.iter().map(|b| b.shape).collect();
    let opened = (outputs.snapshot_every > 0)
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
    let mut frames = Vec::new();
    let mut total_iterations = 0;
    for k in 1..=steps {
        if outputs.dumps(k) {
            let problem = world.problem().problem;
            let ext = outputs.dump_format.extension();
            let path = outputs.dir.join(format!("problem_{k:04}.{ext}"));
            crate::problem::io::write(&problem, &path, Some(outputs.dump_format))?;
        }
        let stats = world.step(solver)?;
        let out_start = Instant::now();
        csv.write(&stats)?;
        summary.steps = stats.step;
        summary.max_contacts = summary.max_contacts.max(stats.contacts);
        summary.bilateral_rows = stats.bilateral_rows;
        total_iterations += stats.iterations;
        summary.max_iterations = summary.max_iterations.max(stats.iterations);
        summary.max_residual = summary.max_residual.max(stats.residual);
        summary.max_penetration = summary.max_penetration.max(stats.max_penetration);
        summary.final_kinetic_energy = stats.kinetic_energy;
        summary.collision_s += stats.collision_s;
        summary.assembly_s += stats.assembly_s;
        summary.solve_s += stats.solve_s;
        if let Some(shots) = snapshots
            .as_mut()
            .filter(|_| stats.step % outputs.snapshot_every == 0)
        {
            let name = format!("frame_{:04}", stats.step);
            shots.write(world, &outputs.dir.join(format!("{name}.png")))?;
            if outputs.vtk {
                let poses: Vec<_> = world.bodies.iter().map(|b| b.pose).collect();
                let speeds: Vec<f64> = world.bodies.iter().map(|b| b.velocity.norm()).collect();
                let v = view(&shapes, &poses, &speeds);
                write_vtk(&outputs.dir.join(format!("{name}.vtk")), &v)?;
                frames.push((stats.time, format!("{name}.vtk")));
            }
            summary.snapshots += 1;
        }
        summary.output_s += out_start.elapsed().as_secs_f64();
        on_step(&stats);
    }
    csv.finish()?;
    if let Some(shots) = snapshots {
        shots.finish()?;
    }
    if outputs.vtk {
        write_pvd(&outputs.dir.join("frames.pvd"), &frames)?;
    }
    summary.simulated_time = world.time;
    summary.mean_iterations = total_iterations as f64 / summary.steps.max(1) as f64;
    summary.wall_s = start.elapsed().as_secs_f64();
    Ok(summary)
}
