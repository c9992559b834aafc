//! The `signorini` command line: `solve` and `check` problem files, `simulate` scenes.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand};
use serde_json::json;

use indicatif::{ProgressBar, ProgressStyle};
use signorini::bench::report::{BenchReport, Machine, command_line};
use signorini::bench::{self, Suite};
use signorini::limits::{self, Limits};
use signorini::problem::io::{self, Format};
use signorini::problem::{FrictionModel, System};
use signorini::registry::Device;
use signorini::report::convergence::{DEFAULT_SIZE, Series, write_convergence_plot};
use signorini::solver::{Criterion, Report, Runner, Settings, Solver, Status};
use signorini::{registry, sim};

/// Cone complementarity solvers for non-smooth multibody dynamics.
#[derive(Parser)]
#[command(name = "signorini", version, about)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

/// Options shared by `solve` and `check`.
#[derive(clap::Args)]
struct SolveOptions {
    /// Problem file: native `.json` or `.bin`, Siconos `.dat`, FCLIB `.hdf5` (feature `fclib`).
    file: PathBuf,
    /// File format, when the name does not tell it: json, bin, fclib, siconos-lcp,
    /// siconos-mlcp, siconos-fc3d, siconos-gfc3d, siconos-gmp.
    #[arg(long)]
    format: Option<Format>,
    /// Friction model: ccp (convex relaxation) or coulomb (De Saxcé).
    #[arg(long, default_value = "ccp")]
    friction: FrictionModel,
    /// Residual the tolerance applies to: relative (scale-free, like Siconos' errors) or
    /// velocity (each block's natural map divided by its step, in velocity units).
    #[arg(long, default_value = "relative")]
    criterion: Criterion,
    /// Tolerance on that residual.
    #[arg(long, default_value_t = Settings::default().tol)]
    tol: f64,
    /// Iteration cap.
    #[arg(long, default_value_t = Settings::default().max_iter)]
    max_iter: usize,
    /// Relaxation ω (default: the solver's own).
    #[arg(long)]
    omega: Option<f64>,
    /// Print one JSON object on stdout instead of a table.
    #[arg(long)]
    json: bool,
    /// cpu, or gpu for the `-gpu` variant of each solver (the CPU one, with a note, when
    /// no GPU adapter exists).
    #[arg(long, default_value = "cpu")]
    device: Device,
    /// Memory limit of the prepared problem (`512M`, `8GiB`; default half the machine's).
    #[arg(long, value_parser = limits::parse_size)]
    max_memory: Option<u64>,
}

/// The suites of `signorini bench`.
#[derive(Clone, Copy, PartialEq, clap::ValueEnum)]
enum SuiteArg {
    /// Contact-iterations per second, CPU vs GPU, and the fraction of the bandwidth.
    Throughput,
    /// Residual vs iteration and vs wall time on B1–B4 and balls_in_box, every solver.
    Convergence,
    /// Time per simulation step vs bodies, split into collision, assembly, solve, output.
    Scaling,
    /// Every solver's merit set against a reference solve; GPU f32 vs CPU f64.
    Accuracy,
    /// The four suites at their default sizes, in one report.
    All,
}

#[derive(Subcommand)]
enum Command {
    /// List the GPU adapters wgpu finds (pick one with the environment variable
    /// `SIGNORINI_ADAPTER`, a substring of its name).
    Info,
    /// Run a benchmark suite and write `DIR/report.md` (tables, charts, machine, the command
    /// that reproduces it) and one CSV per table.
    Bench {
        /// The suite: throughput, convergence, scaling, accuracy, or all (the four at their
        /// defaults).
        suite: SuiteArg,
        /// Solver names, comma-separated, or `all` (the GPU rows run their `-gpu`
        /// variants). Default: jacobi (throughput), pgs,jacobi (scaling), all (others).
        #[arg(long, value_delimiter = ',')]
        solvers: Option<Vec<String>>,
        /// Sizes, comma-separated (`1e3,1e4`): contacts (throughput, default 1e3,1e4,1e5),
        /// bodies (scaling, default 1000,4000,16000), bodies per scene (convergence,
        /// default 300; accuracy, default 100).
        #[arg(long)]
        sizes: Option<String>,
        /// Devices, comma-separated: cpu, gpu (default both).
        #[arg(long, value_delimiter = ',')]
        device: Option<Vec<Device>>,
        /// Iterations per measurement (throughput, default 100) or iteration cap of each
        /// solve (convergence 3000, scaling 100 per step, accuracy 5000).
        #[arg(long)]
        iterations: Option<usize>,
        /// Relative residual tolerance (convergence 1e-6, accuracy 1e-8).
        #[arg(long)]
        tol: Option<f64>,
        /// Steps per simulation (scaling, default 10).
        #[arg(long)]
        steps: Option<usize>,
        /// Output folder of the report, CSVs and charts.
        #[arg(long, default_value = "out/bench")]
        out: PathBuf,
        /// Print one JSON object (the measurements) on stdout instead of the report.
        #[arg(long)]
        json: bool,
    },
    /// Solve one problem file and print the merit set, status, iterations and time.
    Solve {
        #[command(flatten)]
        options: SolveOptions,
        /// Solver name (see the error message of an unknown name for the list).
        #[arg(long, default_value = "pgs")]
        solver: String,
    },
    /// Simulate a scene: progress bar, `DIR/steps.csv`, PNG snapshots, optional VTK frames,
    /// and a summary.
    Simulate {
        /// Scene file (TOML), e.g. `scenes/balls_in_box.toml`.
        scene: PathBuf,
        /// Number of steps (default: the scene's `run.steps`).
        #[arg(long)]
        steps: Option<usize>,
        /// Solver name (default: the scene's `run.solver`).
        #[arg(long)]
        solver: Option<String>,
        /// Override a scene value, e.g. `--set lattice.0.count=20000` (repeatable).
        #[arg(long = "set", value_name = "KEY=VALUE", value_parser = parse_set)]
        sets: Vec<(String, String)>,
        /// Output folder (default: `out/<scene name>`).
        #[arg(long)]
        out: Option<PathBuf>,
        /// Snapshot interval in steps, 0 for none (default: the scene's `run.snapshot_every`).
        #[arg(long)]
        snapshot_every: Option<usize>,
        /// Also write VTK frames readable by ParaView (`frame_XXXX.vtk`, `frames.pvd`).
        #[arg(long)]
        vtk: bool,
        /// Write the problem of these steps (1-based, comma-separated) to
        /// `DIR/problem_XXXX.<ext>` before solving it, for `solve` and `check`.
        #[arg(long, value_delimiter = ',')]
        dump_step: Vec<usize>,
        /// Also write the problem of every N-th step (0 for none).
        #[arg(long, value_name = "N", default_value_t = 0)]
        dump_every: usize,
        /// Format of the dumped problems: json, bin (large problems) or fclib (FCLIB HDF5,
        /// needs the `fclib` feature and frictional contacts only).
        #[arg(long, default_value = "json")]
        dump_format: Format,
        /// Print one JSON object with the totals on stdout instead of the summary table.
        #[arg(long)]
        json_summary: bool,
        /// cpu, or gpu for the `-gpu` variant of the solver (the CPU one, with a note, when
        /// no GPU adapter exists).
        #[arg(long, default_value = "cpu")]
        device: Device,
        /// Exit with status 3 when a step missed the solver's tolerance (4 when one had no
        /// usable answer); the summary counts them either way.
        #[arg(long)]
        require_convergence: bool,
        /// Memory limit of the scene's bodies and contacts (`512M`, `8GiB`; default half the
        /// machine's), checked before it is built.
        #[arg(long, value_parser = limits::parse_size)]
        max_memory: Option<u64>,
    },
    /// Convert a problem file: the extensions pick the formats (`.dat` and `.json`, `.bin`,
    /// `.hdf5` for FCLIB, which needs the `fclib` feature); FCLIB to FCLIB keeps the info,
    /// solution and guesses.
    Convert {
        /// Input file.
        input: PathBuf,
        /// Output file.
        output: PathBuf,
        /// Input format, when the name does not tell it (as for `solve`).
        #[arg(long)]
        format: Option<Format>,
        /// Output format, when the name does not tell it: json, bin or fclib.
        #[arg(long)]
        to: Option<Format>,
    },
    /// Run several solvers on one problem and compare them side by side.
    Check {
        #[command(flatten)]
        options: SolveOptions,
        /// Comma-separated solver names.
        #[arg(long, value_delimiter = ',', default_value = "jacobi,pgs")]
        solvers: Vec<String>,
        /// Also draw residual vs iteration and vs time of every solver into this PNG.
        #[arg(long)]
        plot: Option<PathBuf>,
        /// Also write each solver's trace to `DIR/<solver>.csv` (iteration, residual,
        /// natural_map_inf, time_s, products).
        #[arg(long, value_name = "DIR")]
        trace: Option<PathBuf>,
    },
}

/// How a command ended, and its exit status: 0 done (every solve converged), 3 an answer
/// that missed the tolerance, 4 no usable answer; 1 is an error, 2 a usage error (clap).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Outcome {
    /// Exit status 0.
    Done,
    /// Exit status 3: `max_iterations` or `stalled`.
    Missed,
    /// Exit status 4: `numerical_error`, `no_solution` or `infeasible`.
    NoAnswer,
}

impl Outcome {
    /// The outcome of a solve that ended with `status`.
    fn of(status: Status) -> Self {
        match status {
            Status::Converged => Outcome::Done,
            Status::MaxIterations | Status::Stalled => Outcome::Missed,
            Status::NumericalError | Status::NoSolution | Status::Infeasible => Outcome::NoAnswer,
        }
    }
}

fn main() -> ExitCode {
    match run(Cli::parse()) {
        Ok(Outcome::Done) => ExitCode::SUCCESS,
        Ok(Outcome::Missed) => ExitCode::from(3),
        Ok(Outcome::NoAnswer) => ExitCode::from(4),
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::FAILURE
        }
    }
}

/// The memory limit of `--max-memory`, or the default one.
fn limits(max_memory: Option<u64>) -> Limits {
    max_memory.map_or_else(Limits::default, |max_memory| Limits { max_memory })
}

/// The solver `name` on `device`; a CPU fallback's note goes to stderr.
fn pick(name: &str, device: Device) -> signorini::Result<Box<dyn Solver>> {
    let (solver, note) = registry::solver_on(name, device)?;
    if let Some(note) = note {
        eprintln!("note: {note}");
    }
    Ok(solver)
}

fn parse_set(s: &str) -> Result<(String, String), String> {
    s.split_once('=')
        .map(|(k, v)| (k.trim().to_string(), v.trim().to_string()))
        .ok_or_else(|| format!("`{s}` is not KEY=VALUE"))
}

fn run(cli: Cli) -> signorini::Result<Outcome> {
    match cli.command {
        Command::Bench {
            suite,
            solvers,
            sizes,
            device,
            iterations,
            tol,
            steps,
            out,
            json,
        } => {
            let suites: Vec<Suite> = match suite {
                SuiteArg::All => Suite::ALL.to_vec(),
                SuiteArg::Throughput => vec![Suite::Throughput],
                SuiteArg::Convergence => vec![Suite::Convergence],
                SuiteArg::Scaling => vec![Suite::Scaling],
                SuiteArg::Accuracy => vec![Suite::Accuracy],
            };
            let sized = sizes.is_some() || iterations.is_some() || tol.is_some();
            if suite == SuiteArg::All && (sized || steps.is_some()) {
                return Err(signorini::Error::InvalidSetting {
                    name: "suite",
                    value: "all".into(),
                    message: "`all` runs each suite at its defaults; give --sizes, \
                              --iterations, --tol or --steps with one suite"
                        .into(),
                });
            }
            let options = bench::Options {
                solvers,
                sizes: sizes.map(|s| bench::parse_sizes(&s, "sizes")).transpose()?,
                devices: device,
                iterations,
                tol,
                steps,
            };
            for s in &suites {
                options.check(*s)?;
            }
            let start = std::time::Instant::now();
            let mut notes = Vec::new();
            let devices = options
                .devices
                .clone()
                .unwrap_or(vec![Device::Cpu, Device::Gpu]);
            let gpu = bench::open_gpu(&devices, &mut notes);
            let mut sections = Vec::new();
            let mut results = serde_json::Map::new();
            for s in suites {
                eprintln!("suite {}", s.name());
                let outcome = bench::run_suite(s, &options, gpu.as_deref(), &out, &mut |line| {
                    eprintln!("  {line}")
                })?;
                eprintln!("suite {} took {:.1} s", s.name(), outcome.wall_s);
                let mut section = outcome.section;
                section.notes.extend(notes.iter().cloned());
                section
                    .text
                    .push(format!("Suite wall time: {:.1} s.", outcome.wall_s));
                sections.push(section);
                results.insert(s.name().into(), outcome.json);
            }
            let report = BenchReport {
                command: command_line(std::env::args().skip(1)),
                machine: Machine::detect(gpu.as_ref().map(|c| c.adapter_summary())),
                sections,
                wall_s: start.elapsed().as_secs_f64(),
            };
            report.write(&out)?;
            eprintln!("report: {}", out.join("report.md").display());
            if json {
                let value = json!({
                    "report": out.join("report.md"),
                    "machine": report.machine,
                    "suites": results,
                });
                println!("{value}");
            } else {
                print!("{}", report.markdown());
            }
        }
        Command::Info => {
            let adapters = signorini::gpu::adapters();
            if adapters.is_empty() {
                println!(
                    "no GPU adapter found (without a GPU, install Mesa's software Vulkan driver, \
                     Debian package mesa-vulkan-drivers)"
                );
            }
            for (i, a) in adapters.iter().enumerate() {
                println!(
                    "{i}: {} ({}, {}, driver: {}, max storage binding: {} MiB)",
                    a.name,
                    a.backend,
                    a.device_type,
                    a.driver,
                    a.max_storage_binding_size >> 20
                );
            }
            println!(
                "pick one with {}=<part of its name>",
                signorini::gpu::ADAPTER_ENV
            );
        }
        Command::Simulate {
            scene,
            steps,
            solver,
            sets,
            out,
            snapshot_every,
            vtk,
            dump_step,
            dump_every,
            dump_format,
            json_summary,
            device,
            require_convergence,
            max_memory,
        } => {
            let mut scene = sim::scene::load_within(&scene, &sets, &limits(max_memory))?;
            for warning in &scene.warnings {
                eprintln!("warning: {warning}");
            }
            let solver = pick(solver.as_deref().unwrap_or(&scene.run.solver), device)?;
            let steps = steps.unwrap_or(scene.run.steps);
            let outputs = sim::run::Outputs {
                dir: out.unwrap_or_else(|| PathBuf::from("out").join(&scene.name)),
                snapshot_every: snapshot_every.unwrap_or(scene.run.snapshot_every),
                vtk,
                dump_steps: dump_step,
                dump_every,
                dump_format,
            };
            let bar = ProgressBar::new(steps as u64).with_style(
                ProgressStyle::with_template(
                    "{bar:40} {pos}/{len} steps  {msg}  [{elapsed_precise} < {eta}]",
                )
                .expect("a valid template"),
            );
            let summary =
                sim::run::run(&mut scene, &mut Runner::new(solver), steps, &outputs, |s| {
                    bar.set_message(format!(
                        "{} contacts, {} iterations",
                        s.contacts, s.iterations
                    ));
                    bar.inc(1);
                })?;
            bar.finish_and_clear();
            if json_summary {
                println!("{}", serde_json::to_string(&summary).expect("serializable"));
            } else {
                print_summary(&summary, &outputs.dir);
            }
            if require_convergence {
                return Ok(if summary.steps_without_answer > 0 {
                    Outcome::NoAnswer
                } else if summary.steps_not_converged > 0 {
                    Outcome::Missed
                } else {
                    Outcome::Done
                });
            }
        }
        Command::Convert {
            input,
            output,
            format,
            to,
        } => convert(&input, &output, format, to)?,
        Command::Solve { options, solver } => {
            let (sys, settings) = prepare(&options)?;
            let report = pick(&solver, options.device)?.solve(&sys, &settings)?;
            let outcome = Outcome::of(report.status);
            if options.json {
                println!("{}", report_json(&report));
            } else {
                print_table(&sys, &[report]);
            }
            return Ok(outcome);
        }
        Command::Check {
            options,
            solvers,
            plot,
            trace,
        } => {
            let (sys, settings) = prepare(&options)?;
            let solvers = solvers
                .iter()
                .map(|name| pick(name, options.device))
                .collect::<signorini::Result<Vec<_>>>()?;
            let reports = solvers
                .iter()
                .map(|s| s.solve(&sys, &settings))
                .collect::<signorini::Result<Vec<_>>>()?;
            let diff = max_difference(&reports);
            if let Some(path) = &plot {
                let series: Vec<_> = reports
                    .iter()
                    .map(|r| Series {
                        label: &r.solver,
                        trace: &r.trace,
                    })
                    .collect();
                write_convergence_plot(path, sys.name(), &series, DEFAULT_SIZE)?;
            }
            if let Some(dir) = &trace {
                write_traces(dir, &reports)?;
            }
            if options.json {
                let results: Vec<_> = reports.iter().map(report_json).collect();
                let out = json!({
                    "problem": sys.name(),
                    "results": results,
                    "max_gamma_difference": diff,
                });
                println!("{out}");
            } else {
                print_table(&sys, &reports);
                println!("largest difference between impulse vectors (∞-norm): {diff:.3e}");
            }
        }
    }
    Ok(Outcome::Done)
}

/// `signorini convert`: reads, writes, and says what was written (the library refuses an
/// output that is the input).
fn convert(
    input: &std::path::Path,
    output: &std::path::Path,
    format: Option<Format>,
    to: Option<Format>,
) -> signorini::Result<()> {
    let done = io::convert(input, output, format, to)?;
    if let Some(note) = &done.note {
        eprintln!("note: {note}");
    }
    println!(
        "{} -> {} ({} blocks, {} rows)",
        input.display(),
        output.display(),
        done.problem.cones.len(),
        done.problem.rows()
    );
    Ok(())
}

fn prepare(o: &SolveOptions) -> signorini::Result<(System, Settings)> {
    let read = io::read_detected(&o.file, o.format)?;
    if let Some(note) = &read.note {
        eprintln!("note: {note}");
    }
    let sys = System::with_limits(&read.problem, &limits(o.max_memory))?;
    let settings = Settings {
        friction: o.friction,
        criterion: o.criterion,
        tol: o.tol,
        max_iter: o.max_iter,
        omega: o.omega,
        ..Settings::default()
    };
    settings.validate(sys.rows())?;
    Ok((sys, settings))
}

/// The JSON object of one solve: solver, status, iterations, time and the merit set.
fn report_json(r: &Report) -> serde_json::Value {
    json!({
        "solver": r.solver,
        "status": r.status,
        "iterations": r.iterations,
        "time_s": r.time_s,
        "merit": r.merit,
    })
}

/// Writes `DIR/<solver>.csv` with the trace of each report.
fn write_traces(dir: &std::path::Path, reports: &[Report]) -> signorini::Result<()> {
    let io = |path: &std::path::Path| {
        let path = path.to_path_buf();
        move |source| signorini::Error::Io { path, source }
    };
    std::fs::create_dir_all(dir).map_err(io(dir))?;
    for r in reports {
        let path = dir.join(format!("{}.csv", r.solver));
        let mut text = String::from("iteration,residual,natural_map_inf,time_s,products\n");
        for t in &r.trace {
            text += &format!(
                "{},{},{},{},{}\n",
                t.iteration, t.residual, t.natural_map_inf, t.time_s, t.products
            );
        }
        std::fs::write(&path, text).map_err(io(&path))?;
    }
    Ok(())
}

/// Largest ∞-norm difference between the impulse vectors of any two reports.
fn max_difference(reports: &[Report]) -> f64 {
    let mut diff = 0.0f64;
    for (i, a) in reports.iter().enumerate() {
        for b in &reports[i + 1..] {
            for (x, y) in a.gamma.iter().zip(&b.gamma) {
                diff = diff.max((x - y).abs());
            }
        }
    }
    diff
}

fn print_table(sys: &System, reports: &[Report]) {
    println!(
        "problem {} ({:?}, {} blocks, {} rows)",
        sys.name(),
        sys.class(),
        sys.blocks(),
        sys.rows()
    );
    let opt = |v: Option<f64>| v.map_or("-".to_string(), |x| format!("{x:.3e}"));
    let rows: Vec<(&str, Vec<String>)> = vec![
        ("solver", reports.iter().map(|r| r.solver.clone()).collect()),
        (
            "status",
            reports.iter().map(|r| r.status.to_string()).collect(),
        ),
        (
            "iterations",
            reports.iter().map(|r| r.iterations.to_string()).collect(),
        ),
        (
            "time [s]",
            reports
                .iter()
                .map(|r| format!("{:.3e}", r.time_s))
                .collect(),
        ),
        ("natural map ∞", col(reports, |r| r.merit.natural_map_inf)),
        ("natural map 2", col(reports, |r| r.merit.natural_map_2)),
        ("complementarity", col(reports, |r| r.merit.complementarity)),
        (
            "primal violation",
            col(reports, |r| r.merit.primal_violation),
        ),
        ("dual violation", col(reports, |r| r.merit.dual_violation)),
        ("objective", col(reports, |r| r.merit.objective)),
        (
            "siconos error",
            reports.iter().map(|r| opt(r.merit.siconos_error)).collect(),
        ),
        (
            "fclib merit",
            reports.iter().map(|r| opt(r.merit.fclib_merit)).collect(),
        ),
    ];
    for (label, values) in rows {
        print!("{label:<18}");
        for v in values {
            print!(" {v:>16}");
        }
        println!();
    }
}

fn col(reports: &[Report], f: impl Fn(&Report) -> f64) -> Vec<String> {
    reports.iter().map(|r| format!("{:.3e}", f(r))).collect()
}

fn print_summary(s: &sim::run::Summary, dir: &std::path::Path) {
    let rows = [
        ("scene", s.scene.clone()),
        ("solver", s.solver.clone()),
        ("bodies", s.bodies.to_string()),
        (
            "steps",
            format!("{} ({:.3} s simulated)", s.steps, s.simulated_time),
        ),
        ("contacts (max)", s.max_contacts.to_string()),
        ("bilateral rows", s.bilateral_rows.to_string()),
        (
            "iterations",
            format!("{:.1} mean, {} max", s.mean_iterations, s.max_iterations),
        ),
        ("residual (max)", format!("{:.3e}", s.max_residual)),
        ("convergence", s.convergence_line()),
        ("penetration (max)", format!("{:.3e} m", s.max_penetration)),
        (
            "kinetic energy",
            format!("{:.4e} J", s.final_kinetic_energy),
        ),
        ("wall time", format!("{:.3} s", s.wall_s)),
        (
            "  collision",
            format!(
                "{:.3} s ({:.0} %)",
                s.collision_s,
                100.0 * s.collision_s / s.wall_s
            ),
        ),
        (
            "  assembly",
            format!(
                "{:.3} s ({:.0} %)",
                s.assembly_s,
                100.0 * s.assembly_s / s.wall_s
            ),
        ),
        (
            "  solve",
            format!("{:.3} s ({:.0} %)", s.solve_s, 100.0 * s.solve_s / s.wall_s),
        ),
        (
            "  output",
            format!(
                "{:.3} s ({:.0} %)",
                s.output_s,
                100.0 * s.output_s / s.wall_s
            ),
        ),
        (
            "output",
            format!("{} ({} snapshots)", dir.display(), s.snapshots),
        ),
    ];
    for (label, value) in rows {
        println!("{label:<18} {value}");
    }
}
