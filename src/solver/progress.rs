//! The bookkeeping every iterative solver shares: the initial iterate, the trace, the best
//! iterate, and the decision to stop (tolerance, stall, divergence, non-finite residual).

use std::time::Instant;

use super::{Bias, DIVERGENCE_FACTOR, Report, Settings, Status, TraceEntry};
use crate::problem::System;
use crate::problem::merit::{self, Residual};

/// The warm start (or zero) projected on `K`: the first iterate of every solve.
pub(crate) fn initial_iterate(sys: &System, settings: &Settings) -> Vec<f64> {
    let mut gamma = settings
        .warm_start
        .clone()
        .unwrap_or_else(|| vec![0.0; sys.rows()]);
    for (k, cone) in sys.cones().iter().enumerate() {
        cone.project(&mut gamma[sys.block_range(k)]);
    }
    gamma
}

/// `u = (N + E) γ + r + bias` of the problem a solve works on (one product).
pub(crate) fn biased_velocity(sys: &System, bias: Bias, gamma: &[f64]) -> Vec<f64> {
    let mut u = sys.velocity(gamma);
    if let Some(bias) = bias {
        u.iter_mut().zip(bias).for_each(|(ui, bi)| *ui += bi);
    }
    u
}

/// `‖v‖∞`.
pub(crate) fn norm_inf(v: &[f64]) -> f64 {
    v.iter().fold(0.0, |m, x| m.max(x.abs()))
}

/// The best iterate of an outer loop of rounds (the Coulomb fixed point, the refinement of
/// the GPU solvers) by the criterion's value, and the rounds since it last improved.
pub(crate) struct BestRound {
    /// The criterion's value of `gamma`.
    pub(crate) value: f64,
    /// The residual of `gamma`.
    pub(crate) residual: Residual,
    /// The best iterate.
    pub(crate) gamma: Vec<f64>,
    /// Rounds since the last improvement.
    pub(crate) since: usize,
}

impl BestRound {
    /// Starts from `gamma` with its `residual` under `settings`.
    pub(crate) fn new(settings: &Settings, residual: Residual, gamma: &[f64]) -> Self {
        BestRound {
            value: settings.criterion.of(&residual),
            residual,
            gamma: gamma.to_vec(),
            since: 0,
        }
    }

    /// Keeps `gamma` when its `value` improves on the best, else counts one more round.
    pub(crate) fn offer(&mut self, value: f64, residual: Residual, gamma: &[f64]) {
        if value < self.value {
            *self = BestRound {
                value,
                residual,
                gamma: gamma.to_vec(),
                since: 0,
            };
        } else {
            self.since += 1;
        }
    }
}

/// Progress of one solve: fed each measured iterate, it keeps the trace and the best
/// iterate and says when to stop; [`Progress::finish`] turns it into the report.
pub(crate) struct Progress<'a> {
    settings: &'a Settings,
    start: Instant,
    trace: Vec<TraceEntry>,
    best: (f64, Residual),
    /// The best iterate, when the caller records iterates ([`Progress::record`]).
    best_gamma: Vec<f64>,
    last: Residual,
    /// ∞-norm of the first iterates, the reference of the divergence test.
    gamma_scale: f64,
    since_best: usize,
    iterations: usize,
    products: usize,
}

impl<'a> Progress<'a> {
    /// Starts from the initial iterate and its residual (one product spent on it); returns
    /// `Converged` as the status when it already meets the tolerance.
    pub(crate) fn new(
        settings: &'a Settings,
        gamma: &[f64],
        res: Residual,
    ) -> (Self, Option<Status>) {
        let (mut progress, status) = Self::observing(settings, norm_inf(gamma), res);
        progress.best_gamma = gamma.to_vec();
        (progress, status)
    }

    /// [`Progress::new`] for a caller that keeps its iterates ([`Progress::observe`]),
    /// given `‖γ‖∞` of the initial one.
    pub(crate) fn observing(
        settings: &'a Settings,
        gamma_scale: f64,
        res: Residual,
    ) -> (Self, Option<Status>) {
        let start = Instant::now();
        let value = settings.criterion.of(&res);
        let progress = Progress {
            settings,
            start,
            trace: vec![TraceEntry {
                iteration: 0,
                residual: value,
                natural_map_inf: res.inf,
                time_s: 0.0,
                products: 1,
            }],
            best: (value, res),
            best_gamma: Vec::new(),
            last: res,
            gamma_scale,
            since_best: 0,
            iterations: 0,
            products: 1,
        };
        let status = settings.met(&res).then_some(Status::Converged);
        (progress, status)
    }

    /// Takes `scale` as a reference `‖γ‖∞` of the divergence test too (a correction
    /// problem's iterates start at 0 and grow to the size of the correction).
    pub(crate) fn with_scale(mut self, scale: f64) -> Self {
        self.gamma_scale = self.gamma_scale.max(scale);
        self
    }

    /// Iterations so far.
    pub(crate) fn iterations(&self) -> usize {
        self.iterations
    }

    /// Products with `N` spent so far.
    pub(crate) fn products(&self) -> usize {
        self.products
    }

    /// Records the iterate reached after `iterations` more iterations that cost `products`
    /// products; returns the status when the solve must stop.
    pub(crate) fn record(
        &mut self,
        gamma: &[f64],
        res: Residual,
        iterations: usize,
        products: usize,
    ) -> Option<Status> {
        let (status, improved) = self.observe(res, norm_inf(gamma), iterations, products);
        if improved {
            self.best_gamma.copy_from_slice(gamma);
        }
        status
    }

    /// [`Progress::record`] for an iterate the caller keeps (the GPU solvers keep the best
    /// iterate on the device): given its residual and `‖γ‖∞`, returns the status when the
    /// solve must stop and whether the iterate is the new best one.
    pub(crate) fn observe(
        &mut self,
        res: Residual,
        gamma_inf: f64,
        iterations: usize,
        products: usize,
    ) -> (Option<Status>, bool) {
        let first = self.iterations == 0;
        self.iterations += iterations;
        self.products += products;
        let value = self.settings.criterion.of(&res);
        self.last = res;
        self.trace.push(TraceEntry {
            iteration: self.iterations,
            residual: value,
            natural_map_inf: res.inf,
            time_s: self.start.elapsed().as_secs_f64(),
            products: self.products,
        });
        if first {
            self.gamma_scale = self.gamma_scale.max(gamma_inf);
        }
        if !value.is_finite() || gamma_inf > DIVERGENCE_FACTOR * self.gamma_scale {
            return (Some(Status::NumericalError), false);
        }
        if self.settings.met(&res) {
            return (Some(Status::Converged), false);
        }
        let improved = value < self.best.0;
        if improved {
            self.best = (value, res);
            self.since_best = 0;
        } else {
            self.since_best += iterations;
            if self.since_best >= self.settings.stall_iterations {
                return (Some(Status::Stalled), false);
            }
        }
        if self.iterations >= self.settings.max_iter {
            return (Some(Status::MaxIterations), improved);
        }
        (None, improved)
    }

    /// The residual of the best iterate so far.
    pub(crate) fn best_residual(&self) -> Residual {
        self.best.1
    }

    /// The report: the last iterate `gamma` if converged, else the best one.
    pub(crate) fn finish(
        self,
        name: &str,
        sys: &System,
        status: Status,
        gamma: Vec<f64>,
    ) -> Report {
        let (gamma, residual) = if status == Status::Converged {
            (gamma, self.last)
        } else {
            (self.best_gamma.clone(), self.best.1)
        };
        self.report(name, sys, status, gamma, residual, None)
    }

    /// The report of the iterate `gamma` the solve returns (the last one if converged, else
    /// the best one) with its `residual`; `u`, when the caller has it, is the velocity of
    /// `gamma` at which `residual` was measured in `f64` ([`merit::residual`]).
    pub(crate) fn report(
        self,
        name: &str,
        sys: &System,
        status: Status,
        gamma: Vec<f64>,
        residual: Residual,
        u: Option<&[f64]>,
    ) -> Report {
        Report {
            solver: name.to_string(),
            status,
            iterations: self.iterations,
            time_s: self.start.elapsed().as_secs_f64(),
            residual,
            merit: match u {
                Some(u) => merit::evaluate_at(sys, &gamma, u, &residual, self.settings.friction),
                None => merit::evaluate(sys, &gamma, self.settings.friction),
            },
            gamma,
            trace: self.trace,
            phases: Vec::new(),
            refinements: 0,
            rounds: 0,
        }
    }
}
