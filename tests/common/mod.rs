//! Builders shared by the integration tests.
#![allow(dead_code)] // each test binary uses a different subset

pub mod gpu;
pub mod refine;

use std::path::PathBuf;

use signorini::problem::{
    Body, Cone, Factored, FrictionModel, JacobianBlock, Operator, Problem, System,
};
use signorini::registry;
use signorini::solver::{Report, Settings};

/// Gravity used by the analytic cases, m/s².
pub const G: f64 = 9.81;
/// Time step of the analytic cases, s.
pub const H: f64 = 0.01;

/// The external problem files of `tests/data` (Siconos and FCLIB, see its README); every
/// test reads them through this folder.
pub fn problems_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/data")
}

/// A sphere-like body of mass `m` with free velocity `v_free`.
pub fn body(m: f64, v_free: [f64; 6]) -> Body {
    let j = 0.4 * m * 0.1 * 0.1;
    Body {
        mass: m,
        inertia: [j, j, j],
        v_free,
    }
}

/// A block acting on one body with the given rows.
pub fn on_body(b: usize, rows: Vec<[f64; 6]>) -> JacobianBlock {
    JacobianBlock {
        bodies: vec![b].into(),
        rows: rows.into(),
    }
}

/// A factored problem without bias.
pub fn factored(bodies: Vec<Body>, cones: Vec<Cone>, jacobians: Vec<JacobianBlock>) -> Problem {
    let m = cones.iter().map(Cone::dim).sum();
    Problem {
        name: "analytic".into(),
        class: Default::default(),
        cones,
        operator: Operator::Factored(Factored {
            bodies,
            jacobians,
            b: vec![0.0; m],
        }),
        compliance: Vec::new(),
    }
}

/// Solves with the named registry solver.
pub fn solve(sys: &System, solver: &str, settings: &Settings) -> Report {
    registry::solver(solver)
        .unwrap()
        .solve(sys, settings)
        .unwrap()
}

/// Tight settings for exact answers.
pub fn tight(friction: FrictionModel) -> Settings {
    Settings {
        friction,
        tol: 1e-13,
        max_iter: 200_000,
        omega: None,
        ..Settings::default()
    }
}

/// Asserts `a ≈ b` within `tol · (1 + |b|)`.
#[track_caller]
pub fn assert_close(a: f64, b: f64, tol: f64) {
    assert!(
        (a - b).abs() <= tol * (1.0 + b.abs()),
        "{a} is not within {tol} of {b}"
    );
}

/// An empty folder under cargo's temporary folder for integration tests.
pub fn fresh_dir(name: &str) -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(name);
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// The output of the `signorini` binary run with `args`.
fn run_cli<I, S>(args: I) -> std::process::Output
where
    I: IntoIterator<Item = S>,
    S: AsRef<std::ffi::OsStr>,
{
    std::process::Command::new(env!("CARGO_BIN_EXE_signorini"))
        .args(args)
        .output()
        .unwrap()
}

/// Runs the `signorini` binary with `args`, asserts it succeeded and parses its stdout as one
/// JSON object.
#[track_caller]
pub fn run_cli_json<I, S>(args: I) -> serde_json::Value
where
    I: IntoIterator<Item = S>,
    S: AsRef<std::ffi::OsStr>,
{
    let out = run_cli(args);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

/// Runs the `signorini` binary with `args`, asserts it failed and returns its stderr.
#[track_caller]
pub fn cli_refusal<I, S>(args: I) -> String
where
    I: IntoIterator<Item = S>,
    S: AsRef<std::ffi::OsStr>,
{
    let out = run_cli(args);
    assert!(!out.status.success(), "the command succeeded");
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// The problem of step `steps + 1` of a scene of `scenes/` (with `--set`-style overrides),
/// after `steps` steps with PGS.
pub fn scene_problem(file: &str, sets: &[(&str, &str)], steps: usize) -> System {
    let mut s = load_scene(file, sets);
    let mut pgs = signorini::solver::Runner::new(registry::solver("pgs").unwrap());
    for _ in 0..steps {
        s.world.step(&mut pgs).unwrap();
    }
    System::new(&s.world.problem().problem).unwrap()
}

/// `scenes/FILE` (e.g. `balls_in_box.toml`) as it starts, with the overrides `sets` (as
/// `simulate --set` takes them).
pub fn load_scene(file: &str, sets: &[(&str, &str)]) -> signorini::sim::scene::Scene {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("scenes")
        .join(file);
    let sets: Vec<(String, String)> = sets
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    signorini::sim::scene::load(&path, &sets).unwrap()
}

/// A seeded generator without dependencies (SplitMix64), so that random cases are
/// reproducible.
pub struct Rng(pub u64);

impl Rng {
    /// The next 64 random bits.
    pub fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in `[lo, hi)`.
    pub fn uniform(&mut self, lo: f64, hi: f64) -> f64 {
        lo + (hi - lo) * (self.next() >> 11) as f64 / (1u64 << 53) as f64
    }

    /// Uniform in `0..n`.
    pub fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
}

/// Runs `simulate` on 64 spheres of `balls_in_box` for 25 steps with `solver` under the
/// friction model `model`, and checks the Coulomb rounds it reports: every step with
/// contacts and iterations under Coulomb ran at least one outer round and no more than its
/// iterations, no step ran any under CCP or without iterations, and the summary's `mean_rounds` is the mean
/// of `steps.csv`'s `rounds` column. Returns that mean.
pub fn checked_coulomb_rounds(name: &str, solver: &str, model: &str) -> f64 {
    let dir = fresh_dir(name);
    let scene = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("scenes/balls_in_box.toml");
    let model = format!("settings.friction_model={model}");
    let json = run_cli_json([
        "simulate".as_ref(),
        scene.as_os_str(),
        "--solver".as_ref(),
        solver.as_ref(),
        "--steps".as_ref(),
        "25".as_ref(),
        "--set".as_ref(),
        "lattice.0.count=64".as_ref(),
        "--set".as_ref(),
        model.as_ref(),
        "--snapshot-every".as_ref(),
        "0".as_ref(),
        "--json-summary".as_ref(),
        "--out".as_ref(),
        dir.as_os_str(),
    ]);
    let csv = std::fs::read_to_string(dir.join("steps.csv")).unwrap();
    let mut lines = csv.lines();
    let header: Vec<&str> = lines.next().unwrap().split(',').collect();
    let column = |name: &str| header.iter().position(|h| *h == name).unwrap();
    let (contacts, iterations, rounds) =
        (column("contacts"), column("iterations"), column("rounds"));
    let coulomb = model.ends_with("coulomb");
    let mut total = 0;
    let mut steps = 0;
    for line in lines {
        let f: Vec<usize> = line
            .split(',')
            .enumerate()
            .filter(|(i, _)| [contacts, iterations, rounds].contains(i))
            .map(|(_, v)| v.parse().unwrap())
            .collect();
        let (n, it, r) = (f[0], f[1], f[2]);
        if coulomb && n > 0 && it > 0 {
            assert!((1..=it).contains(&r), "{solver}: {line}");
        } else {
            assert_eq!(r, 0, "{solver} {model}: {line}");
        }
        total += r;
        steps += 1;
    }
    assert_eq!(steps, 25);
    let mean = json["mean_rounds"].as_f64().unwrap();
    assert_eq!(mean, total as f64 / 25.0, "{solver}");
    mean
}
