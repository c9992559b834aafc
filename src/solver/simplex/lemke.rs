//! Lemke's complementary pivoting method (dense tableau, covering vector `e`): the fallback
//! for the LCPs and MLCPs outside the class of the method of paper 003 (non-symmetric or
//! indefinite `N`). Bilateral rows are eliminated first by the Schur complement of their
//! block (or, when that block is singular, by splitting each free impulse into two
//! nonnegative ones); the reduced LCP `w = M z + q ≥ 0 ⊥ z ≥ 0` is then pivoted until the artificial
//! variable leaves the basis (a solution) or the entering column has no positive entry
//! (ray termination: no solution found; for a copositive-plus `M` there is none).

use nalgebra::{DMatrix, DVector};

/// Entries of a pivot column at or below this (relative to the column's largest) are not
/// eligible in the ratio test.
const PIVOT_TOL: f64 = 1e-12;

/// How Lemke's method ended.
#[derive(Debug, Clone, PartialEq)]
pub(super) enum Outcome {
    /// A complementary solution `γ` (all rows) after the given number of pivots.
    Solved(Vec<f64>, usize),
    /// Ray termination after the given number of pivots.
    Ray(usize),
    /// The bilateral block is singular, or the pivot cap was reached (`usize` pivots).
    Failed(usize),
}

/// Solves the MLCP `u = N γ + r`, `u_B = 0` on the rows with `bilateral`, `0 ≤ γ ⊥ u ≥ 0`
/// on the others, with at most `cap` pivots.
pub(super) fn solve(n: &DMatrix<f64>, r: &[f64], bilateral: &[bool], cap: usize) -> Outcome {
    let b: Vec<usize> = (0..r.len()).filter(|&i| bilateral[i]).collect();
    let u: Vec<usize> = (0..r.len()).filter(|&i| !bilateral[i]).collect();
    let sub = |rows: &[usize], cols: &[usize]| {
        DMatrix::from_fn(rows.len(), cols.len(), |i, j| n[(rows[i], cols[j])])
    };
    let (a, c, d, bm) = (sub(&b, &b), sub(&b, &u), sub(&u, &b), sub(&u, &u));
    let rb = DVector::from_iterator(b.len(), b.iter().map(|&i| r[i]));
    let ru = DVector::from_iterator(u.len(), u.iter().map(|&i| r[i]));
    let lu = a.lu();
    let reduced = if b.is_empty() {
        Some((bm.clone(), ru.clone()))
    } else {
        match (lu.solve(&c), lu.solve(&rb)) {
            (Some(ainv_c), Some(ainv_rb)) => Some((&bm - &d * ainv_c, &ru - &d * ainv_rb)),
            _ => None,
        }
    };
    let mut gamma = vec![0.0; r.len()];
    let pivots = if let Some((m, q)) = reduced {
        let (z, pivots) = match lemke(&m, &q, cap) {
            Ok(v) => v,
            Err(stop) => return stop.into(),
        };
        for (&i, zi) in u.iter().zip(z.iter()) {
            gamma[i] = *zi;
        }
        if !b.is_empty() {
            let Some(gb) = lu.solve(&(-(c * z + rb))) else {
                return Outcome::Failed(pivots);
            };
            for (&i, g) in b.iter().zip(gb.iter()) {
                gamma[i] = *g;
            }
        }
        pivots
    } else {
        // A singular bilateral block: each free impulse is split as γ_B = x − y with
        // x, y ≥ 0 paired with u_B ≥ 0 and −u_B ≥ 0, an LCP of size 2|B| + |U|.
        let (nb, nu) = (b.len(), u.len());
        let mut m = DMatrix::zeros(2 * nb + nu, 2 * nb + nu);
        let mut q = DVector::zeros(2 * nb + nu);
        let all: Vec<usize> = b.iter().chain(&b).chain(&u).copied().collect();
        let sign = |i: usize| {
            if i < nb {
                1.0
            } else if i < 2 * nb {
                -1.0
            } else {
                1.0
            }
        };
        for i in 0..all.len() {
            q[i] = sign(i) * r[all[i]];
            for j in 0..all.len() {
                m[(i, j)] = sign(i) * sign(j) * n[(all[i], all[j])];
            }
        }
        let (z, pivots) = match lemke(&m, &q, cap) {
            Ok(v) => v,
            Err(stop) => return stop.into(),
        };
        for (k, &i) in b.iter().enumerate() {
            gamma[i] = z[k] - z[nb + k];
        }
        for (k, &i) in u.iter().enumerate() {
            gamma[i] = z[2 * nb + k];
        }
        pivots
    };
    Outcome::Solved(polish(n, r, bilateral, gamma), pivots)
}

enum Stop {
    Ray(usize),
    Cap(usize),
}

impl From<Stop> for Outcome {
    fn from(stop: Stop) -> Self {
        match stop {
            Stop::Ray(p) => Outcome::Ray(p),
            Stop::Cap(p) => Outcome::Failed(p),
        }
    }
}

/// Lemke's method on `w = M z + q`; returns `z` and the pivot count.
fn lemke(m: &DMatrix<f64>, q: &DVector<f64>, cap: usize) -> Result<(DVector<f64>, usize), Stop> {
    let n = q.len();
    if q.iter().all(|&v| v >= 0.0) {
        return Ok((DVector::zeros(n), 0));
    }
    // Columns: w (0..n), z (n..2n), z0 (2n); tableau B⁻¹ [I  −M  −e | q].
    let z0 = 2 * n;
    let mut t = DMatrix::zeros(n, 2 * n + 2);
    for i in 0..n {
        t[(i, i)] = 1.0;
        for j in 0..n {
            t[(i, n + j)] = -m[(i, j)];
        }
        t[(i, z0)] = -1.0;
        t[(i, z0 + 1)] = q[i];
    }
    let mut basis: Vec<usize> = (0..n).collect();
    // z0 enters at the most negative q: every basic variable becomes nonnegative.
    let mut row = (0..n)
        .min_by(|&a, &b| q[a].total_cmp(&q[b]).then(a.cmp(&b)))
        .unwrap_or(0);
    let mut entering = z0;
    let mut pivots = 0;
    loop {
        pivot(&mut t, row, entering);
        let leaving = std::mem::replace(&mut basis[row], entering);
        pivots += 1;
        if leaving == z0 {
            break;
        }
        if pivots >= cap {
            return Err(Stop::Cap(pivots));
        }
        entering = if leaving < n {
            leaving + n
        } else {
            leaving - n
        };
        let col_max = (0..n).map(|i| t[(i, entering)].abs()).fold(0.0, f64::max);
        let eligible = |i: &usize| t[(*i, entering)] > PIVOT_TOL * col_max;
        let ratio = |i: usize| t[(i, z0 + 1)].max(0.0) / t[(i, entering)];
        let Some(best) = (0..n).filter(eligible).map(ratio).min_by(f64::total_cmp) else {
            return Err(Stop::Ray(pivots));
        };
        let ties = (0..n)
            .filter(eligible)
            .filter(|&i| ratio(i) <= best + PIVOT_TOL * (1.0 + best));
        // Ties: z0 leaves first (termination), then the least basic variable index.
        let ties: Vec<usize> = ties.collect();
        row = ties
            .iter()
            .copied()
            .find(|&i| basis[i] == z0)
            .unwrap_or_else(|| ties.iter().copied().min_by_key(|&i| basis[i]).unwrap_or(0));
    }
    let mut z = DVector::zeros(n);
    for (i, &v) in basis.iter().enumerate() {
        if (n..2 * n).contains(&v) {
            z[v - n] = t[(i, z0 + 1)];
        }
    }
    Ok((z, pivots))
}

/// Gauss–Jordan pivot of the tableau on `(row, col)`.
fn pivot(t: &mut DMatrix<f64>, row: usize, col: usize) {
    let p = t[(row, col)];
    let pivot_row = t.row(row) / p;
    t.set_row(row, &pivot_row);
    for i in 0..t.nrows() {
        if i != row {
            let f = t[(i, col)];
            if f != 0.0 {
                let update = &pivot_row * f;
                let mut ri = t.row_mut(i);
                ri -= update;
            }
        }
    }
}

/// Re-solves the equations of the final basis (`u = 0` on the bilateral rows and the rows
/// with `γ > 0`) directly, removing the rounding of the tableau updates; keeps `gamma` when
/// that system is singular or the re-solved impulses leave the cone.
fn polish(n: &DMatrix<f64>, r: &[f64], bilateral: &[bool], gamma: Vec<f64>) -> Vec<f64> {
    let a: Vec<usize> = (0..r.len())
        .filter(|&i| bilateral[i] || gamma[i] > 0.0)
        .collect();
    let naa = DMatrix::from_fn(a.len(), a.len(), |i, j| n[(a[i], a[j])]);
    let ra = DVector::from_iterator(a.len(), a.iter().map(|&i| -r[i]));
    let Some(ga) = naa.lu().solve(&ra) else {
        return gamma;
    };
    if a.iter()
        .zip(ga.iter())
        .any(|(&i, &g)| !bilateral[i] && g < 0.0)
    {
        return gamma;
    }
    let mut out = vec![0.0; r.len()];
    for (&i, &g) in a.iter().zip(ga.iter()) {
        out[i] = g;
    }
    out
}
