//! The primal–dual interior point of papers 000 and 002 (thesis ch. 4): Mehrotra's
//! predictor–corrector on the augmented system (thesis eq. 4.28) factored once per iteration
//! with faer's sparse LDLᵀ (a dense one for small systems), Nesterov–Todd scaling for the Coulomb cones (thesis §4.14), and
//! the Coulomb friction model through the outer fixed point on `s = μ‖u_t‖`
//! (`solver::coulomb`).
//!
//! Every problem form is first brought to one standard form (module `standard`): the factored and
//! global forms keep the velocities as unknowns (`H` = the mass matrix or the global `H`),
//! the assembled form is solved in the impulses with `N + E` as the Hessian.
//!
//! Termination: the thesis' three measures (`‖r_p‖/m`, `‖r_d‖/n`, `μ`), made scale-free so
//! that mass ratios of 1e12 do not defeat an absolute test, and size-free so that one bad
//! row or cone cannot hide behind the others:
//! - primal: `‖r_p‖∞ / max(1, ‖Ax‖∞, ‖Qz‖∞, ‖b‖∞, ‖s‖∞) ≤ tol_primal`,
//! - dual: `‖r_d‖∞ / max(1, ‖Px‖∞, ‖q‖∞, ‖Aᵀz‖∞) ≤ tol_dual`,
//! - complementarity: `maxₖ |sₖᵀzₖ| / (‖s‖-scale · ‖z‖∞) ≤ tol_mu` (the largest product
//!   of a cone in place of the mean `μ = sᵀz/ν`).
//!
//! A solve of its own goes on past those tolerances while the natural map misses the settings'
//! tolerance. An answer that still misses it is polished: first by Newton steps on the
//! standard form through the same KKT factorization (module `newton`), then by semismooth
//! Newton on the natural map of `W` itself (module `polish`, on problems of at most its row
//! bound: its sparse LU does not scale to piles); beyond that bound the iteration hands over
//! to the first stage near the tolerance (`NEWTON_HANDOVER`) rather than follow the `√μ`
//! tail of its degenerate contacts. A non-symmetric `W` is solved in rounds on its skew part
//! (module `skew`).

mod cones;
mod kkt;
mod mehrotra;
mod newton;
mod ordering;
mod polish;
mod skew;
mod standard;
mod supernodal;
mod tree;
mod upper;

use std::time::Instant;

use serde::{Deserialize, Serialize};

use super::{
    Bias, Report, Session, Settings, Solver, Status, TraceEntry, add_phase, block_steps, coulomb,
    effective_r, progress,
};
use crate::error::{Error, Result};
use crate::problem::merit;
use crate::problem::{CsrMatrix, FrictionModel, System};
use mehrotra::Iterate;
use standard::Standard;

/// The relative Coulomb residual at which the outer fixed point hands over to the polish.
const COULOMB_SWITCH: f64 = 1e-6;
/// Rounds of the Coulomb fixed point and polish at most: the first to `COULOMB_SWITCH`, the
/// others to the settings' tolerance, each from the last answer.
const COULOMB_ROUNDS: usize = 4;
/// The interior point's tolerances in the later rounds of the Coulomb fixed point, when the
/// polish of the first fell short (Siconos' Confeti and Capsules problems).
const TIGHT_TOL: f64 = 1e-13;
/// The interior point's tolerances in the CCP rounds after the first, when the first round's
/// answer, polished, misses the settings' tolerance (singular or non-symmetric `W`): the
/// closer the interior point's answer, the surer the polish.
const ROUND_TOL: f64 = 1e-12;
/// The interior point's tolerances in the first CCP round of a solve of its own on a problem
/// too large for the LU polish ([`polish::fits`]), which stops earlier wherever the natural
/// map meets the settings' tolerance: the natural map of degenerate contacts falls like `√μ`,
/// and on a settled pile of 16 000 spheres the measures reached 1e-12 at iteration 24 with a
/// natural map of 7.1e-8 that a tight second round (14 iterations more) did not improve.
/// Where the polish runs, the first round stops at [`ROUND_TOL`]: going on doubled the
/// iterations of the small Siconos files (Rover1040 15 → 31) for the same polished answer.
const FIRST_TOL: f64 = 1e-14;
/// A CCP round counts as progress when it divides the natural map by at least this factor...
const ROUND_CONTRACTION: f64 = 0.5;
/// ...and the fixed point on a skew part stops after this many rounds without progress.
const SKEW_STALL_ROUNDS: usize = 3;
/// Newton steps on the standard form through the KKT factorization (module `newton`) at most.
const NEWTON_STEPS: usize = 10;
/// A solve that the LU polish finishes hands over to it once the natural map, at most
/// [`STAGNATION_CEILING`], has not fallen below [`ROUND_CONTRACTION`] times its best value
/// over this many iterations on a feasible iterate: it has met its floor (the asymmetry of
/// `W`, whose symmetric part the interior point solves, or a degenerate contact jammed at the
/// boundary), and the interior point's measures falling on to 1e-12 no longer move it
/// (Rover1041: 5.4e-7 from iteration 18 to 28; NESpheres_10_1: 2.2e-8 from 15 to 20).
const STAGNATION_WINDOW: usize = 3;
/// The primal and dual measures below which an iterate counts as feasible for that rule.
const STAGNATION_FEASIBILITY: f64 = 1e-8;
/// The natural map below which that rule applies: from a floor this close the LU polish
/// finishes in a step or two; from the Capsules' floor (1e-4, asymmetry 1e-3 relative) it
/// needs the interior point's complementarity at 1e-12 to find the active set (a hand-over at
/// the floor cost 1 s of polish instead of 0.01 s).
const STAGNATION_CEILING: f64 = 1e-6;
/// Where the Newton polish (module `newton`) finishes a solve on its own, the interior point
/// hands over to it once its natural map is at most this and its primal and dual measures
/// at most [`STAGNATION_FEASIBILITY`]: from there the natural map of the degenerate contacts
/// falls like `√μ`, about 3× per iteration, and the interior point's last iterations jam at
/// the cones' boundaries, while Newton steps converge quadratically once the active set is
/// found (settled pile of 16 000 spheres: 26 iterations before, 17 and four Newton steps
/// now; `benches/RESULTS.md`, sixteenth session).
const NEWTON_HANDOVER: f64 = 1e-6;
/// A refused hand-over ([`NEWTON_HANDOVER`]) is tried again once the natural map has fallen
/// by this factor.
const HANDOVER_RETRY: f64 = 0.1;
/// The step fraction of the Coulomb fixed point's inner solves, which go to rounding level:
/// at Clarabel's 0.99 (and 0.995) the fixed point on Siconos' Capsules-i103-990 stalls at a
/// Siconos error of 2.5e-10 (target 1e-11).
const COULOMB_STEP_FRACTION: f64 = 0.999;

/// The margin (relative to the size of `z` and `s`) of the warm start of [`finish_from`]:
/// from `spg-gpu`'s `f32` answers (relative natural map 2e-7 to 1.3e-6) the interior point
/// reached 1e-10 on the Siconos Capsules and BoxesStack1 files in 7–15 iterations at 1e-3,
/// 9–33 at 1e-2 and 6–15 at 1e-4, against 13–22 from its own starting point
/// (`benches/RESULTS.md`, seventeenth session).
const FINISH_MARGIN: f64 = 1e-3;

/// The CCP solve of `sys` with `bias` added to `r` by the interior point, warm-started from
/// `gamma` (full warm start, margin [`FINISH_MARGIN`]; its own iteration cap, not the
/// settings'): the `f64` finish of the GPU solvers' mixed-precision refinement
/// (`gpu::refine`). Where projected iterations stall on the boundary of a degenerate
/// optimal face (nearly duplicated and opposite-normal contacts), no local step from their
/// answer gains; the interior point, pushed off the boundary by the margin, goes to the
/// relative interior of that face, where its Newton and LU polish converge.
pub(crate) fn finish_from(
    sys: &System,
    settings: &Settings,
    bias: Bias,
    gamma: &[f64],
) -> Result<Report> {
    let params = IpParams {
        warm_start: WarmStart::Full,
        warm_margin: FINISH_MARGIN,
        ..IpParams::default()
    };
    let settings = Settings {
        friction: FrictionModel::Ccp,
        max_iter: params.max_iter,
        warm_start: Some(gamma.to_vec()),
        ..settings.clone()
    };
    let mut session = IpSession {
        params,
        analysis: None,
        analyses: 0,
        work: None,
    };
    session.solve_ccp(sys, &settings, bias, &params, true)
}

/// Whether the last [`STAGNATION_WINDOW`] values of `history` stay above
/// [`ROUND_CONTRACTION`] times the best before them.
fn stagnates(history: &[f64]) -> bool {
    let Some(split) = history.len().checked_sub(STAGNATION_WINDOW) else {
        return false;
    };
    let best = |v: &[f64]| v.iter().copied().fold(f64::INFINITY, f64::min);
    split > 0 && best(&history[split..]) > ROUND_CONTRACTION * best(&history[..split])
}

/// The starting point rule when no warm start is used.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum StartingPoint {
    /// Thesis §4.14.4 (after CVXOPT): the least-squares point of the KKT system with `G = I`,
    /// `s` and `z` pushed into their cones with a unit margin. Scale-aware; the default.
    #[default]
    Cvxopt,
    /// Paper 000 eq. (21) (Nocedal–Wright §16.6): `x = 1`, one affine step from
    /// `s = z = e`, then `s, z ← max(1, |· + Δ·|)`.
    Nocedal,
    /// Paper 000 eq. (22) (D'Apuzzo et al.): `x = 1`, `s = max(1, Ax + b)`, `z = s⁻¹`.
    DApuzzo,
    /// Thesis eq. (4.23): as [`StartingPoint::Nocedal`] with the bilateral multipliers
    /// starting at 1.
    Thesis,
}

/// What the interior point takes from `Settings::warm_start` (thesis §4.6, paper 000 §4).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum WarmStart {
    /// Ignore it: the starting point rule only.
    #[default]
    None,
    /// Partial: the velocities `v(γ)` of the warm impulses (factored and global forms; the
    /// assembled form has none), the multipliers and slacks from the starting point rule.
    Partial,
    /// Full: velocities, impulses and slacks `u(γ)` of the warm start, pushed inside their
    /// cones by `warm_margin` times their size.
    Full,
}

/// The parameters of the interior point, with the thesis' tolerances as defaults.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct IpParams {
    /// Tolerance on the scaled primal residual (thesis: 1e-10).
    pub tol_primal: f64,
    /// Tolerance on the scaled dual residual (thesis: 1e-10).
    pub tol_dual: f64,
    /// Tolerance on the scaled complementarity measure (thesis: 1e-9).
    pub tol_mu: f64,
    /// The starting point rule.
    pub start: StartingPoint,
    /// Use of the warm start.
    pub warm_start: WarmStart,
    /// Margin of the full warm start, relative to the size of `z` and `s`.
    pub warm_margin: f64,
    /// The fraction `η` of the step to the boundary taken each iteration. Fixed: the thesis'
    /// rule `η = 0.9 + 0.1 e^(−μν)` (§4.12) depends on the number of cones `ν` and holds `η`
    /// near 0.9 until `μ` is below about `1/ν` (settled `balls_in_box`: 4e-4 at 1000
    /// spheres, 1e-4 at 4000), which costs iterations that grow with the size (1000 spheres:
    /// 22 → 20). Clarabel's 0.99: against 0.999 it saves iterations on most of the Siconos
    /// fc3d files (Confeti-ex13 18 → 13; at 0.999 the iterates come so close to the boundary
    /// that long steps alternate with short ones). The Coulomb fixed point's inner solves
    /// take at least 0.999 (at 0.99 the fixed point on Capsules-i103-990 stalls at 2.5e-10).
    pub step_fraction: f64,
    /// Gondzio's centrality correctors per iteration at most (module `mehrotra`), on KKT
    /// systems of at least 4096 unknowns: settled `balls_in_box`, 1000 spheres 20 → 17
    /// iterations, 4000 spheres 25–27 → 19. Five gave 16 and 18, but each corrector costs a
    /// refined solve (on these piles 40–50 ms against a 0.7 s factorization at 4000 spheres)
    /// and two are faster: 4000 spheres 23.9 s against 31.2 s with five (one run each,
    /// `benches/RESULTS.md`, eleventh session). Not in the Coulomb fixed point's inner solves
    /// (with them it stalls on Capsules-i103-990 at a Siconos error of 2.5e-10, target
    /// 1e-11).
    pub correctors: usize,
    /// A step shorter than this, three iterations in a row, is a stall.
    pub min_step: f64,
    /// Iterations without improvement of the measures before [`Status::Stalled`].
    pub stall_iterations: usize,
    /// Iteration cap of one interior-point solve (the settings' `max_iter` caps the total).
    pub max_iter: usize,
    /// Polish the answer with semismooth Newton steps on the natural map (module `polish`) when
    /// it misses the settings' tolerance (`Settings::tol` on `Settings::criterion`); a
    /// polished answer that meets it counts as converged.
    pub polish: bool,
}

impl Default for IpParams {
    fn default() -> Self {
        IpParams {
            tol_primal: 1e-10,
            tol_dual: 1e-10,
            tol_mu: 1e-9,
            start: StartingPoint::default(),
            warm_start: WarmStart::default(),
            warm_margin: 1e-2,
            step_fraction: 0.99,
            correctors: 2,
            min_step: 1e-8,
            stall_iterations: 5,
            max_iter: 200,
            polish: true,
        }
    }
}

/// The interior point; registry name `ip`. Its session keeps the symbolic factorization of
/// the KKT pattern while the pattern stands.
#[derive(Debug, Clone, Copy, Default)]
pub struct Ip {
    /// Its parameters.
    pub params: IpParams,
}

impl Ip {
    /// An interior point with the given parameters.
    pub fn new(params: IpParams) -> Self {
        Ip { params }
    }

    fn check(&self) -> Result<()> {
        let p = &self.params;
        let bad = |name, value: f64, message: &str| {
            Err(Error::InvalidSetting {
                name,
                value: value.to_string(),
                message: message.into(),
            })
        };
        for (name, v) in [
            ("ip.tol_primal", p.tol_primal),
            ("ip.tol_dual", p.tol_dual),
            ("ip.tol_mu", p.tol_mu),
        ] {
            if !(v > 0.0 && v.is_finite()) {
                return bad(name, v, "must be finite and > 0");
            }
        }
        if !(p.step_fraction > 0.0 && p.step_fraction < 1.0) {
            return bad("ip.step_fraction", p.step_fraction, "must lie in (0, 1)");
        }
        if !(p.warm_margin > 0.0 && p.warm_margin.is_finite()) {
            return bad("ip.warm_margin", p.warm_margin, "must be finite and > 0");
        }
        if !(p.min_step >= 0.0 && p.min_step < 1.0) {
            return bad("ip.min_step", p.min_step, "must lie in [0, 1)");
        }
        Ok(())
    }
}

/// The registry name of the interior point.
const IP_NAME: &str = "ip";
/// The names of its phases in [`Report::phases`].
const PHASE_IP: &str = "interior_point";
const PHASE_POLISH: &str = "polish";

impl Solver for Ip {
    fn name(&self) -> &'static str {
        IP_NAME
    }

    fn prepare(&self, _sys: &System, _settings: &Settings) -> Result<Box<dyn Session>> {
        self.check()?;
        Ok(Box::new(IpSession {
            params: self.params,
            analysis: None,
            analyses: 0,
            work: None,
        }))
    }
}

/// The interior point's session: the symbolic analysis of the last KKT pattern, made when a
/// problem of a new pattern comes and reused while the pattern stands, and the workspace of
/// the solve in progress.
struct IpSession {
    params: IpParams,
    analysis: Option<kkt::Analysis>,
    analyses: usize,
    work: Option<Workspace>,
}

/// What the interior-point solves of one system share (the rounds on a skew part, the
/// Coulomb fixed point's inner solves): built on first use, dropped when the session's
/// solve returns. On Siconos' 12-row Rover files, building them per round was a tenth of the
/// solve.
#[derive(Default)]
struct Workspace {
    /// The standard form (its `b` set to each solve's bias) and its KKT matrix.
    form: Option<(Standard, kkt::Kkt)>,
    /// The skew part of `W` ([`skew::skew_part`]), once computed.
    skew: Option<Option<CsrMatrix>>,
    /// `N + E` of the LU polish ([`polish::delassus_matrix`]), once computed.
    delassus: Option<CsrMatrix>,
    /// The blocks' steps of the natural map ([`block_steps`]), once computed.
    eta: Option<Vec<f64>>,
}

/// One interior-point solve: the answer, how the iteration ended and its iterations.
struct Interior {
    gamma: Vec<f64>,
    status: Status,
    iterations: usize,
    /// Time of the polish on the KKT factorization (module `newton`), seconds.
    polish_s: f64,
}

impl IpSession {
    /// The interior point on the cone QP of `W`'s symmetric part with `r + shift` (`skew`:
    /// `W` has a skew part); the trace (appended to `trace`, iterations counted from `k0`)
    /// measures the natural map of the problem with `r + bias` (and stops the iteration where
    /// it meets the settings' tolerance if `stop_early`), and a warm start
    /// (`settings.warm_start` as `params.warm_start` says) takes its slacks from that
    /// problem's velocities.
    #[allow(clippy::too_many_arguments)]
    fn interior(
        &mut self,
        form: &mut Option<(Standard, kkt::Kkt)>,
        eta: &[f64],
        sys: &System,
        settings: &Settings,
        shift: Bias,
        skew: bool,
        bias: Bias,
        params: &IpParams,
        start: Instant,
        k0: usize,
        trace: &mut Vec<TraceEntry>,
        stop_early: bool,
    ) -> Result<Interior> {
        if let Some((std, _)) = form.as_mut() {
            std.set_bias(shift);
        } else {
            let std = Standard::new(sys, shift);
            let (kkt, fresh) = kkt::Kkt::new(&std, &mut self.analysis)?;
            self.analyses += usize::from(fresh);
            *form = Some((std, kkt));
        }
        let (std, kkt) = form.as_mut().expect("built above");
        let std = &*std;
        let warm = match (params.warm_start, &settings.warm_start) {
            (WarmStart::None, _) | (_, None) => None,
            (mode, Some(_)) => {
                let gamma = progress::initial_iterate(sys, settings);
                let x = sys.velocities(&gamma).unwrap_or_default();
                Some(if mode == WarmStart::Full {
                    let u = progress::biased_velocity(sys, bias, &gamma);
                    Iterate {
                        x,
                        z: std.z_of(&gamma),
                        s: std.s_of(&u),
                    }
                } else {
                    Iterate {
                        x,
                        z: Vec::new(),
                        s: Vec::new(),
                    }
                })
            }
        };
        let it = mehrotra::starting_point(std, kkt, params, warm.as_ref())?;
        let max_iter = params.max_iter.min(settings.max_iter);
        // The LU polish follows this solve: the iteration may hand over to it where the
        // natural map stagnates near the tolerance ([`STAGNATION_CEILING`]).
        let polished = stop_early && params.polish && polish::fits(sys.rows());
        let mut history = Vec::new();
        // Where the LU polish cannot follow, the interior point must reach the tolerance
        // itself, through the √μ tail of its degenerate contacts: its steps keep the cones
        // off their boundaries (elsewhere that cost the Capsules files 2 to 7 iterations).
        let guard = !polish::fits(sys.rows());
        // Where the Newton polish finishes the answer (no LU polish, no skew part), the
        // iteration hands over to it near the tolerance ([`NEWTON_HANDOVER`]); if the polish
        // misses, the iteration goes on from where it stopped ([`HANDOVER_RETRY`]).
        let mut handover =
            (stop_early && params.polish && !skew && guard).then_some(NEWTON_HANDOVER);
        let rows = sys.rows();
        let value = |z: &[f64]| {
            let gamma = std.gamma(z, rows);
            let u = progress::biased_velocity(sys, bias, &gamma);
            settings
                .criterion
                .of(&merit::residual(sys, &gamma, &u, settings.friction, eta))
        };
        // The blocks' steps in the standard form's order, for the Newton polish.
        let mut block_of = vec![0; rows];
        for k in 0..sys.blocks() {
            block_of[sys.block_range(k)].fill(k);
        }
        let std_eta: Vec<f64> = std
            .blocks
            .iter()
            .map(|b| eta[block_of[std.row_of[b.start]]])
            .collect();
        let (mut it, mut done, mut polish_s) = (it, 0, 0.0);
        let (outcome, mut z) = loop {
            let mut handed = false;
            let offset = k0 + done;
            let outcome = mehrotra::iterate(
                std,
                kkt,
                params,
                max_iter - done,
                it,
                guard,
                |k, it, meas| {
                    if k == 0 && done > 0 {
                        // The iterate the last pass stopped at, already observed.
                        return false;
                    }
                    let gamma = std.gamma(&it.z, rows);
                    let u = progress::biased_velocity(sys, bias, &gamma);
                    let res = merit::residual(sys, &gamma, &u, settings.friction, eta);
                    let value = settings.criterion.of(&res);
                    history.push(value);
                    trace.push(TraceEntry {
                        iteration: offset + k,
                        residual: value,
                        natural_map_inf: res.inf,
                        time_s: start.elapsed().as_secs_f64(),
                        products: offset + k,
                    });
                    // A feasible iterate that meets the settings' tolerance needs no more
                    // iterations (nor a polish), unless the caller finishes the answer
                    // itself. Feasible: the relative natural map of diverging impulses (an
                    // infeasible problem) is small too. One whose natural map stagnates near
                    // the tolerance goes to the LU polish.
                    let feasible = meas.primal <= params.tol_primal && meas.dual <= params.tol_dual;
                    let near_feasible = meas.primal <= STAGNATION_FEASIBILITY
                        && meas.dual <= STAGNATION_FEASIBILITY;
                    let stagnant = polished
                        && value <= STAGNATION_CEILING
                        && near_feasible
                        && stagnates(&history);
                    handed = handover.is_some_and(|h| value <= h) && near_feasible;
                    stop_early && (settings.met(&res) && feasible || stagnant || handed)
                },
            )?;
            done += outcome.iterations;
            let z = outcome.iterate.z.clone();
            if !handed || value(&z) <= settings.tol {
                break (outcome, z);
            }
            let t0 = Instant::now();
            let polished = newton::polish(
                std,
                kkt,
                outcome.iterate.clone(),
                &std_eta,
                NEWTON_STEPS,
                |z| value(z) <= settings.tol,
            );
            polish_s += t0.elapsed().as_secs_f64();
            let (after, before) = (value(&polished), value(&z));
            if after <= settings.tol || done >= max_iter {
                break (outcome, if after < before { polished } else { z });
            }
            handover = Some(before * HANDOVER_RETRY);
            it = outcome.iterate;
        };
        // The Newton stage solves the QP of `W`'s symmetric part: with a skew part its answer
        // cannot meet the natural map of `W` below the asymmetry (Rover files: 5e-7), and its
        // steps were a third of the solve's time; the LU polish on `W` itself does that.
        if stop_early
            && !skew
            && params.polish
            && outcome.status != Status::Infeasible
            && value(&z) > settings.tol
        {
            // The first stage of the polish, on the interior point's own factorization.
            let t0 = Instant::now();
            let polished = newton::polish(std, kkt, outcome.iterate, &std_eta, NEWTON_STEPS, |z| {
                value(z) <= settings.tol
            });
            if value(&polished) < value(&z) {
                z = polished;
            }
            polish_s += t0.elapsed().as_secs_f64();
        }
        Ok(Interior {
            gamma: std.gamma(&z, rows),
            status: outcome.status,
            iterations: done,
            polish_s,
        })
    }

    /// The CCP solve of `sys` with `bias` added to `r`, in rounds: the interior point on the
    /// QP of `W`'s symmetric part with `r + bias + Tγ` (`T` the skew part, module `skew`; the
    /// first round from `γ = 0`, the later ones tighter, from the last answer) and the polish
    /// on the natural map of `W` itself, until the settings' tolerance is met or a round no
    /// longer helps (one tight round for a symmetric `W`). `finish` asks for these rounds and
    /// the polish's proximal rounds: a CCP solve of its own, not the inner solve of the
    /// Coulomb fixed point (one round, its skew shift from the warm start, the outer
    /// iterate; the Coulomb polish finishes the answer).
    fn solve_ccp(
        &mut self,
        sys: &System,
        settings: &Settings,
        bias: Bias,
        params: &IpParams,
        finish: bool,
    ) -> Result<Report> {
        let start = Instant::now();
        let mut trace = Vec::new();
        let mut work = self.work.take().unwrap_or_default();
        let Workspace {
            form,
            skew,
            delassus,
            eta,
        } = &mut work;
        let eta: &[f64] = eta.get_or_insert_with(|| block_steps(sys, settings.block_step));
        let measure = |gamma: &[f64]| {
            let u = progress::biased_velocity(sys, bias, gamma);
            merit::residual(sys, gamma, &u, FrictionModel::Ccp, eta)
        };
        let skew = skew.get_or_insert_with(|| skew::skew_part(sys)).as_ref();
        let tight = IpParams {
            tol_primal: params.tol_primal.min(ROUND_TOL),
            tol_dual: params.tol_dual.min(ROUND_TOL),
            tol_mu: params.tol_mu.min(ROUND_TOL),
            warm_start: WarmStart::Full,
            ..*params
        };
        // The first round of a solve of its own stops where the natural map meets the
        // settings' tolerance, not at the interior point's own tolerances: two or three more
        // iterations cost far less than a polish (settled balls_in_box, 1000 spheres: 19 → 22
        // iterations, natural map 3.8e-7 → 2.9e-9, where the polish took 130 s).
        let first_tol = if polish::fits(sys.rows()) {
            ROUND_TOL
        } else {
            FIRST_TOL
        };
        let first = IpParams {
            tol_primal: params.tol_primal.min(first_tol),
            tol_dual: params.tol_dual.min(first_tol),
            tol_mu: params.tol_mu.min(first_tol),
            ..*params
        };
        let r = effective_r(sys, bias);
        let mut shift = bias.map(<[f64]>::to_vec);
        if let (false, Some(t), Some(warm)) = (finish, &skew, &settings.warm_start) {
            // An inner solve of the Coulomb fixed point: one round, on the skew part of the
            // outer iterate, so that the outer fixed point runs on both at once.
            let s = shift.get_or_insert_with(|| vec![0.0; sys.rows()]);
            let mut tw = vec![0.0; sys.rows()];
            t.mul_vec(warm, &mut tw);
            s.iter_mut().zip(&tw).for_each(|(s, v)| *s += v);
        }
        let (mut best, mut status, mut iterations) = (None::<(f64, Vec<f64>)>, Status::Stalled, 0);
        let (mut since_best, mut phases) = (0, Vec::new());
        for round in 0.. {
            let (round_settings, round_params) = match &best {
                None if finish => (settings.clone(), &first),
                None => (settings.clone(), params),
                Some((_, gamma)) => (
                    Settings {
                        max_iter: settings.max_iter - iterations,
                        warm_start: Some(gamma.clone()),
                        ..settings.clone()
                    },
                    &tight,
                ),
            };
            let t0 = Instant::now();
            let next = match self.interior(
                form,
                eta,
                sys,
                &round_settings,
                shift.as_deref(),
                skew.is_some(),
                bias,
                round_params,
                start,
                iterations,
                &mut trace,
                finish,
            ) {
                Ok(next) => next,
                // A later round whose factorization fails keeps the best answer so far.
                Err(_) if best.is_some() => {
                    status = Status::NumericalError;
                    break;
                }
                Err(e) => return Err(e),
            };
            iterations += next.iterations.max(1);
            add_phase(
                &mut phases,
                PHASE_IP,
                t0.elapsed().as_secs_f64() - next.polish_s,
            );
            if next.polish_s > 0.0 {
                add_phase(&mut phases, PHASE_POLISH, next.polish_s);
            }
            let mut gamma = next.gamma;
            let value = |g: &[f64]| settings.criterion.of(&measure(g));
            if next.status == Status::Infeasible {
                // A certificate: no round or polish can do better.
                (best, status) = (Some((value(&gamma), gamma)), next.status);
                break;
            }
            if params.polish && polish::fits(sys.rows()) && value(&gamma) > settings.tol {
                let t0 = Instant::now();
                let map = polish::NaturalMap {
                    sys,
                    n: delassus.get_or_insert_with(|| polish::delassus_matrix(sys)),
                    r: &r,
                    friction: FrictionModel::Ccp,
                    eta,
                };
                // A solve of its own stops at the tolerance; an inner solve of the Coulomb
                // fixed point goes on to rounding level.
                gamma = polish::polish_scaled(&map, gamma, value, settings.tol, finish, finish);
                add_phase(&mut phases, PHASE_POLISH, t0.elapsed().as_secs_f64());
            }
            let v = value(&gamma);
            let old = best.as_ref().map_or(f64::INFINITY, |b| b.0);
            since_best = if v < ROUND_CONTRACTION * old {
                0
            } else {
                since_best + 1
            };
            if v < old {
                best = Some((v, gamma.clone()));
                status = next.status;
            }
            let done = v <= settings.tol || iterations >= settings.max_iter || !v.is_finite();
            let stalled = match (finish, &skew) {
                (false, _) => true,
                (true, Some(_)) => since_best >= SKEW_STALL_ROUNDS,
                (true, None) => round >= 1,
            };
            if done || stalled {
                break;
            }
            if let Some(t) = &skew {
                // The fixed point goes on from this round's answer, better or not.
                let s = shift.get_or_insert_with(|| vec![0.0; sys.rows()]);
                t.mul_vec(&gamma, s);
                if let Some(bias) = bias {
                    s.iter_mut().zip(bias).for_each(|(s, b)| *s += b);
                }
            }
        }
        let gamma = best.expect("at least one round").1;
        let res = measure(&gamma);
        self.work = Some(work);
        // The settings' tolerance decides, as for every solver: an answer that meets it has
        // converged whatever the interior point's own measures say (they may stall at
        // rounding level on exact answers), and one that misses it (after the polish) has
        // not, even when those measures are met (badly scaled problems).
        let met = settings.met(&res);
        status = match status {
            // A certificate stands, whatever the (size-relative) natural map of the diverging
            // impulses says.
            Status::Infeasible => Status::Infeasible,
            _ if met => Status::Converged,
            Status::Converged => Status::Stalled,
            other => other,
        };
        Ok(Report {
            solver: IP_NAME.to_string(),
            status,
            iterations,
            time_s: start.elapsed().as_secs_f64(),
            residual: res,
            merit: merit::evaluate(sys, &gamma, settings.friction),
            gamma,
            trace,
            phases,
            refinements: 0,
            rounds: 0,
        })
    }

    /// [`IpSession::solve_ccp`] with a failed factorization turned into a
    /// [`Status::NumericalError`] report of the initial iterate (faer's dynamic
    /// regularization makes it unexpected).
    fn inner(
        &mut self,
        sys: &System,
        s: &Settings,
        bias: Bias,
        params: &IpParams,
        finish: bool,
    ) -> Report {
        self.solve_ccp(sys, s, bias, params, finish)
            .unwrap_or_else(|e| {
                let gamma = progress::initial_iterate(sys, s);
                let u = progress::biased_velocity(sys, bias, &gamma);
                let eta = vec![1.0; sys.blocks()];
                Report {
                    solver: format!("{IP_NAME}: {e}"),
                    status: Status::NumericalError,
                    iterations: 0,
                    time_s: 0.0,
                    residual: merit::residual(sys, &gamma, &u, s.friction, &eta),
                    merit: merit::evaluate(sys, &gamma, s.friction),
                    gamma,
                    trace: Vec::new(),
                    phases: Vec::new(),
                    refinements: 0,
                    rounds: 0,
                }
            })
    }
}

impl Session for IpSession {
    fn name(&self) -> &'static str {
        IP_NAME
    }

    fn analyses(&self) -> usize {
        self.analyses
    }

    fn solve(&mut self, sys: &System, settings: &Settings) -> Result<Report> {
        self.work = None;
        let report = self.solve_system(sys, settings);
        self.work = None;
        report
    }
}

impl IpSession {
    /// [`Session::solve`] with a fresh workspace.
    fn solve_system(&mut self, sys: &System, settings: &Settings) -> Result<Report> {
        settings.validate(sys.rows())?;
        let params = self.params;
        if settings.friction != FrictionModel::Coulomb || !params.polish {
            return coulomb::solve(IP_NAME, sys, settings, coulomb::Rounds::Exact, |s, bias| {
                Ok(self.inner(sys, s, bias, &params, true))
            });
        }
        let params = IpParams {
            step_fraction: params.step_fraction.max(COULOMB_STEP_FRACTION),
            correctors: 0,
            ..params
        };
        // The second Coulomb round (below) solves its inner problems to rounding level.
        let tight = IpParams {
            tol_primal: TIGHT_TOL,
            tol_dual: TIGHT_TOL,
            tol_mu: TIGHT_TOL,
            ..params
        };
        // The outer fixed point converges linearly: run it to `COULOMB_SWITCH`, finish with
        // Newton on the Coulomb natural map; if that falls short, once more from there.
        let eta = block_steps(sys, settings.block_step);
        let r = effective_r(sys, None);
        let mut n = None;
        let start = Instant::now();
        let mut phase = Settings {
            tol: settings.tol.max(COULOMB_SWITCH),
            ..settings.clone()
        };
        let mut total: Option<Report> = None;
        for round in 0..COULOMB_ROUNDS {
            let params = if round == 0 { params } else { tight };
            let mut report =
                coulomb::solve(IP_NAME, sys, &phase, coulomb::Rounds::Exact, |s, bias| {
                    Ok(self.inner(sys, s, bias, &params, false))
                })?;
            if !settings.met(&report.residual) && polish::fits(sys.rows()) {
                let t0 = Instant::now();
                let map = polish::NaturalMap {
                    sys,
                    n: n.get_or_insert_with(|| polish::delassus_matrix(sys)),
                    r: &r,
                    friction: FrictionModel::Coulomb,
                    eta: &eta,
                };
                let measure = |gamma: &[f64]| {
                    let u = progress::biased_velocity(sys, None, gamma);
                    merit::residual(sys, gamma, &u, FrictionModel::Coulomb, &eta)
                };
                let gamma = polish::polish_scaled(
                    &map,
                    report.gamma.clone(),
                    |g| settings.criterion.of(&measure(g)),
                    settings.tol,
                    true,
                    // To rounding level: the Siconos error that the Coulomb answers are
                    // judged by is normalized otherwise than the criterion (GFC3D files).
                    false,
                );
                let res = measure(&gamma);
                if settings.criterion.of(&res) < settings.criterion.of(&report.residual) {
                    report.merit = merit::evaluate(sys, &gamma, FrictionModel::Coulomb);
                    report.residual = res;
                    report.gamma = gamma;
                }
                add_phase(&mut report.phases, PHASE_POLISH, t0.elapsed().as_secs_f64());
            }
            let done = settings.met(&report.residual);
            report.status = if done {
                Status::Converged
            } else if report.status == Status::Converged {
                Status::Stalled
            } else {
                report.status
            };
            if let Some(prev) = total {
                let (t0, k0) = (prev.time_s, prev.iterations);
                let mut trace = prev.trace;
                trace.extend(report.trace.iter().map(|t| TraceEntry {
                    iteration: t.iteration + k0,
                    time_s: t.time_s + t0,
                    ..*t
                }));
                report.trace = trace;
                report.iterations += k0;
                for p in prev.phases {
                    add_phase(&mut report.phases, &p.name, p.time_s);
                }
            }
            report.time_s = start.elapsed().as_secs_f64();
            let used = report.iterations;
            let stop = done || round + 1 == COULOMB_ROUNDS || used >= settings.max_iter;
            phase = Settings {
                tol: settings.tol,
                max_iter: settings.max_iter.saturating_sub(used),
                warm_start: Some(report.gamma.clone()),
                ..settings.clone()
            };
            total = Some(report);
            if stop {
                break;
            }
        }
        Ok(total.expect("at least one round"))
    }
}
