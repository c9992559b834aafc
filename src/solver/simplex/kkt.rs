//! The symmetric system (3.2) of paper 003 for each problem form, with the deactivation
//! pivot on the diagonal of the inactive constraint rows.
//!
//! Unknowns `z = (δv, y)`: the velocity correction `δv = v − v_free` (none for an assembled
//! problem) then one entry per constraint row, with `y = −γ` in the KKT forms (so that the
//! matrix is symmetric quasi-definite) and `y = γ` for an explicit `N`:
//!
//! ```text
//! factored / global:  [ H   Jᵀ      ] [δv]   [  0 ]        assembled:  (N + E + P) γ = −r
//!                     [ J  −E − P   ] [ y] = [ −r ]
//! ```
//!
//! `H` is the mass matrix (factored form) or the global `H`; `P` is zero on the active rows
//! and a very large pivot on the inactive ones (paper 003 §3.2), so that their multipliers
//! vanish. The constraint row `l` of the active matrix gives the velocity:
//! `u_l = row_l · z − rhs_l` (3.3).

use faer::dyn_stack::{MemBuffer, MemStack};
use faer::sparse::SymbolicSparseColMat;
use faer::sparse::linalg::amd;

use crate::problem::System;

/// Size of the deactivation pivot relative to the largest diagonal of `N + E` (paper 003
/// uses 10²⁰ on problems of unit scale).
const BIG_PIVOT: f64 = 1e20;

/// The system (3.2): its rows, the lower triangle for the factorization, the ordering.
pub(super) struct Kkt {
    /// Number of unknowns.
    pub n: usize,
    /// Index of the first constraint unknown.
    pub off: usize,
    /// Number of constraint rows `m`.
    pub m: usize,
    /// `z_{off+l} = sign · γ_l`.
    pub sign: f64,
    /// The signed deactivation pivot added to the diagonal of an inactive row.
    pub big: f64,
    /// The right-hand side of the initial point.
    pub rhs: Vec<f64>,
    /// Rows of the matrix (CSR, both triangles) without the constraint diagonals.
    ptr: Vec<usize>,
    col: Vec<usize>,
    val: Vec<f64>,
    /// The diagonal of each active constraint row (`−E_l`, or `N_ll + E_l`).
    diag: Vec<f64>,
    /// Lower triangle (CSC) for faer, with every constraint diagonal stored.
    pub lower: SymbolicSparseColMat<usize>,
    lower_val: Vec<f64>,
    diag_slot: Vec<usize>,
    /// Elimination order: the velocities first (their pivots are the masses), then the
    /// constraint rows, each group in approximate-minimum-degree order.
    pub perm: Vec<usize>,
    /// Inverse of `perm`.
    pub perm_inv: Vec<usize>,
}

/// Entries `(i, j, v)` of a symmetric matrix, both triangles.
type Triplets = Vec<(usize, usize, f64)>;

impl Kkt {
    /// The system of `sys` with the vector `r` replaced by `r_eff` (`r` plus the solve's
    /// bias).
    pub fn new(sys: &System, r_eff: &[f64]) -> Self {
        let m = sys.rows();
        let comp = sys.compliance();
        let mut t: Triplets = Vec::new();
        let (off, sign, diag) = if let Some(f) = sys.factored() {
            let nb = f.bodies();
            for (b, minv) in f.inv_mass().iter().enumerate() {
                for (c, im) in minv.iter().enumerate() {
                    t.push((6 * b + c, 6 * b + c, 1.0 / im));
                }
            }
            let off = 6 * nb;
            for k in 0..sys.blocks() {
                let range = sys.block_range(k);
                let d = range.len();
                for (s, &body) in f.block_bodies(k).iter().enumerate() {
                    let start = f.jac_start()[k] + s * d;
                    for (r, row) in f.jac()[start..start + d].iter().enumerate() {
                        for (c, &v) in row.iter().enumerate() {
                            if v != 0.0 {
                                t.push((off + range.start + r, 6 * body + c, v));
                                t.push((6 * body + c, off + range.start + r, v));
                            }
                        }
                    }
                }
            }
            (off, -1.0, comp.iter().map(|e| -e).collect::<Vec<_>>())
        } else if let Some(g) = sys.global() {
            let nd = g.h.nrows;
            for i in 0..nd {
                let (cols, vals) = g.h.row(i);
                for (&j, &v) in cols.iter().zip(vals) {
                    // The lower triangle, mirrored: H is symmetric up to rounding.
                    if j <= i {
                        t.push((i, j, v));
                        if j < i {
                            t.push((j, i, v));
                        }
                    }
                }
            }
            for l in 0..m {
                let (cols, vals) = g.j.row(l);
                for (&j, &v) in cols.iter().zip(vals) {
                    t.push((nd + l, j, v));
                    t.push((j, nd + l, v));
                }
            }
            (nd, -1.0, comp.iter().map(|e| -e).collect::<Vec<_>>())
        } else {
            let a = sys
                .operator()
                .as_matrix()
                .expect("an operator is factored, global or explicit");
            let mut diag = comp.to_vec();
            for (l, dl) in diag.iter_mut().enumerate() {
                let (cols, vals) = a.row(l);
                for (&j, &v) in cols.iter().zip(vals) {
                    if j == l {
                        *dl += v;
                    } else {
                        t.push((l, j, v));
                    }
                }
            }
            (0, 1.0, diag)
        };
        let n = off + m;
        let mut rhs = vec![0.0; n];
        for (x, r) in rhs[off..].iter_mut().zip(r_eff) {
            *x = -r;
        }
        let scale = (0..sys.blocks())
            .flat_map(|k| {
                let b = sys.diagonal_block(k);
                let d = sys.block_range(k).len();
                (0..d).map(move |a| b[a * d + a].abs())
            })
            .fold(0.0, f64::max);
        let big = -sign * BIG_PIVOT * if scale > 0.0 { scale } else { 1.0 };
        let (ptr, col, val) = csr(n, &t);
        let (lower, lower_val, diag_slot) = lower_csc(n, off, &t);
        let (perm, perm_inv) = ordering(&lower, off);
        Kkt {
            n,
            off,
            m,
            sign,
            big,
            rhs,
            ptr,
            col,
            val,
            diag,
            lower,
            lower_val,
            diag_slot,
            perm,
            perm_inv,
        }
    }

    /// Values of the lower triangle with the given active set.
    pub fn lower_values(&self, active: &[bool]) -> Vec<f64> {
        let mut v = self.lower_val.clone();
        for l in 0..self.m {
            v[self.diag_slot[l]] = self.diagonal(l, active[l]);
        }
        v
    }

    /// The diagonal of constraint row `l`, active or not.
    pub fn diagonal(&self, l: usize, active: bool) -> f64 {
        if active {
            self.diag[l]
        } else {
            self.diag[l] + self.big
        }
    }

    /// `(S z)_i` for unknown `i`, with constraint row diagonals as for `active`.
    pub fn row_product(&self, i: usize, z: &[f64], active: &[bool]) -> f64 {
        let mut s: f64 = (self.ptr[i]..self.ptr[i + 1])
            .map(|p| self.val[p] * z[self.col[p]])
            .sum();
        if i >= self.off {
            let l = i - self.off;
            s += self.diagonal(l, active[l]) * z[i];
        }
        s
    }

    /// Row `l` of the active constraint block times `z`: `u_l + rhs_l` of (3.3).
    pub fn constraint_product(&self, l: usize, z: &[f64]) -> f64 {
        let i = self.off + l;
        (self.ptr[i]..self.ptr[i + 1])
            .map(|p| self.val[p] * z[self.col[p]])
            .sum::<f64>()
            + self.diag[l] * z[i]
    }

    /// The off-diagonal entries of column `off + l` (= row, by symmetry).
    pub fn column(&self, l: usize) -> impl Iterator<Item = (usize, f64)> + '_ {
        let i = self.off + l;
        (self.ptr[i]..self.ptr[i + 1]).map(|p| (self.col[p], self.val[p]))
    }
}

/// CSR of the triplets, duplicates summed.
fn csr(n: usize, t: &Triplets) -> (Vec<usize>, Vec<usize>, Vec<f64>) {
    let mut sorted = t.clone();
    sorted.sort_by_key(|&(i, j, _)| (i, j));
    let mut ptr = vec![0; n + 1];
    let (mut col, mut val): (Vec<usize>, Vec<f64>) = (Vec::new(), Vec::new());
    let mut last = None;
    for (i, j, v) in sorted {
        if last == Some((i, j)) {
            *val.last_mut().expect("a previous entry") += v;
            continue;
        }
        last = Some((i, j));
        ptr[i + 1] += 1;
        col.push(j);
        val.push(v);
    }
    for i in 0..n {
        ptr[i + 1] += ptr[i];
    }
    (ptr, col, val)
}

/// The lower triangle in CSC with every diagonal entry of the constraint rows present, and
/// the slot of each of those diagonals.
fn lower_csc(
    n: usize,
    off: usize,
    t: &Triplets,
) -> (SymbolicSparseColMat<usize>, Vec<f64>, Vec<usize>) {
    // CSC of the lower triangle = CSR of the upper one: transpose the entries.
    let mut upper: Triplets = t
        .iter()
        .filter(|e| e.0 >= e.1)
        .map(|&(i, j, v)| (j, i, v))
        .collect();
    upper.extend((off..n).map(|i| (i, i, 0.0)));
    let (ptr, row, val) = csr(n, &upper);
    let diag_slot = (off..n)
        .map(|i| {
            (ptr[i]..ptr[i + 1])
                .find(|&p| row[p] == i)
                .expect("every constraint diagonal is stored")
        })
        .collect();
    let lower = SymbolicSparseColMat::new_checked(n, n, ptr, None, row);
    (lower, val, diag_slot)
}

/// Approximate minimum degree on the whole pattern, then the velocity unknowns moved ahead
/// of the constraint rows (stable): every velocity pivot is then a mass or a pivot of `H`,
/// and the constraint pivots are those of the Delassus matrix `−(N + E + P)`, nonzero as
/// long as the active rows are independent.
fn ordering(lower: &SymbolicSparseColMat<usize>, off: usize) -> (Vec<usize>, Vec<usize>) {
    let n = lower.nrows();
    let (mut fwd, mut inv) = (vec![0usize; n], vec![0usize; n]);
    let nnz = lower.row_idx().len();
    let mut mem = MemBuffer::new(amd::order_maybe_unsorted_scratch::<usize>(n, nnz));
    if amd::order_maybe_unsorted(
        &mut fwd,
        &mut inv,
        lower.as_ref(),
        amd::Control::default(),
        MemStack::new(&mut mem),
    )
    .is_err()
    {
        fwd = (0..n).collect();
    }
    let mut perm: Vec<usize> = fwd.iter().copied().filter(|&i| i < off).collect();
    perm.extend(fwd.iter().copied().filter(|&i| i >= off));
    let mut perm_inv = vec![0; n];
    for (p, &i) in perm.iter().enumerate() {
        perm_inv[i] = p;
    }
    (perm, perm_inv)
}
