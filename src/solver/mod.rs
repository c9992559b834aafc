//! The solver interface: settings, status, report and trace, and the iteration driver that
//! every iterative solver shares (warm start, residual per iteration, best iterate, stopping).

pub mod apgd;
#[cfg(target_arch = "x86_64")]
mod avx512;
pub mod colored;
pub(crate) mod coulomb;
mod disjoint;
pub(crate) mod progress;

use progress::Progress;
pub mod gauss_seidel;
pub mod ip;
pub mod jacobi;
pub(crate) mod kernel;
pub(crate) mod lanes;
pub(crate) mod moves;
pub(crate) mod rows;
pub mod simplex;
pub mod spg;
pub(crate) mod spheres;
pub(crate) mod stream;
pub mod traffic;

use rayon::prelude::*;
use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};
use crate::problem::merit::{self, Merit};
use crate::problem::{Cone, FrictionModel, System};

pub use apgd::Apgd;
pub use colored::ColoredGaussSeidel;
pub use gauss_seidel::GaussSeidel;
pub use ip::{Ip, IpParams};
pub use jacobi::Jacobi;
pub use simplex::Simplex;
pub use spg::{Spg, SpgParams};

/// Settings shared by the iterative solvers.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Settings {
    /// Friction model of the solve.
    pub friction: FrictionModel,
    /// Which residual the tolerance applies to.
    pub criterion: Criterion,
    /// Stop when the residual chosen by `criterion` is at or below this.
    pub tol: f64,
    /// Iteration cap.
    pub max_iter: usize,
    /// Relaxation `ω`; `None` takes the solver's default.
    pub omega: Option<f64>,
    /// Stop with [`Status::Stalled`] when the best residual has not improved for this many
    /// iterations.
    pub stall_iterations: usize,
    /// Step length rule of the projected Jacobi and Gauss–Seidel solvers.
    pub block_step: BlockStep,
    /// Initial impulses (warm start); projected on `K` before use. `None` starts from zero.
    pub warm_start: Option<Vec<f64>>,
    /// Floating-point type of the iterations of the CPU kernels (`jacobi` and
    /// `pgs-colored` on a factored problem); the residual of the returned iterate and its
    /// merit set are `f64` whatever it is.
    #[serde(default)]
    pub precision: Precision,
    /// Whether the GPU solvers measure the residual of the impulses they return again in
    /// `f64` on the CPU (the report's residual then certifies the answer); without it the
    /// report carries the GPU's own `f32` measure of that iterate, and the host spends
    /// nothing on it. The CPU solvers measure in `f64` either way.
    #[serde(default = "certify_default")]
    pub certify: bool,
    /// The CPU kernels (`jacobi` and `pgs-colored` on a factored problem) measure the
    /// residual of every `check_every`-th iterate and of the last one only (Siconos' error
    /// evaluation frequency): the trace, the best iterate and the stopping tests then see
    /// those iterates, and a solve may run up to `check_every − 1` iterations past the
    /// first one that meets the tolerance. The iterates are the same whatever it is. The
    /// other solvers measure every iterate. At least 1.
    #[serde(default = "check_every_default")]
    pub check_every: usize,
}

fn certify_default() -> bool {
    true
}

fn check_every_default() -> usize {
    1
}

/// The floating-point type of the iterations (`--precision`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Precision {
    /// Single precision: half the bytes per contact-iteration.
    F32,
    /// Double precision.
    #[default]
    F64,
}

impl Precision {
    /// `f32` or `f64`.
    pub fn as_str(self) -> &'static str {
        match self {
            Precision::F32 => "f32",
            Precision::F64 => "f64",
        }
    }
}

impl std::str::FromStr for Precision {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "f32" => Ok(Precision::F32),
            "f64" => Ok(Precision::F64),
            _ => Err(format!("unknown precision `{s}`; valid: f32, f64")),
        }
    }
}

/// The residual a solve stops on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Criterion {
    /// [`merit::Residual::relative`]: scale-free, comparable with Siconos' errors.
    #[default]
    Relative,
    /// [`merit::Residual::velocity`]: the largest velocity error, m/s in a simulation; the
    /// one that stays meaningful with extreme masses.
    Velocity,
}

impl std::str::FromStr for Criterion {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "relative" => Ok(Criterion::Relative),
            "velocity" => Ok(Criterion::Velocity),
            _ => Err(format!(
                "unknown criterion `{s}`; valid: relative, velocity"
            )),
        }
    }
}

impl Criterion {
    /// The value of this criterion in a residual.
    pub fn of(&self, r: &merit::Residual) -> f64 {
        match self {
            Criterion::Relative => r.relative,
            Criterion::Velocity => r.velocity,
        }
    }
}

impl Default for Settings {
    fn default() -> Self {
        Settings {
            friction: FrictionModel::Ccp,
            criterion: Criterion::Relative,
            tol: 1e-6,
            max_iter: 1000,
            omega: None,
            stall_iterations: 10_000,
            block_step: BlockStep::default(),
            warm_start: None,
            precision: Precision::F64,
            certify: true,
            check_every: 1,
        }
    }
}

impl Settings {
    /// Whether `residual` meets the tolerance on the settings' criterion: the one test of
    /// convergence of every solver.
    pub fn met(&self, residual: &merit::Residual) -> bool {
        self.criterion.of(residual) <= self.tol
    }

    /// Checks the ranges that do not depend on the solver; `rows` is the problem size.
    pub fn validate(&self, rows: usize) -> Result<()> {
        if !(self.tol.is_finite() && self.tol >= 0.0) {
            return Err(Error::InvalidSetting {
                name: "tol",
                value: self.tol.to_string(),
                message: "must be finite and ≥ 0".into(),
            });
        }
        if self.check_every == 0 {
            return Err(Error::InvalidSetting {
                name: "check_every",
                value: "0".into(),
                message: "the residual is measured every N ≥ 1 iterations".into(),
            });
        }
        if let Some(w) = self.omega
            && !(w > 0.0 && w < 2.0)
        {
            return Err(Error::InvalidSetting {
                name: "omega",
                value: w.to_string(),
                message: "the relaxation must lie in (0, 2)".into(),
            });
        }
        if let Some(ws) = &self.warm_start {
            if ws.len() != rows {
                return Err(Error::InvalidSetting {
                    name: "warm_start",
                    value: format!("{} entries", ws.len()),
                    message: format!("the problem has {rows} rows"),
                });
            }
            if let Some(i) = ws.iter().position(|v| !v.is_finite()) {
                return Err(Error::InvalidSetting {
                    name: "warm_start",
                    value: format!("entry {i} = {}", ws[i]),
                    message: "entries must be finite".into(),
                });
            }
        }
        Ok(())
    }
}

/// How a solve ended. Non-convergence is a status, never an error.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Status {
    /// The residual reached the tolerance.
    Converged,
    /// The iteration cap was reached; the best iterate is returned.
    MaxIterations,
    /// The residual stopped improving; the best iterate is returned.
    Stalled,
    /// The iterate became non-finite or diverged (see [`DIVERGENCE_FACTOR`]), or a pivoting
    /// method met a singular basis; the best iterate is returned.
    NumericalError,
    /// A pivoting method ended on an unbounded ray: no solution was found (for a positive
    /// semidefinite or copositive-plus matrix, the problem has none).
    NoSolution,
    /// The solver found a certificate that the problem has no solution (the interior
    /// point: conflicting rigid constraints, or an assembled QP unbounded below).
    Infeasible,
}

impl std::fmt::Display for Status {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Status::Converged => "converged",
            Status::MaxIterations => "max_iterations",
            Status::Stalled => "stalled",
            Status::NumericalError => "numerical_error",
            Status::NoSolution => "no_solution",
            Status::Infeasible => "infeasible",
        })
    }
}

/// One entry of the convergence trace.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct TraceEntry {
    /// Iteration number (0 is the initial iterate).
    pub iteration: usize,
    /// The residual of the stopping criterion.
    pub residual: f64,
    /// Natural-map residual, ∞-norm.
    pub natural_map_inf: f64,
    /// Wall time since the start of the solve, seconds.
    pub time_s: f64,
    /// Products with `N` (or sweeps of equal cost) since the start of the solve.
    pub products: usize,
}

/// What a solve returns.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Report {
    /// The solver's registry name.
    pub solver: String,
    /// How it ended.
    pub status: Status,
    /// Iterations performed.
    pub iterations: usize,
    /// Wall time of the solve, seconds (merit evaluation excluded).
    pub time_s: f64,
    /// The impulses returned: the last iterate if converged, else the best one.
    pub gamma: Vec<f64>,
    /// The residual of `gamma` as the solver measured it (all criteria).
    pub residual: merit::Residual,
    /// The merit set of `gamma`.
    pub merit: Merit,
    /// Residual per iteration.
    pub trace: Vec<TraceEntry>,
    /// Wall time per phase of a solver made of phases (the interior point: `interior_point`
    /// and `polish`), seconds; empty for the others.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub phases: Vec<Phase>,
    /// Rounds of mixed-precision refinement a GPU solver ran after its `f32` iterations
    /// (`gpu::refine`); 0 for the others.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub refinements: usize,
    /// Outer rounds of the Coulomb model's De Saxcé fixed point (`solver::coulomb`), each an
    /// inner CCP solve; 0 under the CCP model and for the solvers without rounds.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub rounds: usize,
}

fn is_zero(n: &usize) -> bool {
    *n == 0
}

/// The wall time of one phase of a solve.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Phase {
    /// Its name.
    pub name: String,
    /// Its wall time, seconds.
    pub time_s: f64,
}

/// Adds `time_s` to the phase `name` of `phases` (appended when new).
pub(crate) fn add_phase(phases: &mut Vec<Phase>, name: &str, time_s: f64) {
    match phases.iter_mut().find(|p| p.name == name) {
        Some(p) => p.time_s += time_s,
        None => phases.push(Phase {
            name: name.to_string(),
            time_s,
        }),
    }
}

/// A solver of the cone complementarity problem.
///
/// A solver is a description (its name and parameters); what depends on a problem's
/// structure (a symbolic factorization, GPU buffers and kernels, workspaces) lives in the
/// [`Session`] that [`Solver::prepare`] returns, so that a sequence of problems of one pattern
/// (the time steps of a simulation, the outer rounds of a fixed point) pays for it once.
pub trait Solver: Send + Sync {
    /// The registry name.
    fn name(&self) -> &'static str;

    /// A session for problems shaped like `sys`. `Err` for invalid settings or parameters,
    /// or a device that cannot be opened (GPU solvers).
    fn prepare(&self, sys: &System, settings: &Settings) -> Result<Box<dyn Session>>;

    /// Solves `sys` once: [`Solver::prepare`] then [`Session::solve`]. `Err` only for invalid
    /// settings (and, on the GPU, device errors); non-convergence is a [`Status`].
    fn solve(&self, sys: &System, settings: &Settings) -> Result<Report> {
        self.prepare(sys, settings)?.solve(sys, settings)
    }
}

/// A solver prepared for problems of one pattern (faer's symbolic/numeric split, Clarabel's
/// solver object): [`Session::solve`] reuses the analysis while the pattern stands and makes
/// a new one, by itself, when a problem of another pattern comes.
pub trait Session: Send {
    /// The registry name of the solver.
    fn name(&self) -> &'static str;

    /// Solves `sys` under `settings` (warm start included), reusing the analysis when `sys`
    /// has the pattern of the previous problem. `Err` only for invalid settings or device
    /// errors; non-convergence is a [`Status`].
    fn solve(&mut self, sys: &System, settings: &Settings) -> Result<Report>;

    /// How many analyses (symbolic factorizations, GPU buffer and kernel sets) this session
    /// has made so far; solves beyond that number reused one. Zero for the solvers that
    /// analyse nothing.
    fn analyses(&self) -> usize;
}

/// A solver whose solves share nothing but the solver's parameters (the iterative CPU
/// solvers, the simplex): its session is a copy of it.
pub(crate) trait Stateless: Clone + Send + Sync + 'static {
    /// The registry name.
    const NAME: &'static str;
    /// Solves `sys` under `settings`.
    fn solve_once(&self, sys: &System, settings: &Settings) -> Result<Report>;
}

/// The session of a [`Stateless`] solver.
pub(crate) struct StatelessSession<S>(pub(crate) S);

impl<S: Stateless> Session for StatelessSession<S> {
    fn name(&self) -> &'static str {
        S::NAME
    }

    fn solve(&mut self, sys: &System, settings: &Settings) -> Result<Report> {
        self.0.solve_once(sys, settings)
    }

    fn analyses(&self) -> usize {
        0
    }
}

/// A solver and the session of the problems it has solved so far, prepared at the first
/// one: what a simulation keeps for a whole run.
pub struct Runner {
    solver: Box<dyn Solver>,
    session: Option<Box<dyn Session>>,
}

impl Runner {
    /// A runner of `solver`, not yet prepared.
    pub fn new(solver: Box<dyn Solver>) -> Self {
        Runner {
            solver,
            session: None,
        }
    }

    /// The solver's registry name.
    pub fn name(&self) -> &'static str {
        self.solver.name()
    }

    /// The solver.
    pub fn solver(&self) -> &dyn Solver {
        self.solver.as_ref()
    }

    /// Solves `sys` in the run's session (prepared on the first call).
    pub fn solve(&mut self, sys: &System, settings: &Settings) -> Result<Report> {
        let session = match &mut self.session {
            Some(session) => session,
            slot => slot.insert(self.solver.prepare(sys, settings)?),
        };
        session.solve(sys, settings)
    }

    /// Analyses made so far by the session (0 before the first solve).
    pub fn analyses(&self) -> usize {
        self.session.as_ref().map_or(0, |s| s.analyses())
    }
}

/// An iterate whose ∞-norm exceeds this factor times that of the first iterates (warm start
/// and first step) is taken as diverging. The relative residual alone cannot see divergence:
/// its normalization `max(‖r‖, ‖γ‖, ‖u‖)` grows with the iterate (a projected Gauss–Seidel
/// sweep on the non-monotone Siconos MLCP `RCD_mlcp` reaches ‖γ‖ ≈ 1e155 with a "small"
/// relative residual).
pub const DIVERGENCE_FACTOR: f64 = 1e12;

/// The shared loop of the iterative solvers.
///
/// `step(γ, u)` performs one iteration in place: given `u = (N + E)γ + r + bias` of the
/// current iterate, it moves `γ` and leaves `u` the velocity of the new iterate, and returns
/// the number of products with `N` (or sweeps of equal cost) it spent. The driver computes
/// the residual (with the solver's block steps `eta`), the trace entry, keeps the best
/// iterate and decides whether to stop. `bias` is `None` except in the inner solves of the
/// Coulomb fixed point ([`coulomb`]).
pub(crate) fn drive(
    name: &'static str,
    sys: &System,
    settings: &Settings,
    bias: Bias,
    eta: &[f64],
    step: impl FnMut(&mut [f64], &mut [f64]) -> usize + Send,
) -> Report {
    // Inside the pool, a parallel loop shorter than `PAR_MIN_ITEMS` runs on this worker
    // instead of being handed to another thread every iteration.
    rayon::scope(|_| iterate(name, sys, settings, bias, eta, step))
}

fn iterate(
    name: &'static str,
    sys: &System,
    settings: &Settings,
    bias: Bias,
    eta: &[f64],
    mut step: impl FnMut(&mut [f64], &mut [f64]) -> usize,
) -> Report {
    let mut gamma = progress::initial_iterate(sys, settings);
    let mut u = progress::biased_velocity(sys, bias, &gamma);
    let res = merit::residual(sys, &gamma, &u, settings.friction, eta);
    let (mut progress, mut status) = Progress::new(settings, &gamma, res);
    if settings.max_iter == 0 && status.is_none() {
        status = Some(Status::MaxIterations);
    }
    let status = loop {
        if let Some(status) = status {
            break status;
        }
        let products = step(&mut gamma, &mut u);
        let res = merit::residual(sys, &gamma, &u, settings.friction, eta);
        status = progress.record(&gamma, res, 1, products);
    };
    progress.finish(name, sys, status, gamma)
}

/// A vector added to `r`: the De Saxcé term `(μ‖u_t‖, 0, 0)` of the inner solves of the
/// Coulomb fixed point ([`coulomb`]); `None` for the problem as given.
pub(crate) type Bias<'a> = Option<&'a [f64]>;

/// `r + bias`: the vector of the problem a solve works on.
pub(crate) fn effective_r(sys: &System, bias: Bias) -> Vec<f64> {
    match bias {
        Some(bias) => sys.r().iter().zip(bias).map(|(r, b)| r + b).collect(),
        None => sys.r().to_vec(),
    }
}

/// `u = (N + E) γ + r_eff`, one product.
pub(crate) fn velocity_into(sys: &System, r_eff: &[f64], gamma: &[f64], u: &mut [f64]) {
    sys.apply(gamma, u);
    u.iter_mut().zip(r_eff).for_each(|(ui, ri)| *ui += ri);
}

/// One block's projected step `Π_K(γ_k − s û_k)` (paper 001 eq. (3) with `s = ω η_k`), with
/// `û_k` the model velocity of `u_k`; the result fills the first `d_k` entries.
pub(crate) fn projected_step(
    cone: &Cone,
    gamma: &[f64],
    u: &[f64],
    step: f64,
    friction: FrictionModel,
) -> [f64; 3] {
    let d = gamma.len();
    let mut out = [0.0; 3];
    merit::model_velocity(cone, u, friction, &mut out[..d]);
    for i in 0..d {
        out[i] = gamma[i] - step * out[i];
    }
    cone.project(&mut out[..d]);
    out
}

/// How the step length `η_k` of a block is chosen by the projected fixed-point solvers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum BlockStep {
    /// `η_k = d_k / trace((N + E)_kk)`, paper 001 eq. (6) and DESIGN §3: the inverse of the
    /// mean eigenvalue of the block.
    MeanDiagonal,
    /// `η_k = 1 / λ_max(sym (N + E)_kk)`: never overshoots in any direction of the block. The
    /// mean-diagonal step exceeds `2/λ_max` on anisotropic blocks (`d·λ_max > 2·trace`), and
    /// the sweep then cycles: on the Siconos Rover problems it stalls near 1e-2 where this
    /// rule converges to machine precision. Identical to the other rule for 1-row blocks.
    #[default]
    MaxEigenvalue,
}

/// The step length `η_k` of every block (one scalar per block, so that the projection on a
/// Coulomb cone stays a projection). A block with a zero diagonal gets `η = 0` and is never
/// moved.
pub(crate) fn block_steps(sys: &System, rule: BlockStep) -> Vec<f64> {
    (0..sys.blocks())
        .into_par_iter()
        .with_min_len(crate::PAR_MIN_ITEMS)
        .map(|k| {
            let d = sys.block_range(k).len();
            let n = sys.diagonal_block(k);
            let scale = match rule {
                BlockStep::MeanDiagonal => (0..d).map(|a| n[a * d + a]).sum::<f64>() / d as f64,
                BlockStep::MaxEigenvalue => max_eigenvalue(&n, d),
            };
            if scale > 0.0 { 1.0 / scale } else { 0.0 }
        })
        .collect()
}

/// The largest eigenvalue of the symmetric part of the `d × d` row-major block `n`, `d ≤
/// 3`, on fixed-size matrices (no allocation per block).
fn max_eigenvalue(n: &[f64; 9], d: usize) -> f64 {
    let sym = |a: usize, b: usize| 0.5 * (n[a * d + b] + n[b * d + a]);
    match d {
        1 => sym(0, 0),
        2 => nalgebra::Matrix2::from_fn(sym)
            .symmetric_eigenvalues()
            .max(),
        _ => nalgebra::Matrix3::from_fn(sym)
            .symmetric_eigenvalues()
            .max(),
    }
}
