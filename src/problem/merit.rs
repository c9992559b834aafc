//! The merit set of DESIGN §2: one module, f64, for any impulse vector whatever produced it.
//!
//! With the `Coulomb` friction model every quantity uses the De Saxcé velocity
//! `û = u + (μ‖u_t‖, 0, 0)` in place of `u`: that is the velocity the Coulomb problem pairs
//! with `γ` (for a sliding contact `γ·u ≠ 0` but `γ·û = 0`).

use serde::{Deserialize, Serialize};

use super::{Cone, FrictionModel, ProblemClass, System};
use crate::par::map_runs;

/// The merit set of one impulse vector.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Merit {
    /// `‖γ − Π_K(γ − û)‖∞`.
    pub natural_map_inf: f64,
    /// `‖γ − Π_K(γ − û)‖₂`.
    pub natural_map_2: f64,
    /// `max_k |γ_k · û_k|`.
    pub complementarity: f64,
    /// `max_k dist(û_k, K_k*)`: for a unilateral row the penetration velocity `max(0, −u_n)`.
    pub primal_violation: f64,
    /// `max_k dist(γ_k, K_k)`.
    pub dual_violation: f64,
    /// `½ γᵀ (N + E) γ + rᵀ γ`.
    pub objective: f64,
    /// The Siconos error of the problem's class (LCP, MLCP, fc3d, gfc3d), `None` otherwise.
    pub siconos_error: Option<f64>,
    /// FCLIB's `MERIT_1` for local frictional problems, `None` otherwise.
    pub fclib_merit: Option<f64>,
}

/// The natural-map residual of an iterate, as solvers track it per iteration.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Residual {
    /// `‖γ − Π_K(γ − û)‖∞`.
    pub inf: f64,
    /// `‖γ − Π_K(γ − û)‖₂`.
    pub two: f64,
    /// `two / max(‖r‖, ‖γ‖, ‖u‖)`: scale-free, the normalization of Siconos' fc3d error.
    pub relative: f64,
    /// `max_k ‖γ_k − Π_K(γ_k − η_k û_k)‖∞ / η_k`: the natural map with each block's own step
    /// `η_k ≈ 1/λ(N_kk)`, in velocity units (m/s for a simulation) whatever the masses. The
    /// unit-step natural map adds impulses to velocities, so that with heavy bodies its
    /// impulse part hides large velocity errors.
    pub velocity: f64,
}

/// `û_k` of block `k`: `u_k`, shifted by De Saxcé's term under the Coulomb model.
pub fn model_velocity(cone: &Cone, u: &[f64], friction: FrictionModel, out: &mut [f64]) {
    out.copy_from_slice(u);
    if friction == FrictionModel::Coulomb {
        cone.de_saxce_shift(out);
    }
}

/// `e_k = (γ_k − Π_K(γ_k − η û_k)) / η` for one block; returns `‖e_k‖₂²` and `‖e_k‖∞`.
fn block_natural_map(cone: &Cone, gamma: &[f64], u_hat: &[f64], eta: f64) -> (f64, f64) {
    let d = gamma.len();
    let mut x = [0.0; 3];
    for i in 0..d {
        x[i] = gamma[i] - eta * u_hat[i];
    }
    cone.project(&mut x[..d]);
    (0..d).fold((0.0, 0.0), |(s2, si), i| {
        let e = (gamma[i] - x[i]) / eta;
        (s2 + e * e, f64::max(si, e.abs()))
    })
}

/// `‖v‖₂`, runs of entries in parallel ([`map_runs`]).
fn norm2(v: &[f64]) -> f64 {
    map_runs(v.len(), |run| v[run].iter().map(|x| x * x).sum::<f64>())
        .into_iter()
        .sum::<f64>()
        .sqrt()
}

/// The natural-map residual of `gamma` given its velocity `u = (N + E)γ + r` and the block
/// steps `eta` of the solver (a block with `η_k = 0` is measured with the unit step).
pub fn residual(
    sys: &System,
    gamma: &[f64],
    u: &[f64],
    friction: FrictionModel,
    eta: &[f64],
) -> Residual {
    // Per run of blocks: `Σ‖e_k‖₂²`, `max ‖e_k‖∞`, the velocity residual.
    let runs = map_runs(sys.blocks(), |blocks| {
        let (mut s2, mut inf, mut velocity) = (0.0, 0.0f64, 0.0f64);
        let mut u_hat = [0.0; 3];
        for k in blocks {
            let (cone, range) = (&sys.cones()[k], sys.block_range(k));
            let uh = &mut u_hat[..range.len()];
            model_velocity(cone, &u[range.clone()], friction, uh);
            let g = &gamma[range];
            let (b2, bi) = block_natural_map(cone, g, uh, 1.0);
            s2 += b2;
            inf = inf.max(bi);
            let step = if eta[k] > 0.0 { eta[k] } else { 1.0 };
            velocity = velocity.max(block_natural_map(cone, g, uh, step).1);
        }
        (s2, inf, velocity)
    });
    let (s2, inf, velocity) = runs
        .into_iter()
        .fold((0.0, 0.0f64, 0.0f64), |(s2, inf, v), (a, b, c)| {
            (s2 + a, inf.max(b), v.max(c))
        });
    let two = s2.sqrt();
    let scale = norm2(sys.r()).max(norm2(gamma)).max(norm2(u));
    Residual {
        inf,
        two,
        relative: if scale > 0.0 { two / scale } else { two },
        velocity,
    }
}

/// Evaluates the whole merit set of `gamma`.
pub fn evaluate(sys: &System, gamma: &[f64], friction: FrictionModel) -> Merit {
    let u = sys.velocity(gamma);
    let res = residual(sys, gamma, &u, friction, &vec![1.0; sys.blocks()]);
    evaluate_at(sys, gamma, &u, &res, friction)
}

/// [`evaluate`] given the velocity `u = (N + E)γ + r` of `gamma` and its [`residual`]
/// `res` under `friction` (with any block steps: the merit set takes its unit-step norms).
pub fn evaluate_at(
    sys: &System,
    gamma: &[f64],
    u: &[f64],
    res: &Residual,
    friction: FrictionModel,
) -> Merit {
    // Per run of blocks: complementarity, primal and dual violations, `γᵀ(u + r)`.
    let runs = map_runs(sys.blocks(), |blocks| {
        let (mut complementarity, mut primal, mut dual, mut work) = (0.0f64, 0.0f64, 0.0f64, 0.0);
        let mut u_hat = [0.0; 3];
        for k in blocks {
            let (cone, range) = (&sys.cones()[k], sys.block_range(k));
            let uh = &mut u_hat[..range.len()];
            model_velocity(cone, &u[range.clone()], friction, uh);
            let g = &gamma[range.clone()];
            let dot: f64 = g.iter().zip(uh.iter()).map(|(a, b)| a * b).sum();
            complementarity = complementarity.max(dot.abs());
            primal = primal.max(cone.distance_dual(uh));
            dual = dual.max(cone.distance(g));
            for i in range {
                work += gamma[i] * (u[i] + sys.r()[i]);
            }
        }
        (complementarity, primal, dual, work)
    });
    let (complementarity, primal, dual, work) = runs.into_iter().fold(
        (0.0f64, 0.0f64, 0.0f64, 0.0),
        |(c, p, d, w), (a, b, e, f)| (c.max(a), p.max(b), d.max(e), w + f),
    );
    let objective = 0.5 * work;
    Merit {
        natural_map_inf: res.inf,
        natural_map_2: res.two,
        complementarity,
        primal_violation: primal,
        dual_violation: dual,
        objective,
        siconos_error: siconos_error(sys, gamma, u),
        fclib_merit: (sys.class() == ProblemClass::Fc3d)
            .then(|| coulomb_natural_map(sys, gamma, u) / (1.0 + norm2(sys.r()).sqrt())),
    }
}

/// `‖e‖₂` with the Coulomb (De Saxcé) natural map, whatever model was solved: the numerator
/// of the fc3d, gfc3d and FCLIB measures.
fn coulomb_natural_map(sys: &System, gamma: &[f64], u: &[f64]) -> f64 {
    residual(
        sys,
        gamma,
        u,
        FrictionModel::Coulomb,
        &vec![1.0; sys.blocks()],
    )
    .two
}

/// The Siconos error of the problem's class, as coded by its authors (FORMATS.md §4).
fn siconos_error(sys: &System, gamma: &[f64], u: &[f64]) -> Option<f64> {
    match sys.class() {
        ProblemClass::Lcp => {
            // ‖z − max(0, z − w)‖₂ / ‖q‖₂ (no division when ‖q‖ vanishes).
            let e = norm2(
                &gamma
                    .iter()
                    .zip(u)
                    .map(|(z, w)| z - (z - w).max(0.0))
                    .collect::<Vec<_>>(),
            );
            let nq = norm2(sys.r());
            Some(if nq > f64::EPSILON { e / nq } else { e })
        }
        ProblemClass::Mlcp => Some(mlcp_error(sys, gamma, u)),
        ProblemClass::Fc3d => {
            let scale = norm2(sys.r()).max(norm2(gamma)).max(norm2(u));
            let e = coulomb_natural_map(sys, gamma, u);
            Some(if scale > 0.0 { e / scale } else { e })
        }
        ProblemClass::Gfc3d => {
            let (g, v) = sys.global_parts(gamma)?;
            // ‖Hv − Jᵀγ − f‖ / max(‖f‖, ‖Hv‖, ‖Jᵀγ‖) + ‖e‖ / max(‖u‖, ‖γ‖)
            let mut hv = vec![0.0; v.len()];
            g.h.mul_vec(&v, &mut hv);
            let mut jtg = vec![0.0; v.len()];
            g.j.mul_transpose_vec(gamma, &mut jtg);
            let res: Vec<f64> = (0..v.len()).map(|i| hv[i] - jtg[i] - g.f[i]).collect();
            let s1 = norm2(&g.f).max(norm2(&hv)).max(norm2(&jtg));
            let s2 = norm2(u).max(norm2(gamma));
            let e = coulomb_natural_map(sys, gamma, u);
            let part = |x: f64, s: f64| if s > 0.0 { x / s } else { x };
            Some(part(norm2(&res), s1) + part(e, s2))
        }
        ProblemClass::Native | ProblemClass::GenericMechanical => None,
    }
}

/// Siconos' `mlcp_compute_error`: equality rows (bilateral) and complementarity rows
/// (unilateral) each give an error and a norm; the part with the larger ratio is reported,
/// divided by `1 + norm`.
fn mlcp_error(sys: &System, z: &[f64], w: &[f64]) -> f64 {
    let (mut eq_sq, mut q_eq_sq, mut error_i, mut w_c_sq) = (0.0, 0.0, 0.0, 0.0);
    for (k, cone) in sys.cones().iter().enumerate() {
        for i in sys.block_range(k) {
            if let Cone::Bilateral { .. } = cone {
                eq_sq += w[i] * w[i];
                q_eq_sq += sys.r()[i] * sys.r()[i];
            } else {
                let (zi, wi) = (z[i], w[i]);
                if zi < 0.0 {
                    error_i -= zi;
                    if wi < 0.0 {
                        error_i += zi * wi;
                    }
                }
                if wi < 0.0 {
                    error_i -= wi;
                }
                if zi > 0.0 && wi > 0.0 {
                    error_i += zi * wi;
                }
                w_c_sq += wi * wi;
            }
        }
    }
    let (error_e, norm_e) = (f64::sqrt(eq_sq), 1.0 + f64::sqrt(q_eq_sq));
    let norm_i = 1.0 + f64::sqrt(w_c_sq);
    if error_i / norm_i >= error_e / norm_e {
        error_i / (1.0 + norm_i)
    } else {
        error_e / (1.0 + norm_e)
    }
}
