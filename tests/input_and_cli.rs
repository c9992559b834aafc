//! Bad input gives errors naming the field (never a panic), the JSON format round-trips
//! exactly, and the CLI prints what it promises and fails with a message on stderr.

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;

use common::*;
use signorini::problem::io::{self, json};
use signorini::problem::{Assembled, Cone, CsrMatrix, Operator, Problem, System};

fn ball_on_plane() -> Problem {
    factored(
        vec![body(1.0, [0.0, 0.0, -G * H, 0.0, 0.0, 0.0])],
        vec![Cone::Coulomb { mu: 0.5 }],
        vec![on_body(
            0,
            vec![
                [0.0, 0.0, 1.0, 0.0, 0.0, 0.0],
                [1.0, 0.0, 0.0, 0.0, -0.1, 0.0],
                [0.0, 1.0, 0.0, 0.1, 0.0, 0.0],
            ],
        )],
    )
}

#[track_caller]
fn expect_error(p: &Problem, field: &str) {
    let err = System::new(p).err().expect("invalid problem accepted");
    let msg = err.to_string();
    assert!(msg.contains(field), "`{msg}` does not name `{field}`");
}

fn factored_mut(p: &mut Problem) -> &mut signorini::problem::Factored {
    match &mut p.operator {
        Operator::Factored(f) => f,
        _ => unreachable!(),
    }
}

#[test]
fn each_validation_error_names_its_field() {
    let mut p = ball_on_plane();
    factored_mut(&mut p).b.push(0.0);
    expect_error(&p, "b: has 4 entries, expected 3");

    let mut p = ball_on_plane();
    factored_mut(&mut p).jacobians[0].bodies[0] = 3;
    expect_error(&p, "jacobians[0].bodies[0]: body 3 out of range");

    for mass in [0.0, -1.0] {
        let mut p = ball_on_plane();
        factored_mut(&mut p).bodies[0].mass = mass;
        expect_error(&p, "bodies[0].mass");
    }

    let mut p = ball_on_plane();
    factored_mut(&mut p).bodies[0].inertia[2] = -0.1;
    expect_error(&p, "bodies[0].inertia[2]");

    let mut p = ball_on_plane();
    p.cones[0] = Cone::Coulomb { mu: -0.2 };
    expect_error(&p, "cones[0].mu");

    let mut p = ball_on_plane();
    factored_mut(&mut p).bodies[0].v_free[4] = f64::NAN;
    expect_error(&p, "bodies[0].v_free[4]");

    let mut p = ball_on_plane();
    factored_mut(&mut p).jacobians[0].rows[1][3] = f64::INFINITY;
    expect_error(&p, "jacobians[0].rows[1][3]");

    let mut p = ball_on_plane();
    factored_mut(&mut p).jacobians[0].rows.pop();
    expect_error(&p, "jacobians[0].rows: has 2 entries, expected 3");

    let mut p = ball_on_plane();
    p.compliance = vec![0.0, -1.0, 0.0];
    expect_error(&p, "compliance[1]");

    let mut p = ball_on_plane();
    p.cones.push(Cone::Bilateral { dim: 4 });
    expect_error(&p, "cones[1].dim");

    let lcp = |n: CsrMatrix, r: Vec<f64>| Problem {
        name: "lcp".into(),
        class: Default::default(),
        cones: vec![Cone::Unilateral; 2],
        operator: Operator::Assembled(Assembled { n, r }),
        compliance: Vec::new(),
    };
    let rect = CsrMatrix::from_triplets(2, 3, &[(0, 0, 1.0), (1, 1, 1.0)]).unwrap();
    expect_error(&lcp(rect, vec![0.0; 2]), "n: is 2×3; N must be square");
    let eye = CsrMatrix::from_triplets(2, 2, &[(0, 0, 1.0), (1, 1, 1.0)]).unwrap();
    expect_error(&lcp(eye.clone(), vec![0.0, f64::INFINITY]), "r[1]");
    expect_error(&lcp(eye, vec![0.0; 3]), "r: has 3 entries, expected 2");
}

#[test]
fn invalid_settings_are_errors_not_panics() {
    let sys = System::new(&ball_on_plane()).unwrap();
    let solver = signorini::registry::solver("pgs").unwrap();
    for settings in [
        signorini::solver::Settings {
            omega: Some(2.5),
            ..Default::default()
        },
        signorini::solver::Settings {
            tol: f64::NAN,
            ..Default::default()
        },
        signorini::solver::Settings {
            warm_start: Some(vec![0.0; 2]),
            ..Default::default()
        },
    ] {
        let err = solver.solve(&sys, &settings).unwrap_err().to_string();
        assert!(err.starts_with("invalid setting"), "{err}");
    }
    let err = signorini::registry::solver("newton")
        .err()
        .unwrap()
        .to_string();
    assert!(
        err.contains("unknown solver `newton`") && err.contains("jacobi, pgs"),
        "{err}"
    );
}

#[test]
fn json_round_trips_exactly() {
    let mut p = ball_on_plane();
    factored_mut(&mut p).bodies[0].v_free = [0.1, 1.0 / 3.0, -2.0e-300, 1e300, 5e-324, -0.0];
    p.compliance = vec![1e-9, 0.0, std::f64::consts::PI];
    let text = json::to_string(&p);
    assert_eq!(json::from_str(&text, "mem").unwrap(), p);
    // Every Siconos file survives .dat → JSON → problem unchanged.
    for sub in ["lcp", "mlcp", "fc3d", "gfc3d", "gmp"] {
        let dir = problems_dir().join("siconos").join(sub);
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            let p = io::read(&path, None).unwrap();
            let back = json::from_str(&json::to_string(&p), "mem").unwrap();
            assert_eq!(back, p, "{}", path.display());
        }
    }
}

#[test]
fn json_errors_name_file_and_line() {
    let err = json::from_str(
        "{\n  \"cones\": [\"unilateral\"],\n  \"operator\": 3\n}",
        "p.json",
    )
    .unwrap_err()
    .to_string();
    assert!(err.starts_with("p.json: line 3"), "{err}");
}

fn bin() -> Command {
    Command::new(env!("CARGO_BIN_EXE_signorini"))
}

fn temp_file(name: &str, text: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("cli");
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join(name);
    std::fs::write(&path, text).unwrap();
    path
}

#[test]
fn cli_solve_json_prints_one_object_with_the_merit_set() {
    let path = temp_file("ball.json", &json::to_string(&ball_on_plane()));
    let v = run_cli_json(["solve", path.to_str().unwrap(), "--solver", "pgs", "--json"]);
    assert_eq!(v["solver"], "pgs");
    assert_eq!(v["status"], "converged");
    assert!(v["iterations"].as_u64().is_some() && v["time_s"].as_f64().is_some());
    for key in [
        "natural_map_inf",
        "natural_map_2",
        "complementarity",
        "primal_violation",
        "dual_violation",
        "objective",
    ] {
        assert!(v["merit"][key].as_f64().is_some(), "{key}");
    }
    assert!(v["merit"]["siconos_error"].is_null() && v["merit"]["fclib_merit"].is_null());
}

#[test]
fn cli_check_compares_solvers_on_a_siconos_file() {
    let file = problems_dir().join("siconos/fc3d/Rover4144.dat");
    let v = run_cli_json([
        "check",
        file.to_str().unwrap(),
        "--friction",
        "coulomb",
        "--tol",
        "1e-9",
        "--max-iter",
        "100000",
        "--solvers",
        "jacobi,pgs",
        "--json",
    ]);
    let results = v["results"].as_array().unwrap();
    assert_eq!(results.len(), 2);
    for r in results {
        assert!(r["merit"]["siconos_error"].as_f64().unwrap() < 1e-8, "{r}");
    }
    assert!(v["max_gamma_difference"].as_f64().unwrap() < 1e-5, "{v}");
    let table = bin()
        .args(["check", file.to_str().unwrap(), "--friction", "coulomb"])
        .output()
        .unwrap();
    let text = String::from_utf8(table.stdout).unwrap();
    assert!(
        text.contains("siconos error") && text.contains("largest difference"),
        "{text}"
    );
}

#[track_caller]
fn cli_fails_with(args: &[&str], message: &str) {
    let out = bin().args(args).output().unwrap();
    assert!(!out.status.success(), "{args:?} succeeded");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains(message), "stderr `{err}` lacks `{message}`");
    assert!(out.stdout.is_empty(), "nothing on stdout on failure");
}

#[test]
fn cli_reports_bad_input_on_stderr() {
    let ball = temp_file("ok.json", &json::to_string(&ball_on_plane()));
    let mut bad = ball_on_plane();
    factored_mut(&mut bad).bodies[0].mass = -1.0;
    let bad = temp_file("neg-mass.json", &json::to_string(&bad));
    let broken = temp_file("lcp_broken.dat", "2\n0\n2 2\n2 2\n1 0\n0 1\n1.5 oops\n");
    cli_fails_with(&["solve", bad.to_str().unwrap()], "bodies[0].mass");
    cli_fails_with(
        &["solve", broken.to_str().unwrap()],
        "lcp_broken.dat: line 7, token 12: expected a finite number (q[1])",
    );
    cli_fails_with(
        &["solve", ball.to_str().unwrap(), "--solver", "magic"],
        "valid solvers: jacobi, pgs",
    );
    cli_fails_with(&["solve", ball.to_str().unwrap(), "--omega", "3"], "omega");
    cli_fails_with(
        &["solve", ball.to_str().unwrap(), "--check-every", "0"],
        "check_every",
    );
    cli_fails_with(&["solve", "/nonexistent/x.json"], "/nonexistent/x.json");
    cli_fails_with(
        &["solve", ball.with_extension("txt").to_str().unwrap()],
        "unknown problem format",
    );
}
