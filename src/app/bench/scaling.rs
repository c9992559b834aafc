//! `signorini bench scaling`: time per simulation step against the number of bodies, as
//! `simulate` runs it ([`crate::app::run::run`], no snapshots), split into collision
//! detection, assembly (problem and prepared system), solve and output (`steps.csv`), on
//! cubic packings of touching spheres ([`packing_scene`]) that have about three contacts per
//! body from the first step.

use std::path::Path;

use serde::Serialize;

use super::problems::packing_scene;
use super::report::{Cell, Plot, Section, Table, distinct, loglog_plot};
use super::solver_runs;
use crate::app::run::{Outputs, run as simulate};
use crate::error::{Error, Result};
use crate::registry::Device;
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
}

/// The result of a run.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Scaling {
    /// The measurements.
    pub rows: Vec<Row>,
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
            });
        }
    }
    // Best effort: the folder holds only the runs' steps.csv.
    let _ = std::fs::remove_dir_all(&scratch);
    Ok(Scaling { rows, notes })
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
            ],
        );
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
                 velocities and the prepared system), the solve, and the output of `steps.csv`."
                    .into(),
            ],
            tables: vec![table],
            plots,
            notes: self.notes.clone(),
        })
    }
}
