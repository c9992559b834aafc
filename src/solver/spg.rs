//! P-SPG-FB, the preconditioned spectral projected gradient with fallback of paper 004.
//!
//! For the QP `min f(x) = ½ xᵀAx + bᵀx, x ∈ K` (`A = N + E`, `b = r`): a diagonal
//! preconditioner `P = diag(A)` averaged within each cone, spectral steps alternating the
//! preconditioned Barzilai–Borwein formulas (10)–(11), and the non-monotone line search of
//! Grippo–Lampariello–Lucidi over the last `N_GLL` values of `f`. The fallback returns the best
//! iterate by the residual of the stopping criterion (the shared driver keeps it).
//!
//! Because `f` is quadratic, the line search needs no product beyond `A d`: along
//! `x + λd`, `g = g_j + λ A d` and `f = f_j + λ⟨d, g_j⟩ + ½λ²⟨d, A d⟩`. One product per
//! iteration, plus an exact recomputation of `g` every [`Spg::REFRESH`] iterations.

use serde::{Deserialize, Serialize};

use super::{
    Bias, BlockStep, Report, Session, Settings, Solver, Stateless, StatelessSession, block_steps,
    coulomb, drive, effective_r, velocity_into,
};
use crate::error::{Error, Result};
use crate::problem::System;

/// The parameters of P-SPG-FB (paper 004 §1), with the paper's values where it gives them.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct SpgParams {
    /// Smallest spectral step `α_min` (paper: 1e-9).
    pub alpha_min: f64,
    /// Largest spectral step `α_max` (paper: 1e9).
    pub alpha_max: f64,
    /// First spectral step `α̂_0`; 1 is the preconditioned (Jacobi-like) step.
    pub alpha_0: f64,
    /// Length `N_GLL` of the non-monotone memory (paper: about 10).
    pub n_gll: usize,
    /// Armijo parameter `γ ∈ (0, 1)` (Birgin–Martínez–Raydan: 1e-4).
    pub armijo: f64,
    /// Line-search safeguard `σ_min` (BMR: 0.1).
    pub sigma_min: f64,
    /// Line-search safeguard `σ_max` (BMR: 0.9).
    pub sigma_max: f64,
}

impl Default for SpgParams {
    fn default() -> Self {
        SpgParams {
            alpha_min: 1e-9,
            alpha_max: 1e9,
            alpha_0: 1.0,
            n_gll: 10,
            armijo: 1e-4,
            sigma_min: 0.1,
            sigma_max: 0.9,
        }
    }
}

/// P-SPG-FB; registry name `spg`.
#[derive(Debug, Clone, Copy, Default)]
pub struct Spg {
    /// Its parameters.
    pub params: SpgParams,
}

impl Spg {
    /// Iterations between exact recomputations of the gradient.
    pub const REFRESH: usize = 50;

    /// Checks the parameters' ranges.
    pub(crate) fn check(&self) -> Result<()> {
        let p = &self.params;
        let bad = |name, value: f64, message: &str| {
            Err(Error::InvalidSetting {
                name,
                value: value.to_string(),
                message: message.into(),
            })
        };
        if !(p.alpha_min > 0.0 && p.alpha_min <= p.alpha_0 && p.alpha_0 <= p.alpha_max) {
            return bad("spg.alpha_0", p.alpha_0, "need 0 < α_min ≤ α_0 ≤ α_max");
        }
        if !(p.armijo > 0.0 && p.armijo < 1.0) {
            return bad("spg.armijo", p.armijo, "must lie in (0, 1)");
        }
        if !(0.0 < p.sigma_min && p.sigma_min < p.sigma_max && p.sigma_max < 1.0) {
            return bad("spg.sigma_min", p.sigma_min, "need 0 < σ_min < σ_max < 1");
        }
        if p.n_gll == 0 {
            return bad("spg.n_gll", 0.0, "must be at least 1");
        }
        Ok(())
    }

    /// The QP (CCP) solve.
    fn solve_ccp(&self, sys: &System, settings: &Settings, bias: Bias) -> Report {
        let p = self.params;
        let m = sys.rows();
        let b = effective_r(sys, bias);
        // P = diag(A) averaged within each cone (the preconditioner of paper 004).
        let mean_step = block_steps(sys, BlockStep::MeanDiagonal);
        let mut precond = vec![1.0; m];
        for (k, eta) in mean_step.iter().enumerate() {
            if *eta > 0.0 {
                precond[sys.block_range(k)].fill(1.0 / eta);
            }
        }
        let eta = block_steps(sys, settings.block_step);
        let project = |x: &mut [f64]| {
            for (k, cone) in sys.cones().iter().enumerate() {
                cone.project(&mut x[sys.block_range(k)]);
            }
        };
        let dot = |a: &[f64], c: &[f64]| a.iter().zip(c).map(|(x, y)| x * y).sum::<f64>();
        let (mut d, mut ad) = (vec![0.0; m], vec![0.0; m]);
        let mut history: Vec<f64> = Vec::with_capacity(p.n_gll);
        let mut alpha = p.alpha_0;
        let mut j = 0usize;
        drive(Self::NAME, sys, settings, bias, &eta, |x, g| {
            let f = 0.5
                * x.iter()
                    .zip(g.iter())
                    .zip(&b)
                    .map(|((x, g), b)| x * (g + b))
                    .sum::<f64>();
            if history.is_empty() {
                history.push(f);
            }
            // d = Π(x − α P⁻¹ g) − x, or the unpreconditioned direction if that one is not
            // a descent direction.
            for i in 0..m {
                d[i] = x[i] - alpha * g[i] / precond[i];
            }
            project(&mut d);
            d.iter_mut().zip(x.iter()).for_each(|(di, xi)| *di -= xi);
            if dot(&d, g) >= 0.0 {
                for i in 0..m {
                    d[i] = x[i] - alpha * g[i];
                }
                project(&mut d);
                d.iter_mut().zip(x.iter()).for_each(|(di, xi)| *di -= xi);
            }
            let dg = dot(&d, g);
            if dg >= 0.0 {
                // Stationary (up to rounding): nothing to do.
                return 0;
            }
            sys.apply(&d, &mut ad);
            let dad = dot(&d, &ad);
            let f_ref = history.iter().copied().fold(f64::NEG_INFINITY, f64::max);
            let mut lambda = 1.0;
            let mut f_new = f + dg + 0.5 * dad;
            while f_new > f_ref + p.armijo * lambda * dg && lambda > 1e-12 {
                // Minimizer of the quadratic along d, safeguarded in [σ_min λ, σ_max λ].
                let curvature = f_new - f - lambda * dg;
                let lq = if curvature > 0.0 {
                    -0.5 * lambda * lambda * dg / curvature
                } else {
                    p.sigma_max * lambda
                };
                lambda = lq.clamp(p.sigma_min * lambda, p.sigma_max * lambda);
                f_new = f + lambda * dg + 0.5 * lambda * lambda * dad;
            }
            // s = λd, y = λAd; BB1 on odd iterations, BB2 on even ones, preconditioned.
            let (mut sps, mut sy, mut ypy) = (0.0, 0.0, 0.0);
            for i in 0..m {
                let (s, y) = (lambda * d[i], lambda * ad[i]);
                x[i] += s;
                g[i] += y;
                sps += s * precond[i] * s;
                sy += s * y;
                ypy += y * y / precond[i];
            }
            alpha = if sy <= 0.0 {
                p.alpha_max
            } else if j % 2 == 1 {
                sps / sy
            } else {
                sy / ypy
            }
            .clamp(p.alpha_min, p.alpha_max);
            if history.len() == p.n_gll {
                history.remove(0);
            }
            history.push(f_new);
            j += 1;
            if j.is_multiple_of(Self::REFRESH) {
                velocity_into(sys, &b, x, g);
                return 2;
            }
            1
        })
    }
}

impl Solver for Spg {
    fn name(&self) -> &'static str {
        Self::NAME
    }

    fn prepare(&self, _sys: &System, _settings: &Settings) -> Result<Box<dyn Session>> {
        self.check()?;
        Ok(Box::new(StatelessSession(*self)))
    }
}

impl Stateless for Spg {
    const NAME: &'static str = "spg";

    fn solve_once(&self, sys: &System, settings: &Settings) -> Result<Report> {
        settings.validate(sys.rows())?;
        self.check()?;
        coulomb::solve(
            Self::NAME,
            sys,
            settings,
            coulomb::Rounds::Inexact,
            |s, bias| Ok(self.solve_ccp(sys, s, bias)),
        )
    }
}
