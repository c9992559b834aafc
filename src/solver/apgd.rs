//! APGD: Nesterov's accelerated projected gradient with an adaptive step, gradient restart
//! and best-iterate fallback (Mazhar, Heyn, Negrut, Tasora 2015; Chrono's default solver for
//! granular flows). The anchor that P-SPG-FB must beat.
//!
//! For `min ½ xᵀAx + bᵀx, x ∈ K`: from the extrapolated point `y`, `x⁺ = Π(y − t ∇f(y))`
//! with `t = 1/L`, doubling `L` until the quadratic upper bound holds
//! (`½ dᵀAd ≤ ½ L ‖d‖²`, `d = x⁺ − y`), then `θ⁺ = (−θ² + θ√(θ² + 4))/2`,
//! `β = θ(1 − θ)/(θ² + θ⁺)`, `y⁺ = x⁺ + β(x⁺ − x)`, and `L ← 0.9 L`. When
//! `∇f(y)·(x⁺ − x) > 0` the momentum is thrown away (`y⁺ = x⁺`, `θ⁺ = 1`). Gradients along the
//! way are updated from `A d` (affine gradient): one product per trial step.

use super::{
    Bias, Report, Session, Settings, Solver, Stateless, StatelessSession, block_steps, coulomb,
    drive, effective_r, velocity_into,
};
use crate::error::Result;
use crate::problem::System;

/// APGD; registry name `apgd`.
#[derive(Debug, Clone, Copy, Default)]
pub struct Apgd;

impl Apgd {
    /// Iterations between exact recomputations of the gradient at `y`.
    pub const REFRESH: usize = 50;
    /// Factor by which `L` shrinks after each iteration (Mazhar et al.: 0.9).
    pub const SHRINK: f64 = 0.9;

    fn solve_ccp(&self, sys: &System, settings: &Settings, bias: Bias) -> Report {
        let m = sys.rows();
        let b = effective_r(sys, bias);
        let eta = block_steps(sys, settings.block_step);
        let project = |x: &mut [f64]| {
            for (k, cone) in sys.cones().iter().enumerate() {
                cone.project(&mut x[sys.block_range(k)]);
            }
        };
        let dot = |a: &[f64], c: &[f64]| a.iter().zip(c).map(|(x, y)| x * y).sum::<f64>();
        // L from one product with a vector of ones: ‖A 1‖ / ‖1‖ ≤ λ_max(A).
        let mut ones_image = vec![0.0; m];
        sys.apply(&vec![1.0; m], &mut ones_image);
        let mut lipschitz = (dot(&ones_image, &ones_image) / m.max(1) as f64)
            .sqrt()
            .max(f64::MIN_POSITIVE);
        let (mut y, mut g_y) = (Vec::new(), Vec::new());
        let (mut x_new, mut ad, mut d) = (vec![0.0; m], vec![0.0; m], vec![0.0; m]);
        let (mut u_new, mut step) = (vec![0.0; m], vec![0.0; m]);
        let mut theta = 1.0f64;
        let mut k = 0usize;
        drive(Self::NAME, sys, settings, bias, &eta, |x, u| {
            if y.is_empty() {
                y = x.to_vec();
                g_y = u.to_vec();
            }
            let mut products = 0;
            loop {
                let t = 1.0 / lipschitz;
                for i in 0..m {
                    x_new[i] = y[i] - t * g_y[i];
                }
                project(&mut x_new);
                for i in 0..m {
                    d[i] = x_new[i] - y[i];
                }
                sys.apply(&d, &mut ad);
                products += 1;
                let dd = dot(&d, &d);
                if dot(&d, &ad) <= lipschitz * dd * (1.0 + 1e-12) || dd == 0.0 {
                    break;
                }
                lipschitz *= 2.0;
            }
            // u⁺ = ∇f(x⁺) = ∇f(y) + A d.
            for i in 0..m {
                u_new[i] = g_y[i] + ad[i];
                step[i] = x_new[i] - x[i];
            }
            let restart = dot(&g_y, &step) > 0.0;
            let theta_new = 0.5 * (-theta * theta + theta * (theta * theta + 4.0).sqrt());
            let beta = if restart {
                0.0
            } else {
                theta * (1.0 - theta) / (theta * theta + theta_new)
            };
            theta = if restart { 1.0 } else { theta_new };
            for i in 0..m {
                y[i] = x_new[i] + beta * step[i];
                g_y[i] = u_new[i] + beta * (u_new[i] - u[i]);
            }
            x.copy_from_slice(&x_new);
            u.copy_from_slice(&u_new);
            lipschitz *= Self::SHRINK;
            k += 1;
            if k.is_multiple_of(Self::REFRESH) {
                velocity_into(sys, &b, x, u);
                velocity_into(sys, &b, &y, &mut g_y);
                products += 2;
            }
            products
        })
    }
}

impl Solver for Apgd {
    fn name(&self) -> &'static str {
        Self::NAME
    }

    fn prepare(&self, _sys: &System, _settings: &Settings) -> Result<Box<dyn Session>> {
        Ok(Box::new(StatelessSession(*self)))
    }
}

impl Stateless for Apgd {
    const NAME: &'static str = "apgd";

    fn solve_once(&self, sys: &System, settings: &Settings) -> Result<Report> {
        settings.validate(sys.rows())?;
        coulomb::solve(
            Self::NAME,
            sys,
            settings,
            coulomb::Rounds::Inexact,
            |s, bias| Ok(self.solve_ccp(sys, s, bias)),
        )
    }
}
