//! The skew part of a non-symmetric `W` (Siconos' Capsules and RockPile problems carry
//! relative asymmetries of 1e-4 to 3e-3). With `W = S + T`, `S = (W + Wᵀ)/2`, the CCP
//! `K ∋ γ ⊥ Wγ + r ∈ K*` is a variational inequality, not the QP of `S`; it is solved by the
//! fixed point `γₖ₊₁ = QP(S, r + Tγₖ)` (each round the cone QP of the symmetric part,
//! warm-started from the last), whose fixed points are the solutions of the VI. It contracts
//! when `‖T‖` is small against the curvature of `S` on the active set. The interior point
//! runs its own rounds (module `ip`, finished by Newton on the natural map of `W` itself,
//! module `ip::polish`); the GPU solvers' refined solves run [`solve`]: the projected
//! methods on a non-symmetric `W` stall near points that are not solutions (on the Capsules
//! files, 6e-8 to 9e-7), while on a symmetric PSD `S` their stationary points are the QP's
//! solutions.

use std::time::Instant;

use super::progress::{BestRound, append_trace, biased_velocity, initial_iterate};
use super::{Bias, Report, Settings, Status, TraceEntry, add_phase, block_steps};
use crate::error::Result;
use crate::problem::merit;
use crate::problem::{CsrMatrix, FrictionModel, System};

/// Asymmetries below this fraction of `W`'s largest entry are rounding of the file.
const NEGLIGIBLE: f64 = 1e-15;

/// Outer rounds of [`solve`] at most.
const MAX_ROUNDS: usize = 12;

/// Rounds of [`solve`] without improvement of the natural map of `W` before it stops.
const STALL_ROUNDS: usize = 2;

/// `T = (W − Wᵀ)/2` of an explicit operator, `None` when `W` is symmetric (or factored or
/// global, where the interior point's `P` and `Q` are symmetric by construction).
pub(crate) fn skew_part(sys: &System) -> Option<CsrMatrix> {
    let w = sys.operator().as_matrix()?;
    let largest = (0..w.nrows)
        .flat_map(|i| w.row(i).1.iter().map(|v| v.abs()))
        .fold(0.0, f64::max);
    let mut t = Vec::new();
    for i in 0..w.nrows {
        let (cols, vals) = w.row(i);
        for (&j, &v) in cols.iter().zip(vals) {
            let half = 0.5 * (v - w.get(j, i));
            if half.abs() > NEGLIGIBLE * largest {
                t.push((i, j, half));
                if w.get(j, i) == 0.0 {
                    // The mirror is not stored: its entry of T is written here.
                    t.push((j, i, -half));
                }
            }
        }
    }
    if t.is_empty() {
        return None;
    }
    Some(CsrMatrix::from_triplets(w.nrows, w.ncols, &t).expect("indices of W are in range"))
}

/// The system of `S = W − T` (`t` = [`skew_part`] of `sys`'s assembled `W`), with `sys`'s
/// cones, `r` and compliance.
pub(crate) fn symmetric_part(sys: &System, t: &CsrMatrix) -> System {
    let w = sys
        .operator()
        .as_matrix()
        .expect("a skew part comes from an assembled W");
    let mut triplets = Vec::with_capacity(w.nnz() + t.nnz());
    for (m, sign) in [(w, 1.0), (t, -1.0)] {
        for i in 0..m.nrows {
            let (cols, vals) = m.row(i);
            triplets.extend(cols.iter().zip(vals).map(|(&j, &v)| (i, j, sign * v)));
        }
    }
    let s = CsrMatrix::from_triplets(w.nrows, w.ncols, &triplets).expect("indices of W");
    sys.with_matrix(s)
}

/// The CCP solve of `sys` (assembled `W`, `t` its [`skew_part`]) with `bias` added to `r`,
/// by the fixed point on the skew part: each round `inner(S, settings, r + bias + Tγₖ)`
/// solves the CCP of the symmetric part ([`symmetric_part`]) to the settings' tolerance,
/// warm-started from `γₖ` (the first from the settings' warm start, or 0). The rounds stop
/// when the natural map of `W` itself (CCP, the settings' block steps) meets the tolerance,
/// after [`STALL_ROUNDS`] rounds without improvement, at [`MAX_ROUNDS`], at the iteration
/// cap, or at an inner [`Status::NumericalError`]. The report carries the best iterate and
/// its residual on `W`; its trace is each round's inner trace (residuals of that round's
/// problem) followed by one entry of the round's answer on `W`; `rounds` counts the outer
/// rounds, `refinements` and the phases sum the inner solves'.
pub(crate) fn solve(
    name: &str,
    sys: &System,
    t: &CsrMatrix,
    settings: &Settings,
    bias: Bias,
    mut inner: impl FnMut(&System, &Settings, Bias) -> Result<Report>,
) -> Result<Report> {
    let start = Instant::now();
    let symmetric = symmetric_part(sys, t);
    let eta = block_steps(sys, settings.block_step);
    let measure = |gamma: &[f64]| {
        let u = biased_velocity(sys, bias, gamma);
        merit::residual(sys, gamma, &u, FrictionModel::Ccp, &eta)
    };
    let mut gamma = initial_iterate(sys, settings);
    let mut best = BestRound::new(settings, measure(&gamma), &gamma);
    let (mut iterations, mut products, mut refinements, mut rounds) = (0, 0, 0, 0);
    let (mut trace, mut phases) = (Vec::new(), Vec::new());
    let mut status = Status::Stalled;
    while !settings.met(&best.residual)
        && iterations < settings.max_iter
        && rounds < MAX_ROUNDS
        && best.since < STALL_ROUNDS
    {
        let mut shift = vec![0.0; sys.rows()];
        t.mul_vec(&gamma, &mut shift);
        if let Some(bias) = bias {
            shift.iter_mut().zip(bias).for_each(|(s, b)| *s += b);
        }
        // TEMP(skew): measurement switch, inexact inner solves.
        let ratio: f64 = std::env::var("SKEW_INEXACT")
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(0.0);
        let round_settings = Settings {
            friction: FrictionModel::Ccp,
            tol: settings.tol.max(ratio * best.value),
            max_iter: settings.max_iter - iterations,
            warm_start: Some(gamma),
            ..settings.clone()
        };
        // TEMP(skew): measurement switch, the first round on W itself.
        let direct = rounds == 0 && std::env::var("SKEW_FIRST_W").is_ok();
        let report = if direct {
            inner(sys, &round_settings, bias)?
        } else {
            inner(&symmetric, &round_settings, Some(&shift))?
        };
        let previous = round_settings.warm_start.clone().unwrap_or_default();
        append_trace(&mut trace, &report.trace, iterations, products);
        iterations += report.iterations.max(1);
        products += report.trace.last().map_or(0, |t| t.products);
        refinements += report.refinements;
        rounds += 1;
        for p in &report.phases {
            add_phase(&mut phases, &p.name, p.time_s);
        }
        gamma = report.gamma;
        let res = measure(&gamma);
        let value = settings.criterion.of(&res);
        trace.push(TraceEntry {
            iteration: iterations,
            residual: value,
            natural_map_inf: res.inf,
            time_s: start.elapsed().as_secs_f64(),
            products,
        });
        // TEMP(skew): the rounds' contraction.
        eprintln!(
            "skew round {rounds}: inner {:?} {} it {} ref rel {:e}; W rel {value:e} inf {:e}; |dγ|∞ {:e}; {:.1} s",
            report.status,
            report.iterations,
            report.refinements,
            report.residual.relative,
            res.inf,
            gamma
                .iter()
                .zip(&previous)
                .fold(0.0f64, |m, (a, b)| m.max((a - b).abs())),
            start.elapsed().as_secs_f64()
        );
        if report.status == Status::NumericalError || !value.is_finite() {
            status = Status::NumericalError;
            break;
        }
        best.offer(value, res, &gamma);
    }
    let BestRound {
        residual, gamma, ..
    } = best;
    if settings.met(&residual) {
        status = Status::Converged;
    } else if status != Status::NumericalError && iterations >= settings.max_iter {
        status = Status::MaxIterations;
    }
    Ok(Report {
        solver: name.to_string(),
        status,
        iterations,
        time_s: start.elapsed().as_secs_f64(),
        residual,
        merit: merit::evaluate(sys, &gamma, FrictionModel::Ccp),
        gamma,
        trace,
        phases,
        refinements,
        rounds,
    })
}
