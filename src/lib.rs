//! # signorini
//!
//! Solvers for the cone complementarity problems of non-smooth multibody dynamics: rigid
//! bodies with unilateral contacts, Coulomb friction and bilateral joints, time-stepped at the
//! velocity level (Anitescu–Tasora). One time step is the problem
//!
//! ```text
//! K ∋ γ ⊥ u = N γ + r ∈ K*,     N = J M⁻¹ Jᵀ + E,   r = J v_free + b,
//! ```
//!
//! the optimality condition of `min ½ γᵀNγ + rᵀγ, γ ∈ K` where `K` is a product of cones:
//! bilateral `ℝ^d`, unilateral `ℝ₊` and Coulomb `K_μ = {‖γt‖ ≤ μ γn}` (normal first). Under
//! the Coulomb friction model (De Saxcé) `u` is replaced by `û = u + (μ‖u_t‖, 0, 0)`.
//!
//! ## Example
//!
//! A sphere of 2 kg resting on the ground for one step of 10 ms: one unilateral row, and the
//! impulse that holds it is `m g h`.
//!
//! ```
//! use signorini::problem::{Body, Cone, Factored, JacobianBlock, Operator, Problem, System};
//! use signorini::{registry, solver::Settings};
//!
//! let (m, g, h) = (2.0, 9.81, 0.01);
//! let problem = Problem {
//!     name: "resting sphere".into(),
//!     class: Default::default(),
//!     cones: vec![Cone::Unilateral],
//!     operator: Operator::Factored(Factored {
//!         bodies: vec![Body { mass: m, inertia: [0.01; 3], v_free: [0.0, 0.0, -g * h, 0.0, 0.0, 0.0] }],
//!         jacobians: vec![JacobianBlock { bodies: vec![0].into(), rows: vec![[0.0, 0.0, 1.0, 0.0, 0.0, 0.0]].into() }],
//!         b: vec![0.0],
//!     }),
//!     compliance: vec![],
//! };
//! let sys = System::new(&problem)?;
//! let report = registry::solver("pgs")?.solve(&sys, &Settings::default())?;
//! assert!((report.gamma[0] - m * g * h).abs() < 1e-12);
//! # Ok::<(), signorini::Error>(())
//! ```
//!
//! ## Map of the modules
//! The layers depend in one direction (ARCHITECTURE.md): [`problem`] ← [`solver`], [`gpu`]
//! ← [`registry`] ← [`sim`] ← [`app`]; only [`app`] writes run outputs.
//! - [`problem`]: the problem in its forms (factored, assembled, global), validation, the
//!   prepared [`problem::System`] every solver works on, the cones and their projections, the
//!   merit set, and the file formats (native JSON, Siconos `.dat`).
//! - [`solver`]: the solver trait, settings and reports, projected Jacobi and projected
//!   Gauss–Seidel/SOR, SPG, APGD, and the interior point ([`solver::Ip`], faer's sparse LDLᵀ)
//!   that certifies them.
//! - [`gpu`]: the GPU path (wgpu + WGSL, f32): device context, the GPU solvers (Jacobi,
//!   SPG, APGD) and the CPU mirror of their kernels.
//! - [`registry`]: the one list of solvers: names → solvers, CPU and GPU variants, a GPU
//!   solver's bare kernels.
//! - [`sim`]: the simulator: bodies, shapes, collision, joints, stepper, scenes, and the
//!   statistics of a step.
//! - [`render`]: shaded 3-D frames of a scene rendered offscreen with wgpu into RGBA images.
//! - [`app`]: the application layer of the command line: the run loop of `simulate` and
//!   the writers of its outputs (rendered PNG snapshots and animations, VTK frames, the per-step CSV), charts and
//!   printed tables, `solve`/`check`, and the benchmark suites of `signorini bench` with
//!   their report.
//! - [`error`]: the crate's error type.
//! - [`limits`]: the memory limit sizes are checked against before allocating.

pub mod app;
pub mod error;
pub mod gpu;
pub mod limits;
mod par;
pub mod problem;
pub mod registry;
pub mod render;
pub mod sim;
pub mod solver;

pub use error::{Error, Result};

/// Smallest number of items (rows, blocks, bodies) a rayon task gets: below it a loop runs on
/// the calling thread, so small problems pay no thread hand-offs.
pub const PAR_MIN_ITEMS: usize = 256;
