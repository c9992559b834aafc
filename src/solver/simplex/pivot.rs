//! The pivoting method of paper 003 (§3.1, pseudo-code `Risolvi_LCP`) on the system (3.2).
//!
//! All unilateral rows start deactivated; the bilateral rows are always active. The first
//! row with a violation `α_k = u_k < 0` (3.3) is activated by moving along the edge of the
//! simplex on which the other active rows keep `u = 0` and the inactive ones keep `γ = 0`.
//! The paper computes the far end of the edge (the solution with `k` active) and interpolates
//! towards it; the same edge is walked here with `γ_k` as its parameter (unit direction
//! `Δγ_k = 1`), which stays defined when the active rows and `k` are dependent (a singular
//! system with `k` active), the degenerate case of multibody contact. The ratio test
//! (`Calcola_step_max`) stops at the first event: `u_k` reaching zero (`k` becomes active,
//! the paper's `s_step = 1`), an active impulse reaching zero (deactivated) or a satisfied
//! inactive row reaching zero velocity (activated): one activation or deactivation per pivot.
//! Ties are broken by the least row index (Bland's rule), which prevents cycling on
//! degenerate problems.

use super::basis::{Basis, Singular};
use super::kkt::Kkt;

/// Violations `u < −VIOLATION_TOL · ‖r‖∞` count; smaller ones are rounding.
const VIOLATION_TOL: f64 = 1e-13;

/// Entries of a direction below this fraction of its largest entry are taken as zero in the
/// ratio test.
const DIRECTION_TOL: f64 = 1e-11;

/// Relative width of a tie in the ratio test.
const TIE_TOL: f64 = 1e-12;

/// How the pivoting ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum End {
    /// No violation and no negative active impulse.
    Solved,
    /// The edge of the driven row is an unbounded ray: no solution is reachable (for a
    /// positive semidefinite `N` the problem has none).
    Unbounded,
    /// The active rows became dependent.
    Singular,
    /// The pivot cap was reached.
    Cap,
}

/// The result of a pivoting run.
pub(super) struct Run {
    pub end: End,
    pub gamma: Vec<f64>,
    pub pivots: usize,
    pub factorizations: usize,
    /// Stored entries of the factor `L` (0 when the analysis failed).
    pub factor_entries: usize,
}

/// The iterate `(γ, u)`: velocities and impulses of the current point of the edge.
struct Point {
    gamma: Vec<f64>,
    u: Vec<f64>,
}

/// Solves (3.2) for the current `active` set with `γ_k = g` fixed for a driven row, the
/// right-hand side of the problem when `with_rhs` (else the homogeneous system of a
/// direction).
fn solve_point(
    kkt: &Kkt,
    basis: &mut Basis<'_>,
    active: &[bool],
    with_rhs: bool,
    driver: Option<(usize, f64)>,
    refine: bool,
) -> Result<Point, Singular> {
    let mut rhs = if with_rhs {
        kkt.rhs.clone()
    } else {
        vec![0.0; kkt.n]
    };
    if let Some((k, g)) = driver {
        for (i, v) in kkt.column(k) {
            rhs[i] -= v * kkt.sign * g;
        }
        rhs[kkt.off + k] = 0.0;
    }
    let mut z = basis.solve(&rhs, active, refine)?;
    if let Some((k, g)) = driver {
        z[kkt.off + k] = kkt.sign * g;
    }
    let gamma = (0..kkt.m).map(|l| kkt.sign * z[kkt.off + l]).collect();
    let u = (0..kkt.m)
        .map(|l| {
            let c = kkt.constraint_product(l, &z);
            if with_rhs {
                c - kkt.rhs[kkt.off + l]
            } else {
                c
            }
        })
        .collect();
    Ok(Point { gamma, u })
}

fn norm_inf(v: &[f64]) -> f64 {
    v.iter().fold(0.0, |m, x| m.max(x.abs()))
}

/// `Calcola_step_max`: the step along the direction `(dg, du)` of driven row `k` and the row
/// that blocks it, or `None` when nothing blocks (an unbounded ray).
fn step_max(
    p: &Point,
    d: &Point,
    k: usize,
    active: &[bool],
    unilateral: &[bool],
    feas_tol: f64,
) -> Option<(f64, usize)> {
    let (gs, us) = (
        DIRECTION_TOL * norm_inf(&d.gamma),
        DIRECTION_TOL * norm_inf(&d.u),
    );
    let mut candidates: Vec<(f64, usize)> = Vec::new();
    if d.u[k] > us {
        candidates.push(((-p.u[k]).max(0.0) / d.u[k], k));
    }
    for i in (0..p.u.len()).filter(|&i| unilateral[i] && i != k) {
        if active[i] {
            if d.gamma[i] < -gs {
                candidates.push((p.gamma[i].max(0.0) / -d.gamma[i], i));
            }
        } else if p.u[i] >= -feas_tol && d.u[i] < -us {
            candidates.push((p.u[i].max(0.0) / -d.u[i], i));
        }
    }
    let s_min = candidates.iter().map(|c| c.0).fold(f64::INFINITY, f64::min);
    candidates
        .into_iter()
        .filter(|c| c.0 <= s_min + TIE_TOL * (1.0 + s_min))
        .min_by_key(|c| c.1)
}

/// Runs the method from all unilateral rows deactivated, for at most `cap` pivots;
/// `observe(pivots, γ, u)` sees the iterate after each pivot. `scale` is the size of `r`
/// that the violation tolerance is relative to.
pub(super) fn run(
    kkt: &Kkt,
    unilateral: &[bool],
    scale: f64,
    cap: usize,
    mut observe: impl FnMut(usize, &[f64], &[f64]),
) -> Run {
    let m = kkt.m;
    let mut active: Vec<bool> = unilateral.iter().map(|u| !u).collect();
    let mut pivots = 0;
    let feas_tol = VIOLATION_TOL * scale;
    let fail = |end, gamma: Vec<f64>, pivots, factorizations, factor_entries| Run {
        end,
        gamma,
        pivots,
        factorizations,
        factor_entries,
    };
    let mut basis = match Basis::new(kkt, &active) {
        Ok(b) => b,
        Err(Singular) => return fail(End::Singular, vec![0.0; m], 0, 0, 0),
    };
    let factor_entries = basis.factor_entries();
    macro_rules! attempt {
        ($e:expr, $gamma:expr) => {
            match $e {
                Ok(v) => v,
                Err(Singular) => {
                    let f = basis.factorizations;
                    return fail(End::Singular, $gamma, pivots, f, factor_entries);
                }
            }
        };
    }
    let mut p = attempt!(
        solve_point(kkt, &mut basis, &active, true, None, true),
        vec![0.0; m]
    );
    // Outer loop: the first violated row (least index) is driven until it is satisfied.
    while let Some(k) = (0..m).find(|&l| unilateral[l] && !active[l] && p.u[l] < -feas_tol) {
        loop {
            if pivots >= cap {
                let f = basis.factorizations;
                return fail(End::Cap, p.gamma, pivots, f, factor_entries);
            }
            let d = attempt!(
                solve_point(kkt, &mut basis, &active, false, Some((k, 1.0)), false),
                p.gamma
            );
            let Some((s, j)) = step_max(&p, &d, k, &active, unilateral, feas_tol) else {
                let f = basis.factorizations;
                return fail(End::Unbounded, p.gamma, pivots, f, factor_entries);
            };
            for (l, &on) in active.iter().enumerate() {
                if on || l == k {
                    p.gamma[l] += s * d.gamma[l];
                }
                p.u[l] += s * d.u[l];
            }
            pivots += 1;
            if active[j] {
                active[j] = false;
                p.gamma[j] = 0.0;
            } else {
                active[j] = true;
                p.u[j] = 0.0;
            }
            let refactored = attempt!(basis.toggle(j, &active), p.gamma);
            if refactored {
                // A fresh factorization: recompute the iterate, dropping the rounding the
                // updates accumulated.
                let driver = (!active[k]).then(|| (k, p.gamma[k]));
                p = attempt!(
                    solve_point(kkt, &mut basis, &active, true, driver, true),
                    p.gamma
                );
            }
            observe(pivots, &p.gamma, &p.u);
            if j == k {
                break;
            }
        }
    }
    // The final point, solved afresh on the final active set.
    let p = attempt!(
        solve_point(kkt, &mut basis, &active, true, None, true),
        p.gamma
    );
    Run {
        end: End::Solved,
        gamma: p.gamma,
        pivots,
        factorizations: basis.factorizations,
        factor_entries,
    }
}
