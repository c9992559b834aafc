//! The statistics of one time step, as [`super::World::step`] returns them.

use serde::Serialize;

use crate::solver::Status;

/// What happened during one time step.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct StepStats {
    /// Index of the step, from 0.
    pub step: usize,
    /// Simulated time at the end of the step, s.
    pub time: f64,
    /// Number of bodies.
    pub bodies: usize,
    /// Number of contacts in the step's problem.
    pub contacts: usize,
    /// Number of bilateral (joint) rows in the step's problem.
    pub bilateral_rows: usize,
    /// Iterations the solver ran.
    pub iterations: usize,
    /// Outer rounds of the Coulomb model's De Saxcé fixed point among those iterations (0
    /// under the CCP model).
    pub rounds: usize,
    /// The velocity residual of the solver's answer (`Residual::velocity`, m/s).
    pub residual: f64,
    /// Largest penetration depth among the contacts, m (0 when none penetrate).
    pub max_penetration: f64,
    /// Kinetic energy of all bodies at the end of the step, J.
    pub kinetic_energy: f64,
    /// Wall-clock time of collision detection, s.
    pub collision_s: f64,
    /// Wall-clock time of assembly: the factored problem (Jacobians, free velocities) and
    /// the prepared [`crate::problem::System`], s.
    pub assembly_s: f64,
    /// Wall-clock time of the solver, s.
    pub solve_s: f64,
    /// How the step's solve ended (`converged`, `max_iterations`, ...).
    pub status: Status,
}
