//! Solver names → solvers. The CLI and the simulator pick solvers here by name.
//!
//! The GPU solvers (`jacobi-gpu`, `spg-gpu`, `apgd-gpu`) are always listed: each opens its
//! device at its first solve, and without a usable adapter that solve returns [`Error::Gpu`]
//! (see [`crate::gpu::JacobiGpu`]).
//! [`solver_on`] picks the GPU variant of a solver and falls back to the CPU, with a note,
//! when no adapter exists.

use crate::error::{Error, Result};
use crate::gpu::{ApgdGpu, JacobiGpu, SpgGpu};
use crate::solver::{Apgd, GaussSeidel, Ip, Jacobi, Simplex, Solver, Spg};

/// Every registered solver, in the order listed to users.
fn all() -> Vec<Box<dyn Solver>> {
    vec![
        Box::new(Jacobi),
        Box::new(GaussSeidel),
        Box::new(Spg::default()),
        Box::new(Apgd),
        Box::new(Ip::default()),
        Box::new(Simplex::default()),
        Box::new(Simplex::pyramid()),
        Box::new(JacobiGpu::default()),
        Box::new(SpgGpu::default()),
        Box::new(ApgdGpu::default()),
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

/// Where a solver runs (`--device`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Device {
    /// The CPU solver of the given name.
    #[default]
    Cpu,
    /// Its `-gpu` variant.
    Gpu,
}

impl Device {
    /// `cpu` or `gpu`.
    pub fn as_str(self) -> &'static str {
        match self {
            Device::Cpu => "cpu",
            Device::Gpu => "gpu",
        }
    }
}

impl std::str::FromStr for Device {
    type Err = String;
    fn from_str(s: &str) -> std::result::Result<Self, String> {
        match s {
            "cpu" => Ok(Device::Cpu),
            "gpu" => Ok(Device::Gpu),
            _ => Err(format!("unknown device `{s}`; valid: cpu, gpu")),
        }
    }
}

/// The solver `name` on `device`. On the GPU that is `<name>-gpu`; a solver without a GPU
/// variant is an error naming the GPU solvers. When no GPU adapter exists, the CPU solver
/// is returned with a note saying so.
pub fn solver_on(name: &str, device: Device) -> Result<(Box<dyn Solver>, Option<String>)> {
    let cpu_name = name.strip_suffix("-gpu").unwrap_or(name);
    if device == Device::Cpu {
        return Ok((solver(name)?, None));
    }
    let gpu_name = format!("{cpu_name}-gpu");
    if !names().contains(&gpu_name.as_str()) {
        let gpu: Vec<_> = names()
            .into_iter()
            .filter(|n| n.ends_with("-gpu"))
            .collect();
        return Err(Error::InvalidSetting {
            name: "device",
            value: "gpu".into(),
            message: format!(
                "`{cpu_name}` has no GPU variant yet; GPU solvers: {}",
                gpu.join(", ")
            ),
        });
    }
    if crate::gpu::adapters().is_empty() {
        let note =
            format!("no GPU adapter found (see `signorini info`); running `{cpu_name}` on the CPU");
        return Ok((solver(cpu_name)?, Some(note)));
    }
    Ok((solver(&gpu_name)?, None))
}
