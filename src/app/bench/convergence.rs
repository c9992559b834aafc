//! `signorini bench convergence`: residual against iterations and against wall time of
//! every requested solver, CPU and GPU, on one step of each benchmark scene (B1–B4 and the
//! tracked vehicle of paper 004, balls_in_box, the thesis' three-point bending:
//! [`scene_cases`]), cold start, CCP model: the study of
//! `docs/CONVERGENCE.md`, reproducible from the command line.

use super::SceneSolves;
use std::path::Path;

use serde::Serialize;

use super::problems::scene_cases;
use super::report::{CONVERGENCE_PLOT_SIZE, Cell, Plot, Section, Table};
use super::{first_below, solver_runs};
use crate::app::report::convergence::{Series, write_convergence_plot};
use crate::error::Result;
use crate::problem::System;
use crate::solver::{Settings, Status, TraceEntry};

/// What to measure: [`SceneSolves`], by default every solver at 300 bodies per scene,
/// at most 3000 iterations, tolerance 1e-6.
pub type Config = SceneSolves;

/// The default [`Config`].
pub fn default_config() -> Config {
    SceneSolves::all_solvers(300, 3000, 1e-6)
}

/// The intermediate threshold of the table (residual 1e-4, as in `docs/CONVERGENCE.md`).
const MID: f64 = 1e-4;

/// One solve.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Run {
    /// The problem (scene, bodies, step).
    pub problem: String,
    /// Short label of the problem and its size (`B1-300`), the stem of its chart.
    pub key: String,
    /// Rows of the problem.
    pub rows: usize,
    /// Registry name of the solver.
    pub solver: String,
    /// `cpu` or `gpu`.
    pub device: &'static str,
    /// How it ended.
    pub status: Status,
    /// Iterations run.
    pub iterations: usize,
    /// Wall time of the solve, s.
    pub time_s: f64,
    /// Smallest residual of the trace.
    pub best_residual: f64,
    /// First `(iteration, seconds)` at or below 1e-4.
    pub to_mid: Option<(usize, f64)>,
    /// First `(iteration, seconds)` at or below the tolerance.
    pub to_tol: Option<(usize, f64)>,
    /// The trace (relative residual per measured iterate).
    pub trace: Vec<TraceEntry>,
}

/// The result of a run.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Convergence {
    /// The tolerance of the solves.
    pub tol: f64,
    /// The iteration cap of the solves.
    pub max_iter: usize,
    /// The solves, problem by problem.
    pub runs: Vec<Run>,
    /// What was skipped and why.
    pub notes: Vec<String>,
}

/// Runs the suite; `gpu` says whether GPU runs are possible.
pub fn run(config: &Config, gpu: bool, progress: &mut dyn FnMut(&str)) -> Result<Convergence> {
    config.validate()?;
    let mut notes = Vec::new();
    let solver_runs = solver_runs(&config.solvers, &config.devices, gpu, &mut notes)?;
    let mut runs = Vec::new();
    for &size in &config.sizes {
        for case in scene_cases(size) {
            progress(&format!(
                "{} {} at {size} bodies: stepping",
                case.label, case.scene
            ));
            let (scene, problem) = case.problem()?;
            let sys = System::new(&problem)?;
            let settings = Settings {
                friction: scene.world.settings.friction_model,
                tol: config.tol,
                max_iter: config.max_iter,
                stall_iterations: config.max_iter,
                ..Settings::default()
            };
            for sr in &solver_runs {
                progress(&format!("{}: {}", problem.name, sr.solver));
                let report = sr.solver()?.solve(&sys, &settings)?;
                let best_residual = report
                    .trace
                    .iter()
                    .map(|t| t.residual)
                    .fold(f64::INFINITY, f64::min);
                runs.push(Run {
                    problem: problem.name.clone(),
                    key: format!("{}-{size}", case.label),
                    rows: sys.rows(),
                    solver: sr.solver.clone(),
                    device: sr.device,
                    status: report.status,
                    iterations: report.iterations,
                    time_s: report.time_s,
                    best_residual,
                    to_mid: first_below(&report.trace, MID),
                    to_tol: first_below(&report.trace, config.tol),
                    trace: report.trace,
                });
            }
        }
    }
    Ok(Convergence {
        tol: config.tol,
        max_iter: config.max_iter,
        runs,
        notes,
    })
}

/// The iteration of a threshold crossing, or [`Cell::Missing`] when it was not reached.
fn iterations_at(crossing: Option<(usize, f64)>) -> Cell {
    crossing.map_or(Cell::Missing, |(k, _)| Cell::int(k))
}

impl Convergence {
    /// The report's section: the table (`convergence.csv`) and one chart per problem
    /// (`convergence_<key>.png`, written into `dir`).
    pub fn section(&self, dir: &Path) -> Result<Section> {
        let tol = format!("{:e}", self.tol);
        let (tol_k, tol_s) = (format!("iterations to {tol}"), format!("s to {tol}"));
        let table = Table::of(
            "convergence",
            "Solves of one step of each benchmark scene (relative natural-map residual, CCP, \
             cold start); — where the threshold was not reached.",
            &self.runs,
            &[
                ("problem", |r| Cell::text(&r.problem)),
                ("rows", |r| Cell::int(r.rows)),
                ("solver", |r| Cell::text(&r.solver)),
                ("device", |r| Cell::text(r.device)),
                ("status", |r| Cell::text(r.status.to_string())),
                ("iterations", |r| Cell::int(r.iterations)),
                ("time [s]", |r| Cell::Num(r.time_s)),
                ("best residual", |r| Cell::Num(r.best_residual)),
                ("iterations to 1e-4", |r| iterations_at(r.to_mid)),
                ("s to 1e-4", |r| Cell::opt(r.to_mid.map(|(_, s)| s))),
                (&tol_k, |r| iterations_at(r.to_tol)),
                (&tol_s, |r| Cell::opt(r.to_tol.map(|(_, s)| s))),
            ],
        );
        let mut plots = Vec::new();
        let mut keys: Vec<&str> = self.runs.iter().map(|r| r.key.as_str()).collect();
        keys.dedup();
        for key in keys {
            let runs: Vec<&Run> = self.runs.iter().filter(|r| r.key == key).collect();
            let series: Vec<Series> = runs
                .iter()
                .map(|r| Series {
                    label: &r.solver,
                    trace: &r.trace,
                })
                .collect();
            let file = format!("convergence_{key}.png");
            write_convergence_plot(
                &dir.join(&file),
                &runs[0].problem,
                &series,
                CONVERGENCE_PLOT_SIZE,
            )?;
            plots.push(Plot {
                file,
                caption: format!(
                    "{}: residual against iterations (left) and wall time (right)",
                    runs[0].problem
                ),
            });
        }
        Ok(Section {
            heading: "Convergence".into(),
            text: vec![format!(
                "Each scene is advanced with PGS (its own solver) to the step shown, then that \
                 step's problem is solved by every solver from γ = 0 to a relative residual of \
                 {tol} or {} iterations. GPU solvers iterate in f32 and measure the residual in \
                 f64 on the CPU every few iterations.",
                self.max_iter
            )],
            tables: vec![table],
            plots,
            notes: self.notes.clone(),
        })
    }
}
