//! Benchmarks users run from the command line (`signorini bench SUITE`): their problems,
//! measurements, tables and charts. Timings are measured here, never asserted in tests.
//!
//! - [`problems`]: the benchmark problems, built by the simulator from generated packings
//!   and from the benchmark scenes.
//! - [`throughput`]: contact-iterations per second of each solver on the CPU and on the
//!   GPU, and the GPU figure as a fraction of the memory bandwidth measured in the same run.
//! - [`convergence`]: residual against iterations and wall time on B1–B4, balls_in_box,
//!   the three-point bending and the tracked vehicle.
//! - [`scaling`]: time per simulation step against the number of bodies, split into
//!   collision detection, assembly, solve and output.
//! - [`accuracy`]: every solver's merit set against a reference solve (interior point,
//!   simplex or tight PGS), GPU `f32` against CPU `f64`.
//! - [`report`]: the markdown report, its CSV tables and the machine description.

pub mod accuracy;
pub mod convergence;
pub mod problems;
pub mod report;
pub mod scaling;
pub mod throughput;

use std::path::Path;
use std::sync::Arc;
use std::time::Instant;

use serde::Serialize;

use self::report::{BenchReport, Machine, Section};
use crate::error::{Error, Result};
use crate::gpu::GpuContext;
use crate::registry::{self, Device};
use crate::solver::{Precision, Solver, TraceEntry};

/// Parses a comma-separated list of sizes; each entry is an integer or a float in
/// scientific notation (`1e5`). `what` names the option in errors.
pub fn parse_sizes(list: &str, what: &'static str) -> Result<Vec<usize>> {
    list.split(',')
        .map(|s| {
            let s = s.trim();
            s.parse::<usize>()
                .ok()
                .filter(|&n| n > 0)
                .or_else(|| {
                    s.parse::<f64>()
                        .ok()
                        .filter(|v| v.is_finite() && *v >= 1.0 && v.fract() == 0.0)
                        .map(|v| v as usize)
                })
                .ok_or_else(|| Error::InvalidSetting {
                    name: what,
                    value: s.to_string(),
                    message: "expected positive integers such as 1000 or 1e5".into(),
                })
        })
        .collect()
}

/// One benchmark suite (the doc comments are the command line's help).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, clap::ValueEnum)]
#[serde(rename_all = "snake_case")]
pub enum Suite {
    /// Contact-iterations per second, CPU vs GPU, and the fraction of the bandwidth.
    Throughput,
    /// Residual vs iteration and vs wall time on B1–B4, balls_in_box, the three-point
    /// bending and the tracked vehicle, every solver.
    Convergence,
    /// Time per simulation step vs bodies, split into collision, assembly, solve, output.
    Scaling,
    /// Every solver's merit set against a reference solve; GPU f32 vs CPU f64.
    Accuracy,
}

impl Suite {
    /// The suite's name on the command line.
    pub fn name(self) -> &'static str {
        match self {
            Suite::Throughput => "throughput",
            Suite::Convergence => "convergence",
            Suite::Scaling => "scaling",
            Suite::Accuracy => "accuracy",
        }
    }
}

/// What `signorini bench` runs: one suite, or all four at their defaults in one report (the
/// command line's values: a suite's name or `all`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Selection {
    /// One suite.
    One(Suite),
    /// The four suites at their default sizes, in report order.
    All,
}

impl Selection {
    /// The suites it runs, in report order.
    pub fn members(self) -> Vec<Suite> {
        match self {
            Selection::One(suite) => vec![suite],
            Selection::All => <Suite as clap::ValueEnum>::value_variants().to_vec(),
        }
    }
}

impl clap::ValueEnum for Selection {
    fn value_variants<'a>() -> &'a [Self] {
        &[
            Selection::One(Suite::Throughput),
            Selection::One(Suite::Convergence),
            Selection::One(Suite::Scaling),
            Selection::One(Suite::Accuracy),
            Selection::All,
        ]
    }

    fn to_possible_value(&self) -> Option<clap::builder::PossibleValue> {
        match self {
            Selection::One(suite) => suite.to_possible_value(),
            Selection::All => Some(
                clap::builder::PossibleValue::new("all")
                    .help("The four suites at their default sizes, in one report"),
            ),
        }
    }
}

/// The options of `signorini bench`; `None` takes the suite's default.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Options {
    /// Solver names or `all`.
    pub solvers: Option<Vec<String>>,
    /// Sizes: contacts (throughput), bodies (scaling), bodies per scene (convergence,
    /// accuracy).
    pub sizes: Option<Vec<usize>>,
    /// Devices.
    pub devices: Option<Vec<Device>>,
    /// Iterations per measurement (throughput) or iteration cap (the others).
    pub iterations: Option<usize>,
    /// Tolerance (convergence, accuracy).
    pub tol: Option<f64>,
    /// Steps per run (scaling).
    pub steps: Option<usize>,
    /// Precisions of the CPU kernels' rows (throughput).
    pub precisions: Option<Vec<Precision>>,
    /// Residual frequency of the CPU kernels' rows (throughput).
    pub check_every: Option<usize>,
}

impl Options {
    /// The options of `signorini bench SUITE` from the command line's values, `sizes` as
    /// given ([`parse_sizes`]). `all` runs each suite at its defaults: it takes no sizes,
    /// iterations, tolerance or steps.
    pub fn parse(
        suite: Selection,
        solvers: Option<Vec<String>>,
        sizes: Option<&str>,
        devices: Option<Vec<Device>>,
        iterations: Option<usize>,
        tol: Option<f64>,
        steps: Option<usize>,
    ) -> Result<Options> {
        let sized = sizes.is_some() || iterations.is_some() || tol.is_some();
        if suite == Selection::All && (sized || steps.is_some()) {
            return Err(Error::InvalidSetting {
                name: "suite",
                value: "all".into(),
                message: "`all` runs each suite at its defaults; give --sizes, \
                          --iterations, --tol or --steps with one suite"
                    .into(),
            });
        }
        Ok(Options {
            solvers,
            sizes: sizes.map(|s| parse_sizes(s, "sizes")).transpose()?,
            devices,
            iterations,
            tol,
            steps,
            precisions: None,
            check_every: None,
        })
    }
}

/// What `signorini bench` gives: the report (written into its folder) and the measurements
/// of each suite.
#[derive(Debug, Clone, PartialEq)]
pub struct Bench {
    /// The report.
    pub report: BenchReport,
    /// The measurements, by suite name.
    pub suites: serde_json::Map<String, serde_json::Value>,
}

impl Bench {
    /// The JSON object of `signorini bench --json`: where the report is (`dir/report.md`),
    /// the machine and the measurements.
    pub fn json(&self, dir: &Path) -> serde_json::Value {
        serde_json::json!({
            "report": dir.join("report.md"),
            "machine": self.report.machine,
            "suites": self.suites,
        })
    }
}

/// Runs the suites of `suite` (each of the four for [`Selection::All`]) with `options` on the devices they
/// ask for, and writes the report, its CSV tables and charts into `dir`. `command` is the
/// command line that reproduces the run; `progress` receives a line per suite and (indented)
/// per measurement.
pub fn run(
    suite: Selection,
    options: &Options,
    dir: &Path,
    command: String,
    progress: &mut dyn FnMut(&str),
) -> Result<Bench> {
    for s in suite.members() {
        options.check(s)?;
    }
    let start = Instant::now();
    let mut notes = Vec::new();
    let devices = options
        .devices
        .clone()
        .unwrap_or(vec![Device::Cpu, Device::Gpu]);
    let gpu = open_gpu(&devices, &mut notes);
    let mut sections = Vec::new();
    let mut suites = serde_json::Map::new();
    for s in suite.members() {
        progress(&format!("suite {}", s.name()));
        let outcome = run_suite(s, options, gpu.as_deref(), dir, &mut |line| {
            progress(&format!("  {line}"))
        })?;
        progress(&format!("suite {} took {:.1} s", s.name(), outcome.wall_s));
        let mut section = outcome.section;
        section.notes.extend(notes.iter().cloned());
        section
            .text
            .push(format!("Suite wall time: {:.1} s.", outcome.wall_s));
        sections.push(section);
        suites.insert(s.name().into(), outcome.json);
    }
    let report = BenchReport {
        command,
        machine: Machine::detect(gpu.as_ref().map(|c| c.adapter_summary())),
        sections,
        wall_s: start.elapsed().as_secs_f64(),
    };
    report.write(dir)?;
    Ok(Bench { report, suites })
}

/// What a suite gives: its report section and its measurements as JSON.
#[derive(Debug, Clone, PartialEq)]
pub struct Outcome {
    /// The section of `report.md` (its charts are written).
    pub section: Section,
    /// The measurements.
    pub json: serde_json::Value,
    /// Wall time of the suite, seconds.
    pub wall_s: f64,
}

impl Options {
    /// An option that `suite` does not take, or an unknown solver name, is an error naming
    /// it.
    pub fn check(&self, suite: Suite) -> Result<()> {
        for name in self.solvers.iter().flatten().filter(|n| *n != "all") {
            registry::solver(name)?;
        }
        let misplaced = |name: &'static str, given: bool, takes: &[Suite]| {
            if given && !takes.contains(&suite) {
                Err(Error::InvalidSetting {
                    name,
                    value: "given".into(),
                    message: format!(
                        "the {} suite does not take it (only {})",
                        suite.name(),
                        takes
                            .iter()
                            .map(|s| s.name())
                            .collect::<Vec<_>>()
                            .join(", ")
                    ),
                })
            } else {
                Ok(())
            }
        };
        misplaced(
            "tol",
            self.tol.is_some(),
            &[Suite::Convergence, Suite::Accuracy],
        )?;
        misplaced("steps", self.steps.is_some(), &[Suite::Scaling])?;
        misplaced("precision", self.precisions.is_some(), &[Suite::Throughput])?;
        misplaced(
            "check-every",
            self.check_every.is_some(),
            &[Suite::Throughput],
        )?;
        Ok(())
    }
}

/// Runs the one suite `suite` with `options` and writes its charts into `dir`; `gpu` is the
/// device of the GPU rows (none: GPU rows are left out with a note). An option the suite
/// does not take is an error.
fn run_suite(
    suite: Suite,
    options: &Options,
    gpu: Option<&GpuContext>,
    dir: &Path,
    progress: &mut dyn FnMut(&str),
) -> Result<Outcome> {
    options.check(suite)?;
    std::fs::create_dir_all(dir).map_err(|source| Error::Io {
        path: dir.to_path_buf(),
        source,
    })?;
    let start = Instant::now();
    let o = options.clone();
    let has_gpu = gpu.is_some();
    let (section, json) = match suite {
        Suite::Throughput => {
            let d = throughput::Config::default();
            let config = throughput::Config {
                solvers: o.solvers.unwrap_or(d.solvers),
                sizes: o.sizes.unwrap_or(d.sizes),
                devices: o.devices.unwrap_or(d.devices),
                iterations: o.iterations.unwrap_or(d.iterations),
                precisions: o.precisions.unwrap_or(d.precisions),
                check_every: o.check_every.unwrap_or(d.check_every),
            };
            let r = throughput::run(&config, gpu, progress)?;
            (r.section(dir)?, serde_json::json!(r))
        }
        Suite::Convergence => {
            let config = convergence::default_config().with(o);
            let r = convergence::run(&config, has_gpu, progress)?;
            (r.section(dir)?, serde_json::json!(r))
        }
        Suite::Scaling => {
            let d = scaling::Config::default();
            let config = scaling::Config {
                solvers: o.solvers.unwrap_or(d.solvers),
                sizes: o.sizes.unwrap_or(d.sizes),
                devices: o.devices.unwrap_or(d.devices),
                steps: o.steps.unwrap_or(d.steps),
                max_iter: o.iterations.unwrap_or(d.max_iter),
            };
            let r = scaling::run(&config, has_gpu, progress)?;
            (r.section(dir)?, serde_json::json!(r))
        }
        Suite::Accuracy => {
            let config = accuracy::default_config().with(o);
            let r = accuracy::run(&config, has_gpu, progress)?;
            (r.section(dir)?, serde_json::json!(r))
        }
    };
    Ok(Outcome {
        section,
        json,
        wall_s: start.elapsed().as_secs_f64(),
    })
}

/// What the suites that solve scene problems (convergence, accuracy) measure.
#[derive(Debug, Clone, PartialEq)]
pub struct SceneSolves {
    /// Solver names or `all` ([`solver_runs`]).
    pub solvers: Vec<String>,
    /// Bodies per scene ([`problems::scene_cases`]); one set of seven problems per size (the last two
    /// of a fixed size).
    pub sizes: Vec<usize>,
    /// Devices to run on.
    pub devices: Vec<Device>,
    /// Iteration cap of each solve.
    pub max_iter: usize,
    /// Relative natural-map residual at which a solve stops.
    pub tol: f64,
}

impl SceneSolves {
    /// Every registered solver on the CPU and the GPU, `size` bodies per scene.
    pub fn all_solvers(size: usize, max_iter: usize, tol: f64) -> Self {
        SceneSolves {
            solvers: vec!["all".into()],
            sizes: vec![size],
            devices: vec![Device::Cpu, Device::Gpu],
            max_iter,
            tol,
        }
    }

    /// These settings with the command line's options where it gives them.
    fn with(self, o: Options) -> Self {
        SceneSolves {
            solvers: o.solvers.unwrap_or(self.solvers),
            sizes: o.sizes.unwrap_or(self.sizes),
            devices: o.devices.unwrap_or(self.devices),
            max_iter: o.iterations.unwrap_or(self.max_iter),
            tol: o.tol.unwrap_or(self.tol),
        }
    }

    /// A positive finite tolerance and at least one iteration, or an error naming them.
    pub fn validate(&self) -> Result<()> {
        if !(self.tol > 0.0 && self.tol.is_finite()) || self.max_iter == 0 {
            return Err(Error::InvalidSetting {
                name: "tol",
                value: format!("{} (iterations {})", self.tol, self.max_iter),
                message: "a positive finite tolerance and at least one iteration".into(),
            });
        }
        Ok(())
    }
}

/// A registered solver on a device, as the suites run it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SolverRun {
    /// Registry name of the solver run (`jacobi`, `jacobi-gpu`, ...).
    pub solver: String,
    /// The name without its `-gpu` suffix: rows of the same `base` compare CPU and GPU.
    pub base: String,
    /// `cpu` or `gpu`.
    pub device: &'static str,
}

impl SolverRun {
    /// The solver from the registry.
    pub fn solver(&self) -> Result<Box<dyn Solver>> {
        registry::solver(&self.solver)
    }
}

/// The runs that `--solvers` and `--device` ask for. `all` stands for every solver in the
/// registry (whatever it holds). Each name stands for its base CPU solver, which runs on
/// each device as its registered variant there; a base without a variant on a device, and
/// every GPU run when `gpu` is false, is left out with a note. An unknown name is an error
/// listing the valid ones.
pub fn solver_runs(
    solvers: &[String],
    devices: &[Device],
    gpu: bool,
    notes: &mut Vec<String>,
) -> Result<Vec<SolverRun>> {
    let mut bases: Vec<&str> = Vec::new();
    for name in solvers {
        let wanted: Vec<&str> = if name == "all" {
            registry::entries().iter().map(|e| e.base).collect()
        } else {
            // An unknown name is the registry's error, which lists the valid ones.
            vec![registry::entry(name)?.base]
        };
        for base in wanted {
            if !bases.contains(&base) {
                bases.push(base);
            }
        }
    }
    let mut runs = Vec::new();
    for base in bases {
        for &device in devices {
            if device == Device::Gpu && !gpu {
                notes.push("GPU runs skipped: no GPU adapter could be opened".into());
            } else if let Some(variant) = registry::variant(base, device) {
                runs.push(SolverRun {
                    solver: variant.name.to_string(),
                    base: base.to_string(),
                    device: device.as_str(),
                });
            } else {
                notes.push(format!(
                    "`{base}` has no {} variant in the registry: left out",
                    device.as_str().to_uppercase()
                ));
            }
        }
    }
    notes.sort();
    notes.dedup();
    Ok(runs)
}

/// Opens the GPU when `devices` asks for it; without one, a note says why.
pub fn open_gpu(devices: &[Device], notes: &mut Vec<String>) -> Option<Arc<GpuContext>> {
    if !devices.contains(&Device::Gpu) {
        return None;
    }
    match GpuContext::new() {
        Ok(ctx) => Some(Arc::new(ctx)),
        Err(e) => {
            notes.push(format!("no GPU rows: {e}"));
            None
        }
    }
}

/// The first trace entry at or below `threshold`: `(iteration, seconds)`.
pub fn first_below(trace: &[TraceEntry], threshold: f64) -> Option<(usize, f64)> {
    trace
        .iter()
        .find(|t| t.residual <= threshold)
        .map(|t| (t.iteration, t.time_s))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn all_selects_the_four_suites_in_report_order() {
        use clap::ValueEnum;
        let parse = |name| Selection::from_str(name, false).unwrap();
        assert_eq!(
            parse("all").members(),
            [
                Suite::Throughput,
                Suite::Convergence,
                Suite::Scaling,
                Suite::Accuracy
            ]
        );
        for suite in parse("all").members() {
            assert_eq!(parse(suite.name()), Selection::One(suite));
            assert_eq!(parse(suite.name()).members(), [suite]);
        }
        assert!(Selection::from_str("every", false).is_err());
    }

    #[test]
    fn sizes_accept_integers_and_scientific_notation() {
        assert_eq!(
            parse_sizes("1000, 1e4,2.5e3", "sizes").unwrap(),
            [1000, 10_000, 2500]
        );
        for bad in ["", "0", "1e-3", "1.5", "x", "1e400"] {
            assert!(parse_sizes(bad, "sizes").is_err(), "{bad}");
        }
    }

    #[test]
    fn solver_runs_follow_the_registry() {
        let mut notes = Vec::new();
        let all = solver_runs(
            &["all".into()],
            &[Device::Cpu, Device::Gpu],
            true,
            &mut notes,
        )
        .unwrap();
        // Every registered name appears exactly once, on its own device.
        let mut names: Vec<_> = all.iter().map(|r| r.solver.as_str()).collect();
        names.sort();
        let mut registered = registry::names();
        registered.sort();
        assert_eq!(names, registered);
        for r in &all {
            assert_eq!(r.device == "gpu", r.solver.ends_with("-gpu"), "{r:?}");
        }
        // pgs has no GPU variant (a note says so) unless the registry gains one.
        let mut notes = Vec::new();
        let runs = solver_runs(&["pgs".into()], &[Device::Gpu], true, &mut notes).unwrap();
        assert_eq!(
            runs.is_empty(),
            registry::variant("pgs", Device::Gpu).is_none(),
            "{runs:?}"
        );
        assert_eq!(notes.is_empty(), !runs.is_empty(), "{notes:?}");
        let mut notes = Vec::new();
        let runs = solver_runs(
            &["jacobi".into()],
            &[Device::Cpu, Device::Gpu],
            false,
            &mut notes,
        )
        .unwrap();
        assert_eq!(runs.len(), 1);
        assert!(notes[0].contains("GPU"));
        assert!(matches!(
            solver_runs(&["nope".into()], &[Device::Cpu], true, &mut notes),
            Err(Error::UnknownSolver { .. })
        ));
    }

    #[test]
    fn first_below_finds_the_first_crossing() {
        let trace: Vec<TraceEntry> = [1.0, 1e-3, 1e-5, 1e-4, 1e-7]
            .iter()
            .enumerate()
            .map(|(k, &residual)| TraceEntry {
                iteration: 10 * k,
                residual,
                natural_map_inf: residual,
                time_s: k as f64,
                products: k,
            })
            .collect();
        assert_eq!(first_below(&trace, 1e-4), Some((20, 2.0)));
        assert_eq!(first_below(&trace, 1e-8), None);
    }
}
