//! `signorini bench accuracy`: the merit set of every requested solver, CPU (`f64`) and GPU
//! (`f32`), on one step of each benchmark scene ([`scene_cases`]), against a reference solve
//! of the same problem:
//!
//! - the interior point solver `ip` when the registry holds it;
//! - else, for a frictionless problem (no Coulomb block), `simplex` when the registry holds
//!   it;
//! - else projected Gauss–Seidel at tolerance 1e-10, with a note: a first-order reference,
//!   whose own residual the table gives.
//!
//! The CCP problem is a convex QP, so its optimal objective is unique while its impulses are
//! unique only where `N` is positive definite: the objective gap is the comparable figure,
//! the impulse difference a guide.

use super::SceneSolves;
use std::path::Path;

use serde::Serialize;

use super::problems::scene_cases;
use super::report::{Cell, Section, Table};
use super::solver_runs;
use crate::error::Result;
use crate::problem::merit::Merit;
use crate::problem::{Cone, System};
use crate::registry;
use crate::solver::{Report, Settings, Status};

/// What to measure: [`SceneSolves`], by default every solver at 100 bodies per scene,
/// at most 5000 iterations, tolerance 1e-8.
pub type Config = SceneSolves;

/// The default [`Config`].
pub fn default_config() -> Config {
    SceneSolves::all_solvers(100, 5000, 1e-8)
}

/// Tolerance of the PGS reference.
const PGS_REFERENCE_TOL: f64 = 1e-10;

/// The reference solve of one problem.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Reference {
    /// The problem.
    pub problem: String,
    /// Rows of the problem.
    pub rows: usize,
    /// Whether it has no Coulomb block.
    pub frictionless: bool,
    /// Registry name of the reference solver.
    pub solver: String,
    /// Tolerance it ran at.
    pub tol: f64,
    /// How it ended.
    pub status: Status,
    /// Iterations it ran.
    pub iterations: usize,
    /// Its relative residual.
    pub relative_residual: f64,
    /// Its merit set.
    pub merit: Merit,
}

/// One solver against the reference.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Row {
    /// The problem.
    pub problem: String,
    /// Registry name of the solver.
    pub solver: String,
    /// `cpu` or `gpu`.
    pub device: &'static str,
    /// How it ended.
    pub status: Status,
    /// Iterations run.
    pub iterations: usize,
    /// Its merit set.
    pub merit: Merit,
    /// `(objective − reference objective) / max(|reference objective|, 1e-300)`.
    pub objective_gap: f64,
    /// `‖γ − γ_ref‖∞ / ‖γ_ref‖∞`.
    pub gamma_error: f64,
    /// GPU rows: `‖γ − γ_cpu‖∞ / ‖γ_cpu‖∞` against the CPU solve of the same solver.
    pub gpu_vs_cpu: Option<f64>,
}

/// The result of a run.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Accuracy {
    /// One reference per problem.
    pub references: Vec<Reference>,
    /// The solvers against them.
    pub rows: Vec<Row>,
    /// What was skipped or replaced, and why.
    pub notes: Vec<String>,
}

/// `‖a − b‖∞ / ‖b‖∞` (absolute when `b` is zero).
fn relative_difference(a: &[f64], b: &[f64]) -> f64 {
    let diff = a
        .iter()
        .zip(b)
        .fold(0.0f64, |m, (x, y)| m.max((x - y).abs()));
    let scale = b.iter().fold(0.0f64, |m, y| m.max(y.abs()));
    if scale > 0.0 { diff / scale } else { diff }
}

/// The reference solver of `sys` and its settings, with a note when it is the PGS fallback.
fn reference_solver(
    sys: &System,
    settings: &Settings,
    max_iter: usize,
) -> (&'static str, Settings, Option<String>) {
    let names = registry::names();
    let frictionless = !sys
        .cones()
        .iter()
        .any(|c| matches!(c, Cone::Coulomb { .. }));
    let exact = Settings {
        tol: PGS_REFERENCE_TOL,
        ..settings.clone()
    };
    if names.contains(&"ip") {
        ("ip", exact, None)
    } else if frictionless && names.contains(&"simplex") {
        ("simplex", exact, None)
    } else {
        let what = if frictionless {
            "no interior point or simplex solver"
        } else {
            "no interior point solver"
        };
        let note = format!(
            "{what} in the registry: the reference of the problems with {} is PGS at \
             tolerance {PGS_REFERENCE_TOL:e} and {} iterations (its own residual is in the \
             references table)",
            if frictionless {
                "no friction"
            } else {
                "friction"
            },
            10 * max_iter
        );
        let pgs = Settings {
            max_iter: 10 * max_iter,
            stall_iterations: 10 * max_iter,
            ..exact
        };
        ("pgs", pgs, Some(note))
    }
}

/// Runs the suite; `gpu` says whether GPU runs are possible.
pub fn run(config: &Config, gpu: bool, progress: &mut dyn FnMut(&str)) -> Result<Accuracy> {
    config.validate()?;
    let mut notes = Vec::new();
    let runs = solver_runs(&config.solvers, &config.devices, gpu, &mut notes)?;
    let mut references = Vec::new();
    let mut rows = Vec::new();
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
                ..Settings::default()
            };
            let (name, ref_settings, note) = reference_solver(&sys, &settings, config.max_iter);
            notes.extend(note);
            progress(&format!("{}: reference {name}", problem.name));
            let reference = registry::solver(name)?.solve(&sys, &ref_settings)?;
            let reports: Vec<(&super::SolverRun, Report)> = runs
                .iter()
                .map(|sr| {
                    progress(&format!("{}: {}", problem.name, sr.solver));
                    Ok((sr, sr.solver()?.solve(&sys, &settings)?))
                })
                .collect::<Result<_>>()?;
            let ref_objective = reference.merit.objective;
            for (sr, report) in &reports {
                let cpu_twin = reports
                    .iter()
                    .find(|(other, _)| other.device == "cpu" && other.base == sr.base);
                rows.push(Row {
                    problem: problem.name.clone(),
                    solver: sr.solver.clone(),
                    device: sr.device,
                    status: report.status,
                    iterations: report.iterations,
                    merit: report.merit,
                    objective_gap: (report.merit.objective - ref_objective)
                        / ref_objective.abs().max(1e-300),
                    gamma_error: relative_difference(&report.gamma, &reference.gamma),
                    gpu_vs_cpu: cpu_twin
                        .filter(|_| sr.device == "gpu")
                        .map(|(_, cpu)| relative_difference(&report.gamma, &cpu.gamma)),
                });
            }
            references.push(Reference {
                problem: problem.name.clone(),
                rows: sys.rows(),
                frictionless: !sys
                    .cones()
                    .iter()
                    .any(|c| matches!(c, Cone::Coulomb { .. })),
                solver: name.to_string(),
                tol: ref_settings.tol,
                status: reference.status,
                iterations: reference.iterations,
                relative_residual: reference.residual.relative,
                merit: reference.merit,
            });
        }
    }
    notes.sort();
    notes.dedup();
    let inexact: Vec<&str> = references
        .iter()
        .filter(|r| r.status != Status::Converged)
        .map(|r| r.problem.as_str())
        .collect();
    if !inexact.is_empty() {
        notes.push(format!(
            "the reference did not reach its tolerance on {}: there the gaps are measured \
             from an inexact reference, and a negative objective gap means a solver beat it",
            inexact.join("; ")
        ));
    }
    Ok(Accuracy {
        references,
        rows,
        notes,
    })
}

impl Accuracy {
    /// The report's section: the references (`accuracy_references.csv`) and the solvers
    /// against them (`accuracy.csv`).
    pub fn section(&self, _dir: &Path) -> Result<Section> {
        let refs = Table::of(
            "accuracy_references",
            "The reference solve of each problem.",
            &self.references,
            &[
                ("problem", |r| Cell::text(&r.problem)),
                ("rows", |r| Cell::int(r.rows)),
                ("frictionless", |r| {
                    Cell::text(if r.frictionless { "yes" } else { "no" })
                }),
                ("reference", |r| Cell::text(&r.solver)),
                ("tol", |r| Cell::Num(r.tol)),
                ("status", |r| Cell::text(r.status.to_string())),
                ("iterations", |r| Cell::int(r.iterations)),
                ("relative residual", |r| Cell::Num(r.relative_residual)),
                ("natural map ∞", |r| Cell::Num(r.merit.natural_map_inf)),
                ("objective", |r| Cell::Num(r.merit.objective)),
            ],
        );
        let table = Table::of(
            "accuracy",
            "The merit set of each solver, and its distance to the reference (relative \
             objective gap, relative ∞-norm impulse difference) and, for GPU rows, to the \
             CPU solve of the same solver.",
            &self.rows,
            &[
                ("problem", |r| Cell::text(&r.problem)),
                ("solver", |r| Cell::text(&r.solver)),
                ("device", |r| Cell::text(r.device)),
                ("status", |r| Cell::text(r.status.to_string())),
                ("iterations", |r| Cell::int(r.iterations)),
                ("natural map ∞", |r| Cell::Num(r.merit.natural_map_inf)),
                ("complementarity", |r| Cell::Num(r.merit.complementarity)),
                ("primal violation", |r| Cell::Num(r.merit.primal_violation)),
                ("dual violation", |r| Cell::Num(r.merit.dual_violation)),
                ("objective", |r| Cell::Num(r.merit.objective)),
                ("objective gap", |r| Cell::Num(r.objective_gap)),
                ("γ vs reference", |r| Cell::Num(r.gamma_error)),
                ("γ GPU vs CPU", |r| Cell::opt(r.gpu_vs_cpu)),
            ],
        );
        Ok(Section {
            heading: "Accuracy".into(),
            text: vec![
                "Each solver solves one step of each benchmark scene from γ = 0; its merit set \
                 (DESIGN §2, f64, whatever precision produced γ) is compared with a reference \
                 solve. The CCP problem is a convex QP: its optimal objective is unique, its \
                 impulses only where N is positive definite (not on the B1 net nor on \
                 statically indeterminate stacks), so the objective gap is the figure to \
                 compare; GPU solvers iterate in f32."
                    .into(),
            ],
            tables: vec![refs, table],
            plots: Vec::new(),
            notes: self.notes.clone(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn relative_difference_is_scaled_by_the_reference() {
        assert_eq!(relative_difference(&[1.0, 2.5], &[1.0, 2.0]), 0.25);
        assert_eq!(relative_difference(&[0.5], &[0.0]), 0.5);
    }
}
