//! The first stage of the polish: semismooth Newton steps on the natural map of the standard
//! form, `F(z) = z − Π_C(z − η s)` with `s = A x + Q z + b` and `P x + q = Aᵀ z`, solved
//! with the interior point's own KKT matrix, its symbolic analysis and its parallel LDLᵀ.
//!
//! The projection's Jacobian `Π'` of a block is symmetric with eigenvalues `λ ∈ [0, 1]`
//! (`Π` is the gradient of a convex function), so that the Newton equation
//! `(I − Π')Δz + η Π'(A Δx + Q Δz) = −F`, multiplied by `−Π'⁻¹/η`, becomes
//!
//! ```text
//! [ P      −Aᵀ     ] [Δx]   [      −r_d       ]
//! [ −A   −(Q + C)  ] [Δz] = [ Π'⁻¹ F / η ],        C = (Π'⁻¹ − I) / η,
//! ```
//!
//! the interior point's augmented system with `C` in place of `G²` (`λ = 0` is clamped to
//! [`LAMBDA_MIN`], which pins that component of `Δz` to `−F`, and `λ = 1` to [`LAMBDA_MAX`],
//! which keeps the matrix quasi-definite): one more factorization of the
//! same pattern, no LU of `N`. From a close start on a nonsingular `W` it converges
//! quadratically (NESpheres_10_1: `‖F‖²` 1e-12 → 4e-24 → 6e-31). Where `W` is singular and
//! the interior point's active set is degenerate (redundant sticking contacts whose `b` is
//! not in the range of their rows), the direction is useless: the step is refused and the
//! polish of module `polish` takes over. For a
//! second-order cone at `y = (y₀, ȳ)`, `‖ȳ‖ > |y₀|`, `û = ȳ/‖ȳ‖`, the eigenvectors of `Π'` are
//! `(1, û)/√2` (λ = 1), `(1, −û)/√2` (λ = 0) and `(0, û⊥)` (λ = (1 + y₀/‖ȳ‖)/2).

use super::cones::Kind;
use super::kkt::Kkt;
use super::mehrotra::{Iterate, residuals};
use super::standard::Standard;

/// The smallest eigenvalue of `Π'` kept (a zero eigenvalue is clamped to it).
const LAMBDA_MIN: f64 = 1e-10;
/// The largest eigenvalue of `Π'` kept (a unit eigenvalue is clamped to it), so that `C`
/// is positive definite and the matrix quasi-definite: with `λ = 1` (a sticking block, a
/// free row) `C` is zero there and, without compliance, so is the `z` block, and LDLᵀ
/// without pivoting grows without bound on a redundant contact set — on the settled pile of
/// 16 000 spheres the factor's entries reached 1e231–1e297 and the factorization failed
/// (faer's and `supernodal.rs`'s alike), so the polish never ran. The clamp adds a
/// proximal term of about `1e-8 / η` on `Δz`; from |F| 3.0e-6 there two steps then reached
/// 8.5e-14 (`benches/RESULTS.md`, fifteenth session).
const LAMBDA_MAX: f64 = 1.0 - 1e-8;
/// Halvings of the step before a Newton direction is given up.
const BACKTRACKS: usize = 4;

/// The eigenvalues and eigenvectors of `Π'` at `y` for one block (`Π' = Σ λᵢ vᵢ vᵢᵀ`; of a
/// block of dimension `d < 3`, the first `d` entries).
fn eigen(kind: Kind, y: &[f64]) -> ([f64; 3], [[f64; 3]; 3]) {
    let e = |i: usize| std::array::from_fn(|a| if a == i { 1.0 } else { 0.0 });
    let mut vecs = [e(0), e(1), e(2)];
    let lambda = match kind {
        Kind::Free => [1.0; 3],
        Kind::NonNeg => [if y[0] >= 0.0 { 1.0 } else { 0.0 }, 0.0, 0.0],
        Kind::Soc => {
            let t = y[1].hypot(y[2]);
            if t <= y[0] {
                [1.0; 3]
            } else if t <= -y[0] {
                [0.0; 3]
            } else {
                let u = [y[1] / t, y[2] / t];
                let r = std::f64::consts::FRAC_1_SQRT_2;
                vecs = [
                    [r, r * u[0], r * u[1]],
                    [r, -r * u[0], -r * u[1]],
                    [0.0, -u[1], u[0]],
                ];
                [1.0, 0.0, 0.5 * (1.0 + y[0] / t)]
            }
        }
    };
    (lambda, vecs)
}

/// One Newton iterate's `r_d`, `y = z − η s`, `F` and merit `‖F‖² + ‖r_d‖²`.
struct Point {
    r_d: Vec<f64>,
    y: Vec<f64>,
    f: Vec<f64>,
    merit: f64,
}

fn evaluate(std: &Standard, it: &Iterate, eta: &[f64]) -> Point {
    let (mut r_d, mut s) = (vec![0.0; std.n], vec![0.0; std.m]);
    // `r_p` with `s = 0` is the `s` of `(x, z)`.
    let zero_s = Iterate {
        x: it.x.clone(),
        z: it.z.clone(),
        s: vec![0.0; std.m],
    };
    residuals(std, &zero_s, &mut r_d, &mut s);
    let mut y = vec![0.0; std.m];
    let mut f = vec![0.0; std.m];
    for (b, &eta) in std.blocks.iter().zip(eta) {
        let r = b.rows();
        for i in r.clone() {
            y[i] = it.z[i] - eta * s[i];
        }
        let mut p = [0.0; 3];
        let d = b.dim();
        p[..d].copy_from_slice(&y[r.clone()]);
        let (lambda, vecs) = eigen(b.kind, &y[r.clone()]);
        // Π(y) = Σ over the eigenvalues 1 of the projection onto vᵢ (a projection's
        // eigenvalues at y are 1 on its range, fractional only in its derivative).
        let proj: [f64; 3] = match b.kind {
            Kind::Free => p,
            Kind::NonNeg => [p[0].max(0.0), 0.0, 0.0],
            Kind::Soc => {
                let mut out = [0.0; 3];
                if lambda[0] == 1.0 && lambda[1] == 1.0 {
                    out = p;
                } else if lambda[0] == 1.0 {
                    // (y₀ + ‖ȳ‖)/2 · (1, û).
                    let c: f64 = (0..3).map(|a| vecs[0][a] * p[a]).sum();
                    for a in 0..3 {
                        out[a] = c * vecs[0][a];
                    }
                }
                out
            }
        };
        for (a, i) in r.enumerate() {
            f[i] = it.z[i] - proj[a];
        }
    }
    let merit = f.iter().chain(&r_d).map(|v| v * v).sum();
    Point { r_d, y, f, merit }
}

/// At most `steps` Newton steps on the standard form's natural map (block steps `eta`) from
/// `it`, each kept only when it reduces `‖F‖² + ‖r_d‖²` (halving the step up to
/// [`BACKTRACKS`] times), until `done(z)` (the caller's tolerance on the system's own natural
/// map) or no step helps. Returns the last `z`; a factorization that fails (a pivot faer's
/// regularization could not rescue) ends the steps like a refused direction, keeping the
/// interior point's answer.
pub(crate) fn polish(
    std: &Standard,
    kkt: &mut Kkt,
    mut it: Iterate,
    eta: &[f64],
    steps: usize,
    mut done: impl FnMut(&[f64]) -> bool,
) -> Vec<f64> {
    let (n, m) = (std.n, std.m);
    let mut point = evaluate(std, &it, eta);
    let mut blocks = vec![[0.0; 9]; std.blocks.len()];
    let mut rhs = vec![0.0; n + m];
    'newton: for _ in 0..steps {
        if done(&it.z) {
            break;
        }
        for (r, d) in rhs.iter_mut().zip(&point.r_d) {
            *r = -d;
        }
        for ((b, c), &eta) in std.blocks.iter().zip(&mut blocks).zip(eta) {
            let (r, d) = (b.rows(), b.dim());
            let (lambda, vecs) = eigen(b.kind, &point.y[r.clone()]);
            c.fill(0.0);
            let mut w = [0.0; 3];
            for (l, v) in lambda.iter().zip(&vecs).take(d) {
                let l = l.clamp(LAMBDA_MIN, LAMBDA_MAX);
                let vf: f64 = (0..d).map(|a| v[a] * point.f[r.start + a]).sum();
                for a in 0..d {
                    w[a] += vf / l * v[a] / eta;
                    for bb in 0..d {
                        c[a * d + bb] += (1.0 / l - 1.0) / eta * v[a] * v[bb];
                    }
                }
            }
            rhs[n + r.start..n + r.end].copy_from_slice(&w[..d]);
        }
        if kkt.factor_blocks(std, &blocks).is_err() {
            break;
        }
        kkt.solve(&mut rhs);
        let mut alpha = 1.0;
        for _ in 0..=BACKTRACKS {
            let trial = Iterate {
                x: it.x.iter().zip(&rhs).map(|(v, d)| v + alpha * d).collect(),
                z: it
                    .z
                    .iter()
                    .zip(&rhs[n..])
                    .map(|(v, d)| v + alpha * d)
                    .collect(),
                s: Vec::new(),
            };
            let next = evaluate(std, &trial, eta);
            if next.merit < point.merit {
                (it, point) = (trial, next);
                continue 'newton;
            }
            alpha *= 0.5;
        }
        break;
    }
    it.z
}
