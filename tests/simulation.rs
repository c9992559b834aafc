//! Physics of the simulator against analytic answers, and scene-file errors.

mod common;

use nalgebra::Vector3;
use signorini::registry;
use signorini::sim::scene::{self, Scene};
use signorini::sim::{Motion, RigidBody};
use signorini::solver::Status;

fn scene(text: &str) -> Scene {
    scene::parse(text, "test.toml", "test", &[]).unwrap_or_else(|e| panic!("{e}"))
}

fn run(scene: &mut Scene, steps: usize, mut check: impl FnMut(&[RigidBody], usize)) {
    let mut solver = signorini::solver::Runner::new(registry::solver(&scene.run.solver).unwrap());
    for k in 0..steps {
        scene.world.step(&mut solver).unwrap();
        check(&scene.world.bodies, k);
    }
}

/// A sphere resting on a plane for 1000 steps neither drifts nor penetrates (1e-6 m).
#[test]
fn sphere_rests_on_a_plane() {
    let mut s = scene(
        r#"
        friction = 0.3
        [settings]
        dt = 0.01
        tol = 1e-10
        [[body]]
        shape = { type = "plane" }
        motion = "fixed"
        [[body]]
        shape = { type = "sphere", radius = 0.1 }
        position = [0.2, -0.1, 0.1]
        "#,
    );
    run(&mut s, 1000, |bodies, k| {
        let p = bodies[1].pose.position;
        let drift = ((p.x - 0.2).powi(2) + (p.y + 0.1).powi(2)).sqrt();
        assert!(drift < 1e-6, "step {k}: drift {drift:e}");
        assert!((p.z - 0.1).abs() < 1e-6, "step {k}: height {}", p.z);
    });
}

fn incline(theta_deg: f64, mu: f64, model: &str) -> Scene {
    let t = theta_deg.to_radians();
    // Plane and box rotated by θ about y: normal (sin θ, 0, cos θ), box center one half
    // height above the plane along the normal.
    let h = 0.05;
    scene(&format!(
        r#"
        friction = {mu}
        [settings]
        dt = 0.005
        tol = 1e-10
        max_iter = 2000
        friction_model = "{model}"
        [[body]]
        shape = {{ type = "plane" }}
        normal = [{sx}, 0.0, {cz}]
        motion = "fixed"
        [[body]]
        shape = {{ type = "box", half_extents = [0.1, 0.1, {h}] }}
        position = [{px}, 0.0, {pz}]
        euler = [0.0, {t}, 0.0]
        "#,
        sx = t.sin(),
        cz = t.cos(),
        px = h * t.sin(),
        pz = h * t.cos(),
    ))
}

/// A box on an incline sticks below atan μ and slides above it with acceleration
/// g (sin θ − μ cos θ), within 2 %.
#[test]
fn box_on_an_incline_sticks_then_slides() {
    let (mu, g) = (0.5, 9.81);
    let mut stick = incline(20.0, mu, "coulomb");
    let start = stick.world.bodies[1].pose.position;
    run(&mut stick, 200, |_, _| {});
    let moved = (stick.world.bodies[1].pose.position - start).norm();
    assert!(moved < 1e-5, "the box moved {moved:e} m below atan μ");

    let theta = 35.0f64.to_radians();
    let expected = g * (theta.sin() - mu * theta.cos());
    let mut slide = incline(35.0, mu, "coulomb");
    let steps = 200;
    run(&mut slide, steps, |_, _| {});
    let v = slide.world.bodies[1].velocity.norm();
    let a = v / (steps as f64 * 0.005);
    assert!(
        (a - expected).abs() <= 0.02 * expected,
        "acceleration {a} vs {expected}"
    );
}

/// `steps.csv` and the summary count the Coulomb model's outer De Saxcé rounds of the CPU's
/// `spg` and `apgd` (at least one per step with contacts) and none under CCP.
#[test]
fn simulate_reports_the_coulomb_rounds_per_step() {
    for solver in ["spg", "apgd"] {
        let mean = common::checked_coulomb_rounds(&format!("rounds-{solver}"), solver, "coulomb");
        assert!(mean > 0.0, "{solver}");
        let none = common::checked_coulomb_rounds(&format!("ccp-{solver}"), solver, "ccp");
        assert_eq!(none, 0.0, "{solver}");
    }
}

/// A chain of 10 rods on spherical joints swings for 5 s from 30° off the vertical; every
/// link keeps its length (the distance between its two joints) within 1e-4 m. The velocity-
/// level scheme leaves an O(h² v²/L) violation per step that the stabilization `b = C/h`
/// removes the next step: 2.2e-5 m at h = 2 ms, 1.4e-4 m at 5 ms, 1.2e-2 m at 10 ms with a
/// 73° swing.
#[test]
fn pendulum_chain_keeps_its_length() {
    let spacing = 0.2;
    let mut s = scene(&format!(
        r#"
        [settings]
        dt = 0.002
        tol = 1e-8
        max_iter = 2000
        [[chain]]
        shape = {{ type = "box", half_extents = [0.02, 0.02, 0.1] }}
        count = 10
        anchor = [0.0, 0.0, 3.0]
        direction = [0.5, 0.0, -0.866]
        spacing = {spacing}
        "#
    ));
    let mut worst = 0.0f64;
    let start = s.world.bodies[9].pose.position;
    let mut swing = 0.0f64;
    run(&mut s, 2500, |bodies, _| {
        swing = swing.max((bodies[9].pose.position - start).norm());
        // Joint j sits at the top of link j; link j's length runs from its own anchor of
        // joint j to its neighbor's anchor of joint j + 1 (the ground for j = 0).
        let mut top = Vector3::new(0.0, 0.0, 3.0);
        for b in bodies {
            let bottom = b.pose.to_world(&Vector3::new(0.0, 0.0, 0.5 * spacing));
            let len = (bottom - top).norm();
            worst = worst.max((len - spacing).abs());
            top = bottom;
        }
    });
    assert!(worst < 1e-4, "a link length drifted by {worst:e}");
    // It did swing: the free end travelled well away from its start.
    assert!(swing > 1.0, "the end moved at most {swing} m");
}

/// A stack of 10 boxes stands for 5 s: the top box moves less than 1 mm.
#[test]
fn stack_of_boxes_stands() {
    let mut s = scene(
        r#"
        friction = 0.5
        [settings]
        dt = 0.01
        tol = 1e-8
        max_iter = 3000
        [[body]]
        shape = { type = "plane" }
        motion = "fixed"
        [[stack]]
        shape = { type = "box", half_extents = [0.1, 0.1, 0.05] }
        count = 10
        "#,
    );
    let top = s.world.bodies.len() - 1;
    let start = s.world.bodies[top].pose.position;
    run(&mut s, 500, |_, _| {});
    let moved = (s.world.bodies[top].pose.position - start).norm();
    assert!(moved < 1e-3, "the top box moved {moved:e} m");
}

/// `single_brick` (4 redundant corner contacts) rests still.
#[test]
fn single_brick_is_stable() {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/scenes/single_brick.toml");
    let mut s = scene::load(path.as_ref(), &[]).unwrap();
    let start = s.world.bodies[1].pose;
    run(&mut s, 100, |_, _| {});
    let end = s.world.bodies[1].pose;
    assert!((end.position - start.position).norm() < 1e-6);
    assert!(end.orientation.angle_to(&start.orientation) < 1e-6);
}

/// A frictionless pile never gains kinetic + potential energy from one step to the next
/// beyond the solver's complementarity error. With no penetration recovery (`b ≥ 0`) and
/// `u = Jv⁺ + b`, one step changes the energy by `−γ·b − ½‖Δv − g h‖²_M + γ·u`: only an
/// inexact `γ·u ≠ 0` can add energy. The spheres fall 0.3 m, faster than the envelope per
/// step, so they land overlapping: with `max_recovery_speed = 0.5` instead of 0, pushing those
/// overlaps out raises the energy by 0.08 J in one step and this test fails. (The box is wide
/// enough for a loose pile: in a crowded box the active contacts become rank deficient and
/// projected Gauss–Seidel stalls near 1e-5 m/s on many steps.)
#[test]
fn frictionless_pile_never_gains_energy() {
    let mut s = scene(
        r#"
        friction = 0.0
        [settings]
        dt = 0.01
        tol = 1e-10
        max_iter = 5000
        envelope = 0.005
        max_recovery_speed = 0.0
        [[container]]
        half_size = [0.15, 0.15]
        [[lattice]]
        shape = { type = "sphere", radius = 0.02 }
        count = 40
        min = [-0.15, -0.15, 0.3]
        max = [0.15, 0.15, 0.0]
        jitter = 0.8
        seed = 5
        "#,
    );
    let energy = |bodies: &[RigidBody]| -> f64 {
        bodies
            .iter()
            .filter(|b| b.is_dynamic())
            .map(|b| b.kinetic_energy() + b.mass * 9.81 * b.pose.position.z)
            .sum()
    };
    let mut solver = signorini::solver::Runner::new(registry::solver("pgs").unwrap());
    let mut previous = energy(&s.world.bodies);
    let start = previous;
    for k in 0..200 {
        let (_, report) = s.world.step_with_report(&mut solver).unwrap();
        // Σ_k |γ_k·u_k| ≤ blocks · max_k |γ_k·u_k|.
        let slack = report.merit.complementarity * report.gamma.len() as f64;
        let e = energy(&s.world.bodies);
        assert!(
            e <= previous + slack + 1e-12 * start,
            "step {k}: energy rose from {previous} to {e} (slack {slack:e})"
        );
        assert_eq!(
            report.status,
            signorini::solver::Status::Converged,
            "step {k}"
        );
        previous = e;
    }
    assert!(previous < start, "the pile settled");
}

/// The shaker's container follows its prescribed motion exactly.
#[test]
fn shaker_container_follows_its_motion() {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/scenes/shaker.toml");
    let sets = [("lattice.0.count".to_string(), "50".to_string())];
    let mut s = scene::load(path.as_ref(), &sets).unwrap();
    let (osc, rest) = match s.world.bodies[0].motion {
        Motion::Kinematic { oscillation, rest } => (oscillation, rest),
        _ => panic!("the container floor is kinematic"),
    };
    let dt = s.world.settings.dt;
    run(&mut s, 40, |bodies, k| {
        let t = (k + 1) as f64 * dt;
        let want = rest + osc.displacement(t);
        assert!((bodies[0].pose.position - want).norm() < 1e-15, "step {k}");
    });
}

#[track_caller]
fn scene_error(text: &str, expected: &[&str]) {
    let err = match scene::parse(text, "bad.toml", "bad", &[]) {
        Ok(_) => panic!("accepted"),
        Err(e) => e.to_string(),
    };
    for part in expected {
        assert!(err.contains(part), "`{err}` lacks `{part}`");
    }
}

#[test]
fn scene_errors_name_file_line_and_key() {
    scene_error(
        "friction = 0.3\n[settings]\ndt = 0.01\ntimestep = 2\n",
        &["bad.toml", "line 4", "timestep"],
    );
    scene_error("[settings]\ndt = \"fast\"\n", &["bad.toml", "line 2", "dt"]);
    scene_error(
        "[[body]]\nshape = { type = \"plane\" }\nmotion = \"fixed\"\n\n[[body]]\nshape = { type = \"sphere\", radius = -0.1 }\n",
        &[
            "bad.toml",
            "line 6",
            "body[1].shape.radius",
            "must be finite and > 0",
        ],
    );
    scene_error(
        "[[lattice]]\nshape = { type = \"sphere\", radius = 0.1 }\ncount = 3\nmin = [0, 0, 0]\nmax = [1, 1, 0]\njitter = 2\n",
        &["line 6", "lattice[0].jitter"],
    );
    let err = scene::parse(
        "[run]\nsteps = 3\n",
        "x.toml",
        "x",
        &[("run.steps".into(), "\"many\"".into())],
    )
    .err()
    .unwrap()
    .to_string();
    assert!(
        err.contains("x.toml") && err.contains("--set run.steps"),
        "{err}"
    );
}

/// `settings.precision = "f32"` (`simulate --set settings.precision=f32`) reaches the CPU
/// kernel: a pile stepped by `jacobi` in `f32` meets the tolerance on its `f64` residual at
/// every step and follows the `f64` run to its precision, without being that run.
#[test]
fn a_scene_iterates_in_its_precision() {
    let mut runs = Vec::new();
    for precision in ["f64", "f32"] {
        let mut s = common::load_scene(
            "balls_in_box.toml",
            &[
                ("lattice.0.count", "100"),
                ("settings.tol", "1e-4"),
                ("settings.max_iter", "5000"),
                ("settings.precision", precision),
            ],
        );
        let mut solver = signorini::solver::Runner::new(registry::solver("jacobi").unwrap());
        for k in 0..20 {
            let stats = s.world.step(&mut solver).unwrap();
            assert_eq!(stats.status, Status::Converged, "{precision}, step {k}");
            assert!(
                stats.residual <= 1e-4,
                "{precision}, step {k}: {}",
                stats.residual
            );
        }
        let positions: Vec<[f64; 3]> = s
            .world
            .bodies
            .iter()
            .map(|b| b.pose.position.into())
            .collect();
        runs.push(positions);
    }
    assert_ne!(runs[0], runs[1], "the f32 run is the f64 run");
    for (a, b) in runs[0].iter().zip(&runs[1]) {
        for i in 0..3 {
            assert!((a[i] - b[i]).abs() <= 1e-4, "{a:?} {b:?}");
        }
    }
}

/// `simulate --precision f32` iterates the CPU kernel in `f32` (its `steps.csv` residuals
/// differ from the `f64` run's, each within the tolerance); a bad value is refused.
#[test]
fn cli_simulate_takes_the_kernels_precision() {
    let scene = concat!(env!("CARGO_MANIFEST_DIR"), "/scenes/balls_in_box.toml");
    let mut residuals = Vec::new();
    for precision in ["f64", "f32"] {
        let out = common::fresh_dir(&format!("sim-precision-{precision}"));
        let summary = common::run_cli_json([
            "simulate",
            scene,
            "--steps",
            "5",
            "--solver",
            "jacobi",
            "--precision",
            precision,
            "--set",
            "lattice.0.count=30",
            "--snapshot-every",
            "0",
            "--json-summary",
            "--out",
            out.to_str().unwrap(),
        ]);
        assert_eq!(summary["steps_not_converged"], 0, "{precision}: {summary}");
        let csv = std::fs::read_to_string(out.join("steps.csv")).unwrap();
        let mut lines = csv.lines();
        let header: Vec<&str> = lines.next().unwrap().split(',').collect();
        let column = header.iter().position(|&h| h == "residual").unwrap();
        let values: Vec<String> = lines
            .map(|l| l.split(',').nth(column).unwrap().to_string())
            .collect();
        assert_eq!(values.len(), 5);
        residuals.push(values);
    }
    assert_ne!(residuals[0], residuals[1], "the f32 run is the f64 run");
    let err = common::cli_refusal(["simulate", scene, "--precision", "f16"]);
    assert!(err.contains("--precision") && err.contains("f32"), "{err}");
}

/// Every scene of `scenes/` loads and takes a few steps with a sane result.
#[test]
fn every_scene_runs() {
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/scenes");
    let mut count = 0;
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        let mut s = scene::load(&path, &[]).unwrap_or_else(|e| panic!("{e}"));
        let mut solver = signorini::solver::Runner::new(registry::solver(&s.run.solver).unwrap());
        for _ in 0..2 {
            let stats = s.world.step(&mut solver).unwrap();
            assert!(stats.kinetic_energy.is_finite(), "{}", path.display());
        }
        count += 1;
    }
    assert_eq!(count, 11);
}

/// `signorini simulate` writes steps.csv, rendered snapshots and their animation, VTK frames,
/// and one JSON summary (the snapshots need a GPU adapter: lavapipe without a GPU; skipped
/// without one under `SIGNORINI_SKIP_GPU=1`).
#[test]
fn cli_simulate_writes_its_outputs() {
    if common::gpu::context().is_none() {
        return;
    }
    let out = common::fresh_dir("sim-cli");
    let scene = concat!(env!("CARGO_MANIFEST_DIR"), "/scenes/balls_in_box.toml");
    let summary = common::run_cli_json([
        "simulate",
        scene,
        "--steps",
        "6",
        "--set",
        "lattice.0.count=30",
        "--snapshot-every",
        "3",
        "--vtk",
        "--animation",
        out.join("run.gif").to_str().unwrap(),
        "--frame-size",
        "320x200",
        "--json-summary",
        "--out",
        out.to_str().unwrap(),
    ]);
    assert_eq!(summary["steps"], 6);
    assert_eq!(summary["bodies"], 35);
    assert_eq!(summary["snapshots"], 2);
    for key in [
        "collision_s",
        "assembly_s",
        "solve_s",
        "output_s",
        "wall_s",
        "mean_iterations",
    ] {
        assert!(summary[key].as_f64().is_some(), "{key}");
    }
    let csv = std::fs::read_to_string(out.join("steps.csv")).unwrap();
    assert_eq!(csv.lines().count(), 7);
    for name in [
        "frame_0003.png",
        "frame_0006.png",
        "frame_0006.vtk",
        "frames.pvd",
    ] {
        assert!(out.join(name).is_file(), "{name}");
    }
    let frame = image::open(out.join("frame_0006.png")).unwrap();
    assert_eq!((frame.width(), frame.height()), (320, 200));
    let file = std::fs::File::open(out.join("run.gif")).unwrap();
    let mut gif = gif::DecodeOptions::new().read_info(file).unwrap();
    assert_eq!((gif.width(), gif.height()), (320, 200));
    let mut frames = 0;
    while gif.read_next_frame().unwrap().is_some() {
        frames += 1;
    }
    assert_eq!(frames, 2, "one animation frame per snapshot");
    let err = common::cli_refusal(["simulate", scene, "--set", "lattice.0.shape.radius=-1"]);
    assert!(err.contains("lattice[0].shape.radius"), "{err}");
}
