//! The factorization of (3.2) and its update after each pivot.
//!
//! A base `LDLᵀ` (faer, symbolic analysis once) is kept for `REFACTOR_AFTER` pivots. In
//! between, the rows whose state differs from the base are handled exactly by a bordered
//! (Sherman–Morrison–Woodbury) correction: with `S₀` the base matrix and `T` the changed
//! rows,
//!
//! ```text
//! z = S₀⁻¹ rhs + Σ_{l∈T} t_l S₀⁻¹ e_l,    C t = target − cond(S₀⁻¹ rhs),
//! ```
//!
//! where the condition of a row is its equation in the current system: `row_l · z = rhs_l`
//! for a row activated since the base, `z_l = 0` for a row deactivated since the base. Each
//! pivot costs one solve with `S₀` for the new column `S₀⁻¹ e_l` and a small dense system
//! `C` (`|T| × |T|`); the columns are kept until the next numeric refactorization, which
//! reuses the symbolic analysis.

use faer::dyn_stack::{MemBuffer, MemStack};
use faer::linalg::cholesky::ldlt::factor::LdltRegularization;
use faer::perm::PermRef;
use faer::sparse::SparseColMatRef;
use faer::sparse::linalg::cholesky::{
    CholeskySymbolicParams, LdltRef, SymbolicCholesky, SymmetricOrdering,
    factorize_symbolic_cholesky,
};
use faer::{Conj, MatMut, Par, Side};
use nalgebra::{DMatrix, DVector};

use super::kkt::Kkt;

/// Pivots between two numeric factorizations.
pub(super) const REFACTOR_AFTER: usize = 48;

/// The active rows are dependent (or the bilateral block is singular): the basis cannot be
/// factored.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Singular;

/// The factored system of the current active set.
pub(super) struct Basis<'a> {
    kkt: &'a Kkt,
    symbolic: SymbolicCholesky<usize>,
    l_values: Vec<f64>,
    solve_mem: MemBuffer,
    /// Rows changed since the base factorization, and `S₀⁻¹ e_l` for each.
    toggled: Vec<usize>,
    columns: Vec<Vec<f64>>,
    /// Numeric factorizations so far.
    pub factorizations: usize,
}

impl Basis<'_> {
    /// Stored entries of the factor `L`.
    pub fn factor_entries(&self) -> usize {
        self.symbolic.len_val()
    }
}

impl<'a> Basis<'a> {
    /// Analyses the pattern and factors the system of `active`.
    pub fn new(kkt: &'a Kkt, active: &[bool]) -> Result<Self, Singular> {
        let perm = PermRef::new_checked(&kkt.perm, &kkt.perm_inv, kkt.n);
        let symbolic = factorize_symbolic_cholesky(
            kkt.lower.as_ref(),
            Side::Lower,
            SymmetricOrdering::Custom(perm),
            CholeskySymbolicParams::default(),
        )
        .map_err(|_| Singular)?;
        let solve_mem = MemBuffer::new(symbolic.solve_in_place_scratch::<f64>(1, Par::Seq));
        let mut basis = Basis {
            kkt,
            l_values: vec![0.0; symbolic.len_val()],
            symbolic,
            solve_mem,
            toggled: Vec::new(),
            columns: Vec::new(),
            factorizations: 0,
        };
        basis.refactor(active)?;
        Ok(basis)
    }

    /// Numeric factorization of the system of `active`, reusing the symbolic analysis.
    fn refactor(&mut self, active: &[bool]) -> Result<(), Singular> {
        let values = self.kkt.lower_values(active);
        let a = SparseColMatRef::new(self.kkt.lower.as_ref(), &values);
        let mut mem = MemBuffer::new(
            self.symbolic
                .factorize_numeric_ldlt_scratch::<f64>(Par::Seq, Default::default()),
        );
        self.symbolic
            .factorize_numeric_ldlt(
                &mut self.l_values,
                a,
                Side::Lower,
                LdltRegularization::default(),
                Par::Seq,
                MemStack::new(&mut mem),
                Default::default(),
            )
            .map_err(|_| Singular)?;
        self.factorizations += 1;
        self.toggled.clear();
        self.columns.clear();
        if self.l_values.iter().all(|v| v.is_finite()) {
            Ok(())
        } else {
            Err(Singular)
        }
    }

    /// `x ← S₀⁻¹ x`.
    fn base_solve(&mut self, x: &mut [f64]) {
        let n = x.len();
        LdltRef::new(&self.symbolic, &self.l_values).solve_in_place_with_conj(
            Conj::No,
            MatMut::from_column_major_slice_mut(x, n, 1),
            Par::Seq,
            MemStack::new(&mut self.solve_mem),
        );
    }

    /// Row `l` changed state; `active` is the new active set. Returns whether the basis was
    /// refactored (the caller then recomputes its iterate from scratch).
    pub fn toggle(&mut self, l: usize, active: &[bool]) -> Result<bool, Singular> {
        if let Some(p) = self.toggled.iter().position(|&x| x == l) {
            self.toggled.remove(p);
            self.columns.remove(p);
            return Ok(false);
        }
        if self.toggled.len() >= REFACTOR_AFTER {
            self.refactor(active)?;
            return Ok(true);
        }
        let mut e = vec![0.0; self.kkt.n];
        e[self.kkt.off + l] = 1.0;
        self.base_solve(&mut e);
        self.toggled.push(l);
        self.columns.push(e);
        Ok(false)
    }

    /// The equation of changed row `l` in the current system, applied to `z`.
    fn condition(&self, l: usize, z: &[f64], active: &[bool]) -> f64 {
        if active[l] {
            self.kkt.constraint_product(l, z)
        } else {
            z[self.kkt.off + l]
        }
    }

    /// Solves the system of `active` (inactive rows exactly at zero) with one step of
    /// iterative refinement when `refine`.
    pub fn solve(
        &mut self,
        rhs: &[f64],
        active: &[bool],
        refine: bool,
    ) -> Result<Vec<f64>, Singular> {
        let mut z = self.solve_once(rhs, active)?;
        if refine {
            let res: Vec<f64> = (0..self.kkt.n)
                .map(|i| {
                    let inactive = i >= self.kkt.off && !active[i - self.kkt.off];
                    if inactive {
                        0.0
                    } else {
                        rhs[i] - self.kkt.row_product(i, &z, active)
                    }
                })
                .collect();
            let dz = self.solve_once(&res, active)?;
            z.iter_mut().zip(&dz).for_each(|(a, b)| *a += b);
        }
        Ok(z)
    }

    fn solve_once(&mut self, rhs: &[f64], active: &[bool]) -> Result<Vec<f64>, Singular> {
        let mut z = rhs.to_vec();
        self.base_solve(&mut z);
        let k = self.toggled.len();
        if k > 0 {
            let off = self.kkt.off;
            let c = DMatrix::from_fn(k, k, |a, b| {
                self.condition(self.toggled[a], &self.columns[b], active)
            });
            let f = DVector::from_fn(k, |a, _| {
                let l = self.toggled[a];
                let target = if active[l] { rhs[off + l] } else { 0.0 };
                target - self.condition(l, &z, active)
            });
            let t = c.lu().solve(&f).ok_or(Singular)?;
            for (col, tb) in self.columns.iter().zip(t.iter()) {
                z.iter_mut().zip(col).for_each(|(a, b)| *a += tb * b);
            }
        }
        for l in 0..self.kkt.m {
            if !active[l] {
                z[self.kkt.off + l] = 0.0;
            }
        }
        if z.iter().all(|v| v.is_finite()) {
            Ok(z)
        } else {
            Err(Singular)
        }
    }
}
