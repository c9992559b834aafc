//! Solver names → solvers. The CLI and the simulator pick solvers here by name.
//!
//! `jacobi-gpu` is always listed: it opens its device at its first solve, and without a
//! usable adapter that solve returns [`Error::Gpu`] (see [`crate::gpu::JacobiGpu`]).

use crate::error::{Error, Result};
use crate::gpu::JacobiGpu;
use crate::solver::{Apgd, GaussSeidel, Jacobi, Solver, Spg};

/// Every registered solver, in the order listed to users.
fn all() -> Vec<Box<dyn Solver>> {
    vec![
        Box::new(Jacobi),
        Box::new(GaussSeidel),
        Box::new(Spg::default()),
        Box::new(Apgd),
        Box::new(JacobiGpu::default()),
    ]
}

/// The names of the registered solvers.
pub fn names() -> Vec<&'static str> {
    all().iter().map(|s| s.name()).collect()
}

/// The solver called `name`; an unknown name lists the valid ones.
pub fn solver(name: &str) -> Result<Box<dyn Solver>> {
    all()
        .into_iter()
        .find(|s| s.name() == name)
        .ok_or_else(|| Error::UnknownSolver {
            name: name.to_string(),
            valid: names().into_iter().map(String::from).collect(),
        })
}
