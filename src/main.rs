//! The `signorini` command line: `solve` and `check` problem files.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand};
use serde_json::json;

use signorini::problem::io::{self, Format};
use signorini::problem::{FrictionModel, System};
use signorini::registry;
use signorini::solver::{Report, Settings};

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
    /// Problem file: native `.json` or Siconos `.dat`.
    file: PathBuf,
    /// File format, when the name does not tell it: json, siconos-lcp, siconos-mlcp,
    /// siconos-fc3d, siconos-gfc3d, siconos-gmp.
    #[arg(long)]
    format: Option<Format>,
    /// Friction model: ccp (convex relaxation) or coulomb (De Saxcé).
    #[arg(long, default_value = "ccp")]
    friction: FrictionModel,
    /// Tolerance on the relative natural-map residual.
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
}

#[derive(Subcommand)]
enum Command {
    /// Solve one problem file and print the merit set, status, iterations and time.
    Solve {
        #[command(flatten)]
        options: SolveOptions,
        /// Solver name (see the error message of an unknown name for the list).
        #[arg(long, default_value = "pgs")]
        solver: String,
    },
    /// Run several solvers on one problem and compare them side by side.
    Check {
        #[command(flatten)]
        options: SolveOptions,
        /// Comma-separated solver names.
        #[arg(long, value_delimiter = ',', default_value = "jacobi,pgs")]
        solvers: Vec<String>,
    },
}

fn main() -> ExitCode {
    match run(Cli::parse()) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::FAILURE
        }
    }
}

fn run(cli: Cli) -> signorini::Result<()> {
    match cli.command {
        Command::Solve { options, solver } => {
            let (sys, settings) = prepare(&options)?;
            let report = registry::solver(&solver)?.solve(&sys, &settings)?;
            if options.json {
                println!("{}", report_json(&report));
            } else {
                print_table(&sys, &[report]);
            }
        }
        Command::Check { options, solvers } => {
            let (sys, settings) = prepare(&options)?;
            let solvers = solvers
                .iter()
                .map(|name| registry::solver(name))
                .collect::<signorini::Result<Vec<_>>>()?;
            let reports = solvers
                .iter()
                .map(|s| s.solve(&sys, &settings))
                .collect::<signorini::Result<Vec<_>>>()?;
            let diff = max_difference(&reports);
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
    Ok(())
}

fn prepare(o: &SolveOptions) -> signorini::Result<(System, Settings)> {
    let problem = io::read(&o.file, o.format)?;
    let sys = System::new(&problem)?;
    let settings = Settings {
        friction: o.friction,
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
