//! `signorini solve` and `check`: a problem file prepared for the solvers, several solvers
//! run on it side by side, and what the comparison writes (convergence chart, traces).

use std::path::Path;

use super::report::convergence::{DEFAULT_SIZE, Series, write_convergence_plot, write_traces};
use crate::error::Result;
use crate::limits::Limits;
use crate::problem::System;
use crate::problem::io::{self, Format};
use crate::solver::{Report, Settings, Solver};

/// The problem of `file` (in `format`, else detected from the name) as a prepared system,
/// with `settings` checked against it.
/// A `.dat` file whose kind was taken from its content says so in the returned note.
pub fn load(
    file: &Path,
    format: Option<Format>,
    settings: &Settings,
    limits: &Limits,
) -> Result<(System, Option<String>)> {
    let read = io::read_detected(file, format)?;
    let sys = System::with_limits(&read.problem, limits)?;
    settings.validate(sys.rows())?;
    Ok((sys, read.note))
}

/// The solves of `check`: one report per solver, in order.
#[derive(Debug, Clone)]
pub struct Check {
    /// The reports.
    pub reports: Vec<Report>,
    /// Largest ∞-norm difference between the impulse vectors of any two reports.
    pub max_difference: f64,
}

impl Check {
    /// Runs every solver on `sys` under `settings`.
    pub fn run(sys: &System, settings: &Settings, solvers: &[Box<dyn Solver>]) -> Result<Check> {
        let reports = solvers
            .iter()
            .map(|s| s.solve(sys, settings))
            .collect::<Result<Vec<_>>>()?;
        Ok(Check {
            max_difference: max_difference(&reports),
            reports,
        })
    }

    /// Draws residual vs iteration and vs time of every solver into the PNG `path`, titled
    /// `title`.
    pub fn write_plot(&self, path: &Path, title: &str) -> Result<()> {
        let series: Vec<_> = self
            .reports
            .iter()
            .map(|r| Series {
                label: &r.solver,
                trace: &r.trace,
            })
            .collect();
        write_convergence_plot(path, title, &series, DEFAULT_SIZE)
    }

    /// Writes each solver's trace to `dir/<solver>.csv`.
    pub fn write_traces(&self, dir: &Path) -> Result<()> {
        write_traces(dir, &self.reports)
    }
}

/// Largest ∞-norm difference between the impulse vectors of any two reports (0 for fewer
/// than two).
pub fn max_difference(reports: &[Report]) -> f64 {
    let mut diff = 0.0f64;
    for (i, a) in reports.iter().enumerate() {
        for b in &reports[i + 1..] {
            for (x, y) in a.gamma.iter().zip(&b.gamma) {
                diff = diff.max((x - y).abs());
            }
        }
    }
    diff
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::problem::{Body, Cone, Factored, JacobianBlock, Operator, Problem};
    use crate::registry;

    /// A sphere of 2 kg resting on the ground: one unilateral row, impulse `m g h` = 0.2.
    fn resting_sphere() -> System {
        let problem = Problem {
            name: "resting sphere".into(),
            class: Default::default(),
            cones: vec![Cone::Unilateral],
            operator: Operator::Factored(Factored {
                bodies: vec![Body {
                    mass: 2.0,
                    inertia: [0.01; 3],
                    v_free: [0.0, 0.0, -0.1, 0.0, 0.0, 0.0],
                }],
                jacobians: vec![JacobianBlock {
                    bodies: vec![0].into(),
                    rows: vec![[0.0, 0.0, 1.0, 0.0, 0.0, 0.0]].into(),
                }],
                b: vec![0.0],
            }),
            compliance: vec![],
        };
        System::new(&problem).unwrap()
    }

    #[test]
    fn check_compares_impulses_and_writes_one_trace_per_solver() {
        let sys = resting_sphere();
        let solvers = ["pgs", "jacobi"].map(|name| registry::solver(name).unwrap());
        let mut check = Check::run(&sys, &Settings::default(), &solvers).unwrap();
        // Both solve to the default tolerance: their impulses agree to about it.
        assert!(check.max_difference < 1e-5, "{}", check.max_difference);
        check.reports[1].gamma[0] += 0.5;
        assert!((max_difference(&check.reports) - 0.5).abs() < 1e-5);
        assert_eq!(max_difference(&check.reports[..1]), 0.0);

        let dir = crate::app::report::tests::temp_dir("check-traces");
        check.write_traces(&dir).unwrap();
        for r in &check.reports {
            let text = std::fs::read_to_string(dir.join(format!("{}.csv", r.solver))).unwrap();
            let mut lines = text.lines();
            assert_eq!(
                lines.next(),
                Some("iteration,residual,natural_map_inf,time_s,products")
            );
            assert_eq!(lines.count(), r.trace.len());
        }
    }
}
