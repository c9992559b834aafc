//! Mehrotra's predictor–corrector iteration (thesis §4.11, Algorithm 1; paper 000 §2.3) on
//! the standard form, with the Nesterov–Todd scaling of the cone rows (thesis §4.14).

use super::cones::{self, Block, Kind, Scaling};
use super::kkt::Kkt;
use super::standard::{Op, Standard};
use super::{IpParams, StartingPoint};
use crate::error::Result;
use crate::solver::Status;

/// Gondzio's multiple centrality correctors (Gondzio 1996, Colombo & Gondzio 2008; for the
/// second-order cone on the eigenvalues of the Jordan product): each corrector aims at the
/// step `α + CORRECTOR_REACH` of the current direction...
const CORRECTOR_REACH: f64 = 0.2;
/// ...moves the complementarity products of the trial point into
/// `[CORRECTOR_LOW, CORRECTOR_HIGH]` times their mean...
const CORRECTOR_LOW: f64 = 0.1;
const CORRECTOR_HIGH: f64 = 10.0;
/// ...and is kept when it lengthens the step by at least this fraction of what it aimed at.
const CORRECTOR_GAIN: f64 = 0.1;
/// The KKT size from which the correctors run: below it a solve costs about as much as the
/// factorization (Siconos fc3d files, 3–828 rows: 11 % fewer iterations, 2.5× the time per
/// iteration).
const CORRECTOR_DIM: usize = 4096;

/// The iterate `(x, z, s)` of the standard form.
#[derive(Debug, Clone)]
pub(crate) struct Iterate {
    pub x: Vec<f64>,
    pub z: Vec<f64>,
    pub s: Vec<f64>,
}

/// The scaled residuals the iteration stops on (see [`IpParams`]).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Measures {
    pub primal: f64,
    pub dual: f64,
    pub mu: f64,
}

impl Measures {
    /// The largest measure relative to its tolerance; NaN when any measure is NaN.
    fn worst(&self, p: &IpParams) -> f64 {
        let r = [
            self.primal / p.tol_primal,
            self.dual / p.tol_dual,
            self.mu / p.tol_mu,
        ];
        if r.iter().any(|v| v.is_nan()) {
            f64::NAN
        } else {
            r.into_iter().fold(0.0, f64::max)
        }
    }
}

fn norm_inf(v: &[f64]) -> f64 {
    v.iter().fold(0.0, |m, x| m.max(x.abs()))
}

fn dot(a: &[f64], b: &[f64]) -> f64 {
    a.iter().zip(b).map(|(x, y)| x * y).sum()
}

/// The residuals `r_d = P x + q − Aᵀ z`, `r_p = A x + Q z + b − s` and the scaled measures.
pub(crate) fn residuals(
    std: &Standard,
    it: &Iterate,
    r_d: &mut [f64],
    r_p: &mut [f64],
) -> Measures {
    let (n, m) = (std.n, std.m);
    let (mut px, mut atz) = (vec![0.0; n], vec![0.0; n]);
    let (mut ax, mut qz) = (vec![0.0; m], vec![0.0; m]);
    std.add_mul(Op::P, &it.x, &mut px);
    std.add_mul(Op::At, &it.z, &mut atz);
    std.add_mul(Op::A, &it.x, &mut ax);
    std.add_mul(Op::Q, &it.z, &mut qz);
    for j in 0..n {
        r_d[j] = px[j] + std.q[j] - atz[j];
    }
    for i in 0..m {
        r_p[i] = ax[i] + qz[i] + std.b[i] - it.s[i];
    }
    let scale_d = 1f64
        .max(norm_inf(&px))
        .max(norm_inf(&std.q))
        .max(norm_inf(&atz));
    let scale_s = norm_inf(&ax)
        .max(norm_inf(&qz))
        .max(norm_inf(&std.b))
        .max(norm_inf(&it.s));
    let scale_z = norm_inf(&it.z);
    // The largest complementarity product of a cone rather than the mean μ = sᵀz/ν, which
    // one degenerate pair can hide behind (on a singular N with 276 contacts, a mean of 1e-8
    // leaves room for one pair with sᵢzᵢ = 3e-6).
    let mu = std
        .blocks
        .iter()
        .filter(|b| b.kind != Kind::Free)
        .map(|b| dot(&it.s[b.rows()], &it.z[b.rows()]).abs())
        .fold(0.0, f64::max);
    Measures {
        primal: norm_inf(r_p) / scale_s.max(1.0),
        dual: norm_inf(r_d) / scale_d,
        mu: if mu <= 1e-300 {
            0.0
        } else {
            mu / (scale_s * scale_z).max(f64::MIN_POSITIVE)
        },
    }
}

/// The identity scaling of every block (`G = I`, `λ = e`): the KKT matrix of the starting
/// points.
fn identity_scalings(blocks: &[Block]) -> Vec<Scaling> {
    blocks
        .iter()
        .map(|b| {
            let mut sc = Scaling::default();
            if b.kind != Kind::Free {
                for a in 0..b.dim() {
                    sc.g[a * b.dim() + a] = 1.0;
                    sc.g_inv[a * b.dim() + a] = 1.0;
                }
                sc.lambda[0] = 1.0;
            }
            sc
        })
        .collect()
}

/// Moves `v` (a block) into the interior: `v + (margin + t) e` when `v + t e` is the
/// boundary point and `t > −margin` (thesis §4.14.4).
fn push_inside(kind: Kind, v: &mut [f64], margin: f64) {
    let t = cones::distance_to_interior(kind, v);
    if t > -margin {
        v[0] += margin + t;
    }
}

/// One Newton solve: given the complementarity right-hand side `r_c` per cone row, fills
/// `(Δx, Δz, Δs)` with `P Δx − Aᵀ Δz = −r_d`, `A Δx + Q Δz − Δs = −r_p`,
/// `λ ∘ (G Δz + G⁻¹ Δs) = r_c`.
struct Newton<'a> {
    std: &'a Standard,
    r_d: &'a [f64],
    r_p: &'a [f64],
    scalings: &'a [Scaling],
}

impl Newton<'_> {
    fn solve(&self, kkt: &mut Kkt, r_c: &[f64], d: &mut Iterate) {
        let (n, m) = (self.std.n, self.std.m);
        let mut rhs = vec![0.0; n + m];
        for (r, d) in rhs.iter_mut().zip(self.r_d) {
            *r = -d;
        }
        // w = G (λ \ r_c) per cone block; the second block row is r_p − w.
        let mut w = vec![0.0; m];
        for (b, sc) in self.std.blocks.iter().zip(self.scalings) {
            if b.kind == Kind::Free {
                continue;
            }
            let r = b.rows();
            let mut t = [0.0; 3];
            cones::jordan_solve(&sc.lambda[..b.dim()], &r_c[r.clone()], &mut t[..b.dim()]);
            sc.apply(false, &t[..b.dim()], &mut w[r]);
        }
        for i in 0..m {
            rhs[n + i] = self.r_p[i] - w[i];
        }
        kkt.solve(&mut rhs);
        d.x.copy_from_slice(&rhs[..n]);
        d.z.copy_from_slice(&rhs[n..]);
        // Δs = A Δx + Q Δz + r_p (Algorithm 1 line 14, `Δy = DΔv + r_p`): the linearized
        // primal equation, exact whatever the conditioning of G² (computing it as
        // `G(λ \ r_c) − G² Δz` cancels catastrophically near the boundary of a cone).
        d.s.copy_from_slice(self.r_p);
        self.std.add_mul(Op::A, &d.x, &mut d.s);
        self.std.add_mul(Op::Q, &d.z, &mut d.s);
        for b in &self.std.blocks {
            if b.kind == Kind::Free {
                d.s[b.start] = 0.0;
            }
        }
    }
}

/// Whether every entry of the direction `d` is finite.
fn finite(d: &Iterate) -> bool {
    [&d.x, &d.z, &d.s]
        .iter()
        .all(|v| v.iter().all(|x| x.is_finite()))
}

/// A second-order cone whose gap `x₀ − ‖x̄‖` is below this fraction of `x₀` keeps
/// [`KEEP`] of its gap in a guarded step ([`step_to_boundary`]).
const NEAR_BOUNDARY: f64 = 1e-12;
/// See [`NEAR_BOUNDARY`].
const KEEP: f64 = 0.1;

/// The largest step `α ≤ 1` keeping `s` and `z` in their cones along `d`; a second-order
/// cone whose gap is below `near · x₀` (the guard: [`NEAR_BOUNDARY`], or 0 for none) stops
/// at [`KEEP`] of its gap instead of at its boundary. At the step fraction (0.99) such a
/// cone keeps a hundredth of its gap, and two steps put the gap of a sliding contact below
/// one ulp of `x₀`, where the cone's determinant (so its NT scaling) vanishes and the next
/// direction is garbage: on the settled pile of 16 000 spheres cone 2677's slack gap went
/// 5.2e-12 → 5.2e-14 → 0, the direction 1e123, and the solve stalled at a natural map of
/// 4.3e-8 (`benches/RESULTS.md`, thirteenth session).
fn step_to_boundary(blocks: &[Block], it: &Iterate, d: &Iterate, near: f64) -> f64 {
    let step = |kind: Kind, x: &[f64], d: &[f64], alpha: f64| {
        if kind == Kind::Soc {
            let gap = x[0] - x[1].hypot(x[2]);
            if gap > 0.0 && gap < near * x[0] {
                return cones::max_step(kind, &[x[0] - KEEP * gap, x[1], x[2]], d, alpha);
            }
        }
        cones::max_step(kind, x, d, alpha)
    };
    blocks.iter().fold(1.0, |alpha, b| {
        let r = b.rows();
        let a = step(b.kind, &it.s[r.clone()], &d.s[r.clone()], alpha);
        step(b.kind, &it.z[r.clone()], &d.z[r], a)
    })
}

/// What the iteration reports back per iteration (the trace) and at the end.
pub(crate) struct Outcome {
    pub status: Status,
    pub iterations: usize,
    pub iterate: Iterate,
}

/// A function applied to `(kind, s, z)` of every cone block.
type BlockFn<'a> = dyn Fn(Kind, &mut [f64], &mut [f64]) + 'a;

/// The starting point of `params.start` (paper 000 eqs. 21–22, thesis eq. 4.23 and
/// §4.14.4); `warm` replaces parts of it (thesis §4.6).
pub(crate) fn starting_point(
    std: &Standard,
    kkt: &mut Kkt,
    params: &IpParams,
    warm: Option<&Iterate>,
) -> Result<Iterate> {
    let (n, m) = (std.n, std.m);
    let ones = identity_scalings(&std.blocks);
    kkt.factor(std, &ones)?;
    let mut it = Iterate {
        x: vec![0.0; n],
        z: vec![0.0; m],
        s: vec![0.0; m],
    };
    let cone_rows = |it: &mut Iterate, f: &BlockFn<'_>| {
        for b in &std.blocks {
            let r = b.rows();
            f(b.kind, &mut it.s[r.clone()], &mut it.z[r]);
        }
    };
    match params.start {
        StartingPoint::Cvxopt => {
            // min ½xᵀPx + qᵀx + ½‖s‖² s.t. Ax + Qz + b = s with s = −z (G = I), then both
            // pushed into their cones with a unit margin.
            let mut rhs = vec![0.0; n + m];
            for (r, q) in rhs.iter_mut().zip(&std.q) {
                *r = -q;
            }
            rhs[n..].copy_from_slice(&std.b);
            kkt.solve(&mut rhs);
            it.x.copy_from_slice(&rhs[..n]);
            it.z.copy_from_slice(&rhs[n..]);
            cone_rows(&mut it, &|kind, s, z| {
                if kind == Kind::Free {
                    return;
                }
                for (si, zi) in s.iter_mut().zip(z.iter()) {
                    *si = -zi;
                }
                push_inside(kind, s, 1.0);
                push_inside(kind, z, 1.0);
            });
        }
        StartingPoint::Nocedal | StartingPoint::Thesis => {
            // x = 1, (s, z) = (e, e), then one affine step and s, z ← max(1, |· + Δ·|).
            it.x.fill(1.0);
            let free_z = if params.start == StartingPoint::Thesis {
                1.0
            } else {
                0.0
            };
            cone_rows(&mut it, &|kind, s, z| {
                if kind == Kind::Free {
                    z[0] = free_z;
                } else {
                    s.fill(0.0);
                    z.fill(0.0);
                    s[0] = 1.0;
                    z[0] = 1.0;
                }
            });
            let (mut r_d, mut r_p) = (vec![0.0; n], vec![0.0; m]);
            residuals(std, &it, &mut r_d, &mut r_p);
            let mut r_c = vec![0.0; m];
            complementarity_rhs(&std.blocks, &ones, None, 0.0, &mut r_c);
            let mut d = it.clone();
            Newton {
                std,
                r_d: &r_d,
                r_p: &r_p,
                scalings: &ones,
            }
            .solve(kkt, &r_c, &mut d);
            for b in &std.blocks {
                for i in b.rows() {
                    it.z[i] += d.z[i];
                    it.s[i] += d.s[i];
                }
                let r = b.rows();
                match b.kind {
                    Kind::Free => {}
                    Kind::NonNeg => {
                        let i = r.start;
                        it.s[i] = it.s[i].abs().max(1.0);
                        it.z[i] = it.z[i].abs().max(1.0);
                    }
                    Kind::Soc => {
                        push_inside(Kind::Soc, &mut it.s[r.clone()], 1.0);
                        push_inside(Kind::Soc, &mut it.z[r], 1.0);
                    }
                }
            }
        }
        StartingPoint::DApuzzo => {
            // x = 1, s = max(1, A x + b), z = s⁻¹ (the Jordan inverse on second-order cones).
            it.x.fill(1.0);
            let mut ax = vec![0.0; m];
            std.add_mul(Op::A, &it.x, &mut ax);
            for b in &std.blocks {
                let r = b.rows();
                match b.kind {
                    Kind::Free => {}
                    Kind::NonNeg => {
                        let i = r.start;
                        it.s[i] = (ax[i] + std.b[i]).max(1.0);
                        it.z[i] = 1.0 / it.s[i];
                    }
                    Kind::Soc => {
                        for i in r.clone() {
                            it.s[i] = ax[i] + std.b[i];
                        }
                        push_inside(Kind::Soc, &mut it.s[r.clone()], 1.0);
                        let s = &it.s[r.clone()];
                        let det = cones::soc_det(s);
                        it.z[r.clone()].copy_from_slice(&[s[0] / det, -s[1] / det, -s[2] / det]);
                    }
                }
            }
        }
    }
    if let Some(w) = warm {
        it.x.copy_from_slice(&w.x);
        if !w.z.is_empty() {
            // Full warm start: the previous impulses and velocities, pushed inside their
            // cones by a margin relative to their size (or to the cold start's, for a warm
            // start without impulses: a new contact).
            let (mz, ms) = (
                params.warm_margin * norm_inf(&w.z).max(norm_inf(&it.z)),
                params.warm_margin * norm_inf(&w.s).max(norm_inf(&it.s)),
            );
            it.z.copy_from_slice(&w.z);
            it.s.copy_from_slice(&w.s);
            for b in &std.blocks {
                let r = b.rows();
                if b.kind == Kind::Free {
                    it.s[r.start] = 0.0;
                    continue;
                }
                push_inside(b.kind, &mut it.s[r.clone()], ms);
                push_inside(b.kind, &mut it.z[r], mz);
            }
        }
    }
    Ok(it)
}

/// `r_c = −λ∘λ + σμe − (G⁻¹Δs_a)∘(GΔz_a)` per cone row (the affine direction `affine` only
/// in the corrector).
fn complementarity_rhs(
    blocks: &[Block],
    scalings: &[Scaling],
    affine: Option<&Iterate>,
    sigma_mu: f64,
    r_c: &mut [f64],
) {
    for (b, sc) in blocks.iter().zip(scalings) {
        if b.kind == Kind::Free {
            continue;
        }
        let (r, dim) = (b.rows(), b.dim());
        let l = &sc.lambda[..dim];
        let mut out = [0.0; 3];
        cones::jordan(l, l, &mut out[..dim]);
        for v in &mut out[..dim] {
            *v = -*v;
        }
        out[0] += sigma_mu;
        if let Some(a) = affine {
            let (mut gs, mut gz, mut prod) = ([0.0; 3], [0.0; 3], [0.0; 3]);
            sc.apply(true, &a.s[r.clone()], &mut gs[..dim]);
            sc.apply(false, &a.z[r.clone()], &mut gz[..dim]);
            cones::jordan(&gs[..dim], &gz[..dim], &mut prod[..dim]);
            for a in 0..dim {
                out[a] -= prod[a];
            }
        }
        r_c[r].copy_from_slice(&out[..dim]);
    }
}

/// The centrality corrector's right-hand side `r` (Gondzio's `v_t − ṽ`) for the direction
/// `dir` at the trial step `reach`: per cone, the Jordan product of the scaled trial point
/// `ṽ = (λ + reach G⁻¹Δs) ∘ (λ + reach GΔz)`, its eigenvalues (`ṽ₀ ± ‖ṽ₁‖` on a second-order
/// cone) moved into `[CORRECTOR_LOW, CORRECTOR_HIGH]` times the trial point's mean product,
/// a decrease by at most `CORRECTOR_HIGH` times that mean (Gondzio's bound on the large
/// products), on the same eigenvectors.
fn centrality_rhs(
    blocks: &[Block],
    scalings: &[Scaling],
    dir: &Iterate,
    reach: f64,
    r: &mut [f64],
) {
    let mut sum = 0.0;
    let mut nu = 0;
    for (b, sc) in blocks.iter().zip(scalings) {
        if b.kind == Kind::Free {
            r[b.start] = 0.0;
            continue;
        }
        let (rows, dim) = (b.rows(), b.dim());
        let (mut vs, mut vz) = ([0.0; 3], [0.0; 3]);
        sc.apply(true, &dir.s[rows.clone()], &mut vs[..dim]);
        sc.apply(false, &dir.z[rows.clone()], &mut vz[..dim]);
        for a in 0..dim {
            vs[a] = sc.lambda[a] + reach * vs[a];
            vz[a] = sc.lambda[a] + reach * vz[a];
        }
        cones::jordan(&vs[..dim], &vz[..dim], &mut r[rows]);
        sum += r[b.start];
        nu += 1;
    }
    let mean = sum / nu.max(1) as f64;
    let (low, high) = (CORRECTOR_LOW * mean, CORRECTOR_HIGH * mean);
    let target = |e: f64| {
        if e < low {
            low - e
        } else if e > high {
            (high - e).max(-high)
        } else {
            0.0
        }
    };
    for b in blocks {
        let p = &mut r[b.rows()];
        match b.kind {
            Kind::Free => {}
            Kind::NonNeg => p[0] = target(p[0]),
            Kind::Soc => {
                // p = e₋ c₋ + e₊ c₊ with c± = ½(1, ±u), u = p₁/‖p₁‖.
                let t = p[1].hypot(p[2]);
                let (lo, hi) = (target(p[0] - t), target(p[0] + t));
                let u = if t > 0.0 {
                    [p[1] / t, p[2] / t]
                } else {
                    [0.0; 2]
                };
                p[0] = 0.5 * (lo + hi);
                p[1] = 0.5 * (hi - lo) * u[0];
                p[2] = 0.5 * (hi - lo) * u[1];
            }
        }
    }
}

/// Runs the predictor–corrector iteration from `it` until the measures meet the tolerances
/// of `params`, `max_iter` iterations, a stall or an infeasibility certificate. `observe`
/// sees each iterate (the trace) and returns whether it already answers the caller's own
/// test (the settings' tolerance): then the iteration stops there, converged. `guard` keeps
/// the cones off their boundaries ([`step_to_boundary`]) where the interior point must reach
/// the tolerance alone.
pub(crate) fn iterate(
    std: &Standard,
    kkt: &mut Kkt,
    params: &IpParams,
    max_iter: usize,
    mut it: Iterate,
    guard: bool,
    mut observe: impl FnMut(usize, &Iterate, &Measures) -> bool,
) -> Result<Outcome> {
    let (n, m) = (std.n, std.m);
    let nu: usize = std.blocks.iter().filter(|b| b.kind != Kind::Free).count();
    let (mut r_d, mut r_p) = (vec![0.0; n], vec![0.0; m]);
    let mut meas = residuals(std, &it, &mut r_d, &mut r_p);
    let mut answered = observe(0, &it, &meas);
    let mut best = (meas.worst(params), it.clone());
    let (mut since_best, mut short_steps) = (0, 0);
    let mut r_c = vec![0.0; m];
    let mut aff = it.clone();
    let mut dir = it.clone();
    // The corrector's step and the Gondzio trials are guarded; the predictor's is not.
    let near = if guard { NEAR_BOUNDARY } else { 0.0 };
    let correctors = if n + m >= CORRECTOR_DIM {
        params.correctors
    } else {
        0
    };
    let mut r_t = vec![0.0; m];
    let z0 = norm_inf(&it.z).max(1.0);
    let mut k = 0;
    let status = loop {
        if answered || meas.worst(params) <= 1.0 {
            break Status::Converged;
        }
        if k >= max_iter {
            break Status::MaxIterations;
        }
        if let Some(status) = certificate(std, &it, z0) {
            break status;
        }
        k += 1;
        let scalings: Vec<Scaling> = std
            .blocks
            .iter()
            .map(|b| {
                let r = b.rows();
                Scaling::new(b.kind, &it.s[r.clone()], &it.z[r])
            })
            .collect();
        if kkt.factor(std, &scalings).is_err() {
            break Status::NumericalError;
        }
        let newton = Newton {
            std,
            r_d: &r_d,
            r_p: &r_p,
            scalings: &scalings,
        };
        // Predictor (affine, σ = 0), eq. 4.28.
        complementarity_rhs(&std.blocks, &scalings, None, 0.0, &mut r_c);
        newton.solve(kkt, &r_c, &mut aff);
        let alpha_aff = step_to_boundary(&std.blocks, &it, &aff, 0.0);
        let mu = if nu > 0 {
            dot(&it.s, &it.z) / nu as f64
        } else {
            0.0
        };
        let sigma = if mu > 0.0 {
            let mu_aff = (0..m)
                .map(|i| (it.s[i] + alpha_aff * aff.s[i]) * (it.z[i] + alpha_aff * aff.z[i]))
                .sum::<f64>()
                / nu as f64;
            (mu_aff / mu).clamp(0.0, 1.0).powi(3)
        } else {
            0.0
        };
        // Corrector with centering σμ and the second-order term, same factorization.
        complementarity_rhs(&std.blocks, &scalings, Some(&aff), sigma * mu, &mut r_c);
        newton.solve(kkt, &r_c, &mut dir);
        if !finite(&dir) {
            break Status::NumericalError;
        }
        // Centrality correctors on the same factorization (the affine direction's storage
        // holds each trial): on settled piles a few badly centred cones of thousands cut the
        // step (4000 spheres: α 0.60–0.85 with 12–80 cones below 1.5 α; 25 → 18 iterations).
        let mut step = step_to_boundary(&std.blocks, &it, &dir, near);
        for _ in 0..correctors {
            if step >= 1.0 {
                break;
            }
            let reach = (step + CORRECTOR_REACH).min(1.0);
            centrality_rhs(&std.blocks, &scalings, &dir, reach, &mut r_t);
            r_t.iter_mut().zip(&r_c).for_each(|(t, c)| *t += c);
            newton.solve(kkt, &r_t, &mut aff);
            let longer = step_to_boundary(&std.blocks, &it, &aff, near);
            if !finite(&aff) || longer < step + CORRECTOR_GAIN * (reach - step) {
                break;
            }
            std::mem::swap(&mut aff, &mut dir);
            std::mem::swap(&mut r_t, &mut r_c);
            step = longer;
        }
        let alpha = (params.step_fraction * step).min(1.0);
        for (v, d) in it.x.iter_mut().zip(&dir.x) {
            *v += alpha * d;
        }
        for (v, d) in it.z.iter_mut().zip(&dir.z) {
            *v += alpha * d;
        }
        for (v, d) in it.s.iter_mut().zip(&dir.s) {
            *v += alpha * d;
        }
        meas = residuals(std, &it, &mut r_d, &mut r_p);
        answered = observe(k, &it, &meas);
        let worst = meas.worst(params);
        if !worst.is_finite() {
            break Status::NumericalError;
        }
        if worst < best.0 {
            best = (worst, it.clone());
            since_best = 0;
        } else {
            since_best += 1;
        }
        short_steps = if alpha < params.min_step {
            short_steps + 1
        } else {
            0
        };
        if since_best >= params.stall_iterations || short_steps >= 3 {
            break Status::Stalled;
        }
    };
    let iterate = if status == Status::Converged {
        it
    } else {
        best.1
    };
    Ok(Outcome {
        status,
        iterations: k,
        iterate,
    })
}

/// An infeasibility certificate: `z` grown far beyond its start with, normalized,
/// `Aᵀz ≈ 0`, `Qz ≈ 0` and `bᵀz < 0` (no `x` satisfies `Ax + b ∈ C*` for a rigid problem;
/// the QP in the impulses is unbounded below for an assembled one).
fn certificate(std: &Standard, it: &Iterate, z0: f64) -> Option<Status> {
    let zn = norm_inf(&it.z);
    if zn <= 1e8 * z0 {
        return None;
    }
    let z: Vec<f64> = it.z.iter().map(|v| v / zn).collect();
    let (mut atz, mut qz) = (vec![0.0; std.n], vec![0.0; std.m]);
    std.add_mul(Op::At, &z, &mut atz);
    std.add_mul(Op::Q, &z, &mut qz);
    let scale = norm_inf(&std.b).max(f64::MIN_POSITIVE);
    let btz = dot(&std.b, &z);
    (btz < -1e-6 * scale && norm_inf(&atz) <= 1e-6 && norm_inf(&qz) <= 1e-6 * scale.max(1.0))
        .then_some(Status::Infeasible)
}
