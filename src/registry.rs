//! The one list of solvers: each [`Entry`] has the solver's name, its constructor, the device
//! it runs on and the CPU solver it is a variant of; a GPU solver also builds its bare kernels
//! (the throughput benchmark). The CLI, the simulator and the benchmark suites pick solvers
//! here.
//!
//! The GPU solvers (`jacobi-gpu`, `spg-gpu`, `apgd-gpu`) are always listed: each opens its
//! device at its first solve, and without a usable adapter that solve returns [`Error::Gpu`]
//! (see [`crate::gpu::GpuSolver`]).
//! [`solver_on`] picks the GPU variant of a solver and falls back to the CPU, with a note,
//! when no adapter exists.

use std::sync::LazyLock;

use crate::error::{Error, Result};
use crate::gpu::{ApgdMethod, GpuContext, GpuKernels, GpuSolver, JacobiMethod, Method, SpgMethod};
use crate::problem::System;
use crate::solver::{
    Apgd, ColoredGaussSeidel, GaussSeidel, Ip, Jacobi, Settings, Simplex, Solver, Spg,
};

/// Builds a GPU solver's bare kernels on a problem under some settings.
type KernelsFn = fn(&GpuContext, &System, &Settings) -> Result<GpuKernels>;

/// One registered solver.
#[derive(Debug, Clone, Copy)]
pub struct Entry {
    /// Its name (`pgs`, `jacobi-gpu`, ...).
    pub name: &'static str,
    /// The CPU solver it is a variant of: its own name for a CPU solver. Entries of the same
    /// base compare CPU and GPU.
    pub base: &'static str,
    /// Where it runs.
    pub device: Device,
    new: fn() -> Box<dyn Solver>,
    kernels: Option<KernelsFn>,
}

impl Entry {
    /// The CPU solver `S` with its default parameters, named by itself.
    fn cpu<S: Solver + Default + 'static>() -> Entry {
        Entry::cpu_with(|| Box::new(S::default()))
    }

    /// The CPU solver that `new` makes, named by itself.
    fn cpu_with(new: fn() -> Box<dyn Solver>) -> Entry {
        let name = new().name();
        Entry {
            name,
            base: name,
            device: Device::Cpu,
            new,
            kernels: None,
        }
    }

    /// The GPU solver of the method `M`, the variant of the CPU solver `base`.
    fn gpu<M: Method>(base: &'static str) -> Entry {
        Entry {
            name: M::NAME,
            base,
            device: Device::Gpu,
            new: || Box::new(GpuSolver::<M>::default()),
            kernels: Some(|ctx, sys, settings| {
                let method = M::default();
                method.kernels(ctx, &method.data(sys, settings, None)?, 1.0)
            }),
        }
    }

    /// A new instance of the solver.
    pub fn solver(&self) -> Box<dyn Solver> {
        (self.new)()
    }

    /// The solver's kernels alone on `ctx`, with `sys` uploaded under `settings` (what
    /// [`GpuKernels::run`] times); a CPU solver has none, which is an [`Error::Gpu`].
    pub fn kernels(
        &self,
        ctx: &GpuContext,
        sys: &System,
        settings: &Settings,
    ) -> Result<GpuKernels> {
        let kernels = self
            .kernels
            .ok_or_else(|| Error::Gpu(format!("no GPU kernels for `{}`", self.name)))?;
        kernels(ctx, sys, settings)
    }
}

/// Every registered solver, in the order listed to users.
static ENTRIES: LazyLock<[Entry; 11]> = LazyLock::new(|| {
    [
        Entry::cpu::<Jacobi>(),
        Entry::cpu::<GaussSeidel>(),
        Entry::cpu::<ColoredGaussSeidel>(),
        Entry::cpu::<Spg>(),
        Entry::cpu::<Apgd>(),
        Entry::cpu::<Ip>(),
        Entry::cpu::<Simplex>(),
        Entry::cpu_with(|| Box::new(Simplex::pyramid())),
        Entry::gpu::<JacobiMethod>("jacobi"),
        Entry::gpu::<SpgMethod>("spg"),
        Entry::gpu::<ApgdMethod>("apgd"),
    ]
});

/// Every registered solver, in the order listed to users.
pub fn entries() -> &'static [Entry] {
    &*ENTRIES
}

/// The names of the registered solvers.
pub fn names() -> Vec<&'static str> {
    entries().iter().map(|e| e.name).collect()
}

/// The entry of the solver called `name`; an unknown name lists the valid ones.
pub fn entry(name: &str) -> Result<&'static Entry> {
    entries()
        .iter()
        .find(|e| e.name == name)
        .ok_or_else(|| Error::UnknownSolver {
            name: name.to_string(),
            valid: names().into_iter().map(String::from).collect(),
        })
}

/// The solver called `name`; an unknown name lists the valid ones.
pub fn solver(name: &str) -> Result<Box<dyn Solver>> {
    entry(name).map(Entry::solver)
}

/// The variant of the CPU solver `base` on `device` (`base` itself on the CPU), if registered.
pub fn variant(base: &str, device: Device) -> Option<&'static Entry> {
    entries()
        .iter()
        .find(|e| e.base == base && e.device == device)
}

/// Where a solver runs (`--device`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Device {
    /// The CPU solver of the given name.
    #[default]
    Cpu,
    /// Its GPU variant.
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

/// The solver `name` on `device`. On the GPU that is the GPU variant of `name`'s base (a
/// `-gpu` name stands for its base); a solver without one is an error naming the GPU
/// solvers. When no GPU adapter exists, the CPU solver is returned with a note saying so.
pub fn solver_on(name: &str, device: Device) -> Result<(Box<dyn Solver>, Option<String>)> {
    if device == Device::Cpu {
        return Ok((solver(name)?, None));
    }
    let base = entry(name).map_or(name.strip_suffix("-gpu").unwrap_or(name), |e| e.base);
    let Some(gpu) = variant(base, Device::Gpu) else {
        let gpu: Vec<_> = entries()
            .iter()
            .filter(|e| e.device == Device::Gpu)
            .map(|e| e.name)
            .collect();
        return Err(Error::InvalidSetting {
            name: "device",
            value: "gpu".into(),
            message: format!(
                "`{base}` has no GPU variant yet; GPU solvers: {}",
                gpu.join(", ")
            ),
        });
    };
    if crate::gpu::adapters().is_empty() {
        let note =
            format!("no GPU adapter found (see `signorini info`); running `{base}` on the CPU");
        return Ok((solver(base)?, Some(note)));
    }
    Ok((gpu.solver(), None))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entries_are_named_by_their_solvers_and_variants_pair_up() {
        for e in entries() {
            assert_eq!(e.solver().name(), e.name);
            assert_eq!(entry(e.name).unwrap().name, e.name, "names are unique");
            let cpu = variant(e.base, Device::Cpu).expect("every base is a CPU solver");
            assert_eq!(cpu.name, e.base);
            assert_eq!(e.kernels.is_some(), e.device == Device::Gpu, "{}", e.name);
        }
        assert_eq!(variant("jacobi", Device::Gpu).unwrap().name, "jacobi-gpu");
        assert!(variant("pgs", Device::Gpu).is_none());
        assert!(matches!(
            solver_on("pgs", Device::Gpu),
            Err(Error::InvalidSetting { name: "device", .. })
        ));
        assert!(matches!(solver("nope"), Err(Error::UnknownSolver { .. })));
    }
}
