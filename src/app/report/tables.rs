//! The text the command line prints: the table of `solve` and `check` (one column per
//! solver), the JSON object of one solve, the summary of `simulate` and the adapters of
//! `info`.

use std::path::Path;

use serde_json::json;

use crate::app::run::Summary;
use crate::gpu::{ADAPTER_ENV, AdapterSummary};
use crate::problem::System;
use crate::solver::Report;

/// The table of `solve` and `check`: a line naming the problem, then one row per figure
/// (status, iterations, time, the merit set) with one column per report.
pub fn reports(sys: &System, reports: &[Report]) -> String {
    let mut out = format!(
        "problem {} ({:?}, {} blocks, {} rows)\n",
        sys.name(),
        sys.class(),
        sys.blocks(),
        sys.rows()
    );
    let col = |f: &dyn Fn(&Report) -> String| reports.iter().map(f).collect::<Vec<_>>();
    let num = |f: fn(&Report) -> f64| col(&|r| format!("{:.3e}", f(r)));
    let opt = |f: fn(&Report) -> Option<f64>| {
        col(&|r| f(r).map_or("-".to_string(), |x| format!("{x:.3e}")))
    };
    let rows: [(&str, Vec<String>); 14] = [
        ("solver", col(&|r| r.solver.clone())),
        ("status", col(&|r| r.status.to_string())),
        ("iterations", col(&|r| r.iterations.to_string())),
        ("refinements", col(&|r| r.refinements.to_string())),
        ("coulomb rounds", col(&|r| r.rounds.to_string())),
        ("time [s]", num(|r| r.time_s)),
        ("natural map ∞", num(|r| r.merit.natural_map_inf)),
        ("natural map 2", num(|r| r.merit.natural_map_2)),
        ("complementarity", num(|r| r.merit.complementarity)),
        ("primal violation", num(|r| r.merit.primal_violation)),
        ("dual violation", num(|r| r.merit.dual_violation)),
        ("objective", num(|r| r.merit.objective)),
        ("siconos error", opt(|r| r.merit.siconos_error)),
        ("fclib merit", opt(|r| r.merit.fclib_merit)),
    ];
    for (label, values) in rows {
        out += &format!("{label:<18}");
        for v in values {
            out += &format!(" {v:>16}");
        }
        out.push('\n');
    }
    out
}

/// The JSON object of one solve: solver, status, iterations, time and the merit set.
pub fn report_json(r: &Report) -> serde_json::Value {
    let mut out = json!({
        "solver": r.solver,
        "status": r.status,
        "iterations": r.iterations,
        "time_s": r.time_s,
        "merit": r.merit,
    });
    if !r.phases.is_empty() {
        out["phases"] = json!(r.phases);
    }
    if r.refinements > 0 {
        out["refinements"] = json!(r.refinements);
    }
    if r.rounds > 0 {
        out["rounds"] = json!(r.rounds);
    }
    out
}

/// The summary of `simulate`: one line per total, the wall time split by phase, and the
/// output folder `dir`.
pub fn summary(s: &Summary, dir: &Path) -> String {
    let share = |t: f64| format!("{t:.3} s ({:.0} %)", 100.0 * t / s.wall_s);
    let rows = [
        ("scene", s.scene.clone()),
        ("solver", s.solver.clone()),
        ("pipeline", pipeline_line(s)),
        ("bodies", s.bodies.to_string()),
        (
            "steps",
            format!("{} ({:.3} s simulated)", s.steps, s.simulated_time),
        ),
        ("contacts (max)", s.max_contacts.to_string()),
        ("bilateral rows", s.bilateral_rows.to_string()),
        ("iterations", iterations_line(s)),
        ("residual (max)", format!("{:.3e}", s.max_residual)),
        ("convergence", s.convergence_line()),
        ("penetration (max)", format!("{:.3e} m", s.max_penetration)),
        (
            "kinetic energy",
            format!("{:.4e} J", s.final_kinetic_energy),
        ),
        ("wall time", format!("{:.3} s", s.wall_s)),
        ("  host per step", format!("{:.3e} s", s.host_s)),
        ("  collision", share(s.collision_s)),
        ("  assembly", share(s.assembly_s)),
        ("  solve", share(s.solve_s)),
        ("  output", share(s.output_s)),
        (
            "output",
            format!("{} ({} snapshots)", dir.display(), s.snapshots),
        ),
    ];
    let mut out = String::new();
    for (label, value) in rows {
        out += &format!("{label:<18} {value}\n");
    }
    if s.gpu_memory_bytes > 0 {
        let per_body = s.gpu_memory_bytes as f64 / s.bodies.max(1) as f64;
        let memory = format!("{} B ({per_body:.0} B per body)", s.gpu_memory_bytes);
        out += &format!("{:<18} {memory}\n", "GPU memory");
    }
    if let Some(stopped) = &s.stopped {
        out += &format!("{:<18} {stopped}\n", "stopped at");
    }
    out
}

/// Mean and most iterations per step, and the mean Coulomb rounds where there were any.
fn iterations_line(s: &Summary) -> String {
    let line = format!("{:.1} mean, {} max", s.mean_iterations, s.max_iterations);
    if s.mean_rounds > 0.0 {
        format!("{line}, {:.1} Coulomb rounds mean", s.mean_rounds)
    } else {
        line
    }
}

/// The pipeline of a run, and why a GPU solver did not take the GPU-resident step.
fn pipeline_line(s: &Summary) -> String {
    let name = s.pipeline.name();
    if s.pipeline_note.is_empty() {
        name.to_string()
    } else {
        format!("{name} ({})", s.pipeline_note)
    }
}

/// The adapters of `info`, one line each, and how to pick one.
pub fn adapters(adapters: &[AdapterSummary]) -> String {
    let mut out = String::new();
    if adapters.is_empty() {
        out += "no GPU adapter found (without a GPU, install Mesa's software Vulkan driver, \
                Debian package mesa-vulkan-drivers)\n";
    }
    for (i, a) in adapters.iter().enumerate() {
        out += &format!(
            "{i}: {} ({}, {}, driver: {}, max storage binding: {} MiB)\n",
            a.name,
            a.backend,
            a.device_type,
            a.driver,
            a.max_storage_binding_size >> 20
        );
    }
    out += &format!("pick one with {ADAPTER_ENV}=<part of its name>\n");
    out
}
