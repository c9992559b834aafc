//! `signorini bench throughput`: contact-iterations per second of each solver on the CPU
//! (rayon) and on the GPU, on granular packings of increasing size, and the GPU figures as a
//! fraction of the memory bandwidth a copy kernel measures in the same run.
//!
//! Two modes are measured:
//! - `solve`: the registered solver with its convergence test unable to stop it (`tol = 0`,
//!   no stall rule) for a fixed number of iterations; the rate is taken from the solve's
//!   trace between its first and last measured iterates, so setup, upload and the first
//!   readback are excluded. This is what a user of `solve`/`simulate` gets per iteration.
//! - `kernels` (GPU only): the solver's kernels alone ([`GpuKernels::run`]), `iterations`
//!   iterations in one submission, timed from submission to completion, best of three after
//!   a warm-up: the figure to hold against the bandwidth bound.
//!
//! Bytes per iteration are, on the GPU, those of the storage buffers one iteration's
//! dispatches bind ([`GpuKernels::bytes_per_iteration`]), each read or written once; on the
//! CPU, those its loops read and write ([`crate::solver::traffic`]). Each device's rows are
//! held against the copy bandwidth measured on it in the same run: a copy kernel on the GPU
//! ([`bandwidth::measure`]), a STREAM-like copy on all rayon threads on the CPU
//! ([`cpu_bandwidth`]).

use std::path::Path;
use std::time::Instant;

use rayon::prelude::*;
use serde::Serialize;

use super::problems::granular_packing;
use super::report::{Cell, Plot, Section, Table, distinct, loglog_plot};
use super::{SolverRun, solver_runs};
use crate::error::{Error, Result};
use crate::gpu::{AdapterSummary, GpuContext, GpuKernels, bandwidth};
use crate::problem::{FrictionModel, System};
use crate::registry::{self, Device};
use crate::solver::{Precision, Report, Settings, traffic};

/// What to measure.
#[derive(Debug, Clone, PartialEq)]
pub struct Config {
    /// Solver names (`jacobi`, `spg`, ... or `all`); the GPU rows run their `-gpu` variants
    /// ([`super::solver_runs`]).
    pub solvers: Vec<String>,
    /// Numbers of contacts aimed at ([`granular_packing`]).
    pub sizes: Vec<usize>,
    /// Devices to run on.
    pub devices: Vec<Device>,
    /// Iterations per measurement.
    pub iterations: usize,
    /// Precisions of the CPU rows of the solvers on the CPU kernel (`jacobi`,
    /// `pgs-colored`); the other CPU solvers run in `f64`, the GPU ones in `f32`.
    pub precisions: Vec<Precision>,
    /// The CPU kernels measure the residual of every this-many-th iterate
    /// ([`Settings::check_every`]); the other solvers, of every iterate.
    pub check_every: usize,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            solvers: vec!["jacobi".into()],
            sizes: vec![1_000, 10_000, 100_000],
            devices: vec![Device::Cpu, Device::Gpu],
            iterations: 100,
            precisions: vec![Precision::F64],
            check_every: 1,
        }
    }
}

/// One measurement.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Row {
    /// Registry name of the solver run (`jacobi`, `jacobi-gpu`, ...).
    pub solver: String,
    /// `cpu` or `gpu`.
    pub device: &'static str,
    /// `solve` (the registered solver) or `kernels` (GPU Jacobi kernels alone).
    pub mode: &'static str,
    /// Floating-point type of the iterations: `f32` or `f64`.
    pub precision: &'static str,
    /// Contact blocks of the problem.
    pub contacts: usize,
    /// Rows of the problem.
    pub rows: usize,
    /// Dynamic bodies of the problem.
    pub bodies: usize,
    /// Iterations timed.
    pub iterations: usize,
    /// Wall time per iteration, seconds.
    pub seconds_per_iteration: f64,
    /// `contacts / seconds_per_iteration`.
    pub contact_iterations_per_s: f64,
    /// Products with `N` per iteration (1 for Jacobi).
    pub products_per_iteration: f64,
    /// Bytes one iteration moves: on the GPU those of the storage buffers its dispatches
    /// bind, on the CPU those its loops read and write ([`traffic`]); `None` for a CPU
    /// solver without a model.
    pub bytes_per_iteration: Option<f64>,
    /// `bytes_per_iteration / seconds_per_iteration` over the copy bandwidth of the row's
    /// device.
    pub bandwidth_fraction: Option<f64>,
    /// GPU rows: contact-iterations per second over those of the same solver on the CPU.
    pub speedup_over_cpu: Option<f64>,
}

/// The result of a run: machine, adapter, bandwidth and the rows.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Throughput {
    /// Threads of the CPU rows (rayon's pool).
    pub cpu_threads: usize,
    /// The CPU kernels' rows measured the residual of every this-many-th iterate
    /// ([`Config::check_every`]).
    pub check_every: usize,
    /// The GPU adapter, when the GPU was measured.
    pub adapter: Option<AdapterSummary>,
    /// Bytes read + written per second by the copy kernel, when the GPU was measured.
    pub bandwidth_bytes_per_s: Option<f64>,
    /// Bytes read + written per second by the CPU copy ([`cpu_bandwidth`]), when the CPU
    /// was measured.
    pub cpu_bandwidth_bytes_per_s: Option<f64>,
    /// The bytes-per-contact-iteration model of each CPU solver measured, on the largest
    /// packing: `(solver, model)`.
    pub cpu_models: Vec<(String, String)>,
    /// The measurements, size by size.
    pub rows: Vec<Row>,
    /// What was skipped and why.
    pub notes: Vec<String>,
}

/// Settings of a timed solve: `iterations` iterations whatever the residual does.
fn timed_settings(iterations: usize) -> Settings {
    Settings {
        friction: FrictionModel::Ccp,
        tol: 0.0,
        max_iter: iterations,
        stall_iterations: usize::MAX,
        ..Settings::default()
    }
}

/// Seconds and products per iteration of a solve, from its trace (first measured iterate to
/// the last), or from its total time when the trace has a single measured iterate.
fn per_iteration(report: &Report) -> (f64, f64) {
    let trace = &report.trace;
    match (trace.get(1), trace.last()) {
        (Some(first), Some(last)) if last.iteration > first.iteration => {
            let its = (last.iteration - first.iteration) as f64;
            (
                (last.time_s - first.time_s) / its,
                (last.products - first.products) as f64 / its,
            )
        }
        _ => {
            let its = report.iterations.max(1) as f64;
            let products = trace.last().map_or(0, |e| e.products) as f64;
            (report.time_s / its, products / its)
        }
    }
}

/// Runs the benchmark; `progress` receives a line per measurement.
/// `gpu` is the device of the GPU rows (none: no GPU rows).
pub fn run(
    config: &Config,
    gpu: Option<&GpuContext>,
    progress: &mut dyn FnMut(&str),
) -> Result<Throughput> {
    if config.iterations < 2 {
        return Err(Error::InvalidSetting {
            name: "iterations",
            value: config.iterations.to_string(),
            message: "at least 2 iterations are needed to measure a rate".into(),
        });
    }
    let mut notes = Vec::new();
    let runs = solver_runs(&config.solvers, &config.devices, gpu.is_some(), &mut notes)?;
    let bandwidth = match &gpu {
        Some(ctx) => {
            progress(&format!("copy bandwidth on {}", ctx.adapter_name()));
            Some(bandwidth::measure(ctx, 256 << 20, 10, 5)?.bytes_per_s)
        }
        None => None,
    };
    let cpu_bw = runs.iter().any(|r| r.device == "cpu").then(|| {
        progress("copy bandwidth on the CPU");
        cpu_bandwidth(CPU_COPY_BYTES, 5)
    });
    let settings = Settings {
        check_every: config.check_every,
        ..timed_settings(config.iterations)
    };
    let mut rows = Vec::new();
    let mut cpu_models = Vec::new();
    for &size in &config.sizes {
        progress(&format!("building the packing of {size} contacts"));
        let sys = System::new(&granular_packing(size)?)?;
        let row =
            |run: &SolverRun, precision: Precision, mode, time: (f64, f64), bytes: Option<u64>| {
                let (seconds, products) = time;
                let bytes_it = bytes.map(|b| b as f64);
                let bw = if run.device == "cpu" {
                    cpu_bw
                } else {
                    bandwidth
                };
                Row {
                    solver: run.solver.clone(),
                    device: run.device,
                    mode,
                    precision: precision.as_str(),
                    contacts: sys.blocks(),
                    rows: sys.rows(),
                    bodies: sys.factored().map_or(0, |f| f.bodies()),
                    iterations: config.iterations,
                    seconds_per_iteration: seconds,
                    contact_iterations_per_s: sys.blocks() as f64 / seconds,
                    products_per_iteration: products,
                    bytes_per_iteration: bytes_it,
                    bandwidth_fraction: bytes_it.zip(bw).map(|(b, bw)| b / seconds / bw),
                    speedup_over_cpu: None,
                }
            };
        for run in &runs {
            let solver = run.solver()?;
            let Some(ctx) = gpu.filter(|_| run.device == "gpu") else {
                let precisions = if traffic::KERNEL_SOLVERS.contains(&run.solver.as_str()) {
                    &config.precisions[..]
                } else {
                    &[Precision::F64]
                };
                for &precision in precisions {
                    progress(&format!(
                        "{} ({}) on {} contacts",
                        run.solver,
                        precision.as_str(),
                        sys.blocks()
                    ));
                    let settings = Settings {
                        precision,
                        ..settings.clone()
                    };
                    solver.solve(&sys, &timed_settings(2))?;
                    let time = per_iteration(&solver.solve(&sys, &settings)?);
                    let model = traffic::of(&run.solver, &sys, &settings);
                    if let Some(model) = &model {
                        let label = format!("{} ({})", run.solver, precision.as_str());
                        cpu_models.retain(|(s, _)| s != &label);
                        cpu_models.push((label, model.describe(sys.blocks())));
                    }
                    let bytes = model.map(|m| m.bytes());
                    rows.push(row(run, precision, "solve", time, bytes));
                }
                continue;
            };
            progress(&format!("{} on {} contacts", run.solver, sys.blocks()));
            // Warm-up: opens the device and compiles the kernels.
            solver.solve(&sys, &timed_settings(2))?;
            let time = per_iteration(&solver.solve(&sys, &settings)?);
            let mut kernels = registry::entry(&run.solver)?.kernels(ctx, &sys, &settings)?;
            let bytes = Some(kernels.bytes_per_iteration());
            rows.push(row(run, Precision::F32, "solve", time, bytes));
            progress(&format!(
                "{} kernels on {} contacts",
                run.solver,
                sys.blocks()
            ));
            let seconds = time_kernels(ctx, &mut kernels, config.iterations)?;
            rows.push(row(run, Precision::F32, "kernels", (seconds, 1.0), bytes));
        }
    }
    speedups(&mut rows);
    Ok(Throughput {
        cpu_threads: rayon::current_num_threads(),
        check_every: config.check_every,
        adapter: gpu.map(GpuContext::adapter_summary),
        bandwidth_bytes_per_s: bandwidth,
        cpu_bandwidth_bytes_per_s: cpu_bw,
        cpu_models,
        rows,
        notes,
    })
}

/// Bytes of each buffer of the CPU copy: well above the last-level caches of the machines
/// we measure (the development VM reports a 260 MiB L3).
const CPU_COPY_BYTES: usize = 512 << 20;

/// The CPU's copy bandwidth, bytes read + written per second (STREAM's `copy`): a buffer of
/// `bytes` (rounded down to 8) copied into another by all of rayon's threads, each over a
/// contiguous chunk, `repeats` times after one untimed copy (pages mapped); the best rate.
/// The buffer holds non-zero data so that nothing is special-cased.
pub fn cpu_bandwidth(bytes: usize, repeats: usize) -> f64 {
    let n = (bytes / 8).max(1);
    let src: Vec<f64> = (0..n).map(|i| (i % 1021) as f64 + 0.5).collect();
    let mut dst = vec![0.0f64; n];
    let chunk = n.div_ceil(rayon::current_num_threads());
    let mut best = f64::INFINITY;
    for repeat in 0..=repeats {
        let start = Instant::now();
        dst.par_chunks_mut(chunk)
            .zip(src.par_chunks(chunk))
            .for_each(|(d, s)| d.copy_from_slice(s));
        if repeat > 0 {
            best = best.min(start.elapsed().as_secs_f64());
        }
    }
    std::hint::black_box(&dst);
    (2 * 8 * n) as f64 / best
}

/// Timed submissions of the kernels, after one untimed (clocks ramp up, pages map).
const KERNEL_REPEATS: usize = 3;

/// Seconds per iteration of `kernels` alone: the best of [`KERNEL_REPEATS`] submissions of
/// `iterations` iterations each.
fn time_kernels(ctx: &GpuContext, kernels: &mut GpuKernels, iterations: usize) -> Result<f64> {
    let mut best = f64::INFINITY;
    for repeat in 0..=KERNEL_REPEATS {
        let start = Instant::now();
        kernels.run(iterations);
        ctx.wait()?;
        if repeat > 0 {
            best = best.min(start.elapsed().as_secs_f64());
        }
    }
    Ok(best / iterations as f64)
}

/// Fills `speedup_over_cpu` of each GPU row from the CPU `solve` row of the same solver and
/// size.
fn speedups(rows: &mut [Row]) {
    let cpu: Vec<(String, usize, f64)> = rows
        .iter()
        .filter(|r| r.device == "cpu")
        .map(|r| (r.solver.clone(), r.contacts, r.contact_iterations_per_s))
        .collect();
    for row in rows.iter_mut().filter(|r| r.device == "gpu") {
        let base = registry::entry(&row.solver).map_or("", |e| e.base);
        row.speedup_over_cpu = cpu
            .iter()
            .find(|(s, c, _)| s == base && *c == row.contacts)
            .map(|(_, _, rate)| row.contact_iterations_per_s / rate);
    }
}

impl Throughput {
    /// The report's section: the table (`throughput.csv`) and the log-log chart of
    /// contact-iterations per second against contacts (`throughput.png`, written into
    /// `dir`).
    pub fn section(&self, dir: &Path) -> Result<Section> {
        let table = Table::of(
            "throughput",
            "Contact-iterations per second on granular packings.",
            &self.rows,
            &[
                ("solver", |r| Cell::text(&r.solver)),
                ("device", |r| Cell::text(r.device)),
                ("mode", |r| Cell::text(r.mode)),
                ("precision", |r| Cell::text(r.precision)),
                ("contacts", |r| Cell::int(r.contacts)),
                ("bodies", |r| Cell::int(r.bodies)),
                ("iterations", |r| Cell::int(r.iterations)),
                ("s/iteration", |r| Cell::Num(r.seconds_per_iteration)),
                ("contact-it/s", |r| Cell::Num(r.contact_iterations_per_s)),
                ("GB/s", |r| {
                    Cell::opt(
                        r.bytes_per_iteration
                            .map(|b| b / r.seconds_per_iteration / 1e9),
                    )
                }),
                ("fraction of copy bandwidth", |r| {
                    Cell::opt(r.bandwidth_fraction)
                }),
                ("GPU/CPU", |r| Cell::opt(r.speedup_over_cpu)),
            ],
        );
        let key = |r: &Row| (r.solver.clone(), r.device, r.mode, r.precision);
        let lines: Vec<(String, Vec<(f64, f64)>)> = distinct(self.rows.iter().map(key))
            .into_iter()
            .map(|k| {
                let points = self
                    .rows
                    .iter()
                    .filter(|r| key(r) == k)
                    .map(|r| (r.contacts as f64, r.contact_iterations_per_s))
                    .collect();
                (format!("{} ({}, {}, {})", k.0, k.1, k.2, k.3), points)
            })
            .collect();
        let plot = Plot {
            file: "throughput.png".into(),
            caption: "Contact-iterations per second against contacts, CPU and GPU (log-log)".into(),
        };
        let plots = loglog_plot(
            dir,
            plot,
            "contact-iterations per second, CPU vs GPU",
            ("contacts", "contact-iterations / s"),
            &lines,
        )?;
        let mut text = vec![
            "Each solver runs a fixed number of iterations (tolerance 0, no stall rule) on the \
             first-step problem of a cubic packing of touching spheres (μ = 0.5, CCP model); \
             `solve` rows time the registered solver between its first and last measured \
             iterates (setup, upload and the first readback excluded), `kernels` rows time \
             the GPU solver's kernels alone, all iterations in one submission (best of three \
             after a warm-up). CPU rows run on rayon in the precision of their row, GPU rows \
             in f32. Each row's GB/s \
             and fraction of copy bandwidth are those of its own device."
                .to_string(),
        ];
        if self.check_every > 1 {
            text.push(format!(
                "The CPU kernels' rows ({}) measure the residual of every {}th iterate and of \
                 the last (`--check-every {}`); the other rows, of every iterate.",
                traffic::KERNEL_SOLVERS.join(", "),
                self.check_every,
                self.check_every
            ));
        }
        if let Some(bw) = self.bandwidth_bytes_per_s {
            text.push(format!(
                "Copy-kernel bandwidth measured in the same run: {:.1} GB/s (read + written). \
                 GB/s counts the storage buffers one iteration's dispatches bind, each read \
                 or written once.",
                bw / 1e9
            ));
        }
        if let Some(bw) = self.cpu_bandwidth_bytes_per_s {
            text.push(format!(
                "CPU copy bandwidth measured in the same run ({} rayon threads, STREAM-like \
                 copy of {} MiB): {:.1} GB/s (read + written). A CPU row's GB/s counts what \
                 its loops read and write, each element once per use; the models, on the \
                 largest packing:",
                self.cpu_threads,
                CPU_COPY_BYTES >> 20,
                bw / 1e9
            ));
            for (solver, model) in &self.cpu_models {
                text.push(format!("- `{solver}`: {model}."));
            }
        }
        Ok(Section {
            heading: "Throughput".into(),
            text,
            tables: vec![table],
            plots,
            notes: self.notes.clone(),
        })
    }
}
