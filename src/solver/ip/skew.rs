//! The skew part of a non-symmetric `W` (Siconos' Capsules and RockPile problems carry
//! relative asymmetries of 1e-4 to 3e-3). With `W = S + T`, `S = (W + Wᵀ)/2`, the CCP
//! `K ∋ γ ⊥ Wγ + r ∈ K*` is a variational inequality, not the QP of `S`; the interior point
//! solves it by the fixed point `γₖ₊₁ = QP(S, r + Tγₖ)` (each round the cone QP of the
//! symmetric part, warm-started from the last), whose fixed points are the solutions of the
//! VI. It contracts when `‖T‖` is small against the curvature of `S` on the active set;
//! Newton on the natural map of `W` itself (module `polish`) finishes it.

use crate::problem::{CsrMatrix, System};

/// Asymmetries below this fraction of `W`'s largest entry are rounding of the file.
const NEGLIGIBLE: f64 = 1e-15;

/// `T = (W − Wᵀ)/2` of an explicit operator, `None` when `W` is symmetric (or factored or
/// global, where the interior point's `P` and `Q` are symmetric by construction).
pub(crate) fn skew_part(sys: &System) -> Option<CsrMatrix> {
    let w = sys.operator().as_matrix()?;
    let largest = (0..w.nrows)
        .flat_map(|i| w.row(i).1.iter().map(|v| v.abs()))
        .fold(0.0, f64::max);
    let mut t = Vec::new();
    for i in 0..w.nrows {
        let (cols, vals) = w.row(i);
        for (&j, &v) in cols.iter().zip(vals) {
            let half = 0.5 * (v - w.get(j, i));
            if half.abs() > NEGLIGIBLE * largest {
                t.push((i, j, half));
                if w.get(j, i) == 0.0 {
                    // The mirror is not stored: its entry of T is written here.
                    t.push((j, i, -half));
                }
            }
        }
    }
    if t.is_empty() {
        return None;
    }
    Some(CsrMatrix::from_triplets(w.nrows, w.ncols, &t).expect("indices of W are in range"))
}
