//! The `signorini` command line: `solve` and `check` problem files, `simulate` scenes.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand};
use indicatif::{ProgressBar, ProgressStyle};
use serde_json::json;

use signorini::app::bench::report::command_line;
use signorini::app::bench::{self, Selection};
use signorini::app::check::{self, Check};
use signorini::app::report::frame::FrameOptions;
use signorini::app::report::{drives, tables};
use signorini::app::run::{Outputs, run as simulate};
use signorini::app::view::{self, Key, ViewOptions};
use signorini::limits::{self, Limits};
use signorini::problem::FrictionModel;
use signorini::problem::io::{self, Format};
use signorini::registry::{self, Device};
use signorini::render::{CameraSpec, ColorField};
use signorini::solver::{Criterion, Precision, Runner, Settings, Solver, Status};
use signorini::{gpu, sim};

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
    /// Floating-point type of the iterations of the CPU kernels (jacobi, pgs-colored on a
    /// factored problem): f32 or f64. The reported residual and merit set are f64.
    #[arg(long, default_value = "f64")]
    precision: Precision,
    /// The CPU kernels (jacobi, pgs-colored on a factored problem) measure the residual of
    /// every N-th iterate and of the last (the stopping tests see those); the others, of
    /// every iterate.
    #[arg(long, value_name = "N", default_value_t = 1)]
    check_every: usize,
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

/// Options of a run of a scene, shared by `simulate` and `view --live`.
#[derive(clap::Args)]
struct RunOptions {
    /// Number of steps (default: the scene's `run.steps`).
    #[arg(long)]
    steps: Option<usize>,
    /// Solver name (default: the scene's `run.solver`).
    #[arg(long)]
    solver: Option<String>,
    /// Override a scene value, e.g. `--set lattice.0.count=20000` (repeatable).
    #[arg(long = "set", value_name = "KEY=VALUE", value_parser = parse_set)]
    sets: Vec<(String, String)>,
    /// Floating-point type of the iterations of the CPU kernels (jacobi, pgs-colored): f32
    /// or f64 (default: the scene's `settings.precision`). Residuals stay f64.
    #[arg(long)]
    precision: Option<Precision>,
    /// Output folder (default: `out/<scene name>`).
    #[arg(long)]
    out: Option<PathBuf>,
    /// cpu, or gpu for the `-gpu` variant of the solver (the CPU one, with a note, when no
    /// GPU adapter exists).
    #[arg(long, default_value = "cpu")]
    device: Device,
    /// Memory limit of the scene's bodies and contacts (`512M`, `8GiB`; default half the
    /// machine's), checked before it is built.
    #[arg(long, value_parser = limits::parse_size)]
    max_memory: Option<u64>,
}

/// A scene loaded for a run (its warnings on stderr), its solver, the number of steps and the
/// output folder.
fn prepare_run(
    scene: &std::path::Path,
    o: RunOptions,
) -> signorini::Result<(sim::scene::Scene, Runner, usize, PathBuf)> {
    let mut scene = sim::scene::load_within(scene, &o.sets, &limits(o.max_memory))?;
    if let Some(precision) = o.precision {
        scene.world.settings.precision = precision;
    }
    for warning in &scene.warnings {
        eprintln!("warning: {warning}");
    }
    let solver = pick(o.solver.as_deref().unwrap_or(&scene.run.solver), o.device)?;
    let steps = o.steps.unwrap_or(scene.run.steps);
    let dir = o
        .out
        .unwrap_or_else(|| PathBuf::from("out").join(&scene.name));
    Ok((scene, Runner::new(solver), steps, dir))
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
        suite: Selection,
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
        /// Precisions of the CPU kernels' rows, comma-separated: f32, f64 (throughput,
        /// default f64).
        #[arg(long, value_delimiter = ',')]
        precision: Option<Vec<Precision>>,
        /// Residual frequency of the CPU kernels' rows: every N-th iterate and the last
        /// (throughput, default 1).
        #[arg(long, value_name = "N")]
        check_every: Option<usize>,
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
        #[command(flatten)]
        run: RunOptions,
        /// Snapshot interval in steps, 0 for none (default: the scene's `run.snapshot_every`).
        #[arg(long)]
        snapshot_every: Option<usize>,
        /// Also write VTK frames readable by ParaView (`frame_XXXX.vtk`, `frames.pvd`).
        #[arg(long)]
        vtk: bool,
        /// Also assemble the snapshots into an animation: `.gif`, `.apng`, or `.mp4` (through
        /// ffmpeg when it is on PATH, else written as `.apng`).
        #[arg(long, value_name = "FILE")]
        animation: Option<PathBuf>,
        /// Also stream the bodies' poses at the snapshots to this trajectory file (f32, 34
        /// bytes per body per frame), which `signorini view` replays.
        #[arg(long, value_name = "FILE")]
        trajectory: Option<PathBuf>,
        /// Camera of the snapshots: three-quarter, front, side, top, or
        /// `eye=X,Y,Z:target=X,Y,Z[:fov=DEG]`.
        #[arg(long, default_value = "three-quarter")]
        camera: CameraSpec,
        /// What colors the bodies: speed, contacts, impulse (contact impulse), body-id.
        #[arg(long, default_value = "speed")]
        color_by: ColorField,
        /// Size of the snapshots, WIDTHxHEIGHT pixels.
        #[arg(long, default_value = "960x600", value_parser = parse_size)]
        frame_size: (u32, u32),
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
        /// With a GPU solver: auto takes the GPU-resident step (collision, assembly, solve
        /// and integration on the GPU) where the scene qualifies (spheres against planes,
        /// `jacobi-gpu`); gpu-solve keeps collision and assembly on the CPU.
        #[arg(long, default_value = "auto")]
        pipeline: PipelineChoice,
        /// With a GPU solver: measure each step's answer again in f64 on the CPU, so that
        /// the residuals of `steps.csv` certify it (the gpu-solve pipeline; without it they
        /// are the GPU's own f32 measures).
        #[arg(long)]
        certify: bool,
        /// Exit with status 3 when a step missed the solver's tolerance (4 when one had no
        /// usable answer); the summary counts them either way.
        #[arg(long)]
        require_convergence: bool,
    },
    /// Replay a run in a window from its trajectory file (`simulate --trajectory`), or with
    /// `--live` simulate a scene while showing it. Mouse: left drag orbits, right drag (or
    /// shift + left) pans, the wheel zooms. Keys: space plays or pauses, left and right step,
    /// Home and End, `c` cycles the color field (speed, contacts, body id), Escape quits.
    /// Needs an X11 display (XWayland on Wayland); without one, use `simulate --animation`.
    View {
        /// A trajectory file, a run's folder holding one, or with `--live` a scene file.
        path: PathBuf,
        /// Simulate the scene file `PATH` as it is shown (its outputs and its trajectory,
        /// `trajectory.traj`, go to `--out`).
        #[arg(long)]
        live: bool,
        /// With --live: the run (its options as for `simulate`).
        #[command(flatten)]
        run: RunOptions,
        /// With --live: show every N-th step.
        #[arg(long, value_name = "N", default_value_t = 1)]
        every: usize,
        /// Camera at the start: three-quarter, front, side, top, or
        /// `eye=X,Y,Z:target=X,Y,Z[:fov=DEG]`.
        #[arg(long, default_value = "three-quarter")]
        camera: CameraSpec,
        /// Color field at the start: speed, contacts, body-id.
        #[arg(long, default_value = "speed")]
        color_by: ColorField,
        /// Window size, WIDTHxHEIGHT pixels.
        #[arg(long, default_value = "960x600", value_parser = parse_size)]
        size: (u32, u32),
        /// Keys to press, one per frame shown after the first, comma-separated (space,
        /// right, left, home, end, c); the replay then starts paused.
        #[arg(long, value_delimiter = ',')]
        script: Vec<Key>,
        /// Save the first frame shown and the one after each key of --script as
        /// `DIR/view_K.png`, then close the window.
        #[arg(long, value_name = "DIR")]
        screenshot: Option<PathBuf>,
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
    /// Draw the force against the displacement of runs' prescribed linear drives (their
    /// `force_displacement.csv`, one panel per run) into a PNG, with a reference stiffness.
    ForceChart {
        /// The runs, `CAPTION=PATH` each: PATH a run's output folder or its
        /// `force_displacement.csv`.
        #[arg(required = true, value_parser = parse_set)]
        runs: Vec<(String, String)>,
        /// A line `F = k d` drawn in every panel, `LABEL=K` with K in N/m (e.g.
        /// `48EI/L³=12000`).
        #[arg(long, value_parser = parse_set)]
        reference: Option<(String, String)>,
        /// Title above the panels.
        #[arg(long, default_value = "force against displacement")]
        title: String,
        /// The PNG to write.
        #[arg(long)]
        out: PathBuf,
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

/// `simulate --pipeline`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
enum PipelineChoice {
    /// The GPU-resident step where the scene and solver qualify.
    Auto,
    /// Collision and assembly on the CPU, the solve on the GPU.
    GpuSolve,
}

/// How a command ended, and its exit status: 0 done (every solve converged), 3 an answer
/// that missed the tolerance, 4 no usable answer; 1 is an error, 2 a usage error (clap).
/// Ordered from best to worst: a command of several solves ends with the worst.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
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

/// The memory limit of `--max-memory`, or the default one.
fn limits(max_memory: Option<u64>) -> Limits {
    max_memory.map_or_else(Limits::default, |max_memory| Limits { max_memory })
}

fn main() -> ExitCode {
    #[cfg(unix)]
    private_runtime_dir::ensure();
    match dispatch(Cli::parse()) {
        Ok(Outcome::Done) => ExitCode::SUCCESS,
        Ok(Outcome::Missed) => ExitCode::from(3),
        Ok(Outcome::NoAnswer) => ExitCode::from(4),
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::FAILURE
        }
    }
}

/// A private `XDG_RUNTIME_DIR` for the Vulkan loader: without one, Mesa's drivers (through
/// libwayland) print "error: XDG_RUNTIME_DIR is invalid or not set" on every adapter query.
/// The crate forbids `unsafe`, so the variable cannot be set in this process: the binary runs
/// itself again with it set instead.
#[cfg(unix)]
mod private_runtime_dir {
    use std::ffi::OsString;
    use std::fs;
    use std::os::unix::fs::{DirBuilderExt, MetadataExt, PermissionsExt};
    use std::os::unix::process::CommandExt;
    use std::path::{Path, PathBuf};

    /// Set in the re-executed process, so that it never runs itself again.
    const GUARD: &str = "SIGNORINI_RUNTIME_DIR_SET";

    /// Whether `dir` is a runtime directory by the XDG spec: an absolute path to a directory
    /// owned by `uid` with mode 0700 (symbolic links not followed).
    fn private(dir: &Path, uid: u32) -> bool {
        dir.is_absolute()
            && fs::symlink_metadata(dir).is_ok_and(|m| {
                m.is_dir() && m.uid() == uid && m.permissions().mode() & 0o777 == 0o700
            })
    }

    /// `$TMPDIR/signorini-runtime-<uid>`, created with mode 0700 (or its mode repaired when
    /// it is ours); `None` when it cannot be made private (someone else's, not writable).
    fn make(uid: u32) -> Option<PathBuf> {
        let dir = std::env::temp_dir().join(format!("signorini-runtime-{uid}"));
        if fs::symlink_metadata(&dir).is_err() {
            fs::DirBuilder::new().mode(0o700).create(&dir).ok()?;
        }
        let meta = fs::symlink_metadata(&dir).ok()?;
        if meta.is_dir() && meta.uid() == uid && meta.permissions().mode() & 0o777 != 0o700 {
            fs::set_permissions(&dir, fs::Permissions::from_mode(0o700)).ok()?;
        }
        private(&dir, uid).then_some(dir)
    }

    /// Runs this binary again, same arguments, with `XDG_RUNTIME_DIR` set to a private
    /// directory when the current one is unset or not private; returns (and the process goes
    /// on as it is) when it already is, when no private one can be made, or when this is the
    /// re-executed process. The user id is the owner of `/proc/self` (Linux, where Mesa is;
    /// elsewhere nothing is done).
    pub fn ensure() {
        if std::env::var_os(GUARD).is_some() {
            return;
        }
        let Ok(uid) = fs::metadata("/proc/self").map(|m| m.uid()) else {
            return;
        };
        let current = std::env::var_os("XDG_RUNTIME_DIR").map(PathBuf::from);
        if current.is_some_and(|dir| private(&dir, uid)) {
            return;
        }
        let (Some(dir), Ok(exe)) = (make(uid), std::env::current_exe()) else {
            return;
        };
        let mut args = std::env::args_os();
        let arg0 = args.next().unwrap_or_else(|| OsString::from("signorini"));
        // `exec` returns only on failure: then this process goes on without the variable.
        let _ = std::process::Command::new(exe)
            .arg0(arg0)
            .args(args)
            .env("XDG_RUNTIME_DIR", dir)
            .env(GUARD, "1")
            .exec();
    }
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

fn parse_size(s: &str) -> Result<(u32, u32), String> {
    s.split_once('x')
        .and_then(|(w, h)| Some((w.trim().parse().ok()?, h.trim().parse().ok()?)))
        .ok_or_else(|| format!("`{s}` is not WIDTHxHEIGHT (e.g. 960x600)"))
}

/// The problem of `solve` and `check`, its `.dat` kind note on stderr.
fn load(o: &SolveOptions, settings: &Settings) -> signorini::Result<signorini::problem::System> {
    let (sys, note) = check::load(&o.file, o.format, settings, &limits(o.max_memory))?;
    if let Some(note) = note {
        eprintln!("note: {note}");
    }
    Ok(sys)
}

/// The settings of `solve` and `check`.
fn settings(o: &SolveOptions) -> Settings {
    Settings {
        friction: o.friction,
        criterion: o.criterion,
        tol: o.tol,
        max_iter: o.max_iter,
        omega: o.omega,
        precision: o.precision,
        check_every: o.check_every,
        ..Settings::default()
    }
}

/// Runs the command and prints what it returns.
fn dispatch(cli: Cli) -> signorini::Result<Outcome> {
    match cli.command {
        Command::Bench {
            suite,
            solvers,
            sizes,
            device,
            iterations,
            tol,
            steps,
            precision,
            check_every,
            out,
            json,
        } => {
            let mut options = bench::Options::parse(
                suite,
                solvers,
                sizes.as_deref(),
                device,
                iterations,
                tol,
                steps,
            )?;
            options.precisions = precision;
            options.check_every = check_every;
            let command = command_line(std::env::args().skip(1));
            let bench = bench::run(suite, &options, &out, command, &mut |line| {
                eprintln!("{line}")
            })?;
            eprintln!("report: {}", out.join("report.md").display());
            if json {
                println!("{}", bench.json(&out));
            } else {
                print!("{}", bench.report.markdown());
            }
        }
        Command::Info => print!("{}", tables::adapters(&gpu::adapters())),
        Command::Simulate {
            scene,
            run,
            snapshot_every,
            vtk,
            animation,
            trajectory,
            camera,
            color_by,
            frame_size,
            dump_step,
            dump_every,
            dump_format,
            json_summary,
            pipeline,
            certify,
            require_convergence,
        } => {
            let (mut scene, mut solver, steps, dir) = prepare_run(&scene, run)?;
            scene.world.settings.certify |= certify;
            let outputs = Outputs {
                dir,
                snapshot_every: snapshot_every.unwrap_or(scene.run.snapshot_every),
                frames: FrameOptions {
                    camera,
                    color_by,
                    width: frame_size.0,
                    height: frame_size.1,
                    animation,
                    ..FrameOptions::default()
                },
                vtk,
                no_frames: false,
                trajectory,
                dump_steps: dump_step,
                dump_every,
                dump_format,
                gpu_solve_only: pipeline == PipelineChoice::GpuSolve,
            };
            let bar = ProgressBar::new(steps as u64).with_style(
                ProgressStyle::with_template(
                    "{bar:40} {pos}/{len} steps  {msg}  [{elapsed_precise} < {eta}]",
                )
                .expect("a valid template"),
            );
            let summary = simulate(&mut scene, &mut solver, steps, &outputs, |s| {
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
                print!("{}", tables::summary(&summary, &outputs.dir));
            }
            if let Some(stopped) = &summary.stopped {
                eprintln!("error: the run stopped at {stopped}");
                return Ok(Outcome::NoAnswer);
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
        Command::View {
            path,
            live,
            run,
            every,
            camera,
            color_by,
            size,
            script,
            screenshot,
        } => {
            let options = ViewOptions {
                size,
                camera,
                color_by,
                script,
                screenshots: screenshot,
            };
            if !live {
                view::view(&path, &options)?;
                return Ok(Outcome::Done);
            }
            let (scene, solver, steps, dir) = prepare_run(&path, run)?;
            let outputs = Outputs {
                dir,
                snapshot_every: every,
                ..Outputs::default()
            };
            view::live(scene, solver, steps, outputs, &options)?;
        }
        Command::Convert {
            input,
            output,
            format,
            to,
        } => {
            let converted = io::convert(&input, &output, format, to)?;
            if let Some(note) = &converted.note {
                eprintln!("note: {note}");
            }
            let problem = converted.problem;
            println!(
                "{} -> {} ({} blocks, {} rows)",
                input.display(),
                output.display(),
                problem.cones.len(),
                problem.rows()
            );
        }
        Command::ForceChart {
            runs,
            reference,
            title,
            out,
        } => {
            let reference = reference
                .map(|(label, k)| {
                    k.parse::<f64>()
                        .ok()
                        .filter(|k| k.is_finite())
                        .map(|k| (label, k))
                        .ok_or_else(|| signorini::Error::InvalidSetting {
                            name: "--reference",
                            value: k,
                            message: "the stiffness must be a finite number of N/m".into(),
                        })
                })
                .transpose()?;
            let runs: Vec<(String, PathBuf)> = runs
                .into_iter()
                .map(|(caption, path)| {
                    let path = PathBuf::from(path);
                    let csv = if path.is_dir() {
                        path.join(drives::FILE)
                    } else {
                        path
                    };
                    (caption, csv)
                })
                .collect();
            let reference = reference.as_ref().map(|(label, k)| (label.as_str(), *k));
            drives::write_chart(&out, &title, &runs, reference)?;
            println!("{}", out.display());
        }
        Command::Solve { options, solver } => {
            let settings = settings(&options);
            let sys = load(&options, &settings)?;
            let report = pick(&solver, options.device)?.solve(&sys, &settings)?;
            let outcome = Outcome::of(report.status);
            if options.json {
                println!("{}", tables::report_json(&report));
            } else {
                print!("{}", tables::reports(&sys, &[report]));
            }
            return Ok(outcome);
        }
        Command::Check {
            options,
            solvers,
            plot,
            trace,
        } => {
            let settings = settings(&options);
            let sys = load(&options, &settings)?;
            let solvers = solvers
                .iter()
                .map(|name| pick(name, options.device))
                .collect::<signorini::Result<Vec<_>>>()?;
            let check = Check::run(&sys, &settings, &solvers)?;
            let outcome = check
                .reports
                .iter()
                .map(|r| Outcome::of(r.status))
                .max()
                .unwrap_or(Outcome::Done);
            if let Some(path) = &plot {
                check.write_plot(path, sys.name())?;
            }
            if let Some(dir) = &trace {
                check.write_traces(dir)?;
            }
            if options.json {
                let results: Vec<_> = check.reports.iter().map(tables::report_json).collect();
                let out = json!({
                    "problem": sys.name(),
                    "results": results,
                    "max_gamma_difference": check.max_difference,
                });
                println!("{out}");
            } else {
                print!("{}", tables::reports(&sys, &check.reports));
                println!(
                    "largest difference between impulse vectors (∞-norm): {:.3e}",
                    check.max_difference
                );
            }
            return Ok(outcome);
        }
    }
    Ok(Outcome::Done)
}
