//! Projected Jacobi (paper 001 eq. (3)): every block moves at once from the same iterate,
//! `γ_k ← Π_K(γ_k − ω η_k û_k)`, blocks in parallel with rayon. The update of a block reads
//! only the previous iterate, so the result is the same whatever the number of threads.
//! A factored problem runs on the CPU kernel (the `kernel` module, `f32` or `f64`); an
//! explicit `N` on the operator's product, in `f64`.

use rayon::prelude::*;

use super::kernel::{self, KernelSession, OnKernel, Spare};
use super::{
    Report, Session, Settings, Solver, block_steps, drive, effective_r, projected_step,
    velocity_into,
};
use crate::error::Result;
use crate::problem::System;

/// Projected Jacobi; registry name `jacobi`.
#[derive(Debug, Clone, Copy, Default)]
pub struct Jacobi;

impl Jacobi {
    /// Default relaxation: Jacobi needs `ω η ρ(N) < 2`, and a granular contact network easily
    /// has `ρ(η N)` near 4 or more, hence a small default.
    pub const DEFAULT_OMEGA: f64 = 0.3;
}

impl Solver for Jacobi {
    fn name(&self) -> &'static str {
        Self::NAME
    }

    fn prepare(&self, _sys: &System, _settings: &Settings) -> Result<Box<dyn Session>> {
        Ok(Box::new(KernelSession::new(*self)))
    }
}

impl OnKernel for Jacobi {
    const NAME: &'static str = "jacobi";

    fn solve_in(&self, sys: &System, settings: &Settings, spare: &mut Spare) -> Result<Report> {
        settings.validate(sys.rows())?;
        let omega = settings.omega.unwrap_or(Self::DEFAULT_OMEGA);
        if let Some(f) = sys.factored() {
            let all: Vec<usize> = (0..sys.blocks()).collect();
            let job = kernel::Job {
                name: Self::NAME,
                sys,
                f,
                settings,
                omega,
                sweep: kernel::Sweep::Jacobi,
                groups: &[&all],
                tiles: kernel::ONE_TILE,
            };
            return Ok(kernel::solve(&job, spare));
        }
        let eta = block_steps(sys, settings.block_step);
        let ranges: Vec<_> = (0..sys.blocks()).map(|k| sys.block_range(k)).collect();
        let mut next = vec![[0.0f64; 3]; sys.blocks()];
        let r_eff = effective_r(sys, None);
        Ok(drive(Self::NAME, sys, settings, None, &eta, |gamma, u| {
            next.par_iter_mut()
                .with_min_len(crate::PAR_MIN_ITEMS)
                .enumerate()
                .for_each(|(k, out)| {
                    let range = ranges[k].clone();
                    *out = projected_step(
                        &sys.cones()[k],
                        &gamma[range.clone()],
                        &u[range],
                        omega * eta[k],
                        settings.friction,
                    );
                });
            for (range, block) in ranges.iter().zip(&next) {
                gamma[range.clone()].copy_from_slice(&block[..range.len()]);
            }
            velocity_into(sys, &r_eff, gamma, u);
            1
        }))
    }
}
