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
//! What the rounds have found there is the active set; classical mixed-precision refinement
//! ends such a solve with an `f64` correction on the identified structure, and so does the
//! *`f64` finish* here (CPU): Newton (SQP) steps on the active set of each iterate in the
//! same local frames, the local cones taken as equalities (`Correction::newton`), solved
//! by a dense SVD in the least-squares, least-norm sense (a stack's sticking rows outnumber
//! its bodies' degrees of freedom). The nearly duplicated pair makes the full Newton step
//! carry the smaller contact through the apex (residual 5e-3); the ratio test of active-set
//! methods stops it where that contact reaches the apex (`Correction::ratio`), and the next
//! step, with it at the apex, is exact to rounding. The finish is bounded: problems of at
//! most `FINISH_ROWS` rows, `FINISH_STEPS` steps of one SVD each (under 1 s in all on those
//! two problems); the report names its phases `gpu` and `f64_finish`.

use std::borrow::Cow;
use std::time::Instant;

use faer::Mat;
use faer::linalg::solvers::Svd;

use super::data::{
    CONE_BILATERAL, CONE_UNILATERAL, OperatorData, ProblemData, component_major, index, to_f32,
};
use crate::error::{Error, Result};
use crate::problem::merit::{self, Residual};
use crate::problem::sparse::CsrMatrix;
use crate::problem::{Cone, FrictionModel, System};
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
/// hands over to the `f64` finish: the rounds have found the active set, and what is left
/// is the slow part (a badly conditioned or singular `N` on that set, see the module doc).
const HANDOVER: f64 = 0.5;

/// The cutoff of the finish's pseudo-inverse, relative to the largest singular value of its
/// Newton matrix: the directions below it (duplicated contacts, more sticking rows than the
/// bodies' degrees of freedom) are left as they are.
const FINISH_CUTOFF: f64 = 1e-12;

/// Passes of rounds and `f64` finish at most: a finish that gains but misses the tolerance
/// hands back to the rounds (BoxesStack1 under `apgd-gpu` on an H100: the finish stopped at
/// 3.2e-10 from the rounds' iterate, where lavapipe's reaches 1e-10).
const PASSES: usize = 3;

/// The largest problem (rows) the `f64` finish assembles `N` and takes the dense SVD of
/// (`O(m³)`: 0.1 s at the Capsules problem's 675 rows on one core, about 10 s at 3000): it
/// is built for the Siconos-sized problems the rounds stall on, not for large piles.
const FINISH_ROWS: usize = 3000;

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

impl Correction {
    /// The Newton system of the correction problem on its active set, in `f64` (the `f64`
    /// finish): the local cones taken as equalities — an apex block's `δ` is 0, a face's
    /// normal row `δ₀ = 0` (the base stays on the tangent plane) and its generator and
    /// circumferential velocities 0, a free block's velocity 0 — leave the linear system
    /// `(R (N + E) Rᵀ + C)_AA δ_A = −r_A` on the active rows `A` (`C` the faces' curvature),
    /// the Newton (SQP) step of the natural map with the projection's Jacobian at the base.
    /// `N` restricted to the sticking contacts of a stack is singular (more rows than the
    /// bodies' degrees of freedom), so the system is solved by a dense SVD, in the least-squares
    /// sense with the least norm. `None` when the SVD fails.
    fn newton(&self, sys: &System, n: &CsrMatrix) -> Option<Newton> {
        let rotated = self.rotate_matrix(sys, n).ok()?;
        let mut slot = vec![None; sys.rows()];
        let mut active = Vec::new();
        for (k, l) in self.local.iter().enumerate() {
            let range = sys.block_range(k);
            let pinned = match l {
                Local::Apex => range.len(),
                Local::Free => 0,
                Local::Face(_) => 1,
            };
            for i in range.skip(pinned) {
                slot[i] = Some(active.len());
                active.push(i);
            }
        }
        let size = active.len();
        let mut matrix = Mat::<f64>::zeros(size, size);
        for (a, &i) in active.iter().enumerate() {
            let (cols, values) = rotated.row(i);
            for (&j, &v) in cols.iter().zip(values) {
                if let Some(b) = slot[j] {
                    matrix[(a, b)] += v;
                }
            }
            matrix[(a, a)] += sys.compliance()[i] + self.curvature[i];
        }
        let svd = matrix.thin_svd().ok()?;
        // `Uᵀ (−r_A)`.
        let projected = (0..size)
            .map(|c| {
                -(0..size)
                    .map(|a| svd.U()[(a, c)] * self.r[active[a]])
                    .sum::<f64>()
            })
            .collect();
        Some(Newton {
            active,
            svd,
            projected,
        })
    }
}

impl Correction {
    /// The ratio test of the active-set method on the step `δ`: the largest `α ≤ 1` for
    /// which `b + α Rᵀδ` keeps every face's normal impulse non-negative (the step does not
    /// carry the block through the apex) and every free block in its cone, by bisection;
    /// blocks already on that boundary at `RATIO_MIN` are not counted (the next step's
    /// classification moves them). Nearly duplicated contacts (the Capsules problem) make
    /// the Newton step shift load between them by far more than the smaller carries: the
    /// ratio test stops it where that block reaches the apex, which the next classification
    /// takes as its local cone.
    fn ratio(&self, sys: &System, delta: &[f64]) -> f64 {
        /// The smallest step the ratio test counts (a block on its boundary at it is left out).
        const RATIO_MIN: f64 = 1e-3;
        /// Bisections of the ratio test per block.
        const RATIO_BISECTIONS: usize = 40;
        let mut alpha = 1.0f64;
        let mut back = [0.0; 3];
        for (k, l) in self.local.iter().enumerate() {
            let range = sys.block_range(k);
            let d = &mut back[..range.len()];
            l.rotate(&delta[range.clone()], d, true);
            let b = &self.base[range];
            let cone = sys.cones()[k];
            let inside = |a: f64| {
                let mut x = [0.0; 3];
                let x = &mut x[..b.len()];
                x.iter_mut()
                    .zip(b.iter().zip(d.iter()))
                    .for_each(|(x, (b, d))| *x = b + a * d);
                match l {
                    Local::Face(_) => x[0] >= 0.0,
                    _ => cone.distance(x) == 0.0,
                }
            };
            if *l == Local::Apex || inside(1.0) || !inside(RATIO_MIN) {
                continue;
            }
            let (mut lo, mut hi) = (RATIO_MIN, 1.0);
            for _ in 0..RATIO_BISECTIONS {
                let mid = 0.5 * (lo + hi);
                if inside(mid) {
                    lo = mid;
                } else {
                    hi = mid;
                }
            }
            alpha = alpha.min(lo);
        }
        alpha
    }
}

/// The Newton system of one finish step, factored: its active rows, the SVD of its matrix
/// and `Uᵀ` times its right-hand side.
struct Newton {
    active: Vec<usize>,
    svd: Svd<f64>,
    projected: Vec<f64>,
}

impl Newton {
    /// The step `δ` (all rows, 0 off the active set) with the singular values below
    /// `cutoff` times the largest dropped.
    fn delta(&self, rows: usize, cutoff: f64) -> Vec<f64> {
        let s = self.svd.S().column_vector();
        let largest = s.iter().fold(0.0f64, |m, &x| m.max(x));
        let kept: Vec<(usize, f64)> = (0..s.nrows())
            .filter(|&c| s[c] > cutoff * largest)
            .map(|c| (c, self.projected[c] / s[c]))
            .collect();
        let mut delta = vec![0.0; rows];
        for (a, &i) in self.active.iter().enumerate() {
            delta[i] = kept.iter().map(|&(c, y)| self.svd.V()[(a, c)] * y).sum();
        }
        delta
    }
}

/// `N` (without `E`) as an explicit matrix for the `f64` finish: the assembled one, or the
/// factored form's `J M⁻¹ Jᵀ`, when its rows are at most [`FINISH_ROWS`].
fn finish_matrix(sys: &System) -> Option<Cow<'_, CsrMatrix>> {
    if sys.rows() > FINISH_ROWS {
        return None;
    }
    match (sys.operator().as_matrix(), sys.factored()) {
        (Some(n), _) => Some(Cow::Borrowed(n)),
        (None, Some(op)) => Some(Cow::Owned(op.assemble())),
        (None, None) => None,
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
/// `1 / HANDOVER`; then, if the tolerance is still missed, the `f64` finish (Newton steps on
/// the active set of the GPU's answer, [`Correction::newton`]). The report carries the best
/// iterate, every round's and every finish step's `f64` residual in its trace, the number of
/// rounds, and the phases `gpu` and `f64_finish` when the finish ran.
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
    let finishable = sys.rows() <= FINISH_ROWS;
    // `N` for the finish, assembled when a finish first runs.
    let mut finish_n = None;
    let mut rounds = 0;
    let mut finish_s = None;
    for pass in 0..PASSES {
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
            if slow && finishable {
                break;
            }
        }
        if settings.met(&best.residual) {
            break;
        }
        let Some(n) = finish_n
            .get_or_insert_with(|| finish_matrix(sys))
            .as_deref()
        else {
            break;
        };
        let (finish_start, before) = (Instant::now(), best.value);
        finish(
            sys,
            settings,
            bias,
            &data.eta,
            n,
            &mut best,
            &|gamma| certify(gamma).0,
            |value, res| trace.push(entry(iterations, products, value, res)),
        );
        *finish_s.get_or_insert(0.0) += finish_start.elapsed().as_secs_f64();
        // A finish that gained but missed the tolerance (a block it classified wrongly, the
        // next round reclassifies) hands back to the rounds, from its best.
        if settings.met(&best.residual) || best.value >= before || pass + 1 == PASSES {
            break;
        }
        gamma.clone_from(&best.gamma);
        u = certify(&gamma).1;
        best.since = 0;
    }
    let mut phases = Vec::new();
    if let Some(finish_s) = finish_s {
        let total_s = time_s + start.elapsed().as_secs_f64();
        add_phase(&mut phases, PHASE_GPU, total_s - finish_s);
        add_phase(&mut phases, PHASE_FINISH, finish_s);
    }
    let BestRound {
        residual, gamma, ..
    } = best;
    if settings.met(&residual) {
        status = Status::Converged;
    } else if rounds > 0 {
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

/// The `f64` finish from `best`: Newton steps on the active set of each iterate
/// ([`Correction::newton`], no `tiny` apex class: an apex block's impulse is pinned to 0),
/// each the better of the full step and the ratio test's ([`Correction::ratio`]), not
/// necessarily monotone (a block crossing its cone's boundary is worse until the next
/// classification); they stop at `FINISH_AIM` times the tolerance, after `FINISH_STALLED`
/// steps without improvement or at `FINISH_STEPS`. `certify` measures an iterate;
/// `record` is told the value and residual of every step that improves `best`.
#[allow(clippy::too_many_arguments)]
fn finish(
    sys: &System,
    settings: &Settings,
    bias: Bias,
    eta: &[f64],
    n: &CsrMatrix,
    best: &mut BestRound,
    certify: &dyn Fn(&[f64]) -> Residual,
    mut record: impl FnMut(f64, &Residual),
) {
    /// Newton steps of the `f64` finish at most (each one dense SVD of its active rows).
    const FINISH_STEPS: usize = 12;
    /// The finish goes on to this fraction of the tolerance (Newton's last steps are cheap, and
    /// a caller measuring with other block steps than [`Settings`]' keeps a margin).
    const FINISH_AIM: f64 = 0.1;
    /// Finish steps without improvement of the best residual before the finish stops (the
    /// steps are not monotone: a step that moves a block across its cone's boundary is worse
    /// until the next one, from the new classification, corrects it).
    const FINISH_STALLED: usize = 3;
    let mut current = best.gamma.clone();
    best.since = 0;
    for _ in 0..FINISH_STEPS {
        if best.value <= FINISH_AIM * settings.tol || best.since >= FINISH_STALLED {
            break;
        }
        let u = biased_velocity(sys, bias, &current);
        let correction = Correction::new(sys, &current, &u, eta, bias, 0.0);
        let Some(newton) = correction.newton(sys, n) else {
            break;
        };
        let delta = newton.delta(sys.rows(), FINISH_CUTOFF);
        let alpha = correction.ratio(sys, &delta);
        let (value, res, next) = [1.0, alpha]
            .into_iter()
            .map(|a| {
                let scaled: Vec<f64> = delta.iter().map(|d| a * d).collect();
                let trial = correction.apply(sys, &scaled);
                let res = certify(&trial);
                (settings.criterion.of(&res), res, trial)
            })
            .min_by(|a, b| a.0.total_cmp(&b.0))
            .expect("two candidates");
        if !value.is_finite() {
            break;
        }
        if value < best.value {
            record(value, &res);
        }
        best.offer(value, res, &next);
        current = next;
    }
}

fn norm2(v: &[f64]) -> f64 {
    v.iter().map(|x| x * x).sum::<f64>().sqrt()
}
