//! The CPU kernels of issue 16: the coloured projected Gauss–Seidel (`pgs-colored`) against
//! the sequential one (`pgs`) on the Siconos problems and on scene problems; the kernel of
//! the factored form against the operator path of an explicit `N`; `f32` iterations.

mod common;

use std::path::PathBuf;

use common::*;
use signorini::app::bench::problems::granular_packing;
use signorini::problem::{Assembled, FrictionModel, Operator, Problem, System, io, merit};
use signorini::registry;
use signorini::solver::colored::Colouring;
use signorini::solver::{Criterion, Precision, Runner, Settings, Status, traffic};

fn siconos(sub: &str, file: &str) -> System {
    let path: PathBuf = problems_dir().join("siconos").join(sub).join(file);
    let p: Problem = io::read(&path, None).unwrap_or_else(|e| panic!("{e}"));
    System::new(&p).unwrap()
}

/// Every block is in exactly one colour, and no two blocks of a colour are coupled: they
/// share no body (factored form), `N` has no entry between them (explicit form).
fn assert_valid_colouring(sys: &System, colouring: &Colouring) {
    let mut seen = vec![false; sys.blocks()];
    for blocks in colouring.colours() {
        assert!(blocks.windows(2).all(|w| w[0] < w[1]), "increasing order");
        let mut owner = std::collections::HashMap::new();
        for &k in blocks {
            assert!(!std::mem::replace(&mut seen[k], true), "block {k} twice");
            if let Some(f) = sys.factored() {
                for &b in f.block_bodies(k) {
                    assert!(owner.insert(b, k).is_none(), "body {b} twice in a colour");
                }
            }
        }
        if let Some(n) = sys.operator().as_matrix() {
            for &k in blocks {
                for &l in blocks.iter().filter(|&&l| l != k) {
                    for i in sys.block_range(k) {
                        for j in sys.block_range(l) {
                            assert_eq!(n.get(i, j), 0.0, "blocks {k} and {l} coupled");
                        }
                    }
                }
            }
        }
    }
    assert!(seen.iter().all(|&s| s), "every block coloured");
}

/// Both solvers meet the tolerance and their merit sets agree: residuals at the tolerance,
/// the same objective and the same velocities `u = N γ + r` (unique for the convex problem
/// even where the impulses are not, as in a statically indeterminate packing).
#[track_caller]
fn assert_same_solution(sys: &System, settings: &Settings, u_tol: f64) {
    let seq = solve(sys, "pgs", settings);
    let col = solve(sys, "pgs-colored", settings);
    for r in [&seq, &col] {
        assert_eq!(
            r.status,
            Status::Converged,
            "{} on {}",
            r.solver,
            sys.name()
        );
        assert!(r.residual.relative <= settings.tol, "{}", r.solver);
    }
    let (u_seq, u_col) = (sys.velocity(&seq.gamma), sys.velocity(&col.gamma));
    let scale = u_seq
        .iter()
        .chain(sys.r())
        .fold(1e-12f64, |m, u| m.max(u.abs()));
    let dist = u_seq
        .iter()
        .zip(&u_col)
        .fold(0.0f64, |m, (a, b)| m.max((a - b).abs()));
    assert!(
        dist <= u_tol * scale,
        "{}: ‖u_pgs − u_colored‖∞ = {dist:e} (scale {scale:e})",
        sys.name()
    );
    assert_close(col.merit.objective, seq.merit.objective, 1e-6);
}

#[test]
fn colourings_are_valid_and_deterministic() {
    let packing = System::new(&granular_packing(3000).unwrap()).unwrap();
    let colouring = Colouring::of(&packing);
    assert_valid_colouring(&packing, &colouring);
    assert_eq!(colouring, Colouring::of(&packing));
    // A cubic packing: six neighbours and a wall at most, so a handful of colours, and
    // colours large enough to run in parallel.
    assert!(colouring.len() <= 13, "{} colours", colouring.len());
    assert!(colouring.largest() >= signorini::PAR_MIN_ITEMS);
    for (sub, file) in [
        ("fc3d", "Capsules-i100-889.dat"),
        ("fc3d", "NESpheres_10_1.dat"),
        ("mlcp", "diodeBridge20_mlcp.dat"),
    ] {
        let sys = siconos(sub, file);
        assert_valid_colouring(&sys, &Colouring::of(&sys));
    }
}

#[test]
fn colored_pgs_matches_pgs_on_siconos_problems() {
    // CCP on the frictional problems (a convex problem: one objective), tight tolerance.
    for file in [
        "Capsules-i100-889.dat",
        "NESpheres_10_1.dat",
        "Rover1039.dat",
    ] {
        let sys = siconos("fc3d", file);
        let settings = Settings {
            tol: 1e-10,
            max_iter: 50_000,
            ..Settings::default()
        };
        let seq = solve(&sys, "pgs", &settings);
        let col = solve(&sys, "pgs-colored", &settings);
        for r in [&seq, &col] {
            assert!(
                r.merit.natural_map_inf <= 1e-7,
                "{file} {}: {:?}",
                r.solver,
                r.merit
            );
        }
        assert_close(col.merit.objective, seq.merit.objective, 1e-7);
    }
    // The symmetric positive definite LCPs: one solution.
    for file in ["lcp_CPS_1.dat", "lcp_deudeu.dat"] {
        let sys = siconos("lcp", file);
        let settings = Settings {
            tol: 1e-12,
            max_iter: 100_000,
            ..Settings::default()
        };
        assert_same_solution(&sys, &settings, 1e-8);
    }
}

#[test]
fn colored_pgs_matches_pgs_on_scene_problems() {
    let settings = Settings {
        tol: 1e-9,
        max_iter: 20_000,
        ..Settings::default()
    };
    // A packing large enough for colours of several hundred blocks (the parallel path).
    let packing = System::new(&granular_packing(3000).unwrap()).unwrap();
    assert_same_solution(&packing, &settings, 1e-5);
    // Spheres and walls, boxes and a chain of joints (sizes and mass ratios at which PGS converges).
    for (file, sets, steps) in [
        ("balls_in_box.toml", vec![("lattice.0.count", "300")], 20),
        ("sphere_pile.toml", vec![("lattice.0.count", "200")], 40),
        (
            "wrecking_ball.toml",
            vec![
                ("wall.0.rows", "3"),
                ("wall.0.columns", "4"),
                ("chain.0.count", "3"),
                // The chain's step-5 problem as it was before the joints' position projection:
                // with it, the two sweeps stop at 1e-6 with objectives 1.3e-5 apart (relative)
                // on this ill-conditioned chain and ball.
                ("settings.joint_projection", "false"),
            ],
            5,
        ),
        (
            "plate_stack.toml",
            vec![("stack.0.masses", "[1, 2, 1, 2, 1]")],
            5,
        ),
    ] {
        let sys = scene_problem(file, &sets, steps);
        let scene = Settings {
            tol: 1e-6,
            max_iter: 50_000,
            ..Settings::default()
        };
        assert_same_solution(&sys, &scene, 1e-3);
    }
}

/// The problem of `sys` with its operator assembled (`N = J M⁻¹ Jᵀ` explicit), for the
/// operator path of the solvers.
fn assembled(sys: &System) -> System {
    let f = sys.factored().expect("a factored system");
    System::new(&Problem {
        name: format!("{} (assembled)", sys.name()),
        class: sys.class(),
        cones: sys.cones().to_vec(),
        operator: Operator::Assembled(Assembled {
            n: f.assemble(),
            r: sys.r().to_vec(),
        }),
        compliance: sys.compliance().to_vec(),
    })
    .unwrap()
}

#[test]
fn the_kernel_iterates_as_the_operator_path() {
    // A fixed number of iterations, no convergence test: the kernel (factored form) and the
    // operator's product (assembled form) give the same iterates to rounding, with the
    // rows of spheres rebuilt from their normals (balls that have turned in 10 steps, walls
    // on either side of a block), the compact rows (sphere contacts on bodies of unequal
    // principal inertias) and the full rows (boxes, a chain of joints): the three
    // encodings agree with each other through it.
    let settings = Settings {
        tol: 0.0,
        max_iter: 40,
        stall_iterations: usize::MAX,
        ..Settings::default()
    };
    let packing = System::new(&granular_packing(300).unwrap()).unwrap();
    // The same packing with bodies of unequal masses and inertias (the kernel scales each
    // side of a row by its own body's `M^{-1/2}`): spheres (one inertia per body, the rows
    // rebuilt from the normal) and bodies of unequal principal inertias (compact rows).
    let unequal = |anisotropic: bool| {
        let mut unequal = granular_packing(300).unwrap();
        let Operator::Factored(f) = &mut unequal.operator else {
            panic!("a packing is factored")
        };
        for (i, body) in f.bodies.iter_mut().enumerate() {
            let k = 1.0 + (i % 7) as f64 * 0.75;
            body.mass *= k;
            body.inertia = body.inertia.map(|j| j * k * k);
            if anisotropic {
                body.inertia[i % 3] *= 1.5;
            }
        }
        System::new(&unequal).unwrap()
    };
    let (unequal_spheres, unequal) = (unequal(false), unequal(true));
    for (file, sets, steps, encoding) in [
        (
            "balls_in_box.toml",
            vec![("lattice.0.count", "100")],
            10,
            "sphere",
        ),
        ("", vec![], 0, "sphere"),
        ("unequal spheres", vec![], 0, "sphere"),
        ("unequal", vec![], 0, "compact"),
        (
            "wrecking_ball.toml",
            vec![
                ("wall.0.rows", "3"),
                ("wall.0.columns", "4"),
                ("chain.0.count", "3"),
                // The chain's step-5 problem as it was before the joints' position projection:
                // with it, the two sweeps stop at 1e-6 with objectives 1.3e-5 apart (relative)
                // on this ill-conditioned chain and ball.
                ("settings.joint_projection", "false"),
            ],
            5,
            "full",
        ),
    ] {
        let scene;
        let sys = if file.is_empty() {
            &packing
        } else if file == "unequal spheres" {
            &unequal_spheres
        } else if file == "unequal" {
            &unequal
        } else {
            scene = scene_problem(file, &sets, steps);
            &scene
        };
        let model = traffic::of("jacobi", sys, &Settings::default()).unwrap();
        assert_eq!(model.encoding, Some(encoding), "{file}");
        let explicit = assembled(sys);
        for (solver, friction) in [
            ("jacobi", FrictionModel::Ccp),
            ("jacobi", FrictionModel::Coulomb),
            ("pgs-colored", FrictionModel::Ccp),
        ] {
            let settings = Settings {
                friction,
                ..settings.clone()
            };
            let a = solve(sys, solver, &settings);
            let b = solve(&explicit, solver, &settings);
            let scale = b.gamma.iter().fold(1e-12f64, |m, g| m.max(g.abs()));
            for (x, y) in a.gamma.iter().zip(&b.gamma) {
                assert!(
                    (x - y).abs() <= 1e-9 * scale,
                    "{solver} on {file}: {x} vs {y}"
                );
            }
            assert_close(a.residual.relative, b.residual.relative, 1e-6);
        }
    }
}

#[test]
fn f32_iterations_reach_1e_6_with_the_f64_residual_reported() {
    let sys = System::new(&granular_packing(3000).unwrap()).unwrap();
    for solver in ["jacobi", "pgs-colored"] {
        let settings = Settings {
            tol: 1e-6,
            max_iter: 20_000,
            precision: Precision::F32,
            ..Settings::default()
        };
        let r = solve(&sys, solver, &settings);
        assert_eq!(r.status, Status::Converged, "{solver}: {:?}", r.residual);
        // The reported residual is the f64 one of the returned impulses.
        let u = sys.velocity(&r.gamma);
        let eta = vec![1.0; sys.blocks()];
        let f64_residual = merit::residual(&sys, &r.gamma, &u, settings.friction, &eta);
        assert_eq!(r.residual.two, f64_residual.two, "{solver}");
        assert!(r.residual.relative <= 2e-6, "{solver}: {:?}", r.residual);
        assert_eq!(r.merit.natural_map_2, f64_residual.two, "{solver}");
        // And the f64 kernel gives the same solution to f32's precision.
        let exact = solve(
            &sys,
            solver,
            &Settings {
                precision: Precision::F64,
                ..settings
            },
        );
        assert_close(r.merit.objective, exact.merit.objective, 1e-4);
    }
}

#[test]
fn the_kernel_flushes_values_whose_squares_are_subnormal() {
    // Below 2⁻⁶³ (f32) and 2⁻⁵¹¹ (f64) a value's square is subnormal, whose arithmetic is a
    // microcode assist on x86: the kernel takes such a value as zero, from its initial
    // iterate on (here a warm start of such values, returned as it came in: no iteration).
    let sys = System::new(&granular_packing(300).unwrap()).unwrap();
    for (precision, tiny) in [(Precision::F32, 1e-20), (Precision::F64, 1e-160)] {
        let warm: Vec<f64> = (0..sys.rows())
            .map(|i| if i % 3 == 0 { 1.0 } else { tiny })
            .collect();
        for solver in ["jacobi", "pgs-colored"] {
            let settings = Settings {
                tol: 0.0,
                max_iter: 0,
                precision,
                warm_start: Some(warm.clone()),
                ..Settings::default()
            };
            let r = solve(&sys, solver, &settings);
            for (i, g) in r.gamma.iter().enumerate() {
                let want = if i % 3 == 0 { 1.0 } else { 0.0 };
                assert_eq!(*g, want, "{solver} {precision:?}: row {i}");
            }
        }
    }
}

#[test]
fn the_kernel_stops_on_the_velocity_residual() {
    // The kernel measures the velocity residual only when the solve stops on it: the
    // returned iterate's, recomputed in f64 on the system, meets the tolerance.
    let sys = System::new(&granular_packing(3000).unwrap()).unwrap();
    for solver in ["jacobi", "pgs-colored"] {
        let settings = Settings {
            criterion: Criterion::Velocity,
            tol: 1e-7,
            max_iter: 20_000,
            ..Settings::default()
        };
        let r = solve(&sys, solver, &settings);
        assert_eq!(r.status, Status::Converged, "{solver}: {:?}", r.residual);
        assert!(r.iterations > 10, "{solver}: {}", r.iterations);
        assert!(
            r.residual.velocity <= 1e-7 * (1.0 + 1e-9),
            "{solver}: {:?}",
            r.residual
        );
    }
}

#[test]
fn measuring_every_nth_iterate_changes_what_is_seen_not_the_iterates() {
    // `check_every = 7`: the trace holds iterates 0, 7, 14, … and the last, with the very
    // residuals (to the bit) that a run measuring every iterate finds there; a tolerance
    // stops the solve at the first multiple of 7 whose iterate meets it.
    let sys = scene_problem("balls_in_box.toml", &[], 30);
    for solver in ["jacobi", "pgs-colored"] {
        for precision in [Precision::F32, Precision::F64] {
            let every = |n, tol, max_iter| Settings {
                tol,
                max_iter,
                stall_iterations: usize::MAX,
                precision,
                check_every: n,
                ..Settings::default()
            };
            let all = solve(&sys, solver, &every(1, 0.0, 50));
            let some = solve(&sys, solver, &every(7, 0.0, 50));
            let seen: Vec<usize> = some.trace.iter().map(|e| e.iteration).collect();
            assert_eq!(
                seen,
                [0, 7, 14, 21, 28, 35, 42, 49, 50],
                "{solver} {precision:?}"
            );
            for e in &some.trace {
                let same = &all.trace[e.iteration];
                assert_eq!(same.iteration, e.iteration);
                assert_eq!(same.residual, e.residual, "{solver} {precision:?}: {e:?}");
            }
            // The products: 1 per pass, and the coloured sweep's residual 1 per measured one.
            let measured = if solver == "jacobi" { 0 } else { 9 - 1 };
            assert_eq!(some.trace[8].products, 1 + 50 + measured, "{solver}");
            // Stopping: at the first measured iterate that meets the tolerance.
            let tol = all.trace[10].residual;
            let first = all.trace.iter().position(|e| e.residual <= tol).unwrap();
            let seen = all
                .trace
                .iter()
                .find(|e| e.iteration % 7 == 0 && e.residual <= tol);
            let stop = solve(&sys, solver, &every(7, tol, 50));
            assert_eq!(stop.status, Status::Converged, "{solver} {precision:?}");
            assert_eq!(
                stop.iterations,
                seen.unwrap().iteration,
                "{solver} {precision:?}"
            );
            assert!(stop.iterations >= first, "{solver} {precision:?}");
        }
    }
    let zero = Settings {
        check_every: 0,
        ..Settings::default()
    };
    let err = registry::solver("jacobi")
        .unwrap()
        .solve(&sys, &zero)
        .unwrap_err();
    assert!(err.to_string().contains("check_every"), "{err}");
}

#[test]
fn a_session_solves_in_its_kept_buffers_as_a_fresh_solve() {
    // A simulation's session keeps the kernel's buffers from one solve to the next: problems
    // that grow, shrink, change the rows' encoding and the precision give, in the same
    // session, the iterates of a fresh solve to the bit.
    let large = System::new(&granular_packing(3000).unwrap()).unwrap();
    let small = System::new(&granular_packing(300).unwrap()).unwrap();
    let joints = scene_problem(
        "wrecking_ball.toml",
        &[("wall.0.rows", "3"), ("wall.0.columns", "4")],
        5,
    );
    let settings = |precision| Settings {
        tol: 0.0,
        max_iter: 30,
        stall_iterations: usize::MAX,
        precision,
        ..Settings::default()
    };
    for solver in ["jacobi", "pgs-colored"] {
        let mut session = Runner::new(registry::solver(solver).unwrap());
        for (sys, precision) in [
            (&large, Precision::F64),
            (&small, Precision::F64),
            (&joints, Precision::F64),
            (&small, Precision::F32),
            (&large, Precision::F64),
            (&large, Precision::F64),
        ] {
            let settings = settings(precision);
            let kept = session.solve(sys, &settings).unwrap();
            let fresh = solve(sys, solver, &settings);
            assert_eq!(
                kept.iterations,
                fresh.iterations,
                "{solver} on {}",
                sys.name()
            );
            assert!(
                kept.gamma
                    .iter()
                    .zip(&fresh.gamma)
                    .all(|(a, b)| a.to_bits() == b.to_bits()),
                "{solver} on {} ({precision:?})",
                sys.name()
            );
            assert_eq!(kept.residual, fresh.residual, "{solver} on {}", sys.name());
        }
    }
}
