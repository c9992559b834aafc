//! Issue 15, the library side: bad or oversized inputs are refused up front with an error
//! that names the file and the field (none panics or aborts), writes never destroy their
//! input, and the simplex reports a friction-cone answer against the true cone.

mod common;

use std::path::PathBuf;

use common::*;
use signorini::Error;
use signorini::limits::Limits;
use signorini::problem::io::{self, Format, SiconosKind};
use signorini::problem::{Cone, CsrMatrix, FrictionModel, Global, Operator, Problem, System};
use signorini::sim::scene;
use signorini::solver::{Criterion, Settings, Status};

fn siconos(file: &str) -> PathBuf {
    problems_dir().join("siconos").join(file)
}

/// A global problem with a diagonal `H` of `ndof` degrees of freedom and one contact.
fn wide_global(ndof: usize) -> Problem {
    let h = CsrMatrix::from_triplets(
        ndof,
        ndof,
        &(0..ndof).map(|i| (i, i, 2.0)).collect::<Vec<_>>(),
    )
    .unwrap();
    let j =
        CsrMatrix::from_triplets(3, ndof, &[(0, 0, 1.0), (1, 1, 1.0), (2, ndof - 1, 1.0)]).unwrap();
    Problem {
        name: "wide".into(),
        class: Default::default(),
        cones: vec![Cone::Coulomb { mu: 0.5 }],
        operator: Operator::Global(Global {
            h,
            j,
            f: vec![-1.0; ndof],
            b: vec![0.0; 3],
        }),
        compliance: Vec::new(),
    }
}

#[test]
fn a_row_count_at_the_integer_limit_is_an_error_naming_the_field() {
    let mut p = wide_global(4);
    // H (the first matrix) square at the integer limit: `nrows + 1` once overflowed.
    let text = io::json::to_string(&p)
        .replacen("\"nrows\": 4", "\"nrows\": 18446744073709551615", 1)
        .replacen("\"ncols\": 4", "\"ncols\": 18446744073709551615", 1);
    let dir = fresh_dir("truth-nrows");
    let path = dir.join("huge.json");
    std::fs::write(&path, text).unwrap();
    let msg = io::read(&path, None).unwrap_err().to_string();
    assert!(msg.starts_with(&path.display().to_string()), "{msg}");
    assert!(msg.contains("h.indptr"), "{msg}");
    // The same in memory, through System::new.
    let Operator::Global(g) = &mut p.operator else {
        unreachable!()
    };
    (g.h.nrows, g.h.ncols) = (usize::MAX, usize::MAX);
    assert!(System::new(&p).is_err());
}

#[test]
fn a_large_global_h_stays_sparse_and_a_small_limit_refuses_it_with_the_estimate() {
    // 20 000 degrees of freedom: a dense H would take 3.2 GB.
    let p = wide_global(20_000);
    let sys = System::new(&p).unwrap();
    assert_eq!(sys.rows(), 3);
    // N = J H⁻¹ Jᵀ = I / 2.
    let mut y = vec![0.0; 3];
    sys.apply(&[1.0, 2.0, 4.0], &mut y);
    for (a, b) in y.iter().zip([0.5, 1.0, 2.0]) {
        assert_close(*a, b, 1e-15);
    }
    let Err(err) = System::with_limits(
        &p,
        &Limits {
            max_memory: 100_000,
        },
    ) else {
        panic!("accepted")
    };
    let msg = err.to_string();
    assert!(matches!(err, Error::TooLarge { .. }), "{msg}");
    assert!(
        msg.contains("memory limit of 100.0 kB") && msg.contains("MB"),
        "{msg}"
    );
}

#[test]
fn an_unknown_json_key_is_an_error_with_its_path() {
    let p = common::factored(
        vec![body(1.0, [0.0; 6])],
        vec![Cone::Unilateral],
        vec![on_body(0, vec![[0.0, 0.0, 1.0, 0.0, 0.0, 0.0]])],
    );
    let text = io::json::to_string(&p).replacen("\"mass\"", "\"mass\": 1.0, \"complience\"", 1);
    let msg = io::json::from_str(&text, "p.json").unwrap_err().to_string();
    assert!(msg.starts_with("p.json: line"), "{msg}");
    assert!(
        msg.contains("operator.factored.bodies[0]") && msg.contains("complience"),
        "{msg}"
    );
}

#[test]
fn content_errors_of_json_and_binary_problems_name_the_file() {
    let mut p = common::factored(
        vec![body(1.0, [0.0; 6])],
        vec![Cone::Unilateral],
        vec![on_body(0, vec![[0.0, 0.0, 1.0, 0.0, 0.0, 0.0]])],
    );
    let dir = fresh_dir("truth-content");
    let bin = dir.join("p.bin");
    io::write(&p, &bin, None).unwrap();
    // A negative mass: valid JSON, an invalid problem.
    let Operator::Factored(f) = &mut p.operator else {
        unreachable!()
    };
    f.bodies[0].mass = -1.0;
    let json = dir.join("p.json");
    std::fs::write(&json, io::json::to_string(&p)).unwrap();
    let msg = io::read(&json, None).unwrap_err().to_string();
    assert!(
        msg.starts_with(&json.display().to_string()) && msg.contains("bodies[0].mass"),
        "{msg}"
    );
    // A binary file whose content (not its checksum) is wrong: the mass patched in place and
    // the checksum made consistent again.
    let mut bytes = std::fs::read(&bin).unwrap();
    let at = bytes
        .windows(8)
        .position(|w| w == 1.0f64.to_le_bytes())
        .unwrap();
    bytes[at..at + 8].copy_from_slice(&(-1.0f64).to_le_bytes());
    let crc = crc32fast::hash(&bytes[32..]);
    bytes[24..28].copy_from_slice(&crc.to_le_bytes());
    std::fs::write(&bin, &bytes).unwrap();
    let msg = io::read(&bin, None).unwrap_err().to_string();
    assert!(msg.starts_with(&bin.display().to_string()), "{msg}");
}

#[test]
fn the_dat_kind_comes_from_the_content_when_the_name_misleads() {
    // A local fc3d problem named like a global one, in a folder named fc3d.
    let dir = fresh_dir("truth-kind").join("fc3d");
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("GFC3D_Example-condensed.dat");
    std::fs::copy(siconos("fc3d/FrictionContact3D_1c.dat"), &path).unwrap();
    let read = io::read_detected(&path, None).unwrap();
    assert_eq!(read.format, Format::Siconos(SiconosKind::Fc3d));
    let note = read.note.unwrap();
    assert!(
        note.contains("read as siconos-fc3d") && note.contains("gfc3d"),
        "{note}"
    );
    // --format still wins.
    assert!(io::read_detected(&path, Some(Format::Siconos(SiconosKind::Gfc3d))).is_err());
}

#[test]
fn convert_refuses_to_overwrite_its_input() {
    let dir = fresh_dir("truth-convert");
    let input = dir.join("a.json");
    let p = io::read(&siconos("fc3d/FrictionContact3D_1c.dat"), None).unwrap();
    io::write(&p, &input, None).unwrap();
    let before = std::fs::read(&input).unwrap();
    // The same file, under its own name and through `..`.
    for output in [input.clone(), dir.join("../truth-convert/a.json")] {
        let err = io::convert(&input, &output, None, Some(Format::Binary)).unwrap_err();
        assert!(err.to_string().contains("is the input file"), "{err}");
    }
    assert_eq!(std::fs::read(&input).unwrap(), before);
    let out = io::convert(&input, &dir.join("a.bin"), None, None).unwrap();
    assert_eq!(out.to, Format::Binary);
    assert_eq!(io::read(&dir.join("a.bin"), None).unwrap(), p);
}

/// A scene of one box-held sphere lattice, with overrides.
fn load(extra: &str, sets: &[(&str, &str)]) -> Result<scene::Scene, String> {
    let text = format!(
        "[settings]\ndt = 0.01\nenvelope = 0.01\n{extra}\n\
         [[container]]\nhalf_size = [0.5, 0.5]\n\n\
         [[lattice]]\nshape = {{ type = \"sphere\", radius = 0.05 }}\ncount = 20\n\
         min = [-0.4, -0.4, 0.0]\nmax = [0.4, 0.4, 0.0]\n"
    );
    let sets: Vec<(String, String)> = sets
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    scene::parse_within(
        &text,
        "s.toml",
        "s",
        &sets,
        &Limits {
            max_memory: 1 << 30,
        },
    )
    .map_err(|e| e.to_string())
}

#[test]
fn bad_scene_values_are_refused_up_front_naming_file_line_and_key() {
    assert!(load("", &[]).is_ok());
    for (extra, sets, key) in [
        ("gravity = [0.0, 0.0, nan]", &[][..], "settings.gravity[2]"),
        (
            "",
            &[("lattice.0.velocity", "[0.0, inf, 0.0]")][..],
            "lattice[0].velocity[1]",
        ),
        ("omega = 5.0", &[][..], "settings.omega"),
        ("max_iter = 0", &[][..], "settings.max_iter"),
        ("check_every = 0", &[][..], "settings.check_every"),
        (
            "precision = \"f16\"",
            &[][..],
            "line 4: precision: unknown variant `f16`, expected `f32` or `f64`",
        ),
        ("", &[("settings.dt", "1e9")][..], "settings.dt"),
        ("", &[("settings.envelope", "1e9")][..], "settings.envelope"),
        (
            "",
            &[(
                "lattice.0.shape",
                "{ type = \"box\", half_extents = [1e-300, 1e-300, 1e-300] }",
            )][..],
            "lattice[0].shape",
        ),
    ] {
        let msg = load(extra, sets)
            .err()
            .unwrap_or_else(|| panic!("{extra} {sets:?} accepted"));
        assert!(msg.starts_with("s.toml: "), "{msg}");
        assert!(msg.contains(key), "{key}: {msg}");
    }
    // From the text, the line is named.
    let msg = load("gravity = [0.0, 0.0, nan]", &[]).err().unwrap();
    assert!(
        msg.starts_with("s.toml: line 4: settings.gravity[2]"),
        "{msg}"
    );
}

#[test]
fn a_scene_too_large_for_the_memory_limit_is_refused_before_it_is_built() {
    let msg = load("", &[("lattice.0.count", "10000000")]).err().unwrap();
    assert!(
        msg.contains("10000005 bodies") && msg.contains("memory limit of 1.1 GB"),
        "{msg}"
    );
    // An envelope of 1e9 under a body's size would make every pair a contact: refused (by
    // the scales check) before the contacts are counted.
    let msg = load("", &[("settings.envelope", "1e9")]).err().unwrap();
    assert!(msg.contains("every pair"), "{msg}");
}

#[test]
fn a_body_with_a_nan_position_is_refused() {
    let text =
        "[[body]]\nshape = { type = \"sphere\", radius = 0.1 }\nposition = [0.0, nan, 1.0]\n";
    let msg = scene::parse(text, "b.toml", "b", &[])
        .err()
        .unwrap()
        .to_string();
    assert!(
        msg.starts_with("b.toml: line 3: body[0].position[1]"),
        "{msg}"
    );
}

#[test]
fn simplex_reports_friction_cones_against_the_true_cone() {
    let sys =
        System::new(&io::read(&siconos("fc3d/FrictionContact3D_1c.dat"), None).unwrap()).unwrap();
    let settings = Settings {
        friction: FrictionModel::Ccp,
        criterion: Criterion::Relative,
        tol: 1e-6,
        ..Settings::default()
    };
    let true_cone = solve(&sys, "simplex", &settings);
    assert_eq!(true_cone.solver, "simplex");
    assert_eq!(
        true_cone.status,
        Status::Stalled,
        "{:?}",
        true_cone.residual
    );
    assert!(true_cone.residual.relative > 1e-6);
    // The same answer is converged for the pyramid model, asked for by name.
    let pyramid = solve(&sys, "simplex-pyramid", &settings);
    assert_eq!(pyramid.solver, "simplex-pyramid");
    assert_eq!(pyramid.status, Status::Converged);
    assert_eq!(pyramid.gamma, true_cone.gamma);
}

#[test]
fn stale_partial_files_of_a_killed_writer_are_removed_by_the_next_write() {
    let dir = fresh_dir("truth-partial");
    let target = dir.join("p.bin");
    let partial = dir.join(".p.bin.partial");
    std::fs::write(&partial, b"killed half-way").unwrap();
    let p = io::read(&siconos("fc3d/FrictionContact3D_1c.dat"), None).unwrap();
    io::write(&p, &target, None).unwrap();
    assert!(!partial.exists());
    // A failed write (a problem the format cannot hold is refused before writing) leaves
    // neither the target nor a temporary file.
    let bad = dir.join("q.dat");
    assert!(io::write(&p, &bad, None).is_err());
    let names: Vec<String> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(names, ["p.bin"]);
}

fn cli(args: &[&str]) -> std::process::Output {
    std::process::Command::new(env!("CARGO_BIN_EXE_signorini"))
        .args(args)
        .output()
        .unwrap()
}

#[test]
fn exit_codes_tell_whether_the_tolerance_was_met() {
    let file = siconos("fc3d/FrictionContact3D_1c.dat");
    let file = file.to_str().unwrap();
    let solve = |extra: &[&str]| {
        let mut args = vec!["solve", file, "--json"];
        args.extend_from_slice(extra);
        cli(&args).status.code()
    };
    assert_eq!(solve(&["--solver", "ip"]), Some(0));
    assert_eq!(
        solve(&["--solver", "pgs", "--max-iter", "1", "--tol", "1e-12"]),
        Some(3)
    );
    assert_eq!(solve(&["--solver", "nope"]), Some(1));
    assert_eq!(cli(&["solve"]).status.code(), Some(2));
    // No usable answer: the interior point finds contradictory contacts infeasible.
    let contradictory = contradictory_file(&fresh_dir("truth-solve-exit"));
    let out = cli(&[
        "solve",
        contradictory.to_str().unwrap(),
        "--solver",
        "ip",
        "--json",
    ]);
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(
        (out.status.code(), report["status"].as_str()),
        (Some(4), Some("infeasible"))
    );
}

const DOWN: [f64; 6] = [0.0, 0.0, 1.0, 0.0, 0.0, 0.0];

/// A ball held by contradictory contacts (`v_z ≥ −1` and `v_z ≤ −2`), which the interior
/// point reports infeasible, written to `dir/contradictory.json`.
fn contradictory_file(dir: &std::path::Path) -> PathBuf {
    let up = [0.0, 0.0, -1.0, 0.0, 0.0, 0.0];
    let mut p = factored(
        vec![body(1.0, [0.0; 6])],
        vec![Cone::Unilateral, Cone::Unilateral],
        vec![on_body(0, vec![DOWN]), on_body(0, vec![up])],
    );
    if let Operator::Factored(f) = &mut p.operator {
        f.b = vec![1.0, -2.0];
    }
    let path = dir.join("contradictory.json");
    io::write(&p, &path, None).unwrap();
    path
}

/// `--max-memory` on the command line: `solve`, `check` and `simulate` refuse what would not
/// fit, with the estimate and the limit, before anything is built or written (exit 1).
#[test]
fn max_memory_on_the_command_line_refuses_before_anything_is_built() {
    let file = siconos("fc3d/Rover4144.dat");
    let scene = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("scenes/balls_in_box.toml");
    let out_dir = fresh_dir("truth-max-memory").join("run");
    for args in [
        vec!["solve", file.to_str().unwrap(), "--max-memory", "1K"],
        vec!["check", file.to_str().unwrap(), "--max-memory", "1K"],
        vec![
            "simulate",
            scene.to_str().unwrap(),
            "--max-memory",
            "100K",
            "--out",
            out_dir.to_str().unwrap(),
        ],
    ] {
        let out = cli(&args);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{args:?}: {err}");
        assert!(
            err.contains("would need") && err.contains("more than the memory limit of"),
            "{args:?}: {err}"
        );
        assert!(out.stdout.is_empty(), "{args:?}");
    }
    assert!(!out_dir.exists());
    // The same problem within the default limit is solved.
    assert_eq!(
        cli(&["solve", file.to_str().unwrap()]).status.code(),
        Some(0)
    );
}

/// `check` exits by the worst of its solves: 0 when every solver converged, 3 when one
/// missed the tolerance, 4 when one had no usable answer.
#[test]
fn check_exits_by_the_worst_of_its_solves() {
    let dir = fresh_dir("truth-check-exit");
    // A ball falling onto the ground.
    let resting = factored(
        vec![body(1.0, [0.0, 0.0, -G * H, 0.0, 0.0, 0.0])],
        vec![Cone::Unilateral],
        vec![on_body(0, vec![DOWN])],
    );
    let resting_file = dir.join("resting.json");
    io::write(&resting, &resting_file, None).unwrap();
    let contradictory_file = contradictory_file(&dir);
    let check = |file: &PathBuf, extra: &[&str]| {
        let mut args = vec!["check", file.to_str().unwrap(), "--json"];
        args.extend_from_slice(extra);
        let out = cli(&args);
        let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        let statuses: Vec<String> = v["results"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| r["status"].as_str().unwrap().to_string())
            .collect();
        (out.status.code(), statuses)
    };
    assert_eq!(
        check(&resting_file, &["--solvers", "ip,pgs"]),
        (Some(0), vec!["converged".into(), "converged".into()])
    );
    let capped = siconos("fc3d/FrictionContact3D_1c.dat");
    let (code, statuses) = check(&capped, &["--solvers", "ip,pgs", "--max-iter", "5"]);
    assert_eq!((code, statuses[1].as_str()), (Some(3), "max_iterations"));
    let (code, statuses) = check(&contradictory_file, &["--solvers", "pgs,ip"]);
    assert_eq!((code, statuses[1].as_str()), (Some(4), "infeasible"));
    assert_ne!(statuses[0], "infeasible");
}

#[test]
fn simulate_reports_missed_steps_and_owns_its_folder() {
    let scene = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("scenes/single_ball.toml");
    let dir = fresh_dir("truth-simulate");
    std::fs::write(dir.join("frame_9999.png"), b"old run").unwrap();
    std::fs::write(dir.join("notes.txt"), b"not ours").unwrap();
    let args = |extra: &[&str]| -> Vec<String> {
        let mut a: Vec<String> = ["simulate", scene.to_str().unwrap(), "--steps", "20"]
            .iter()
            .map(|s| s.to_string())
            .collect();
        a.extend(["--out".into(), dir.display().to_string()]);
        a.extend(extra.iter().map(|s| s.to_string()));
        a
    };
    let strict = [
        "--set",
        "settings.max_iter=1",
        "--set",
        "settings.tol=1e-14",
    ];
    let run = |extra: &[&str]| {
        let a = args(extra);
        cli(&a.iter().map(String::as_str).collect::<Vec<_>>())
    };
    let out = run(&strict);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let table = String::from_utf8_lossy(&out.stdout);
    assert!(table.contains("tolerance 1e-14 (velocity): "), "{table}");
    assert!(
        table.contains("steps stopped at the iteration cap"),
        "{table}"
    );
    assert!(!dir.join("frame_9999.png").exists() && dir.join("notes.txt").exists());
    let csv = std::fs::read_to_string(dir.join("steps.csv")).unwrap();
    assert!(csv.lines().next().unwrap().ends_with(",status"));
    assert!(
        csv.lines().skip(1).any(|l| l.ends_with(",max_iterations")),
        "{csv}"
    );
    let mut required = strict.to_vec();
    required.extend(["--require-convergence", "--json-summary"]);
    let out = run(&required);
    assert_eq!(out.status.code(), Some(3));
    let summary: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(
        summary["steps_not_converged"].as_u64().unwrap() > 0,
        "{summary}"
    );
    assert_eq!(summary["tolerance"], 1e-14);
    // A run that fails before its first step (the dump of step 1 into a read-only format,
    // after the folder was made) leaves nothing behind.
    let fresh = dir.join("never");
    let a = [
        "simulate",
        scene.to_str().unwrap(),
        "--steps",
        "2",
        "--dump-step",
        "1",
        "--dump-format",
        "siconos-fc3d",
        "--out",
        fresh.to_str().unwrap(),
    ];
    let out = cli(&a);
    assert_eq!(
        out.status.code(),
        Some(1),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(!fresh.exists());
}

#[cfg(target_os = "linux")]
#[test]
fn the_vulkan_loader_is_quiet_without_a_runtime_dir() {
    use std::os::unix::fs::{MetadataExt, PermissionsExt};
    if gpu::context().is_none() {
        return;
    }
    let tmp = fresh_dir("truth-runtime-dir");
    let run = || {
        std::process::Command::new(env!("CARGO_BIN_EXE_signorini"))
            .arg("info")
            .env_remove("XDG_RUNTIME_DIR")
            .env("TMPDIR", &tmp)
            .output()
            .unwrap()
    };
    let uid = std::fs::metadata("/proc/self").unwrap().uid();
    let private = tmp.join(format!("signorini-runtime-{uid}"));
    for _ in 0..2 {
        // The first run makes the private folder, the second finds it opened up and closes it.
        let out = run();
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "{err}");
        assert!(!err.contains("XDG_RUNTIME_DIR"), "{err}");
        assert!(String::from_utf8_lossy(&out.stdout).starts_with("0: "));
        let meta = std::fs::symlink_metadata(&private).unwrap();
        assert!(meta.is_dir() && meta.uid() == uid);
        assert_eq!(meta.permissions().mode() & 0o777, 0o700);
        std::fs::set_permissions(&private, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
}

/// The README's main job as shipped (`simulate scenes/balls_in_box.toml`, all 100 steps of
/// its `run.steps`): at least 95 % of the steps meet the scene's tolerance, as its summary
/// counts them.
#[test]
fn the_main_job_meets_its_tolerance_on_95_percent_of_its_steps() {
    let scene = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("scenes/balls_in_box.toml");
    let dir = fresh_dir("truth-main-job");
    let out = cli(&[
        "simulate",
        scene.to_str().unwrap(),
        "--snapshot-every",
        "0",
        "--json-summary",
        "--require-convergence",
        "--out",
        dir.to_str().unwrap(),
    ]);
    let summary: serde_json::Value = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&out.stderr)));
    let steps = summary["steps"].as_u64().unwrap();
    let missed = summary["steps_not_converged"].as_u64().unwrap();
    assert_eq!((steps, summary["tolerance"].as_f64()), (100, Some(1e-3)));
    assert!(
        20 * missed <= steps,
        "{missed} of {steps} missed: {summary}"
    );
    assert_eq!(out.status.code(), Some(if missed == 0 { 0 } else { 3 }));
}

/// The rule of `tests/common/gpu.rs`, on this binary's own GPU test with an adapter name
/// that matches none: it fails, unless `SIGNORINI_SKIP_GPU=1` skips it with a note.
#[cfg(target_os = "linux")]
#[test]
fn a_gpu_test_without_an_adapter_fails_unless_skipped() {
    let run = |skip: bool| {
        let mut test = std::process::Command::new(std::env::current_exe().unwrap());
        test.args([
            "--exact",
            "the_vulkan_loader_is_quiet_without_a_runtime_dir",
            "--nocapture",
        ])
        .env("SIGNORINI_ADAPTER", "no-such-adapter")
        .env_remove(gpu::SKIP_ENV);
        if skip {
            test.env(gpu::SKIP_ENV, "1");
        }
        let out = test.output().unwrap();
        let text = format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        (out.status.success(), text)
    };
    let (passed, text) = run(false);
    assert!(
        !passed && text.contains("the GPU tests need an adapter"),
        "{text}"
    );
    let (passed, text) = run(true);
    assert!(passed && text.contains("skipping a GPU test"), "{text}");
    assert!(text.contains("1 passed"), "{text}");
}
