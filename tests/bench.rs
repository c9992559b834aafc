//! `signorini bench SUITE` at tiny sizes through the command line: the report and every CSV
//! parse, name every requested solver on every requested device, and hold no NaN and no
//! empty table; the charts they link decode. Timings are never asserted.
//!
//! The GPU rows need an adapter: without one these tests fail unless `SIGNORINI_SKIP_GPU=1`
//! is set (then they check the CPU rows only, with a note).

mod common;

use std::collections::BTreeSet;
use std::path::Path;

use signorini::registry;

/// Splits one CSV line, honouring double quotes (`""` inside quotes is a quote).
fn csv_fields(line: &str) -> Vec<String> {
    let (mut fields, mut field, mut quoted) = (Vec::new(), String::new(), false);
    let mut chars = line.chars().peekable();
    while let Some(c) = chars.next() {
        match (c, quoted) {
            ('"', true) if chars.peek() == Some(&'"') => {
                field.push('"');
                chars.next();
            }
            ('"', _) => quoted = !quoted,
            (',', false) => fields.push(std::mem::take(&mut field)),
            _ => field.push(c),
        }
    }
    assert!(!quoted, "unterminated quote in {line}");
    fields.push(field);
    fields
}

/// A CSV file as header and rows; asserts every row has the header's length, there is at
/// least one row and no cell is NaN.
fn read_csv(path: &Path) -> (Vec<String>, Vec<Vec<String>>) {
    let text = std::fs::read_to_string(path).unwrap();
    let mut lines = text.lines();
    let header = csv_fields(lines.next().expect("a header"));
    let rows: Vec<Vec<String>> = lines.map(csv_fields).collect();
    assert!(!rows.is_empty(), "{}: no rows", path.display());
    for row in &rows {
        assert_eq!(row.len(), header.len(), "{}: {row:?}", path.display());
        for cell in row {
            assert!(
                !cell.parse::<f64>().is_ok_and(f64::is_nan),
                "{}: NaN in {row:?}",
                path.display()
            );
        }
    }
    (header, rows)
}

/// Whether the GPU rows run here (lavapipe in CI); without an adapter a failure unless
/// `SIGNORINI_SKIP_GPU=1`.
fn gpu_present() -> bool {
    common::gpu::context().is_some()
}

/// The `(solver, device)` pairs the runs of `names` (CPU names) must produce.
fn expected_runs(names: &[&str]) -> BTreeSet<(String, String)> {
    let registered = registry::names();
    let mut out = BTreeSet::new();
    for name in names {
        if registered.contains(name) {
            out.insert((name.to_string(), "cpu".to_string()));
        }
        let gpu = format!("{name}-gpu");
        if gpu_present() && registered.contains(&gpu.as_str()) {
            out.insert((gpu, "gpu".to_string()));
        }
    }
    out
}

/// Runs `bench <suite> <args> --json --out DIR`, then checks the report: every linked CSV
/// and chart exists and parses, every markdown table has rows, no NaN anywhere; returns the
/// folder and the `(solver, device)` pairs of the CSVs that have both columns.
fn run_suite(suite: &str, args: &[&str]) -> (std::path::PathBuf, BTreeSet<(String, String)>) {
    let dir = common::fresh_dir(&format!("bench-{suite}"));
    let mut all = vec!["bench", suite];
    all.extend_from_slice(args);
    all.extend_from_slice(&["--json", "--out", dir.to_str().unwrap()]);
    let json = common::run_cli_json(&all);
    assert!(json["suites"][suite].is_object(), "{json}");
    let report = std::fs::read_to_string(dir.join("report.md")).unwrap();
    assert!(
        report.contains(&format!("`signorini bench {suite} ")),
        "the command line is missing"
    );
    assert!(report.contains("- CPU: ") && report.contains("- GPU adapter: "));
    assert!(!report.contains("NaN"), "NaN in report.md");
    // Every markdown table has at least one row after its alignment line.
    let lines: Vec<&str> = report.lines().collect();
    for (i, line) in lines.iter().enumerate() {
        if line.starts_with("|---") || line.starts_with("|--") {
            assert!(
                lines.get(i + 1).is_some_and(|l| l.starts_with("| ")),
                "empty table before line {i}"
            );
        }
    }
    let linked = |ext: &str| -> Vec<String> {
        report
            .split(['(', ')'])
            .filter(|s| s.ends_with(ext) && !s.contains(' ') && !s.contains('['))
            .map(String::from)
            .collect()
    };
    let csvs = linked(".csv");
    assert!(!csvs.is_empty(), "no CSV linked");
    let mut runs = BTreeSet::new();
    for csv in &csvs {
        let (header, rows) = read_csv(&dir.join(csv));
        let col = |name: &str| header.iter().position(|h| h == name);
        if let (Some(s), Some(d)) = (col("solver"), col("device")) {
            runs.extend(rows.iter().map(|r| (r[s].clone(), r[d].clone())));
        }
    }
    // Every CSV in the folder is linked from the report.
    let on_disk = std::fs::read_dir(&dir)
        .unwrap()
        .filter(|e| {
            e.as_ref()
                .unwrap()
                .path()
                .extension()
                .is_some_and(|x| x == "csv")
        })
        .count();
    assert_eq!(on_disk, csvs.len());
    for png in linked(".png") {
        let img = image::open(dir.join(&png)).unwrap();
        assert!(img.width() > 100 && img.height() > 100, "{png}");
    }
    (dir, runs)
}

#[test]
fn throughput_suite_reports_cpu_and_gpu() {
    let (dir, runs) = run_suite(
        "throughput",
        &[
            "--solvers",
            "jacobi,pgs",
            "--sizes",
            "60,200",
            "--iterations",
            "10",
        ],
    );
    assert!(
        runs.is_superset(&expected_runs(&["jacobi", "pgs"])),
        "{runs:?}"
    );
    let (header, rows) = read_csv(&dir.join("throughput.csv"));
    let contacts = header.iter().position(|h| h == "contacts").unwrap();
    let sizes: BTreeSet<&str> = rows.iter().map(|r| r[contacts].as_str()).collect();
    assert_eq!(sizes.len(), 2, "two packings: {sizes:?}");
    let Some(ctx) = common::gpu::context() else {
        return;
    };
    assert!(dir.join("throughput.png").is_file());
    // Every size has a `solve` and a `kernels` row of `jacobi-gpu`, every figure of a GPU
    // row is positive (a rate, a bandwidth, a ratio: no speed is asserted).
    let col = |name: &str| header.iter().position(|h| h == name).unwrap();
    let gpu: Vec<&Vec<String>> = rows.iter().filter(|r| r[col("device")] == "gpu").collect();
    for size in &sizes {
        for mode in ["solve", "kernels"] {
            assert!(
                gpu.iter().any(|r| r[col("contacts")] == *size
                    && r[col("mode")] == mode
                    && r[col("solver")] == "jacobi-gpu"),
                "no jacobi-gpu {mode} row for {size} contacts: {gpu:?}"
            );
        }
    }
    for r in &gpu {
        for figure in [
            "s/iteration",
            "contact-it/s",
            "GB/s",
            "fraction of copy bandwidth",
            "GPU/CPU",
        ] {
            let v = r[col(figure)].parse::<f64>();
            assert!(v.as_ref().is_ok_and(|v| *v > 0.0), "{figure}: {r:?}");
        }
    }
    // The `solve` rows' configuration (no convergence test, 10 iterations) submits one
    // command buffer and reads back at most `10 / READBACK_EVERY + 2` times.
    let settings = signorini::solver::Settings {
        tol: 0.0,
        max_iter: 10,
        stall_iterations: usize::MAX,
        ..Default::default()
    };
    let sys = common::scene_problem("balls_in_box.toml", &[("lattice.0.count", "20")], 3);
    let (report, stats) = signorini::gpu::JacobiGpu::with_context(ctx)
        .solve_with_stats(&sys, &settings)
        .unwrap();
    assert_eq!((report.iterations, stats.submissions), (10, 1), "{stats:?}");
    assert!(
        stats.readbacks <= 10 / signorini::gpu::READBACK_EVERY + 2,
        "{stats:?}"
    );
}

#[test]
fn convergence_suite_covers_every_scene_and_registered_solver() {
    let (dir, runs) = run_suite(
        "convergence",
        &["--solvers", "all", "--sizes", "12", "--iterations", "60"],
    );
    let cpu: Vec<&str> = registry::names()
        .into_iter()
        .filter(|n| !n.ends_with("-gpu"))
        .collect();
    assert_eq!(runs, expected_runs(&cpu));
    let (header, rows) = read_csv(&dir.join("convergence.csv"));
    let problem = header.iter().position(|h| h == "problem").unwrap();
    for label in ["B1 ", "B2 ", "B3 ", "B4 ", "BiB ", "TPB ", "TV "] {
        assert!(
            rows.iter().any(|r| r[problem].starts_with(label)),
            "{label}"
        );
        let key = label.trim();
        assert!(
            dir.join(format!("convergence_{key}-12.png")).is_file(),
            "{key}"
        );
    }
}

#[test]
fn scaling_suite_splits_each_step_into_its_phases() {
    let (dir, runs) = run_suite(
        "scaling",
        &[
            "--solvers",
            "pgs,jacobi,apgd",
            "--sizes",
            "8,27",
            "--steps",
            "2",
            "--iterations",
            "20",
        ],
    );
    assert_eq!(runs, expected_runs(&["pgs", "jacobi", "apgd"]));
    let (header, rows) = read_csv(&dir.join("scaling.csv"));
    let col = |n: &str| header.iter().position(|h| h == n).unwrap();
    for r in &rows {
        let v = |n: &str| r[col(n)].parse::<f64>().unwrap();
        let phases = v("collision s/step") + v("assembly s/step") + v("solve s/step");
        // The phases are parts of the step: their sum cannot exceed it.
        assert!(phases <= v("s/step") * (1.0 + 1e-9), "{r:?}");
        assert!(v("host s/step") > 0.0, "{r:?}");
        if ["jacobi-gpu", "apgd-gpu"].contains(&r[col("solver")].as_str()) {
            // The whole step on the GPU: its two stages timed apart, its memory counted.
            assert_eq!(r[col("pipeline")], "gpu-resident", "{r:?}");
            assert!(
                v("GPU detect s/step") > 0.0
                    && v("GPU solve s/step") > 0.0
                    && v("GPU bytes/body") > 0.0,
                "{r:?}"
            );
        } else {
            assert_eq!(r[col("pipeline")], "cpu", "{r:?}");
            assert!(
                v("assembly s/step") > 0.0 && v("solve s/step") > 0.0,
                "{r:?}"
            );
        }
    }
}

#[test]
fn accuracy_suite_compares_every_solver_with_a_reference() {
    let (dir, runs) = run_suite(
        "accuracy",
        &["--solvers", "all", "--sizes", "12", "--iterations", "300"],
    );
    let cpu: Vec<&str> = registry::names()
        .into_iter()
        .filter(|n| !n.ends_with("-gpu"))
        .collect();
    assert!(runs.is_superset(&expected_runs(&cpu)), "{runs:?}");
    let (header, rows) = read_csv(&dir.join("accuracy_references.csv"));
    assert_eq!(rows.len(), 7, "one reference per scene");
    let reference = header.iter().position(|h| h == "reference").unwrap();
    let want = if registry::names().contains(&"ip") {
        "ip"
    } else {
        "pgs"
    };
    assert!(rows.iter().any(|r| r[reference] == want), "{rows:?}");
    // GPU rows are compared with their CPU twin; the twin of an f32 solve is close.
    let (header, rows) = read_csv(&dir.join("accuracy.csv"));
    let col = |n: &str| header.iter().position(|h| h == n).unwrap();
    for r in rows.iter().filter(|r| r[col("device")] == "gpu") {
        assert!(!r[col("γ GPU vs CPU")].is_empty(), "{r:?}");
    }
}

#[test]
fn bench_rejects_options_a_suite_does_not_take() {
    for args in [
        vec!["bench", "scaling", "--tol", "1e-3"],
        vec!["bench", "all", "--sizes", "10"],
        vec!["bench", "convergence", "--solvers", "nope"],
    ] {
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_signorini"))
            .args(&args)
            .args(["--out", common::fresh_dir("bench-bad").to_str().unwrap()])
            .output()
            .unwrap();
        assert!(!out.status.success(), "{args:?}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.starts_with("error: "), "{args:?}: {err}");
    }
}
