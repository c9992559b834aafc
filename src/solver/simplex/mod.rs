//! The pivoting simplex of paper 003 (Tasora, Manconi, Silvestri): exact solutions of the
//! mixed LCP of bilateral and unilateral rows on the sparse system (3.2), with an
//! incremental factorization, and Lemke's method as the fallback for the LCPs the paper's
//! method does not cover.
//!
//! - `kkt`: the system (3.2) of each problem form (factored `[M Jᵀ; J −E]`, global
//!   `[H Jᵀ; J −E]`, explicit `N + E`), with the deactivation pivot.
//! - `basis`: its sparse `LDLᵀ` (faer) and the update after each pivot.
//! - `pivot`: the method of §3.1/§3.2 (activation of the first violated row, ratio test
//!   `Calcola_step_max`, Bland's rule).
//! - `lemke`: complementary pivoting on the dense reduced LCP.
//! - `pyramid`: the polyhedral approximation of the Coulomb cone (CCP model).
//!
//! Which method runs: a factored or global problem, or an explicit `N + E` that is
//! symmetric, goes to the paper's method (Theorem 2: finite termination for a positive
//! semidefinite Delassus matrix). An explicit non-symmetric `N`, or an explicit problem on
//! which the paper's method meets a singular basis or an unbounded edge (an indefinite `N`),
//! goes to Lemke's method (dense, up to 3000 rows; a larger non-symmetric `N` is reported as
//! `NumericalError` without a solve). Coulomb cones under the CCP model are replaced by pyramids of
//! [`Simplex::facets`] generators (an LCP, solved exactly; the merit set of the report is
//! that of the true cones, so it shows the approximation error); under the Coulomb (De
//! Saxcé) model they are an input error.
//!
//! Every returned solution is checked with the merit set before it is called converged: the
//! stopping criterion of the settings and, for Siconos problems, the Siconos LCP/MLCP error
//! must be at or below `tol`.

mod basis;
mod kkt;
mod lemke;
mod pivot;
mod pyramid;

use std::time::Instant;

use nalgebra::DMatrix;

use super::{Report, Session, Settings, Solver, Status, TraceEntry, effective_r, velocity_into};
use crate::error::{Error, Result};
use crate::problem::merit;
use crate::problem::{Cone, CsrMatrix, FrictionModel, System};

/// The pivoting simplex solver (registry names `simplex` and `simplex-pyramid`).
/// `Settings::max_iter` caps the number of pivots; `tol` is the acceptance threshold of the
/// final check.
#[derive(Debug, Clone, Copy)]
pub struct Simplex {
    /// Generators of the pyramid that replaces each Coulomb cone (≥ 3; the friction bound
    /// is exact along a generator and low by the factor `cos(π/facets)` between two).
    pub facets: usize,
    /// Which problem a solve through pyramids is checked against.
    pub model: ConeModel,
}

/// The cone a pyramid answer is verified on (problems with Coulomb cones).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ConeModel {
    /// The problem as given (registry name `simplex`): the pyramid answer is `converged`
    /// only when the merit set on the true Coulomb cones meets the tolerance; otherwise it
    /// is reported [`Status::Stalled`] with the true-cone residual, an answer that missed
    /// the tolerance.
    #[default]
    True,
    /// The pyramid approximation itself (registry name `simplex-pyramid`, asked for by
    /// name): an answer exact on the pyramid LCP is `converged`; the merit set of the report
    /// is still that of the true cones, so it shows the approximation error.
    Pyramid,
}

impl Default for Simplex {
    fn default() -> Self {
        Simplex {
            facets: 8,
            model: ConeModel::True,
        }
    }
}

impl Simplex {
    /// The simplex whose pyramid answers are `converged` on the pyramid LCP.
    pub fn pyramid() -> Self {
        Simplex {
            model: ConeModel::Pyramid,
            ..Simplex::default()
        }
    }
}

/// Which pivoting method produced a solve.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Method {
    /// The method of paper 003 on the sparse system (3.2).
    Tasora,
    /// Lemke's complementary pivoting on the dense reduced LCP.
    Lemke,
}

/// A simplex solve with its pivoting statistics.
#[derive(Debug, Clone)]
pub struct Outcome {
    /// The report (`iterations` = pivots of the method that produced it).
    pub report: Report,
    /// The method that produced the report.
    pub method: Method,
    /// Pivots of the paper's method (before any fallback).
    pub tasora_pivots: usize,
    /// Numeric factorizations of the system (3.2).
    pub factorizations: usize,
    /// Stored entries of its factor `L` (the cost of one solve).
    pub factor_entries: usize,
    /// Pivots of Lemke's method (0 when it did not run).
    pub lemke_pivots: usize,
}

impl Solver for Simplex {
    fn name(&self) -> &'static str {
        match self.model {
            ConeModel::True => "simplex",
            ConeModel::Pyramid => "simplex-pyramid",
        }
    }

    fn prepare(&self, _sys: &System, _settings: &Settings) -> Result<Box<dyn Session>> {
        Ok(Box::new(*self))
    }
}

/// A simplex session is the solver itself: its solves share nothing (it has two registry
/// names, one per [`ConeModel`]).
impl Session for Simplex {
    fn name(&self) -> &'static str {
        Solver::name(self)
    }

    fn solve(&mut self, sys: &System, settings: &Settings) -> Result<Report> {
        self.run(sys, settings).map(|o| o.report)
    }

    fn analyses(&self) -> usize {
        0
    }
}

/// Largest explicit problem (rows) handed to the dense Lemke fallback.
const LEMKE_MAX_ROWS: usize = 3000;

impl Simplex {
    /// Solves `sys` and returns the report with the pivot counts. `Err` for invalid settings
    /// and for Coulomb cones under the Coulomb (De Saxcé) friction model.
    pub fn run(&self, sys: &System, settings: &Settings) -> Result<Outcome> {
        settings.validate(sys.rows())?;
        let start = Instant::now();
        let r_eff = effective_r(sys, None);
        let ctx = Context {
            name: Solver::name(self),
            sys,
            settings,
            start,
            r_eff: &r_eff,
        };
        if let Some(k) = sys
            .cones()
            .iter()
            .position(|c| matches!(c, Cone::Coulomb { .. }))
        {
            if settings.friction == FrictionModel::Coulomb {
                return Err(Error::invalid(
                    format!("cones[{k}]"),
                    "the simplex solves bilateral and unilateral rows, and Coulomb cones of the \
                     ccp model through pyramids; the coulomb (De Saxcé) model needs an \
                     interior point or an iterative solver",
                ));
            }
            let pyramid = pyramid::Pyramid::new(sys, &r_eff, self.facets)?;
            let inner = Settings {
                warm_start: None,
                ..settings.clone()
            };
            let mut out = self.run(&pyramid.system, &inner)?;
            let gamma = pyramid.impulses(&out.report.gamma);
            let (status, pivots) = (out.report.status, out.report.iterations);
            let mut report = finish(&ctx, status, gamma, pivots, false);
            // The pyramid LCP was solved exactly; whether that answers the problem as given
            // is for the true cones to say.
            if self.model == ConeModel::True
                && status == Status::Converged
                && !meets(&report, settings)
            {
                report.status = Status::Stalled;
            }
            report.trace = std::mem::take(&mut out.report.trace);
            out.report = report;
            return Ok(out);
        }
        let m = sys.rows();
        let mut bilateral = vec![false; m];
        for (k, cone) in sys.cones().iter().enumerate() {
            if matches!(cone, Cone::Bilateral { .. }) {
                bilateral[sys.block_range(k)].fill(true);
            }
        }
        let unilateral: Vec<bool> = bilateral.iter().map(|b| !b).collect();
        let dense = self.explicit_matrix(sys);
        let eta = vec![1.0; sys.blocks()];
        let mut trace = Vec::new();
        let mut record = |iteration: usize, gamma: &[f64], u: &[f64]| {
            let res = merit::residual(sys, gamma, u, settings.friction, &eta);
            trace.push(TraceEntry {
                iteration,
                residual: settings.criterion.of(&res),
                natural_map_inf: res.inf,
                time_s: start.elapsed().as_secs_f64(),
                products: iteration,
            });
        };
        let symmetric = sys.factored().is_some()
            || sys.global().is_some()
            || sys.operator().as_matrix().is_some_and(is_symmetric);
        let mut outcome = Outcome {
            report: finish(&ctx, Status::NumericalError, vec![0.0; m], 0, true),
            method: Method::Tasora,
            tasora_pivots: 0,
            factorizations: 0,
            factor_entries: 0,
            lemke_pivots: 0,
        };
        if symmetric {
            let kkt = kkt::Kkt::new(sys, &r_eff);
            let scale = r_eff.iter().fold(f64::MIN_POSITIVE, |a, b| a.max(b.abs()));
            let run = pivot::run(&kkt, &unilateral, scale, settings.max_iter, &mut record);
            outcome.tasora_pivots = run.pivots;
            outcome.factorizations = run.factorizations;
            outcome.factor_entries = run.factor_entries;
            let status = match run.end {
                pivot::End::Solved => Status::Converged,
                pivot::End::Unbounded => Status::NoSolution,
                pivot::End::Singular => Status::NumericalError,
                pivot::End::Cap => Status::MaxIterations,
            };
            outcome.report = finish(&ctx, status, run.gamma, run.pivots, true);
            if matches!(
                outcome.report.status,
                Status::Converged | Status::MaxIterations
            ) || dense.is_none()
            {
                outcome.report.trace = trace;
                return Ok(outcome);
            }
        }
        let Some(n) = dense else {
            return Ok(outcome);
        };
        let (status, gamma, pivots) = match lemke::solve(&n, &r_eff, &bilateral, settings.max_iter)
        {
            lemke::Outcome::Solved(gamma, p) => (Status::Converged, gamma, p),
            lemke::Outcome::Ray(p) => (Status::NoSolution, vec![0.0; m], p),
            lemke::Outcome::Failed(p) if p >= settings.max_iter => {
                (Status::MaxIterations, vec![0.0; m], p)
            }
            lemke::Outcome::Failed(p) => (Status::NumericalError, vec![0.0; m], p),
        };
        outcome.method = Method::Lemke;
        outcome.lemke_pivots = pivots;
        outcome.report = finish(&ctx, status, gamma, pivots, true);
        Ok(outcome)
    }

    /// `N + E` dense, for an explicit (assembled or global) problem small enough for the
    /// Lemke fallback; `None` for a factored problem.
    fn explicit_matrix(&self, sys: &System) -> Option<DMatrix<f64>> {
        if sys.factored().is_some() || sys.rows() > LEMKE_MAX_ROWS {
            return None;
        }
        let mut n = sys.operator().as_matrix()?.to_dense();
        for (i, e) in sys.compliance().iter().enumerate() {
            n[(i, i)] += e;
        }
        Some(n)
    }
}

/// Symmetric up to rounding (relative 1e-12): the condition of the `LDLᵀ` path (the
/// compliance is diagonal and does not matter).
fn is_symmetric(n: &CsrMatrix) -> bool {
    let scale = n.values.iter().fold(0.0f64, |m, v| m.max(v.abs()));
    (0..n.nrows).all(|i| {
        let (cols, vals) = n.row(i);
        cols.iter()
            .zip(vals)
            .all(|(&j, &v)| (v - n.get(j, i)).abs() <= 1e-12 * scale)
    })
}

/// What a report is measured against: the problem, the settings, the start of the solve and
/// the vector `r` of the solve.
#[derive(Clone, Copy)]
struct Context<'a> {
    name: &'static str,
    sys: &'a System,
    settings: &'a Settings,
    start: Instant,
    r_eff: &'a [f64],
}

/// Whether a report meets the tolerance: the stopping criterion of the settings and, for
/// Siconos problems, the Siconos error.
fn meets(report: &Report, settings: &Settings) -> bool {
    settings.met(&report.residual) && report.merit.siconos_error.is_none_or(|e| e <= settings.tol)
}

/// The report of a pivoting run. With `verify`, a `Converged` status is kept only if the
/// merit set of `gamma` confirms it ([`meets`]); otherwise it becomes `NumericalError`. (A
/// pyramid solve is verified on the pyramid LCP; its caller checks the true cones.)
fn finish(
    ctx: &Context<'_>,
    status: Status,
    gamma: Vec<f64>,
    pivots: usize,
    verify: bool,
) -> Report {
    let Context {
        name,
        sys,
        settings,
        start,
        r_eff,
    } = *ctx;
    let time_s = start.elapsed().as_secs_f64();
    let mut u = vec![0.0; sys.rows()];
    velocity_into(sys, r_eff, &gamma, &mut u);
    let residual = merit::residual(sys, &gamma, &u, settings.friction, &vec![1.0; sys.blocks()]);
    let merit = merit::evaluate(sys, &gamma, settings.friction);
    let value = settings.criterion.of(&residual);
    let mut report = Report {
        solver: name.into(),
        status,
        iterations: pivots,
        time_s,
        gamma,
        residual,
        merit,
        trace: vec![TraceEntry {
            iteration: pivots,
            residual: value,
            natural_map_inf: residual.inf,
            time_s,
            products: pivots,
        }],
        phases: Vec::new(),
        refinements: 0,
        rounds: 0,
    };
    if verify && status == Status::Converged && !meets(&report, settings) {
        report.status = Status::NumericalError;
    }
    report
}
