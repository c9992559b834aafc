//! The interior point on analytic cases and scenes: exact answers, redundant contacts and
//! duplicated joints, infeasibility detection, the starting point rules and warm starts,
//! extreme mass ratios.

mod common;

use std::path::Path;

use common::*;
use signorini::problem::{Cone, FrictionModel, System};
use signorini::sim::scene;
use signorini::solver::ip::{StartingPoint, WarmStart};
use signorini::solver::{Ip, IpParams, Settings, Solver, Status};

fn tight_ip() -> Settings {
    Settings {
        tol: 1e-12,
        ..Settings::default()
    }
}

/// A sphere resting on the ground with Coulomb friction and a sideways free velocity:
/// sticking when `μ m g h ≥ m |v_t|`, sliding otherwise (impulse on the cone boundary).
#[test]
fn resting_and_sliding_sphere_are_exact() {
    let (m, vt) = (2.0, 0.05);
    for (mu, sticking) in [(1.0, true), (0.1, false)] {
        let p = factored(
            vec![body(m, [vt, 0.0, -G * H, 0.0, 0.0, 0.0])],
            vec![Cone::Coulomb { mu }],
            // Normal z, tangents x and y, acting at the centre (no torque).
            vec![on_body(
                0,
                vec![
                    [0.0, 0.0, 1.0, 0.0, 0.0, 0.0],
                    [1.0, 0.0, 0.0, 0.0, 0.0, 0.0],
                    [0.0, 1.0, 0.0, 0.0, 0.0, 0.0],
                ],
            )],
        );
        let sys = System::new(&p).unwrap();
        for friction in [FrictionModel::Ccp, FrictionModel::Coulomb] {
            let r = Ip::default()
                .solve(
                    &sys,
                    &Settings {
                        friction,
                        ..tight_ip()
                    },
                )
                .unwrap();
            assert_eq!(r.status, Status::Converged, "μ = {mu}, {friction:?}");
            // (The CCP relaxation of a sliding contact separates: u_n = μ‖u_t‖, another γ.)
            if friction == FrictionModel::Coulomb || sticking {
                let gn = m * G * H;
                let want_t = if sticking { -m * vt } else { -mu * gn };
                assert_close(r.gamma[0], gn, 1e-10);
                assert_close(r.gamma[1], want_t, 1e-10);
            }
            assert!(r.merit.natural_map_inf <= 1e-12, "{:?}", r.merit);
        }
    }
}

/// Every starting point rule and warm start mode reaches the same answer on a problem with
/// bilateral, unilateral and frictional blocks.
#[test]
fn starting_points_and_warm_starts_agree() {
    let p = factored(
        vec![
            body(1.0, [0.1, 0.0, -G * H, 0.0, 0.0, 0.0]),
            body(3.0, [0.0, -0.2, -G * H, 0.0, 0.1, 0.0]),
        ],
        vec![
            Cone::Coulomb { mu: 0.3 },
            Cone::Unilateral,
            Cone::Bilateral { dim: 1 },
        ],
        vec![
            on_body(
                0,
                vec![
                    [0.0, 0.0, 1.0, 0.0, 0.0, 0.0],
                    [1.0, 0.0, 0.0, 0.0, 0.0, 0.0],
                    [0.0, 1.0, 0.0, 0.0, 0.0, 0.0],
                ],
            ),
            on_body(1, vec![[0.0, 0.0, 1.0, 0.0, 0.0, 0.0]]),
            signorini::problem::JacobianBlock {
                bodies: vec![0, 1].into(),
                rows: vec![
                    [1.0, 0.0, 0.0, 0.0, 0.0, 0.0],
                    [-1.0, 0.0, 0.0, 0.0, 0.0, 0.0],
                ]
                .into(),
            },
        ],
    );
    let sys = System::new(&p).unwrap();
    let reference = Ip::default().solve(&sys, &tight_ip()).unwrap();
    assert_eq!(reference.status, Status::Converged);
    let starts = [
        StartingPoint::Cvxopt,
        StartingPoint::Nocedal,
        StartingPoint::DApuzzo,
        StartingPoint::Thesis,
    ];
    for start in starts {
        for warm_start in [WarmStart::None, WarmStart::Partial, WarmStart::Full] {
            let ip = Ip::new(IpParams {
                start,
                warm_start,
                ..IpParams::default()
            });
            let r = ip
                .solve(
                    &sys,
                    &Settings {
                        warm_start: Some(reference.gamma.iter().map(|g| g * 0.9).collect()),
                        ..tight_ip()
                    },
                )
                .unwrap();
            assert_eq!(r.status, Status::Converged, "{start:?} {warm_start:?}");
            for (a, b) in r.gamma.iter().zip(&reference.gamma) {
                assert_close(*a, *b, 1e-9);
            }
        }
    }
}

/// A joint written twice (rank-deficient J) still converges; the velocity is exact and the
/// two impulses share the load.
#[test]
fn duplicated_joint_converges() {
    let m = 2.0;
    let row = [0.0, 0.0, 1.0, 0.0, 0.0, 0.0];
    let p = factored(
        vec![body(m, [0.0, 0.0, -G * H, 0.0, 0.0, 0.0])],
        vec![Cone::Bilateral { dim: 1 }, Cone::Bilateral { dim: 1 }],
        vec![on_body(0, vec![row]), on_body(0, vec![row])],
    );
    let sys = System::new(&p).unwrap();
    let r = Ip::default().solve(&sys, &tight_ip()).unwrap();
    assert_eq!(r.status, Status::Converged);
    assert_close(r.gamma[0] + r.gamma[1], m * G * H, 1e-10);
    assert!(sys.velocities(&r.gamma).unwrap()[2].abs() <= 1e-12);
}

/// Contradictory rigid constraints (`v_z ≥ −1` and `v_z ≤ −2`) are reported infeasible.
#[test]
fn contradictory_contacts_are_infeasible() {
    let mut p = factored(
        vec![body(1.0, [0.0; 6])],
        vec![Cone::Unilateral, Cone::Unilateral],
        vec![
            on_body(0, vec![[0.0, 0.0, 1.0, 0.0, 0.0, 0.0]]),
            on_body(0, vec![[0.0, 0.0, -1.0, 0.0, 0.0, 0.0]]),
        ],
    );
    if let signorini::problem::Operator::Factored(f) = &mut p.operator {
        f.b = vec![1.0, -2.0];
    }
    let sys = System::new(&p).unwrap();
    let r = Ip::default().solve(&sys, &Settings::default()).unwrap();
    assert_eq!(r.status, Status::Infeasible);
}

/// Invalid parameters are errors naming the parameter.
#[test]
fn invalid_parameters_are_errors() {
    let p = factored(
        vec![body(1.0, [0.0; 6])],
        vec![Cone::Unilateral],
        vec![on_body(0, vec![[0.0, 0.0, 1.0, 0.0, 0.0, 0.0]])],
    );
    let sys = System::new(&p).unwrap();
    let ip = Ip::new(IpParams {
        step_fraction: 1.5,
        ..IpParams::default()
    });
    let e = ip
        .solve(&sys, &Settings::default())
        .unwrap_err()
        .to_string();
    assert!(e.contains("ip.step_fraction"), "{e}");
}

/// Steps of a scene with the interior point; every solve converges to `tol` in velocity
/// units, or, where double precision cannot (`floor`), to that fraction of the largest
/// impulse divided by the lightest mass.
fn run_scene(file: &str, sets: &[(&str, &str)], steps: usize, floor: Option<f64>) -> Vec<usize> {
    let sets: Vec<(String, String)> = sets
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    let mut sc = scene::load(&Path::new(env!("CARGO_MANIFEST_DIR")).join(file), &sets).unwrap();
    let mut ip = signorini::solver::Runner::new(Box::new(Ip::default()));
    (0..steps)
        .map(|k| {
            let (stats, report) = sc.world.step_with_report(&mut ip).unwrap();
            match floor {
                None => {
                    assert_eq!(
                        report.status,
                        Status::Converged,
                        "{file} step {k}: {report:?}"
                    );
                    assert!(
                        stats.residual <= 1e-6,
                        "{file} step {k}: {}",
                        stats.residual
                    );
                }
                Some(f) => {
                    let g = report.gamma.iter().fold(0.0f64, |m, x| m.max(x.abs()));
                    assert!(
                        stats.residual <= f * g,
                        "{file} step {k}: {} > {f:e} · {g:e}",
                        stats.residual
                    );
                }
            }
            report.iterations
        })
        .collect()
}

/// Redundant contacts (a brick on the ground: four corners, a rank-deficient N).
#[test]
fn single_brick_converges() {
    let it = run_scene("scenes/single_brick.toml", &[], 30, None);
    assert!(it.iter().all(|&i| i < 60), "{it:?}");
}

/// Mass ratios in a stack on guides: the interior point converges at every step at 1:1e6 and
/// on the 10^j stack (1 kg to 1e9 kg); at 1:1e12 the velocities of the light bodies are
/// differences of impulses of 1e12 (one ulp is 1e-4 m/s), and the residual stays within
/// 1e-13 of the largest impulse.
#[test]
fn mass_ratio_stacks_converge() {
    let file = "scenes/mass_ratio_stack.toml";
    run_scene(
        file,
        &[("stack.0.masses", "[1.0, 1e6, 1.0, 1e6, 1.0]")],
        10,
        None,
    );
    run_scene(file, &[], 10, None);
    run_scene(
        file,
        &[("stack.0.masses", "[1.0, 1e12, 1.0, 1e12, 1.0]")],
        10,
        Some(1e-13),
    );
}

/// `ip` is a registry solver: the CLI solves a Siconos file with it.
#[test]
fn cli_solves_with_ip() {
    let file = problems_dir().join("siconos/fc3d/FrictionContact3D_1c.dat");
    let out = run_cli_json([
        "solve",
        file.to_str().unwrap(),
        "--solver",
        "ip",
        "--friction",
        "coulomb",
        "--tol",
        "1e-12",
        "--json",
    ]);
    assert_eq!(out["status"], "converged", "{out}");
    let err = out["merit"]["siconos_error"].as_f64().unwrap();
    assert!(err <= 1e-12, "{out}");
}

/// The README's claim: on `balls_in_box` (its settings: tolerance 1e-3 m/s on the velocity
/// residual) the interior point needs `IP_ITERATIONS` per step with contacts, and converges
/// at every step (40 steps of 250 spheres here; 1000 spheres gave 13–20, 6 minutes in the
/// test profile).
#[test]
fn balls_in_box_iterations_per_step_are_what_the_readme_says() {
    let sets = [("lattice.0.count".to_string(), "250".to_string())];
    let file = Path::new(env!("CARGO_MANIFEST_DIR")).join("scenes/balls_in_box.toml");
    let mut sc = scene::load(&file, &sets).unwrap();
    let mut ip = signorini::solver::Runner::new(Box::new(Ip::default()));
    let mut iterations = Vec::new();
    for k in 0..40 {
        let (stats, report) = sc.world.step_with_report(&mut ip).unwrap();
        assert_eq!(report.status, Status::Converged, "step {k}");
        if stats.contacts > 0 {
            iterations.push(report.iterations);
        }
    }
    println!("iterations per step: {iterations:?}");
    assert!(
        iterations.iter().all(|i| IP_ITERATIONS.contains(i)),
        "{iterations:?} outside {IP_ITERATIONS:?}"
    );
}

/// Iterations per step of the interior point on `balls_in_box` (README).
const IP_ITERATIONS: std::ops::RangeInclusive<usize> = 8..=20;

/// The rows `[d, p × d]` of a contact at lever arm `p` along each of `dirs`.
fn contact_rows(p: [f64; 3], dirs: &[[f64; 3]]) -> Vec<[f64; 6]> {
    dirs.iter()
        .map(|d| {
            let c = [
                p[1] * d[2] - p[2] * d[1],
                p[2] * d[0] - p[0] * d[2],
                p[0] * d[1] - p[1] * d[0],
            ];
            [d[0], d[1], d[2], c[0], c[1], c[2]]
        })
        .collect()
}

/// A singular problem: a box resting on its four coplanar corner contacts, a redundant fifth
/// at the centre of its base and the first corner written twice (six contacts, three
/// degrees of freedom they constrain: `N` has rank 6 of 18), pushed sideways by `v_t`.
fn box_on_redundant_contacts(v_t: f64) -> System {
    let (a, h, mu) = (0.1, 0.05, 0.5);
    let corners = [
        [a, a, -h],
        [-a, a, -h],
        [-a, -a, -h],
        [a, -a, -h],
        [0.0, 0.0, -h],
        [a, a, -h],
    ];
    let dirs = [[0.0, 0.0, 1.0], [1.0, 0.0, 0.0], [0.0, 1.0, 0.0]];
    let p = factored(
        vec![body(1.0, [v_t, 0.0, -G * H, 0.0, 0.0, 0.0])],
        vec![Cone::Coulomb { mu }; corners.len()],
        corners
            .iter()
            .map(|&c| on_body(0, contact_rows(c, &dirs)))
            .collect(),
    );
    System::new(&p).unwrap()
}

/// The singular box converges under both friction models, sticking and sliding: the natural
/// map meets 1e-10 and the box does not sink (nor lift, under Coulomb); the report splits
/// the time into its phases.
#[test]
fn box_on_redundant_contacts_converges_under_both_models() {
    for friction in [FrictionModel::Ccp, FrictionModel::Coulomb] {
        // μ g h = 0.049: sticking below, sliding above.
        for v_t in [0.02, 0.2] {
            let sys = box_on_redundant_contacts(v_t);
            let settings = Settings {
                friction,
                tol: 1e-10,
                max_iter: 5000,
                ..Settings::default()
            };
            let r = Ip::default().solve(&sys, &settings).unwrap();
            let what = format!("{friction:?}, v_t = {v_t}");
            assert_eq!(r.status, Status::Converged, "{what}");
            assert!(
                r.residual.relative <= 1e-10,
                "{what}: {:e}",
                r.residual.relative
            );
            // The interior point's and the polish's times are reported apart.
            let ip_time = r.phases.iter().find(|p| p.name == "interior_point");
            assert!(
                ip_time.is_some_and(|p| p.time_s > 0.0),
                "{what}: {:?}",
                r.phases
            );
            assert!(r.phases.iter().map(|p| p.time_s).sum::<f64>() <= r.time_s);
            // The CCP lifts a sliding box by μ‖u_t‖ (DESIGN §1); Coulomb keeps it on the ground.
            let v = sys.velocities(&r.gamma).unwrap();
            assert!(v[2] >= -1e-9, "{what}: sinks at {:e}", v[2]);
            if friction == FrictionModel::Coulomb {
                assert!(v[2].abs() <= 1e-9, "{what}: lifts at {:e}", v[2]);
            }
        }
    }
}

/// The settled `balls_in_box` pile of 1000 spheres (16 203 rows, beyond the LU polish):
/// the interior point hands over to the Newton polish near the tolerance, which finishes
/// it, in at most 20 interior-point iterations (the goal; `benches/RESULTS.md`,
/// sixteenth session: 16 and one Newton step, where the interior point alone took 17).
#[test]
fn a_settled_pile_is_finished_by_the_newton_polish() {
    let sys = scene_problem("balls_in_box.toml", &[("lattice.0.count", "1000")], 30);
    assert!(sys.rows() > 10_000, "{} rows", sys.rows());
    let settings = Settings {
        tol: 1e-8,
        ..Settings::default()
    };
    let r = Ip::default().solve(&sys, &settings).unwrap();
    println!(
        "{} rows: {:?}, {} iterations, relative {:e}, phases {:?}",
        sys.rows(),
        r.status,
        r.iterations,
        r.residual.relative,
        r.phases
    );
    assert_eq!(r.status, Status::Converged);
    assert!(r.residual.relative <= 1e-8, "{:e}", r.residual.relative);
    assert!(r.iterations <= 20, "{} iterations", r.iterations);
    assert!(
        r.phases
            .iter()
            .any(|p| p.name == "polish" && p.time_s > 0.0),
        "no polish: {:?}",
        r.phases
    );
}
