//! The Coulomb friction model for the solvers of the convex QP (SPG, APGD): a fixed point
//! on the De Saxcé term `s = μ‖u_t‖` (DESIGN §1). With `s` frozen, `K ∋ γ ⊥ u + (s, 0, 0)`
//! is the CCP of the same `N` with `r + (s, 0, 0)`: each outer round solves that QP from the
//! previous impulses, then updates `s`, until the Coulomb natural map meets the tolerance.
//!
//! How far each round's QP is solved: to the tolerance ([`Rounds::Exact`]: for the interior point,
//! whose rounds cost a few iterations whatever they are asked, and for the GPU solvers'
//! `f32` rounds, which stalled near `f32`'s reach when asked for half the residual —
//! `spg-gpu` on NESpheres_10_1 at 1.3e-5), or inexactly ([`Rounds::Inexact`], for the CPU's
//! first-order methods): to half the current Coulomb residual,
//! never below the tolerance — Siconos' adaptive internal error strategy
//! (`fc3d_set_internalsolver_tolerance`, there with an internal error ratio of 10). Solving
//! an early round exactly spends the iteration budget on a QP whose `s` is still wrong: on
//! `balls_in_box` (1000 spheres, 500 iterations a step) the settled steps ended at Coulomb
//! residuals of 0.1–0.3 m/s (SPG) and 0.04–0.09 (APGD); a tenth of the residual gave
//! 0.01–0.03 (SPG), a half 0.001–0.01 (both; 0.8 about the same).

use std::time::Instant;

use super::progress::BestRound;
use super::{Bias, Report, Settings, Status, TraceEntry, add_phase, block_steps};
use crate::error::Result;
use crate::problem::merit::{self, Residual};
use crate::problem::{Cone, FrictionModel, System};

/// Outer rounds without improvement of the Coulomb residual before giving up.
pub(crate) const STALL_ROUNDS: usize = 20;

/// Share of the current Coulomb residual an inexact round's QP is solved to.
const INNER_RATIO: f64 = 0.5;

/// How far each outer round solves its QP.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Rounds {
    /// To the settings' tolerance.
    Exact,
    /// To [`INNER_RATIO`] times the current Coulomb residual, never below the tolerance.
    Inexact,
}

/// Solves `sys` under `settings.friction` with `inner(settings, bias)`, a CCP solver of the
/// problem with `r + bias` that honours `Settings::warm_start`, each round as `rounds` says.
/// The CCP model goes straight to `inner`; an error of `inner` ends the solve.
pub(crate) fn solve(
    name: &'static str,
    sys: &System,
    settings: &Settings,
    rounds: Rounds,
    mut inner: impl FnMut(&Settings, Bias) -> Result<Report>,
) -> Result<Report> {
    let frictional = sys
        .cones()
        .iter()
        .any(|c| matches!(c, Cone::Coulomb { mu } if *mu > 0.0));
    if settings.friction == FrictionModel::Ccp || !frictional {
        return inner(
            &Settings {
                friction: FrictionModel::Ccp,
                ..settings.clone()
            },
            None,
        );
    }
    let start = Instant::now();
    let eta = block_steps(sys, settings.block_step);
    let mut gamma = super::progress::initial_iterate(sys, settings);
    let coulomb = |gamma: &[f64]| -> (Residual, Vec<f64>) {
        let u = sys.velocity(gamma);
        (
            merit::residual(sys, gamma, &u, FrictionModel::Coulomb, &eta),
            u,
        )
    };
    let (mut res, mut u) = coulomb(&gamma);
    let mut best = BestRound::new(settings, res, &gamma);
    let (mut iterations, mut products, mut refinements, mut rounds_run) = (0, 0, 0, 0);
    let mut trace: Vec<TraceEntry> = Vec::new();
    let mut phases = Vec::new();
    let mut status = Status::MaxIterations;
    loop {
        if settings.met(&res) {
            status = Status::Converged;
            break;
        }
        if iterations >= settings.max_iter {
            break;
        }
        // s = μ‖u_t‖ on the normal row of every Coulomb block.
        let mut bias = vec![0.0; sys.rows()];
        for (k, cone) in sys.cones().iter().enumerate() {
            let range = sys.block_range(k);
            if let Cone::Coulomb { mu } = cone {
                bias[range.start] = mu * u[range.start + 1].hypot(u[range.start + 2]);
            }
        }
        let tol = match rounds {
            Rounds::Exact => settings.tol,
            Rounds::Inexact => settings.tol.max(INNER_RATIO * settings.criterion.of(&res)),
        };
        let report = inner(
            &Settings {
                friction: FrictionModel::Ccp,
                tol,
                max_iter: settings.max_iter - iterations,
                warm_start: Some(gamma),
                ..settings.clone()
            },
            Some(&bias),
        )?;
        let offset_t = trace.last().map_or(0.0, |t| t.time_s);
        trace.extend(report.trace.iter().skip(1).map(|t| TraceEntry {
            iteration: t.iteration + iterations,
            time_s: t.time_s + offset_t,
            products: t.products + products,
            ..*t
        }));
        iterations += report.iterations.max(1);
        rounds_run += 1;
        refinements += report.refinements;
        for p in &report.phases {
            add_phase(&mut phases, &p.name, p.time_s);
        }
        products += report.trace.last().map_or(0, |t| t.products);
        gamma = report.gamma;
        (res, u) = coulomb(&gamma);
        let value = settings.criterion.of(&res);
        if !value.is_finite() {
            status = Status::NumericalError;
            break;
        }
        best.offer(value, res, &gamma);
        if best.since >= STALL_ROUNDS {
            status = Status::Stalled;
            break;
        }
    }
    if status != Status::Converged {
        (res, gamma) = (best.residual, best.gamma);
    }
    Ok(Report {
        solver: name.to_string(),
        status,
        iterations,
        time_s: start.elapsed().as_secs_f64(),
        residual: res,
        merit: merit::evaluate(sys, &gamma, FrictionModel::Coulomb),
        gamma,
        trace,
        phases,
        refinements,
        rounds: rounds_run,
    })
}
