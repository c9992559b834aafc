//! The standard form every problem form is brought to before the interior point starts: a
//! monotone mixed cone complementarity problem in `(x, z, s)`,
//!
//! ```text
//! r_d = P x + q − Aᵀ z = 0,          r_p = A x + Q z + b − s = 0,
//! z ∈ C,  s ∈ C*,  z ⊥ s,
//! ```
//!
//! with `P ⪰ 0` and `Q ⪰ 0` symmetric. It is the KKT system of the thesis' QP (eq. 4.15) in
//! each of the crate's forms:
//! - factored: `x = v`, `P = M` (diagonal), `q = −M v_free`, `A = J`, `Q = E`, `b = b`;
//! - global: `x = v`, `P = H`, `q = −f`, `A = J`, `Q = E`;
//! - assembled: no `x`, `Q = N + E`, `b = r` (the QP in the impulses, `N` as Hessian).
//!
//! `z = γ` and `s = u` (the velocities). Bilateral rows are free (`s = 0`, eq. 4.15b); the
//! compliance enters as `Q` (paper 000 eq. 39). A Coulomb cone `{‖γt‖ ≤ μγn}` becomes the
//! standard second-order cone by the row scaling `z' = D⁻¹ z`, `s' = D s`, `D = diag(1/μ, 1, 1)`
//! (then `s ∈ K_μ*` ⇔ `s' ∈ SOC` and `z'ᵀs' = zᵀs`); a cone with `μ = 0` keeps its normal row
//! as `ℝ₊` and drops its tangent rows (`γt = 0`).

use rayon::prelude::*;

use super::cones::{Block, Kind};
use crate::problem::{Cone, CsrMatrix, System};

/// A sparse matrix as `(row, col, value)` triplets (duplicates summed by the KKT assembly).
pub(crate) type Triplets = Vec<(usize, usize, f64)>;

/// The standard form of one problem (see the module documentation).
pub(crate) struct Standard {
    /// Number of `x` unknowns.
    pub n: usize,
    /// Number of rows kept (`z`, `s`).
    pub m: usize,
    /// Upper triangle (row ≤ col) of `P`.
    pub p: Triplets,
    pub q: Vec<f64>,
    /// `A`, `m × n`.
    pub a: Triplets,
    /// Upper triangle of `Q`, `m × m`.
    pub qz: Triplets,
    pub b: Vec<f64>,
    /// `b` without the bias (scaled by `D`), for [`Standard::set_bias`].
    b_free: Vec<f64>,
    /// The cone blocks in row order.
    pub blocks: Vec<Block>,
    /// System row of each kept row.
    pub row_of: Vec<usize>,
    /// The row scaling `D` of each kept row (`γ = D z'`).
    pub d: Vec<f64>,
    /// `P`, `A`, `Aᵀ` and `Q` row-compressed (the symmetric ones whole), for the products of
    /// every iteration on rayon's threads ([`Standard::add_mul`]); of at least
    /// [`PARALLEL_ROWS`] rows only.
    csr: [Option<CsrMatrix>; 4],
}

/// The rows from which [`Standard::add_mul`] runs on rayon's threads. Below, the triplets'
/// scatter: rayon's dispatch costs more than these products, and the small Siconos problems
/// keep their rounding (summed by rows, the iterations on their degenerate contacts changed
/// — Confeti-ex13 13 → 16, OneObject-i100000-499 20 → 23 — and `ip` against Clarabel fell
/// from 1.14 to 1.00 in geometric mean, seventeenth session).
const PARALLEL_ROWS: usize = 4096;

/// The matrices of [`Standard::add_mul`].
#[derive(Debug, Clone, Copy)]
pub(crate) enum Op {
    /// `P`, `n × n`.
    P,
    /// `A`, `m × n`.
    A,
    /// `Aᵀ`, `n × m`.
    At,
    /// `Q`, `m × m`.
    Q,
}

impl Standard {
    /// The standard form of `sys` with `bias` added to `r` (the Coulomb fixed point).
    pub fn new(sys: &System, bias: Option<&[f64]>) -> Self {
        // Kept rows, their cone blocks and scaling.
        let (mut blocks, mut row_of, mut d) = (Vec::new(), Vec::new(), Vec::new());
        for (k, cone) in sys.cones().iter().enumerate() {
            let range = sys.block_range(k);
            let start = row_of.len();
            match *cone {
                Cone::Bilateral { .. } => {
                    for i in range {
                        blocks.push(Block {
                            kind: Kind::Free,
                            start: row_of.len(),
                        });
                        row_of.push(i);
                        d.push(1.0);
                    }
                }
                Cone::Unilateral | Cone::Coulomb { mu: 0.0 } => {
                    blocks.push(Block {
                        kind: Kind::NonNeg,
                        start,
                    });
                    row_of.push(range.start);
                    d.push(1.0);
                }
                Cone::Coulomb { mu } => {
                    blocks.push(Block {
                        kind: Kind::Soc,
                        start,
                    });
                    row_of.extend(range);
                    d.extend([1.0 / mu, 1.0, 1.0]);
                }
            }
        }
        let m = row_of.len();
        let mut kept = vec![usize::MAX; sys.rows()];
        for (i, &r) in row_of.iter().enumerate() {
            kept[r] = i;
        }
        let mut qz: Triplets = Vec::new();
        let mut b = vec![0.0; m];
        let (n, p, q, mut a);
        if let Some(g) = sys.global() {
            n = g.h.nrows;
            p = upper(&g.h);
            q = g.f.iter().map(|f| -f).collect();
            a = rows_of(&g.j, &kept);
            for (i, &r) in row_of.iter().enumerate() {
                b[i] = g.b[r];
            }
        } else if let (Some(f), Some(v_free)) = (sys.factored(), sys.v_free()) {
            n = v_free.len();
            let mass: Vec<f64> = f.inv_mass().iter().flatten().map(|w| 1.0 / w).collect();
            p = (0..n).map(|j| (j, j, mass[j])).collect();
            q = (0..n).map(|j| -mass[j] * v_free[j]).collect();
            let mut at = Vec::new();
            let offsets = f.offsets();
            for k in 0..sys.blocks() {
                let dim = offsets[k + 1] - offsets[k];
                for (s, &body) in f.block_bodies(k).iter().enumerate() {
                    let rows = &f.jac()[f.jac_start()[k] + s * dim..][..dim];
                    for (r, row) in rows.iter().enumerate() {
                        let i = kept[offsets[k] + r];
                        if i == usize::MAX {
                            continue;
                        }
                        at.extend(
                            (0..6)
                                .filter(|&c| row[c] != 0.0)
                                .map(|c| (i, 6 * body + c, row[c])),
                        );
                    }
                }
            }
            a = at;
            // b = r − J v_free.
            let mut jv = vec![0.0; sys.rows()];
            f.velocity_to_rows(v_free, &mut jv);
            for (i, &r) in row_of.iter().enumerate() {
                b[i] = sys.r()[r] - jv[r];
            }
        } else {
            n = 0;
            p = Vec::new();
            q = Vec::new();
            a = Vec::new();
            let nmat = sys
                .operator()
                .as_matrix()
                .expect("an operator is factored, global or explicit");
            for (i, &r) in row_of.iter().enumerate() {
                let (cols, vals) = nmat.row(r);
                for (&c, &v) in cols.iter().zip(vals) {
                    let j = kept[c];
                    if j == usize::MAX {
                        continue;
                    }
                    // The symmetric part: Siconos' W carry asymmetries up to 1e-4 relative
                    // (Capsules); the polish ([`super::polish`]) solves with N itself.
                    let mirror = nmat.get(c, r);
                    if i == j {
                        qz.push((i, i, v));
                    } else if i < j {
                        qz.push((i, j, 0.5 * (v + mirror)));
                    } else if mirror == 0.0 {
                        qz.push((j, i, 0.5 * v));
                    }
                }
                b[i] = sys.r()[r];
            }
        }
        for (i, &r) in row_of.iter().enumerate() {
            let e = sys.compliance()[r];
            if e != 0.0 {
                qz.push((i, i, e));
            }
        }
        // The friction scaling: A' = D A, b' = D b, Q' = D Q D.
        for t in &mut a {
            t.2 *= d[t.0];
        }
        for t in &mut qz {
            t.2 *= d[t.0] * d[t.1];
        }
        for (bi, di) in b.iter_mut().zip(&d) {
            *bi *= di;
        }
        let whole = |upper: &Triplets| -> Triplets {
            let mirror = upper
                .iter()
                .filter(|t| t.0 != t.1)
                .map(|&(i, j, v)| (j, i, v));
            upper.iter().copied().chain(mirror).collect()
        };
        let csr = |rows, cols, t: &dyn Fn() -> Triplets| {
            (rows >= PARALLEL_ROWS).then(|| {
                CsrMatrix::from_triplets(rows, cols, &t()).expect("the standard form's own entries")
            })
        };
        let csr = [
            csr(n, n, &|| whole(&p)),
            csr(m, n, &|| a.clone()),
            csr(n, m, &|| a.iter().map(|&(i, j, v)| (j, i, v)).collect()),
            csr(m, m, &|| whole(&qz)),
        ];
        let mut out = Standard {
            n,
            m,
            p,
            q,
            a,
            qz,
            b_free: b.clone(),
            b,
            blocks,
            row_of,
            d,
            csr,
        };
        out.set_bias(bias);
        out
    }

    /// `y += M x` for the matrix `op`: by rows on rayon's threads from [`PARALLEL_ROWS`] rows,
    /// below by a scatter over the triplets (`P`, `Q` mirrored).
    pub fn add_mul(&self, op: Op, x: &[f64], y: &mut [f64]) {
        if let Some(m) = &self.csr[op as usize] {
            y.par_chunks_mut(PARALLEL_ROWS)
                .enumerate()
                .for_each(|(k, chunk)| {
                    for (i, yi) in (k * PARALLEL_ROWS..).zip(chunk.iter_mut()) {
                        *yi += m.row_dot(i, x);
                    }
                });
            return;
        }
        let (t, sym, transpose) = match op {
            Op::P => (&self.p, true, false),
            Op::A => (&self.a, false, false),
            Op::At => (&self.a, false, true),
            Op::Q => (&self.qz, true, false),
        };
        for &(i, j, v) in t {
            let (i, j) = if transpose { (j, i) } else { (i, j) };
            y[i] += v * x[j];
            if sym && i != j {
                y[j] += v * x[i];
            }
        }
    }

    /// Sets `b` to the standard form's of `r + bias` (`D(b + bias)`): a new bias needs no
    /// new standard form (the rounds on a skew part, the Coulomb fixed point).
    pub fn set_bias(&mut self, bias: Option<&[f64]>) {
        self.b.copy_from_slice(&self.b_free);
        if let Some(bias) = bias {
            for ((bi, &r), di) in self.b.iter_mut().zip(&self.row_of).zip(&self.d) {
                *bi += di * bias[r];
            }
        }
    }

    /// The impulses `γ` (system rows) of a standard-form `z`.
    pub fn gamma(&self, z: &[f64], rows: usize) -> Vec<f64> {
        let mut gamma = vec![0.0; rows];
        for (i, &r) in self.row_of.iter().enumerate() {
            gamma[r] = self.d[i] * z[i];
        }
        gamma
    }

    /// The standard-form `z` of impulses `γ` (the inverse of [`Standard::gamma`]).
    pub fn z_of(&self, gamma: &[f64]) -> Vec<f64> {
        self.row_of
            .iter()
            .zip(&self.d)
            .map(|(&r, d)| gamma[r] / d)
            .collect()
    }

    /// The standard-form `s` of velocities `u` (`s' = D u`).
    pub fn s_of(&self, u: &[f64]) -> Vec<f64> {
        self.row_of
            .iter()
            .zip(&self.d)
            .map(|(&r, d)| u[r] * d)
            .collect()
    }
}

/// The upper triangle of the symmetric part of a square CSR matrix.
fn upper(h: &CsrMatrix) -> Triplets {
    let mut out = Vec::new();
    for i in 0..h.nrows {
        let (cols, vals) = h.row(i);
        for (&j, &v) in cols.iter().zip(vals) {
            if i <= j {
                out.push((i, j, if i == j { v } else { 0.5 * (v + h.get(j, i)) }));
            } else if h.get(j, i) == 0.0 {
                // Stored below the diagonal only: its mirror is implicitly zero.
                out.push((j, i, 0.5 * v));
            }
        }
    }
    out
}

/// The kept rows of `j` (`kept[r]` is the standard row of system row `r`, `usize::MAX` when
/// dropped).
fn rows_of(j: &CsrMatrix, kept: &[usize]) -> Triplets {
    let mut out = Vec::new();
    for (r, &i) in kept.iter().enumerate() {
        if i == usize::MAX {
            continue;
        }
        let (cols, vals) = j.row(r);
        out.extend(cols.iter().zip(vals).map(|(&c, &v)| (i, c, v)));
    }
    out
}
