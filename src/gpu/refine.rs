//! Mixed-precision iterative refinement of the GPU solvers (issue 20, DESIGN §4): answers to
//! `f64` accuracy from `f32` iterations.
//!
//! The `f32` iterations stop near a relative residual of [`F32_REACH`]; below that tolerance
//! (and above 0) each refinement round takes the current `γ` (`f64`, on the CPU), one
//! projected step `ĝ = Π_K(γ − η u)` (`u = (N + E) γ + r`, `f64`), and lets the GPU solve in
//! `f32` a *correction problem* for `δ` with `γ = b + Rᵀ δ`: its right-hand side is the `f64`
//! velocity at the base `b` (rounded once), so `δ` and every quantity the kernels subtract
//! are of the size of the correction, not of `γ`, and each round gains the digits `f32`
//! resolves at that size. Wilkinson's refinement of linear systems; for cone programs the
//! feasible set moves with the base, `γ ∈ K ⇔ δ ∈ K − b`, which scaled iterative refinement of
//! LP/QP (Gleixner, Steffy, Wolter 2016; Weber, Gleixner, Sager 2019) meets by shifting bounds.
//! A translated Coulomb cone is no cone the kernels project on, and shifting it inside a
//! kernel would subtract `b` from `b + δ` in `f32`, losing all that refinement gains. Instead
//! each block's local cone at its base is one the kernels know, in the block's own frame:
//!
//! - *apex* (`b_k = 0`): the block's own cone, exact; blocks whose `ĝ_k` is 0 or tiny
//!   (below `TINY = 1e-4` of `‖ĝ‖∞`, where an `f32` δ of `ĝ_k` still meets the target);
//! - *free* (`b_k = ĝ_k` inside `K_k`, or a bilateral block): the whole space (bilateral);
//! - *face* (`b_k = ĝ_k` on the boundary of a Coulomb cone, sliding, or moved onto it from
//!   within `NEAR = 1e-5`): the tangent half-space, `ℝ₊ × ℝ²` after the rotation `R_k` of the block's rows onto (inward normal,
//!   generator, circumferential direction): a 3-row unilateral block.
//!
//! The free and face cones are the tangent cones of `K − ĝ` at 0, as the active-set polish of
//! OSQP and Clarabel guesses them; a wrong guess is corrected by the next round, whose
//! projected step reclassifies the blocks. What the half-space of a face drops is the
//! curvature of the cone, which with the face's multiplier `λ` is the Hessian of the
//! Lagrangian of sequential quadratic programming: `λ / ‖t‖` along the circumferential row,
//! added to the correction's diagonal (without it the rounds overshoot the sliding
//! directions, by a factor 2 on the NESpheres problem). A proximal term (`PROX = 1e-3` of
//! each block's largest eigenvalue) keeps the correction bounded where `N` is singular.
//! Every round's residual is measured in `f64` on the CPU by the merit code; the rounds stop
//! when it meets the tolerance, after two rounds without improvement, at [`MAX_ROUNDS`], at
//! the iteration cap, or at the first round that gains less than 2× (`HANDOVER`). The Coulomb
//! model reaches them through the outer De Saxcé fixed point (`solver::coulomb`), whose inner
//! CCP solves are refined.
//!
//! The rounds stall short of 1e-10 where `N` is singular or badly conditioned on the active
//! set (measured with `--tol 1e-10`, lavapipe): on Capsules-i101-404 near 9.5e-8 (two nearly
//! duplicated sliding contacts near the apex, blocks 122 and 123, share one load, and each
//! round moves their split by 10 %), on BoxesStack1 (48 of 50 contacts sticking) by about
//! 1 % a round (proximal-point steps gaining `ρ / (λ + ρ)` in `N`'s small eigendirections).
//! Those and Capsules-i100-1090, -i103-990 and the FCLIB Capsules-i125-1213 end the rounds on
//! the boundary of a degenerate optimal face (nearly duplicated and opposite-normal
//! contacts, whose split of a load is free), a point from which no local step gains: Newton
//! steps on the rounds' active set (dense SVD, ratio test), a globalized semismooth Newton,
//! proximal and skew-part rounds all stalled there at 6e-8–9e-7 (`benches/RESULTS.md`,
//! issue 20, eighth to tenth sessions). So the *`f64` finish* (CPU) is the interior point
//! (`solver::ip`) warm-started from the rounds' best answer, pushed off the cones'
//! boundaries by a margin: it goes to the relative interior of that face and converges there
//! in 7–15 iterations from the `f32` answers, against 13–22 from its own start. The report
//! names its phases `gpu` and `f64_finish`.

use std::time::Instant;

use super::data::{
    CONE_BILATERAL, CONE_UNILATERAL, OperatorData, ProblemData, component_major, index, to_f32,
};
use crate::error::{Error, Result};
use crate::problem::merit::{self, Residual};
use crate::problem::sparse::CsrMatrix;
use crate::problem::{Cone, FrictionModel, System};
use crate::solver::ip;
use crate::solver::progress::{BestRound, biased_velocity};
use crate::solver::{Bias, Report, Settings, Status, TraceEntry, add_phase};

/// The relative residual `f32` iterations reach (unit roundoff `2⁻²⁴ ≈ 6e-8`, times the
/// rounding of `u = N γ + r` summed over a row and the conditioning: measured between 1e-7
/// and 1e-6 on the Siconos Capsules problems): a tolerance below it turns refinement on, and
/// the first solve stops there.
pub const F32_REACH: f64 = 1e-6;

/// The reduction of the residual each correction round is asked for: what `f32` iterations
/// resolve relative to the size of the correction, with a margin.
const ROUND_GAIN: f64 = 1e-3;

/// Rounds without improvement of the `f64` residual before the refinement stops.
const STALLED_ROUNDS: usize = 2;

/// Most refinement rounds of one solve.
pub const MAX_ROUNDS: usize = 12;

/// A block whose projected impulse is at most this fraction of `‖ĝ‖∞` takes the apex as its
/// base: the `f32` rounding of its `δ` is then below `2⁻²⁴ · TINY ≈ 6e-12` of `‖γ‖`.
const TINY: f64 = 1e-4;

/// A Coulomb block whose projected impulse is inside its cone by less than this fraction of
/// `μ γ_n` counts as sliding (its base moved onto the boundary): the `f32` iterations cannot
/// tell it from a sliding one.
const NEAR: f64 = 1e-5;

/// The proximal term of a correction, relative to each block's largest eigenvalue `1/η_k`:
/// `(N + E + ρ) δ` bounds the correction where `N` is singular (its null space, blurred
/// by the `f32` rounding of `N` into tiny eigenvalues, would let `δ` drift), and the rounds
/// become proximal-point steps (Rockafellar 1976), which still converge; measured on the
/// Capsules problem, where `spg-gpu` reaches 1e-10 with it and drifts without.
const PROX: f64 = 1e-3;

/// A correction round on the GPU that divides the best residual by less than `1 / HANDOVER`
/// hands over to the `f64` finish: what is left is the slow part (a badly conditioned or
/// singular `N` on the active set, see the module doc).
const HANDOVER: f64 = 0.5;

/// The `f64` finish aims at this fraction of the tolerance: a caller measuring with other
/// block steps than the settings' keeps a margin (the FCLIB Capsules-i125-1213 stopped at
/// 8e-11–9e-11 by unit steps when the finish aimed at the tolerance itself).
const FINISH_AIM: f64 = 0.1;

/// The phase of a refined solve's `f32` solve and correction rounds on the GPU...
const PHASE_GPU: &str = "gpu";
/// ...and of its `f64` finish on the CPU.
const PHASE_FINISH: &str = "f64_finish";

/// Whether a solve under `settings` is refined: its tolerance is below [`F32_REACH`] and
/// positive (a zero tolerance asks for `max_iter` iterations, as the benchmarks do).
pub(crate) fn enabled(settings: &Settings) -> bool {
    settings.tol > 0.0 && settings.tol < F32_REACH
}

/// The settings of the first `f32` solve of a refined one: the tolerance raised to
/// [`F32_REACH`].
pub(crate) fn first_settings(settings: &Settings) -> Settings {
    Settings {
        tol: settings.tol.max(F32_REACH),
        ..settings.clone()
    }
}

/// The local cone of a block at its base.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Local {
    /// `b_k = 0`, the block's own cone.
    Apex,
    /// `b_k = ĝ_k`, the whole space.
    Free,
    /// `b_k = ĝ_k` on the boundary of a Coulomb cone: `ℝ₊ × ℝ²` in the rows of `R_k`.
    Face([[f64; 3]; 3]),
}

impl Local {
    /// `y = R x` (`transpose`: `Rᵀ x`) on the rows of one block; the identity but for a face.
    fn rotate(&self, x: &[f64], y: &mut [f64], transpose: bool) {
        match self {
            Local::Face(r) => {
                for (i, yi) in y.iter_mut().enumerate() {
                    *yi = (0..3)
                        .map(|j| if transpose { r[j][i] } else { r[i][j] } * x[j])
                        .sum();
                }
            }
            _ => y.copy_from_slice(x),
        }
    }

    /// Entry `(i, j)` of `R_k` (the identity but for a face).
    fn entry(&self, i: usize, j: usize) -> f64 {
        match self {
            Local::Face(r) => r[i][j],
            _ => f64::from(u8::from(i == j)),
        }
    }
}

/// The rows of a Coulomb cone's frame at a boundary point with unit tangent `t`: inward
/// normal, generator, circumferential direction (orthonormal).
fn face_frame(mu: f64, t: [f64; 2]) -> [[f64; 3]; 3] {
    let c = 1.0 / (1.0 + mu * mu).sqrt();
    [
        [mu * c, -c * t[0], -c * t[1]],
        [c, mu * c * t[0], mu * c * t[1]],
        [0.0, -t[1], t[0]],
    ]
}

/// One correction problem: the base, each block's local cone, and the data the GPU needs in
/// the rotated frame.
struct Correction {
    base: Vec<f64>,
    local: Vec<Local>,
    /// `R ((N + E) b + r + bias)`, the `f64` right-hand side.
    r: Vec<f64>,
    /// `R (ĝ − b)`: the initial `δ`.
    delta: Vec<f64>,
    /// The Hessian of the Lagrangian that the tangent half-space of a face drops: `λ / ‖t‖`
    /// on its circumferential row (0 elsewhere), added to the compliance.
    curvature: Vec<f64>,
}

impl Correction {
    /// The correction at `gamma` with velocity `u` and block steps `eta`; blocks whose
    /// projected impulse is at most `tiny` of `‖ĝ‖∞` take the apex.
    fn new(sys: &System, gamma: &[f64], u: &[f64], eta: &[f64], bias: Bias, tiny: f64) -> Self {
        let mut projected = vec![0.0; sys.rows()];
        let mut base_face = Vec::new();
        let mut local = Vec::with_capacity(sys.blocks());
        for (k, cone) in sys.cones().iter().enumerate() {
            let range = sys.block_range(k);
            let step = if eta[k] > 0.0 { eta[k] } else { 1.0 };
            let z = &mut projected[range.clone()];
            for ((zi, g), v) in z
                .iter_mut()
                .zip(&gamma[range.clone()])
                .zip(&u[range.clone()])
            {
                *zi = g - step * v;
            }
            local.push(match *cone {
                Cone::Bilateral { .. } => Local::Free,
                Cone::Unilateral => {
                    if z[0] > 0.0 {
                        Local::Free
                    } else {
                        Local::Apex
                    }
                }
                Cone::Coulomb { mu } => {
                    let t = z[1].hypot(z[2]);
                    let uniform = sys.compliance()[range.clone()]
                        .windows(2)
                        .all(|w| w[0] == w[1]);
                    if mu * t <= -z[0] || mu == 0.0 || !uniform {
                        Local::Apex
                    } else if t <= (1.0 - NEAR) * mu * z[0] || t == 0.0 {
                        Local::Free
                    } else {
                        Local::Face(face_frame(mu, [z[1] / t, z[2] / t]))
                    }
                }
            });
            cone.project(z);
            if let Local::Face(_) = local[k] {
                // The base on the boundary: the tangent half-space passes through it.
                let (Cone::Coulomb { mu }, t) = (*cone, z[1].hypot(z[2])) else {
                    unreachable!("a face is a Coulomb block")
                };
                let scale = mu * z[0] / t;
                base_face.push((k, [z[0], z[1] * scale, z[2] * scale]));
            }
        }
        let scale = projected.iter().fold(0.0f64, |m, x| m.max(x.abs()));
        let mut base = projected.clone();
        for (k, b) in base_face {
            base[sys.block_range(k)].copy_from_slice(&b);
        }
        for (k, l) in local.iter_mut().enumerate() {
            let range = sys.block_range(k);
            let size = projected[range.clone()]
                .iter()
                .fold(0.0f64, |m, x| m.max(x.abs()));
            if size <= tiny * scale {
                *l = Local::Apex;
            }
            if *l == Local::Apex {
                base[range].fill(0.0);
            }
        }
        let velocity = biased_velocity(sys, bias, &base);
        let (mut r, mut delta) = (vec![0.0; sys.rows()], vec![0.0; sys.rows()]);
        let mut curvature = vec![0.0; sys.rows()];
        for (k, l) in local.iter().enumerate() {
            let range = sys.block_range(k);
            l.rotate(&velocity[range.clone()], &mut r[range.clone()], false);
            let offset: Vec<f64> = range.clone().map(|i| projected[i] - base[i]).collect();
            l.rotate(&offset, &mut delta[range.clone()], false);
            if let (Local::Face(_), Cone::Coulomb { mu }) = (l, sys.cones()[k]) {
                // The multiplier λ of ‖t‖ − μ n ≤ 0 (u = λ (μ, −t̂): r'_0 = λ √(1 + μ²))
                // times the constraint's curvature 1/‖t‖ along the circumferential row.
                let lambda = r[range.start].max(0.0) / (1.0 + mu * mu).sqrt();
                let t = base[range.start + 1].hypot(base[range.start + 2]);
                curvature[range.start + 2] = lambda / t;
            }
        }
        Correction {
            base,
            local,
            r,
            delta,
            curvature,
        }
    }

    /// `γ = b + Rᵀ δ`.
    fn apply(&self, sys: &System, delta: &[f64]) -> Vec<f64> {
        let mut gamma = self.base.clone();
        let mut back = [0.0; 3];
        for (k, l) in self.local.iter().enumerate() {
            let range = sys.block_range(k);
            let back = &mut back[..range.len()];
            l.rotate(&delta[range.clone()], back, true);
            gamma[range]
                .iter_mut()
                .zip(back.iter())
                .for_each(|(g, d)| *g += d);
        }
        gamma
    }

    /// The rows of `J` (or `M⁻¹ Jᵀ`) of a factored operator in the rotated frame.
    fn rotate_rows(&self, sys: &System, rows: &[[f64; 6]], jac_start: &[usize]) -> Vec<[f64; 6]> {
        let mut out = rows.to_vec();
        let op = sys.factored().expect("a factored operator");
        for (k, l) in self.local.iter().enumerate() {
            if !matches!(l, Local::Face(_)) {
                continue;
            }
            for side in 0..op.block_bodies(k).len() {
                let first = jac_start[k] + 3 * side;
                let old = [rows[first], rows[first + 1], rows[first + 2]];
                for (i, row) in out[first..first + 3].iter_mut().enumerate() {
                    *row = std::array::from_fn(|c| (0..3).map(|j| l.entry(i, j) * old[j][c]).sum());
                }
            }
        }
        out
    }

    /// `R N Rᵀ` of an assembled `N`, with every stored entry spread over the rows and
    /// columns of its blocks (explicit zeros kept), so that the pattern is the same in every
    /// round whatever the faces.
    fn rotate_matrix(&self, sys: &System, n: &CsrMatrix) -> Result<CsrMatrix> {
        let mut block_of = vec![0; sys.rows()];
        for k in 0..sys.blocks() {
            block_of[sys.block_range(k)].fill(k);
        }
        let mut triplets = Vec::with_capacity(n.nnz() * 9);
        for (i, &a) in block_of.iter().enumerate() {
            let ra = sys.block_range(a);
            let (cols, values) = n.row(i);
            for (&j, &v) in cols.iter().zip(values) {
                let b = block_of[j];
                let rb = sys.block_range(b);
                for i2 in ra.clone() {
                    let ci = self.local[a].entry(i2 - ra.start, i - ra.start) * v;
                    for j2 in rb.clone() {
                        let cj = self.local[b].entry(j2 - rb.start, j - rb.start);
                        triplets.push((i2, j2, ci * cj));
                    }
                }
            }
        }
        CsrMatrix::from_triplets(n.nrows, n.ncols, &triplets)
    }

    /// The data of the correction problem: `data` (of `sys`) with the local cones, the
    /// rotated operator and right-hand side, the initial `δ`, the CCP model, and `scale` as
    /// the normalization of the relative residual (that of the problem itself, so that the
    /// correction's relative residual estimates the problem's after the round).
    fn data(&self, sys: &System, data: &ProblemData, scale: f64) -> Result<ProblemData> {
        let mut out = data.clone();
        // δ starts at (nearly) 0: the divergence test measures it against the base.
        out.gamma_scale = self.base.iter().fold(0.0f64, |m, x| m.max(x.abs()));
        for (b, l) in out.blocks.iter_mut().zip(&self.local) {
            match l {
                Local::Apex => {}
                Local::Free => b.kind = CONE_BILATERAL,
                Local::Face(_) => b.kind = CONE_UNILATERAL,
            }
        }
        out.params.coulomb = 0;
        out.params.r_norm = scale as f32;
        out.r = to_f32(&self.r);
        for (k, l) in self.local.iter().enumerate() {
            let prox = match (l, data.eta[k]) {
                (Local::Apex, _) => 0.0,
                (_, eta) if eta > 0.0 => PROX / eta,
                _ => 0.0,
            };
            let mut added = 0.0f64;
            for i in sys.block_range(k) {
                out.compliance[i] = (sys.compliance()[i] + self.curvature[i] + prox) as f32;
                added = added.max(self.curvature[i]);
            }
            // Jacobi's step of the block (the device recomputes it on a factored problem,
            // with the compliance): what the correction adds to the diagonal raises the
            // block's largest eigenvalue by at most its largest entry (Weyl), and a face whose
            // curvature `λ / ‖t‖` exceeds `2 / (ω η_k)` diverges with the bare block's step.
            if data.eta[k] > 0.0 {
                out.blocks[k].eta = (1.0 / (1.0 / data.eta[k] + added + prox)) as f32;
            }
        }
        out.gamma = to_f32(&self.delta);
        out.gamma_f64 = self.delta.clone();
        out.op = match (&data.op, sys.factored()) {
            (
                OperatorData::Factored {
                    links_ptr, links, ..
                },
                Some(op),
            ) => {
                let jac = self.rotate_rows(sys, op.jac(), op.jac_start());
                let minv_jac = self.rotate_rows(sys, op.minv_jac(), op.jac_start());
                OperatorData::Factored {
                    links_ptr: links_ptr.clone(),
                    links: links.clone(),
                    jac: component_major(&jac, op, &out.blocks, out.params.max_dim),
                    minv_jac: minv_jac.iter().flatten().map(|&v| v as f32).collect(),
                }
            }
            _ => {
                let n = sys.operator().as_matrix().ok_or_else(|| {
                    Error::Gpu("the GPU solvers need a factored or an assembled operator".into())
                })?;
                let rotated = self.rotate_matrix(sys, n)?;
                let indices = |v: &[usize]| v.iter().map(|&p| index(p)).collect::<Result<_>>();
                OperatorData::Csr {
                    indptr: indices(&rotated.indptr)?,
                    indices: indices(&rotated.indices)?,
                    values: to_f32(&rotated.values),
                }
            }
        };
        Ok(out)
    }
}

/// What one correction round on the GPU returns.
pub(crate) struct Round {
    /// Iterations it ran.
    pub(crate) iterations: usize,
    /// Products with `N` it spent.
    pub(crate) products: usize,
    /// The correction `δ` (rotated frame), widened.
    pub(crate) delta: Vec<f64>,
}

/// Refines `first`, the report of the `f32` solve of `sys` with `bias` under `settings`
/// (CCP) from `data`: rounds of `correct(data, settings)`, a correction problem solved on
/// the GPU, each certified in `f64`, while each round divides the residual by at least
/// `1 / HANDOVER`; then, if the tolerance is still missed, the `f64` finish (the interior
/// point warm-started from the best answer, [`ip::finish_from`]). The report carries the best
/// iterate, every round's and the finish's `f64` residual in its trace, the number of rounds,
/// and the phases `gpu` and `f64_finish` when the finish ran.
pub(crate) fn refine(
    sys: &System,
    settings: &Settings,
    bias: Bias,
    data: &ProblemData,
    first: Report,
    mut correct: impl FnMut(&ProblemData, &Settings) -> Result<Round>,
) -> Result<Report> {
    if matches!(first.status, Status::NumericalError) {
        return Ok(first);
    }
    let start = Instant::now();
    let Report {
        solver,
        mut status,
        mut iterations,
        time_s,
        mut gamma,
        residual,
        mut trace,
        ..
    } = first;
    let mut products = trace.last().map_or(0, |t| t.products);
    let certify = |gamma: &[f64]| -> (Residual, Vec<f64>) {
        let u = biased_velocity(sys, bias, gamma);
        (
            merit::residual(sys, gamma, &u, FrictionModel::Ccp, &data.eta),
            u,
        )
    };
    let entry = |iteration, products, value, res: &Residual| TraceEntry {
        iteration,
        residual: value,
        natural_map_inf: res.inf,
        time_s: time_s + start.elapsed().as_secs_f64(),
        products,
    };
    let (_, mut u) = certify(&gamma);
    let mut best = BestRound::new(settings, residual, &gamma);
    let mut rounds = 0;
    while !settings.met(&best.residual)
        && iterations < settings.max_iter
        && rounds < MAX_ROUNDS
        && best.since < STALLED_ROUNDS
    {
        let correction = Correction::new(sys, &gamma, &u, &data.eta, bias, TINY);
        let scale = norm2(sys.r()).max(norm2(&gamma)).max(norm2(&u));
        let round_settings = Settings {
            friction: FrictionModel::Ccp,
            tol: (ROUND_GAIN * best.value).max(0.5 * settings.tol),
            max_iter: settings.max_iter - iterations,
            warm_start: None,
            ..settings.clone()
        };
        let round = correct(&correction.data(sys, data, scale)?, &round_settings)?;
        rounds += 1;
        iterations += round.iterations;
        products += round.products;
        gamma = correction.apply(sys, &round.delta);
        let res;
        (res, u) = certify(&gamma);
        let value = settings.criterion.of(&res);
        trace.push(entry(iterations, products, value, &res));
        if !value.is_finite() {
            break;
        }
        let slow = value > HANDOVER * best.value;
        best.offer(value, res, &gamma);
        if slow {
            break;
        }
    }
    let mut phases = Vec::new();
    let finished = !settings.met(&best.residual);
    if finished {
        let t0 = Instant::now();
        // A finish that fails (its factorization) leaves the rounds' best.
        let aim = Settings {
            tol: FINISH_AIM * settings.tol,
            ..settings.clone()
        };
        if let Ok(report) = ip::finish_from(sys, &aim, bias, &best.gamma) {
            let res = certify(&report.gamma).0;
            let value = settings.criterion.of(&res);
            trace.push(entry(iterations, products, value, &res));
            best.offer(value, res, &report.gamma);
        }
        let finish_s = t0.elapsed().as_secs_f64();
        let total_s = time_s + start.elapsed().as_secs_f64();
        add_phase(&mut phases, PHASE_GPU, total_s - finish_s);
        add_phase(&mut phases, PHASE_FINISH, finish_s);
    }
    let BestRound {
        residual, gamma, ..
    } = best;
    if settings.met(&residual) {
        status = Status::Converged;
    } else if rounds > 0 || finished {
        status = if iterations >= settings.max_iter {
            Status::MaxIterations
        } else {
            Status::Stalled
        };
    }
    Ok(Report {
        solver,
        status,
        iterations,
        time_s: time_s + start.elapsed().as_secs_f64(),
        residual,
        merit: merit::evaluate(sys, &gamma, FrictionModel::Ccp),
        gamma,
        trace,
        phases,
        refinements: rounds,
        rounds: 0,
    })
}

fn norm2(v: &[f64]) -> f64 {
    v.iter().map(|x| x * x).sum::<f64>().sqrt()
}
