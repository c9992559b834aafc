//! Projected Gauss–Seidel / SOR (paper 001, Algorithm 4.1): blocks in order, each one moved
//! with the latest impulses of the blocks before it, `γ_k ← Π_K(γ_k − ω η_k û_k)`.
//!
//! In the factored form the sweep keeps `w = M⁻¹ Jᵀ γ` and updates it immediately after each
//! block (`w += s_k Δγ_k`, the `q̇` update of Algorithm 4.1), so a block costs O(its
//! Jacobian) whatever the problem size; in the assembled form the block row of `N` is read.

use super::{
    Report, Session, Settings, Solver, Stateless, StatelessSession, block_steps, drive,
    effective_r, projected_step, velocity_into,
};
use crate::error::Result;
use crate::problem::System;

/// Projected Gauss–Seidel with over-relaxation; registry name `pgs`.
#[derive(Debug, Clone, Copy, Default)]
pub struct GaussSeidel;

impl GaussSeidel {
    /// Default relaxation (plain Gauss–Seidel).
    pub const DEFAULT_OMEGA: f64 = 1.0;
}

impl Solver for GaussSeidel {
    fn name(&self) -> &'static str {
        Self::NAME
    }

    fn prepare(&self, _sys: &System, _settings: &Settings) -> Result<Box<dyn Session>> {
        Ok(Box::new(StatelessSession(*self)))
    }
}

impl Stateless for GaussSeidel {
    const NAME: &'static str = "pgs";

    fn solve_once(&self, sys: &System, settings: &Settings) -> Result<Report> {
        settings.validate(sys.rows())?;
        let omega = settings.omega.unwrap_or(Self::DEFAULT_OMEGA);
        let eta = block_steps(sys, settings.block_step);
        let op = sys.operator();
        let mut aux = vec![0.0; op.aux_len()];
        let mut fresh = true;
        let r_eff = effective_r(sys, None);
        Ok(drive(Self::NAME, sys, settings, None, &eta, |gamma, u| {
            // w = M⁻¹ Jᵀ γ is built once from the initial iterate, then kept up to date by the
            // sweeps (the driver does not touch γ between them).
            if fresh {
                op.init_aux(gamma, &mut aux);
                fresh = false;
            }
            for (k, cone) in sys.cones().iter().enumerate() {
                let range = sys.block_range(k);
                let d = range.len();
                let mut nu = [0.0; 3];
                op.block_product(k, gamma, &aux, &mut nu[..d]);
                for (i, row) in range.clone().enumerate() {
                    nu[i] += r_eff[row] + sys.compliance()[row] * gamma[row];
                }
                let next = projected_step(
                    cone,
                    &gamma[range.clone()],
                    &nu[..d],
                    omega * eta[k],
                    settings.friction,
                );
                let mut delta = [0.0; 3];
                for i in 0..d {
                    delta[i] = next[i] - gamma[range.start + i];
                    gamma[range.start + i] = next[i];
                }
                op.scatter(k, &delta[..d], &mut aux);
            }
            // A sweep costs about one product; the new velocity another.
            velocity_into(sys, &r_eff, gamma, u);
            2
        }))
    }
}
