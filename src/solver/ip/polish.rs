//! Polishing of an interior-point answer: semismooth Newton steps on the natural map
//! `F(γ) = γ − Π_K(γ − û(γ))`, `u = (N + E)γ + r`, from the interior-point point, with
//! `û = u` (CCP) or De Saxcé's `û = u + (μ‖u_t‖, 0, 0)` (Coulomb: the answer of the outer
//! fixed point, which converges only linearly, is finished here).
//!
//! The Nesterov–Todd iterates of a sliding contact (`γ` and `u` both on the boundary of their
//! cones) approach the solution at an angle of order `√μ`, and `μ` cannot go much below
//! 1e-12 in double precision (the scaling's condition number grows like `1/μ`). From such a
//! close start, Newton on the piecewise smooth `F` with the projection's Jacobian fixed by
//! the interior point's active set converges in a step or two to machine precision. Each
//! step solves `(I − P + P(I + S)(N + E)) Δ = −F` (`P = ∂Π_K(γ − û)`, `S = ∂(û − u)/∂u`,
//! both block diagonal) with faer's sparse LU (a dense LU on small problems), and is kept
//! only when it reduces `‖F‖`.

use faer::linalg::solvers::Solve;
use faer::sparse::linalg::solvers::{Lu, SymbolicLu};
use faer::sparse::{SparseColMat, Triplet};
use nalgebra::{DMatrix, DVector};

use super::kkt::DENSE_DIM;

use crate::problem::{Cone, CsrMatrix, FrictionModel, System};

/// Regularizations of the Newton matrix (`+ ρ I`, Levenberg–Marquardt style) tried in turn
/// until a step reduces `‖F‖`, relative to the largest diagonal entry of `N`: redundant
/// contacts make `N`, and the Newton matrix, singular.
const REGULARIZATION: [f64; 5] = [1e-12, 1e-8, 1e-4, 1.0, 1e2];
/// The proximal weight of [`proximal`], relative to each row's diagonal of `N`.
const PROXIMAL: f64 = 1e-3;
/// Proximal rounds at most...
const PROXIMAL_ROUNDS: usize = 50;
/// ...each of at most this many Newton steps (inexact proximal steps).
const PROXIMAL_STEPS: usize = 40;
/// Newton steps at most...
const MAX_STEPS: usize = 40;
/// ...and in a quick polish (without proximal rounds: the inner solves of the Coulomb fixed
/// point).
const QUICK_STEPS: usize = 12;
/// `‖F‖` at which Newton stops, relative to `max(‖γ‖, ‖y‖)`.
const ROUNDING: f64 = 1e-15;
/// The most rows of a problem this polish runs on. Its sparse LU (sequential, the fill of
/// `N`'s contact graph, up to six factorizations per step) is cheap on the Siconos files (at
/// most 828 rows, 0.2 s a polish) but not on piles: 2 s per LU at 16 203 rows (settled
/// `balls_in_box` 1000, about 20 interior-point iterations' worth, 131.7 s a polish that did
/// not converge: `N` is singular there), more than 25 min and 7.5 GB at 16 000 spheres. Above
/// it the Newton steps through the interior point's own LDLᵀ (module `newton`) are the polish.
const MAX_ROWS: usize = 10_000;

/// Whether this polish runs on a problem of `rows` rows (see [`MAX_ROWS`]).
pub(crate) fn fits(rows: usize) -> bool {
    rows <= MAX_ROWS
}

/// `N + E` as an explicit sparse matrix: the assembled matrix, or `J M⁻¹ Jᵀ` gathered body
/// by body for the factored form.
pub(crate) fn delassus_matrix(sys: &System) -> CsrMatrix {
    let m = sys.rows();
    let mut t: Vec<(usize, usize, f64)> = Vec::new();
    if let Some(n) = sys.operator().as_matrix() {
        for i in 0..m {
            let (cols, vals) = n.row(i);
            t.extend(cols.iter().zip(vals).map(|(&j, &v)| (i, j, v)));
        }
    } else if let Some(f) = sys.factored() {
        let offsets = f.offsets();
        for body in 0..f.bodies() {
            let links = &f.links()[f.links_ptr()[body]..f.links_ptr()[body + 1]];
            for &(k1, s1) in links {
                let d1 = offsets[k1 + 1] - offsets[k1];
                let j1 = &f.jac()[f.jac_start()[k1] + s1 * d1..][..d1];
                for &(k2, s2) in links {
                    let d2 = offsets[k2 + 1] - offsets[k2];
                    let mj2 = &f.minv_jac()[f.jac_start()[k2] + s2 * d2..][..d2];
                    for (a, ra) in j1.iter().enumerate() {
                        for (b, rb) in mj2.iter().enumerate() {
                            let v: f64 = (0..6).map(|c| ra[c] * rb[c]).sum();
                            t.push((offsets[k1] + a, offsets[k2] + b, v));
                        }
                    }
                }
            }
        }
    }
    t.extend(
        sys.compliance()
            .iter()
            .enumerate()
            .filter(|(_, e)| **e != 0.0)
            .map(|(i, &e)| (i, i, e)),
    );
    CsrMatrix::from_triplets(m, m, &t).expect("indices are in range by construction")
}

/// The Jacobian `∂Π_K(y)` of the projection on one cone at `y` (row-major `d × d`).
fn projection_jacobian(cone: &Cone, y: &[f64]) -> [f64; 9] {
    let mut p = [0.0; 9];
    let d = y.len();
    let identity = |p: &mut [f64; 9]| (0..d).for_each(|a| p[a * d + a] = 1.0);
    match *cone {
        Cone::Bilateral { .. } => identity(&mut p),
        Cone::Unilateral => p[0] = if y[0] > 0.0 { 1.0 } else { 0.0 },
        Cone::Coulomb { mu } => {
            let (n, s) = (y[0], y[1].hypot(y[2]));
            if s <= mu * n && n >= 0.0 {
                identity(&mut p);
            } else if mu * s <= -n {
                // The polar cone: the projection is 0.
            } else {
                // n' = (μ s + n)/(1 + μ²), t' = μ n' t̂ (see `Cone::project`).
                let c = 1.0 / (1.0 + mu * mu);
                let nn = (mu * s + n) * c;
                let t = [y[1] / s, y[2] / s];
                p[0] = c;
                for a in 0..2 {
                    p[a + 1] = mu * c * t[a];
                    p[(a + 1) * 3] = mu * c * t[a];
                    for b in 0..2 {
                        let tt = t[a] * t[b];
                        let id = if a == b { 1.0 } else { 0.0 };
                        p[(a + 1) * 3 + b + 1] = mu * mu * c * tt + mu * nn / s * (id - tt);
                    }
                }
            }
        }
    }
    p
}

/// The natural map of one problem: `N + E`, `r` (with the bias) and the friction model.
#[derive(Clone, Copy)]
pub(crate) struct NaturalMap<'a> {
    pub sys: &'a System,
    pub n: &'a CsrMatrix,
    pub r: &'a [f64],
    pub friction: FrictionModel,
    /// The step `η_k` of each block (`F_k = γ_k − Π(γ_k − η_k û_k)`): the blocks' own
    /// scales, so that the impulse and velocity parts of `F` weigh alike.
    pub eta: &'a [f64],
}

impl NaturalMap<'_> {
    /// `F(γ)`, `y = γ − û` and `u`.
    fn eval(&self, gamma: &[f64]) -> (Vec<f64>, Vec<f64>, Vec<f64>) {
        let mut u = vec![0.0; gamma.len()];
        self.n.mul_vec(gamma, &mut u);
        u.iter_mut().zip(self.r).for_each(|(ui, ri)| *ui += ri);
        let mut y = vec![0.0; gamma.len()];
        for (k, cone) in self.sys.cones().iter().enumerate() {
            let range = self.sys.block_range(k);
            let yk = &mut y[range.clone()];
            yk.copy_from_slice(&u[range.clone()]);
            if self.friction == FrictionModel::Coulomb {
                cone.de_saxce_shift(yk);
            }
            let eta = self.eta[k];
            for (yi, gi) in yk.iter_mut().zip(&gamma[range]) {
                *yi = gi - eta * *yi;
            }
        }
        let mut f = y.clone();
        for (k, cone) in self.sys.cones().iter().enumerate() {
            cone.project(&mut f[self.sys.block_range(k)]);
        }
        for (fi, gi) in f.iter_mut().zip(gamma) {
            *fi = gi - *fi;
        }
        (f, y, u)
    }
}

fn norm2(v: &[f64]) -> f64 {
    v.iter().map(|x| x * x).sum::<f64>().sqrt()
}

/// The triplets of `I − P + P(I + S)N` at `y = γ − û` and `u` (without regularization).
fn newton_matrix(map: &NaturalMap<'_>, y: &[f64], u: &[f64]) -> Vec<Triplet<usize, usize, f64>> {
    let (sys, n) = (map.sys, map.n);
    let mut t: Vec<Triplet<usize, usize, f64>> = Vec::new();
    for (k, cone) in sys.cones().iter().enumerate() {
        let range = sys.block_range(k);
        let d = range.len();
        let p = projection_jacobian(cone, &y[range.clone()]);
        // PS: S has one row (the normal one) with μ u_tᵀ/‖u_t‖ on the tangent columns.
        let mut ps = [0.0; 9];
        if let (FrictionModel::Coulomb, Cone::Coulomb { mu }) = (map.friction, cone) {
            let ut = [u[range.start + 1], u[range.start + 2]];
            let norm = ut[0].hypot(ut[1]);
            if norm > 0.0 {
                for a in 0..3 {
                    ps[a * 3 + 1] = p[a * 3] * mu * ut[0] / norm;
                    ps[a * 3 + 2] = p[a * 3] * mu * ut[1] / norm;
                }
            }
        }
        for a in 0..d {
            let i = range.start + a;
            t.push(Triplet::new(i, i, 1.0));
            for b in 0..d {
                let pab = p[a * d + b];
                if pab != 0.0 {
                    t.push(Triplet::new(i, range.start + b, -pab));
                }
                let w = map.eta[k] * (pab + ps[a * d + b]);
                if w == 0.0 {
                    continue;
                }
                let (cols, vals) = n.row(range.start + b);
                t.extend(
                    cols.iter()
                        .zip(vals)
                        .map(|(&j, &v)| Triplet::new(i, j, w * v)),
                );
            }
        }
    }
    t
}

/// The Newton matrix of one step, factored once per regularization tried: faer's sparse LU
/// on the symbolic analysis of its pattern or, up to [`DENSE_DIM`] rows, a dense LU (faer's
/// analysis and its sparse factorization cost more than the arithmetic there: 12-row Rover
/// files).
enum Jacobian {
    Sparse {
        base: SparseColMat<usize, f64>,
        symbolic: SymbolicLu<usize>,
        /// Position of each column's diagonal entry (every column holds one: the `I` of
        /// `I − P`).
        diag_pos: Vec<usize>,
    },
    Dense(DMatrix<f64>),
}

impl Jacobian {
    /// The matrix of `triplets` (duplicates summed), `None` when faer cannot analyse it.
    fn new(m: usize, triplets: &[Triplet<usize, usize, f64>]) -> Option<Self> {
        if m <= DENSE_DIM {
            let mut a = DMatrix::zeros(m, m);
            for t in triplets {
                a[(t.row, t.col)] += t.val;
            }
            return Some(Jacobian::Dense(a));
        }
        let base = SparseColMat::<usize, f64>::try_new_from_triplets(m, m, triplets).ok()?;
        let symbolic = SymbolicLu::try_new(base.symbolic()).ok()?;
        let diag_pos = (0..m)
            .map(|c| {
                let (lo, hi) = (base.col_ptr()[c], base.col_ptr()[c + 1]);
                lo + base.row_idx()[lo..hi]
                    .binary_search(&c)
                    .expect("the diagonal is in the pattern")
            })
            .collect();
        Some(Jacobian::Sparse {
            base,
            symbolic,
            diag_pos,
        })
    }

    /// Solves `(J + shift I) x = rhs` in place; `false` when the factorization fails or `x`
    /// is not finite.
    fn solve(&self, shift: f64, rhs: &mut [f64]) -> bool {
        let m = rhs.len();
        match self {
            Jacobian::Sparse {
                base,
                symbolic,
                diag_pos,
            } => {
                let mut mat = base.clone();
                let vals = mat.val_mut();
                diag_pos.iter().for_each(|&p| vals[p] += shift);
                let Ok(lu) = Lu::try_new_with_symbolic(symbolic.clone(), mat.as_ref()) else {
                    return false;
                };
                lu.solve_in_place(faer::MatMut::from_column_major_slice_mut(rhs, m, 1));
            }
            Jacobian::Dense(a) => {
                let mut mat = a.clone();
                for i in 0..m {
                    mat[(i, i)] += shift;
                }
                let mut x = DVector::from_column_slice(rhs);
                if !mat.lu().solve_mut(&mut x) {
                    return false;
                }
                rhs.copy_from_slice(x.as_slice());
            }
        }
        rhs.iter().all(|v| v.is_finite())
    }
}

/// At most `steps` Newton steps on `F` from `gamma`, until `done(γ)` (the caller's
/// tolerance) or `‖F‖` at rounding level; returns the improved impulses (or `gamma` itself
/// when no step reduces `‖F‖`). Each step analyses the Newton matrix's pattern once
/// (symbolic LU) and factors its values once per regularization tried, from the one below the
/// last that gave a step: where only a strong one helps (the degenerate contacts of
/// Capsules-i100-1090: each of its 40 steps needed `ρ = 1`), the weaker ones are not
/// factored again at every step (four factorizations in five were refused).
pub(crate) fn polish(
    map: &NaturalMap<'_>,
    mut gamma: Vec<f64>,
    steps: usize,
    done: &dyn Fn(&[f64]) -> bool,
) -> Vec<f64> {
    let (n, m) = (map.n, gamma.len());
    // The scale of the Newton matrix: its largest diagonal entry of `η N`.
    let diag = (0..map.sys.blocks())
        .flat_map(|k| {
            map.sys
                .block_range(k)
                .map(move |i| map.eta[k] * n.get(i, i))
        })
        .fold(0.0, f64::max);
    let (mut f, mut y, mut u) = map.eval(&gamma);
    let mut fnorm = norm2(&f);
    // The first regularization tried: the one below the last that gave a step.
    let mut first = 0;
    'newton: for _ in 0..steps {
        // ‖γ‖ and ‖γ − y‖ = ‖η û‖: the scales of the two terms of F (weighted by η).
        let scale = norm2(&gamma).max(norm2(&y));
        if fnorm <= ROUNDING * scale || done(&gamma) {
            break;
        }
        let Some(jac) = Jacobian::new(m, &newton_matrix(map, &y, &u)) else {
            break;
        };
        let rel = fnorm / norm2(&gamma).max(norm2(&u)).max(f64::MIN_POSITIVE);
        for (level, rho) in std::iter::once(rel)
            .chain(REGULARIZATION)
            .enumerate()
            .skip(first)
        {
            let mut delta: Vec<f64> = f.iter().map(|v| -v).collect();
            if !jac.solve(rho * diag, &mut delta) {
                continue;
            }
            // Backtracking on ‖F‖.
            let mut step = 1.0;
            for _ in 0..4 {
                let trial: Vec<f64> = gamma
                    .iter()
                    .zip(&delta)
                    .map(|(g, d)| g + step * d)
                    .collect();
                let (ft, yt, ut) = map.eval(&trial);
                let tn = norm2(&ft);
                if tn < fnorm {
                    (gamma, f, y, u, fnorm) = (trial, ft, yt, ut, tn);
                    first = level.saturating_sub(1);
                    continue 'newton;
                }
                step *= 0.5;
            }
        }
        break;
    }
    gamma
}

/// [`polish`] on the map with the blocks' own steps, then (while `value`, the settings'
/// criterion, stays above `tol`) with unit steps, then, if `proximal`, by proximal rounds
/// (see [`proximal`]), each from the best point so far: the block-scaled map separates the active
/// set of badly scaled blocks (Siconos' Confeti), the unit map that of stacks whose blocks
/// differ in scale (BoxesStack), the proximal rounds the degenerate contacts of a singular
/// `W` (Capsules). With `early`, each Newton run stops once `value` meets `tol`. Returns the
/// best impulses by `value`.
pub(crate) fn polish_scaled(
    map: &NaturalMap<'_>,
    gamma: Vec<f64>,
    value: impl Fn(&[f64]) -> f64,
    tol: f64,
    proximal: bool,
    early: bool,
) -> Vec<f64> {
    let unit = vec![1.0; map.eta.len()];
    // With `early`, Newton stops at the tolerance (BoxesStack1 at 1e-8: 2 steps, where 40
    // steps to rounding level took 0.4 s); without it, it goes on to rounding level.
    let done = |g: &[f64]| early && value(g) <= tol;
    let mut best = (value(&gamma), gamma);
    for eta in [map.eta, &unit] {
        if best.0 <= tol {
            return best.1;
        }
        let steps = if proximal { MAX_STEPS } else { QUICK_STEPS };
        let polished = polish(&NaturalMap { eta, ..*map }, best.1.clone(), steps, &done);
        let v = value(&polished);
        if v < best.0 {
            best = (v, polished);
        }
    }
    if proximal && best.0 > tol {
        best = self::proximal(map, best, &value, tol, &done);
    }
    best.1
}

/// Proximal rounds (the proximal point method on the monotone VI, Rockafellar 1976):
/// `γₖ₊₁` solves the problem of `N + ρI` and `r − ργₖ` (`ρ` a fraction [`PROXIMAL`] of each
/// row's diagonal), by [`polish`] from `γₖ`. Each such problem is strongly monotone, so that
/// Newton's matrix stays regular on the contacts a singular `N` leaves degenerate, and its
/// solutions converge to one of the original problem. `best` is `(value, γ)`.
fn proximal(
    map: &NaturalMap<'_>,
    mut best: (f64, Vec<f64>),
    value: &impl Fn(&[f64]) -> f64,
    tol: f64,
    done: &dyn Fn(&[f64]) -> bool,
) -> (f64, Vec<f64>) {
    let (n, m) = (map.n, map.r.len());
    let diag: Vec<f64> = (0..m).map(|i| n.get(i, i)).collect();
    let fallback = diag.iter().copied().fold(0.0, f64::max);
    let rho: Vec<f64> = diag
        .iter()
        .map(|&d| PROXIMAL * if d > 0.0 { d } else { fallback })
        .collect();
    let mut t: Vec<(usize, usize, f64)> = Vec::with_capacity(n.nnz() + m);
    for (i, &rho_i) in rho.iter().enumerate() {
        let (cols, vals) = n.row(i);
        t.extend(cols.iter().zip(vals).map(|(&j, &v)| (i, j, v)));
        t.push((i, i, rho_i));
    }
    let shifted = CsrMatrix::from_triplets(m, m, &t).expect("indices of N are in range");
    let (mut gamma, mut since_best) = (best.1.clone(), 0);
    for _ in 0..PROXIMAL_ROUNDS {
        let r: Vec<f64> = (0..m).map(|i| map.r[i] - rho[i] * gamma[i]).collect();
        let sub = NaturalMap {
            n: &shifted,
            r: &r,
            ..*map
        };
        gamma = polish(&sub, gamma, PROXIMAL_STEPS, done);
        let v = value(&gamma);
        since_best = if v < 0.5 * best.0 { 0 } else { since_best + 1 };
        if v < best.0 {
            best = (v, gamma.clone());
        }
        if best.0 <= tol || since_best >= 3 {
            break;
        }
    }
    best
}
