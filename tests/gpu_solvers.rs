//! The GPU solvers (DESIGN §4): certification of `jacobi-gpu`, `spg-gpu` and `apgd-gpu`
//! against the CPU `f64` solvers of the same names on scene and Siconos problems,
//! determinism, the readback schedule, buffer reuse across a session's solves, the
//! `--device gpu` selection and the parameters' checks.
//!
//! Without an adapter these tests fail unless `SIGNORINI_SKIP_GPU=1` is set (then they are
//! skipped with a note); CI installs Mesa's lavapipe, so every shader runs there.

mod common;
use common::gpu::{context, random_problem};
use common::{problems_dir, scene_problem};

use std::cell::RefCell;
use std::path::Path;
use std::sync::Arc;

use signorini::gpu::{
    ApgdGpu, ApgdMethod, GpuContext, GpuSession, GpuStats, JacobiGpu, JacobiMethod, MAX_GLL,
    READBACK_EVERY, SpgGpu, SpgMethod,
};
use signorini::problem::{FrictionModel, Operator, Problem, System};
use signorini::registry;
use signorini::solver::{Report, Settings, Status};

/// A Siconos fc3d problem: an assembled `N` in CSR.
fn siconos(file: &str) -> System {
    let path = problems_dir().join("siconos/fc3d").join(file);
    System::new(&signorini::problem::io::read(&path, None).unwrap()).unwrap()
}

/// The problem of step 21 of `balls_in_box` with 100 balls, stepped with `pgs`.
fn balls_in_box() -> Problem {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("scenes/balls_in_box.toml");
    let sets = [("lattice.0.count".to_string(), "100".to_string())];
    let mut scene = signorini::sim::scene::load(&path, &sets).unwrap();
    let mut pgs = signorini::solver::Runner::new(registry::solver("pgs").unwrap());
    for _ in 0..20 {
        scene.world.step(&mut pgs).unwrap();
    }
    scene.world.problem().problem
}

fn norm_inf(v: &[f64]) -> f64 {
    v.iter().fold(0.0, |m, x| m.max(x.abs()))
}

/// `max |Δγ|` between two reports' impulses (printed relative to `‖γ‖∞` of the first).
fn gamma_difference(what: &str, a: &Report, b: &Report) -> f64 {
    let diff = a
        .gamma
        .iter()
        .zip(&b.gamma)
        .fold(0.0f64, |m, (x, y)| m.max((x - y).abs()));
    eprintln!("{what}: max |Δγ| / ‖γ‖∞ = {:e}", diff / norm_inf(&a.gamma));
    diff
}

#[test]
fn jacobi_gpu_agrees_with_cpu_jacobi() {
    let Some(ctx) = context() else { return };
    let sys = System::new(&balls_in_box()).unwrap();
    assert!(sys.blocks() > 50, "only {} blocks", sys.blocks());
    let gpu = JacobiGpu::with_context(ctx);
    // `jacobi` and `jacobi-gpu` with the same `tol` and `max_iter`.
    let both = |tol: f64, max_iter: usize| {
        let settings = Settings {
            tol,
            max_iter,
            ..Settings::default()
        };
        let cpu = common::solve(&sys, "jacobi", &settings);
        let (g, stats) = gpu.solve_with_stats(&sys, &settings).unwrap();
        (cpu, g, stats)
    };
    let (cpu, g, stats) = both(1e-4, 20_000);
    assert_eq!(cpu.status, Status::Converged);
    assert_eq!(g.status, Status::Converged);
    // The GPU measures every READBACK_EVERY iterations: it stops at most that much later.
    assert!(g.iterations >= cpu.iterations && g.iterations < cpu.iterations + READBACK_EVERY);
    assert!(stats.readbacks <= g.iterations / READBACK_EVERY + 2);
    // Both natural maps lie below tol · scale (relative residual ≤ tol); they agree up to
    // that plus the f32 floor, 64 ε_f32 · scale.
    let scale = norm_inf(sys.r()).max(norm_inf(&cpu.gamma));
    let (a, b) = (cpu.merit.natural_map_inf, g.merit.natural_map_inf);
    eprintln!(
        "balls_in_box: {} blocks, cpu {} it, gpu {} it, natural_map_inf cpu {a:e} gpu {b:e}, scale {scale:e}",
        sys.blocks(),
        cpu.iterations,
        g.iterations
    );
    assert!((a - b).abs() <= 1e-4 * scale + 64.0 * f64::from(f32::EPSILON) * scale);
    let diff = gamma_difference("converged gamma", &cpu, &g);
    // Stopped at different iterations (92 vs 100 here): they differ by about the tolerance.
    assert!(diff <= 1e-3 * norm_inf(&cpu.gamma));

    // The same number of iterations: the difference is f32 rounding only.
    let (c, g, _) = both(0.0, 300);
    // Both return their best iterate; compare the last ones' residuals and the iterates.
    assert_eq!(c.iterations, g.iterations);
    let diff = gamma_difference("300 iterations", &c, &g);
    assert!(diff <= 1e-4 * norm_inf(&c.gamma));
}

/// Sessions of the three GPU solvers on one device, kept between solves (as `simulate` keeps
/// its session).
struct Gpu {
    jacobi: RefCell<GpuSession<JacobiMethod>>,
    spg: RefCell<GpuSession<SpgMethod>>,
    apgd: RefCell<GpuSession<ApgdMethod>>,
}

impl Gpu {
    fn new(ctx: &Arc<GpuContext>) -> Self {
        Gpu {
            jacobi: RefCell::new(JacobiGpu::with_context(ctx.clone()).session().unwrap()),
            spg: RefCell::new(SpgGpu::with_context(ctx.clone()).session().unwrap()),
            apgd: RefCell::new(ApgdGpu::with_context(ctx.clone()).session().unwrap()),
        }
    }

    /// The GPU solver of the CPU solver `name`.
    fn solve(&self, name: &str, sys: &System, settings: &Settings) -> (Report, GpuStats) {
        match name {
            "jacobi" => self.jacobi.borrow_mut().solve_with_stats(sys, settings),
            "spg" => self.spg.borrow_mut().solve_with_stats(sys, settings),
            "apgd" => self.apgd.borrow_mut().solve_with_stats(sys, settings),
            _ => unreachable!(),
        }
        .unwrap()
    }
}

/// What `f32` adds to a tolerance on the relative residual: `γ` and `u` are rounded to
/// `ε_f32` relative and the residual's sums lose a few ulps more; `32 ε_f32` (3.8e-6) covers
/// both.
const F32_FLOOR: f64 = 32.0 * f32::EPSILON as f64;

/// The GPU solver ends as well as the CPU `f64` solver (converged, or as the CPU), its
/// residual (certified in `f64`) meets `tol` (or the CPU's, if that stalled above) plus
/// `F32_FLOOR`, and its merit set agrees with the CPU's within 4 times that tolerance times
/// the residual's scale `max(‖r‖, ‖γ‖, ‖u‖)` (natural maps, violations), times its square
/// for the products (complementarity, objective: first order in the error of `γ`).
fn certify(what: &str, sys: &System, settings: &Settings, cpu: &Report, gpu: &Report) {
    let norm2 = |v: &[f64]| v.iter().map(|x| x * x).sum::<f64>().sqrt();
    let scale = norm2(sys.r())
        .max(norm2(&cpu.gamma))
        .max(norm2(&sys.velocity(&cpu.gamma)));
    let reached = settings.criterion.of(&cpu.residual);
    let tol = settings.tol.max(reached) + F32_FLOOR;
    let (c, g) = (&cpu.merit, &gpu.merit);
    eprintln!(
        "{what}: {} {} it / {} {} it, relative residual {:.2e} / {:.2e}, objective {:.6e} / {:.6e}",
        cpu.solver,
        cpu.iterations,
        gpu.solver,
        gpu.iterations,
        settings.criterion.of(&cpu.residual),
        settings.criterion.of(&gpu.residual),
        c.objective,
        g.objective
    );
    assert!(
        gpu.status == Status::Converged || gpu.status == cpu.status,
        "{what}: {} {} / {} {}",
        cpu.solver,
        cpu.status,
        gpu.solver,
        gpu.status
    );
    assert!(
        settings.criterion.of(&gpu.residual) <= tol,
        "{what}: {}",
        gpu.solver
    );
    let bound = 4.0 * tol * scale;
    for (name, a, b, bound) in [
        (
            "natural_map_inf",
            c.natural_map_inf,
            g.natural_map_inf,
            bound,
        ),
        ("natural_map_2", c.natural_map_2, g.natural_map_2, bound),
        (
            "primal_violation",
            c.primal_violation,
            g.primal_violation,
            bound,
        ),
        ("dual_violation", c.dual_violation, g.dual_violation, bound),
        (
            "complementarity",
            c.complementarity,
            g.complementarity,
            bound * scale,
        ),
        ("objective", c.objective, g.objective, bound * scale),
    ] {
        assert!(
            (a - b).abs() <= bound,
            "{what}: {name} cpu {a:e} gpu {b:e} (bound {bound:e})"
        );
    }
    if let (Some(a), Some(b)) = (c.siconos_error, g.siconos_error) {
        assert!(a <= tol && b <= tol, "{what}: Siconos errors {a:e} {b:e}");
    }
}

/// Every GPU solver against the CPU `f64` solver of the same name on problems dumped from
/// scenes (factored form, CCP).
#[test]
fn gpu_solvers_agree_with_cpu_on_scene_problems() {
    let Some(ctx) = context() else { return };
    let gpu = Gpu::new(&ctx);
    let settings = Settings {
        tol: 1e-5,
        max_iter: 20_000,
        ..Settings::default()
    };
    for (file, sets, steps) in [
        ("balls_in_box.toml", &[("lattice.0.count", "100")][..], 20),
        (
            "plate_stack.toml",
            &[("stack.0.masses", "[1.0, 1000.0, 1.0, 1000.0, 1.0]")][..],
            10,
        ),
    ] {
        let sys = scene_problem(file, sets, steps);
        assert!(sys.factored().is_some());
        for name in ["jacobi", "spg", "apgd"] {
            let cpu = registry::solver(name)
                .unwrap()
                .solve(&sys, &settings)
                .unwrap();
            let (g, _) = gpu.solve(name, &sys, &settings);
            certify(file, &sys, &settings, &cpu, &g);
        }
    }
}

/// Every GPU solver against the CPU `f64` solver of the same name on Siconos fc3d problems
/// (assembled `N` in CSR, Coulomb model) and on a global gfc3d problem (reduced to its
/// Delassus form by `System::new`).
#[test]
fn gpu_solvers_agree_with_cpu_on_siconos_problems() {
    let Some(ctx) = context() else { return };
    let gpu = Gpu::new(&ctx);
    let settings = Settings {
        friction: FrictionModel::Coulomb,
        tol: 1e-5,
        max_iter: 20_000,
        ..Settings::default()
    };
    let mut systems: Vec<(String, System)> = [
        "FC3D_Example1.dat",
        "NESpheres_10_1.dat",
        "Rover4144.dat",
        "Confeti-ex13-Fc3D-SBM.dat",
        "Capsules-i101-404.dat",
    ]
    .iter()
    .map(|f| (f.to_string(), siconos(f)))
    .collect();
    let global = problems_dir().join("siconos/gfc3d/GFC3D_TwoRods1.dat");
    let problem = signorini::problem::io::read(&global, None).unwrap();
    assert!(matches!(problem.operator, Operator::Global(_)));
    systems.push(("GFC3D_TwoRods1.dat".into(), System::new(&problem).unwrap()));
    for (file, sys) in &systems {
        assert!(sys.factored().is_none());
        for name in ["jacobi", "spg", "apgd"] {
            let cpu = registry::solver(name)
                .unwrap()
                .solve(sys, &settings)
                .unwrap();
            let (g, _) = gpu.solve(name, sys, &settings);
            certify(file, sys, &settings, &cpu, &g);
        }
    }
}

/// Two runs of each GPU solver give byte-identical impulses (fixed summation orders, no
/// atomics), under both friction models.
#[test]
fn two_runs_are_bit_identical() {
    let Some(ctx) = context() else { return };
    let sys = System::new(&random_problem(3, 200, 500)).unwrap();
    let bits = |g: &[f64]| g.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
    for friction in [FrictionModel::Ccp, FrictionModel::Coulomb] {
        let settings = Settings {
            friction,
            tol: 0.0,
            max_iter: 95,
            omega: Some(0.1),
            ..Settings::default()
        };
        for name in ["jacobi", "spg", "apgd"] {
            // Fresh solvers: no state carried from one run to the other.
            let (a, _) = Gpu::new(&ctx).solve(name, &sys, &settings);
            let (b, _) = Gpu::new(&ctx).solve(name, &sys, &settings);
            assert_eq!(a.iterations, 95, "{name}");
            assert_eq!(bits(&a.gamma), bits(&b.gamma), "{name} {friction:?}");
            let trace = |r: &Report| {
                r.trace
                    .iter()
                    .map(|t| t.residual.to_bits())
                    .collect::<Vec<_>>()
            };
            assert_eq!(trace(&a), trace(&b), "{name} {friction:?}");
        }
    }
}

/// No per-iteration round trip: a solve of `n` iterations submits `⌈n / K⌉` command buffers
/// and reads back at most `n / K + 2` times (a few scalars after each submission, the
/// impulses once), `K` = [`READBACK_EVERY`].
#[test]
fn solves_read_back_every_k_iterations_only() {
    let Some(ctx) = context() else { return };
    let sys = System::new(&random_problem(5, 200, 500)).unwrap();
    let gpu = Gpu::new(&ctx);
    let settings = Settings {
        tol: 0.0,
        max_iter: 95,
        ..Settings::default()
    };
    for name in ["jacobi", "spg", "apgd"] {
        let (r, stats) = gpu.solve(name, &sys, &settings);
        assert_eq!(r.iterations, 95);
        assert_eq!(stats.submissions, 10, "{name}");
        assert!(
            stats.readbacks <= r.iterations / READBACK_EVERY + 2,
            "{name}: {stats:?}"
        );
        // The initial iterate and one entry per submission.
        assert_eq!(r.trace.len(), 11);
    }
}

/// A solver keeps its kernels and buffers for the next problem of the same sizes (the next
/// step of a simulation, the next round of the Coulomb fixed point) and only uploads the
/// data; the result is the one of a fresh solver.
#[test]
fn same_sized_problems_reuse_the_buffers() {
    let Some(ctx) = context() else { return };
    // Two steps of the same scene: the same bodies and contacts, other velocities.
    let problem = random_problem(11, 100, 300);
    let mut next = problem.clone();
    let Operator::Factored(f) = &mut next.operator else {
        unreachable!()
    };
    f.bodies.iter_mut().for_each(|b| b.v_free[2] -= 0.1);
    let (a, b) = (System::new(&problem).unwrap(), System::new(&next).unwrap());
    let other = System::new(&random_problem(13, 120, 250)).unwrap();
    let settings = Settings {
        tol: 0.0,
        max_iter: 40,
        ..Settings::default()
    };
    let bits = |g: &[f64]| g.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
    let gpu = Gpu::new(&ctx);
    for name in ["jacobi", "spg", "apgd"] {
        assert!(!gpu.solve(name, &a, &settings).1.reused, "{name}");
        let (kept, stats) = gpu.solve(name, &b, &settings);
        assert!(stats.reused, "{name}");
        let (fresh, _) = Gpu::new(&ctx).solve(name, &b, &settings);
        assert_eq!(bits(&kept.gamma), bits(&fresh.gamma), "{name}");
        assert!(!gpu.solve(name, &other, &settings).1.reused, "{name}");
    }
    // The rounds of the Coulomb fixed point after the first reuse the buffers.
    let coulomb = Settings {
        friction: FrictionModel::Coulomb,
        tol: 1e-6,
        max_iter: 2000,
        ..Settings::default()
    };
    for name in ["spg", "apgd"] {
        let (r, stats) = gpu.solve(name, &siconos("Rover4144.dat"), &coulomb);
        assert!(r.trace.len() > 2 && stats.reused, "{name}: {stats:?}");
    }
}

/// A session whose problem grows (the next step of a simulation with more contacts) takes
/// buffers with room to spare: a later problem up to that size reuses them, with the answer
/// of a fresh session to `f32` rounding (the dispatches cover the room, the reductions add
/// its zeros). Without certification the report's residual is the GPU's own measure of the
/// same impulses, within `F32_FLOOR` of the `f64` one.
#[test]
fn a_growing_problem_keeps_room_and_certification_is_optional() {
    let Some(ctx) = context() else { return };
    let small = System::new(&random_problem(11, 100, 300)).unwrap();
    let grown = System::new(&random_problem(17, 105, 330)).unwrap();
    let between = System::new(&random_problem(19, 104, 315)).unwrap();
    let settings = Settings {
        tol: 1e-5,
        max_iter: 400,
        ..Settings::default()
    };
    let gpu = Gpu::new(&ctx);
    for name in ["jacobi", "spg", "apgd"] {
        assert!(!gpu.solve(name, &small, &settings).1.reused, "{name}");
        assert!(!gpu.solve(name, &grown, &settings).1.reused, "{name}");
        let (kept, stats) = gpu.solve(name, &between, &settings);
        assert!(stats.reused, "{name}: a smaller problem fits the room");
        let (fresh, _) = Gpu::new(&ctx).solve(name, &between, &settings);
        assert_eq!(
            (kept.status, kept.iterations),
            (fresh.status, fresh.iterations),
            "{name}"
        );
        let diff = gamma_difference(name, &kept, &fresh);
        assert!(diff <= 1e-4 * norm_inf(&fresh.gamma), "{name}: {diff:e}");

        let uncertified = Settings {
            certify: false,
            ..settings.clone()
        };
        let (own, _) = Gpu::new(&ctx).solve(name, &between, &uncertified);
        assert_eq!(own.gamma, fresh.gamma, "{name}: the same iterations");
        assert_eq!(own.status, fresh.status, "{name}");
        let (a, b) = (own.residual.relative, fresh.residual.relative);
        assert!((a - b).abs() <= F32_FLOOR, "{name}: GPU {a:e}, f64 {b:e}");
    }
}

/// `--device gpu` runs the `-gpu` variant of the chosen solver; a solver without one is a
/// clear error.
#[test]
fn device_gpu_selects_the_gpu_variant() {
    if context().is_none() {
        return;
    }
    let scene = concat!(env!("CARGO_MANIFEST_DIR"), "/scenes/balls_in_box.toml");
    let out_dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("device-gpu");
    let summary = common::run_cli_json([
        "simulate",
        scene,
        "--steps",
        "3",
        "--set",
        "lattice.0.count=20",
        "--solver",
        "jacobi",
        "--device",
        "gpu",
        "--json-summary",
        "--snapshot-every",
        "0",
        "--out",
        out_dir.to_str().unwrap(),
    ]);
    assert_eq!(summary["solver"], "jacobi-gpu");
    for name in ["jacobi", "spg", "apgd"] {
        let (solver, note) = registry::solver_on(name, registry::Device::Gpu).unwrap();
        assert_eq!(
            (solver.name(), note),
            (format!("{name}-gpu").as_str(), None)
        );
    }
    let err = registry::solver_on("pgs", registry::Device::Gpu)
        .err()
        .unwrap()
        .to_string();
    assert!(
        err.contains("`pgs` has no GPU variant yet; GPU solvers: jacobi-gpu, spg-gpu, apgd-gpu"),
        "{err}"
    );
}

/// `spg-gpu` takes the CPU solver's parameters; its GLL memory has a fixed length on the GPU.
#[test]
fn spg_gpu_parameters_are_checked() {
    let Some(ctx) = context() else { return };
    let sys = System::new(&random_problem(5, 20, 40)).unwrap();
    let params = signorini::solver::SpgParams {
        n_gll: MAX_GLL + 1,
        ..Default::default()
    };
    let err = SpgGpu::with_context(ctx.clone())
        .with_params(params)
        .solve_with_stats(&sys, &Settings::default())
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("spg.n_gll") && err.contains("at most 32"),
        "{err}"
    );
    let params = signorini::solver::SpgParams {
        armijo: 2.0,
        ..Default::default()
    };
    let err = SpgGpu::with_context(ctx)
        .with_params(params)
        .solve_with_stats(&sys, &Settings::default())
        .unwrap_err()
        .to_string();
    assert!(err.contains("spg.armijo"), "{err}");
}
