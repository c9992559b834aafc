//! Projected Gauss–Seidel / SOR (paper 001, Algorithm 4.1): blocks in order, each one moved
//! with the latest impulses of the blocks before it, `γ_k ← Π_K(γ_k − ω η_k û_k)`.
//!
//! In the factored form the sweep keeps `w = M⁻¹ Jᵀ γ` and updates it immediately after each
//! block (`w += s_k Δγ_k`, the `q̇` update of Algorithm 4.1), so a block costs O(its
//! Jacobian) whatever the problem size; in the assembled form the block row of `N` is read.

use rayon::prelude::*;

use super::colored::Colouring;
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
        let order = Colouring::sequential(sys.blocks());
        Ok(sweeps(Self::NAME, sys, settings, omega, &order))
    }
}

/// Gauss–Seidel sweeps in the order of `colouring`: the colours in sequence, the blocks of a
/// colour (uncoupled) in parallel when there are at least [`crate::PAR_MIN_ITEMS`] of them,
/// else in place one after the other (the same iterate, since they are uncoupled). With one
/// block per colour this is Algorithm 4.1 in block order.
pub(crate) fn sweeps(
    name: &'static str,
    sys: &System,
    settings: &Settings,
    omega: f64,
    colouring: &Colouring,
) -> Report {
    let eta = block_steps(sys, settings.block_step);
    let op = sys.operator();
    let mut aux = vec![0.0; op.aux_len()];
    let mut next = vec![[0.0; 3]; colouring.largest()];
    let mut fresh = true;
    let r_eff = effective_r(sys, None);
    drive(name, sys, settings, None, &eta, |gamma, u| {
        // w = M⁻¹ Jᵀ γ is built once from the initial iterate, then kept up to date by the
        // sweeps (the driver does not touch γ between them).
        if fresh {
            op.init_aux(gamma, &mut aux);
            fresh = false;
        }
        for blocks in colouring.colours() {
            if blocks.len() < crate::PAR_MIN_ITEMS {
                for &k in blocks {
                    let step = omega * eta[k];
                    let out = block_update(sys, k, gamma, &aux, &r_eff, step, settings);
                    apply_update(sys, k, &out, gamma, &mut aux);
                }
                continue;
            }
            let next = &mut next[..blocks.len()];
            let (g, a) = (&*gamma, &aux);
            next.par_iter_mut().zip(blocks).for_each(|(out, &k)| {
                *out = block_update(sys, k, g, a, &r_eff, omega * eta[k], settings);
            });
            for (out, &k) in next.iter().zip(blocks) {
                apply_update(sys, k, out, gamma, &mut aux);
            }
        }
        // A sweep costs about one product; the new velocity another.
        velocity_into(sys, &r_eff, gamma, u);
        2
    })
}

/// The projected step of block `k` from the current impulses `gamma` and the auxiliary state
/// `aux` of the sweep: `Π_K(γ_k − s û_k)` with `u_k = (N γ)_k + r_eff,k + E_k γ_k` and
/// `s = ω η_k`. Reads only, so the blocks of one colour may move in parallel
/// ([`super::colored`]).
pub(crate) fn block_update(
    sys: &System,
    k: usize,
    gamma: &[f64],
    aux: &[f64],
    r_eff: &[f64],
    step: f64,
    settings: &Settings,
) -> [f64; 3] {
    let range = sys.block_range(k);
    let d = range.len();
    let mut nu = [0.0; 3];
    sys.operator().block_product(k, gamma, aux, &mut nu[..d]);
    for (i, row) in range.clone().enumerate() {
        nu[i] += r_eff[row] + sys.compliance()[row] * gamma[row];
    }
    projected_step(
        &sys.cones()[k],
        &gamma[range],
        &nu[..d],
        step,
        settings.friction,
    )
}

/// Moves block `k` of `gamma` to `next` and updates the auxiliary state with the change
/// (the `q̇` update of Algorithm 4.1).
pub(crate) fn apply_update(
    sys: &System,
    k: usize,
    next: &[f64; 3],
    gamma: &mut [f64],
    aux: &mut [f64],
) {
    let range = sys.block_range(k);
    let d = range.len();
    let mut delta = [0.0; 3];
    for i in 0..d {
        delta[i] = next[i] - gamma[range.start + i];
        gamma[range.start + i] = next[i];
    }
    sys.operator().scatter(k, &delta[..d], aux);
}
