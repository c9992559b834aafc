//! The pivoting simplex (paper 003): analytic contact cases, the Siconos LCP/MLCP files
//! (unique solutions reproduced, no wrong answer on the others) and frictionless scene
//! problems against projected Gauss–Seidel.

mod common;

use std::path::PathBuf;

use common::*;
use signorini::problem::io;
use signorini::problem::{Cone, FrictionModel, System};
use signorini::solver::simplex::{ConeModel, Method, Outcome, Simplex};
use signorini::solver::{Settings, Status};

fn exact() -> Settings {
    Settings {
        tol: 1e-12,
        max_iter: 100_000,
        ..Settings::default()
    }
}

fn run(sys: &System) -> Outcome {
    Simplex::default().run(sys, &exact()).unwrap()
}

/// Complementarity to rounding: on every unilateral row `γ ≥ 0`, `u ≥ −ε s_i` and
/// `|γ u| ≤ ε s_i γ`, on every bilateral row `|u| ≤ ε s_i`, where `s_i = |r_i| + N_ii ‖γ‖∞`
/// bounds the terms whose sum is `u_i` (with masses 1 to 1e9 the products `N_ij γ_j` reach
/// 1e9 where `u` is 1e-7: the rounding of `u` is relative to them, not to `r`).
#[track_caller]
fn assert_complementary(sys: &System, gamma: &[f64], eps: f64) {
    let u = sys.velocity(gamma);
    let g_inf = gamma.iter().fold(0.0f64, |m, x| m.max(x.abs()));
    for (k, cone) in sys.cones().iter().enumerate() {
        let range = sys.block_range(k);
        let d = range.len();
        let block = sys.diagonal_block(k);
        for (a, i) in range.enumerate() {
            let s = sys.r()[i].abs() + block[a * d + a] * g_inf;
            match cone {
                Cone::Unilateral => {
                    assert!(gamma[i] >= 0.0, "row {i}: γ = {:e}", gamma[i]);
                    assert!(u[i] >= -eps * s, "row {i}: u = {:e}", u[i]);
                    assert!(
                        (gamma[i] * u[i]).abs() <= eps * s * gamma[i],
                        "row {i}: γ u = {:e}",
                        gamma[i] * u[i]
                    );
                }
                _ => assert!(u[i].abs() <= eps * s, "bilateral row {i}: u = {:e}", u[i]),
            }
        }
    }
}

/// A box of 2 kg resting flat on the ground on its 4 bottom corners (frictionless): the 4
/// normal rows act on 3 coordinates (z, ωx, ωy) and are dependent, the degenerate case. The
/// total impulse is `m g h` with no moment, complementarity holds to rounding, and a sphere
/// pulled away from the ground by its free velocity gets no impulse.
#[test]
fn degenerate_box_on_four_corners_and_a_separating_sphere() {
    let (m, a) = (2.0, 0.1);
    let corners = [(-a, -a), (a, -a), (a, a), (-a, a)];
    let rows: Vec<[f64; 6]> = corners
        .iter()
        // u = v_z + (ω × ρ)_z with ρ = (x, y, −a): ω_x y − ω_y x.
        .map(|&(x, y)| [0.0, 0.0, 1.0, y, -x, 0.0])
        .collect();
    let mut problem = factored(
        vec![
            body(m, [0.0, 0.0, -G * H, 0.0, 0.0, 0.0]),
            body(1.0, [0.0, 0.0, 0.5, 0.0, 0.0, 0.0]),
        ],
        vec![Cone::Unilateral; 5],
        rows.iter()
            .map(|r| on_body(0, vec![*r]))
            .chain([on_body(1, vec![[0.0, 0.0, 1.0, 0.0, 0.0, 0.0]])])
            .collect(),
    );
    problem.name = "box".into();
    let sys = System::new(&problem).unwrap();
    let out = run(&sys);
    let r = &out.report;
    assert_eq!(r.status, Status::Converged);
    assert_eq!(out.method, Method::Tasora);
    let total: f64 = r.gamma[..4].iter().sum();
    assert_close(total, m * G * H, 1e-14);
    let moment_x: f64 = r.gamma[..4]
        .iter()
        .zip(&corners)
        .map(|(g, c)| g * c.1)
        .sum();
    let moment_y: f64 = r.gamma[..4]
        .iter()
        .zip(&corners)
        .map(|(g, c)| g * c.0)
        .sum();
    assert!(moment_x.abs() < 1e-16 && moment_y.abs() < 1e-16);
    assert_eq!(r.gamma[4], 0.0);
    assert_complementary(&sys, &r.gamma, 1e-14);
}

/// A pendulum-like bilateral row plus a unilateral one pulling the other way: the MLCP of a
/// body held by a joint (bilateral, vertical) resting against a wall (unilateral, x). The
/// joint carries `m g h`, the wall `m v_x`, exactly; then the wall is made to separate.
#[test]
fn bilateral_and_unilateral_rows() {
    let m = 3.0;
    let make = |vx: f64| {
        factored(
            vec![body(m, [vx, 0.0, -G * H, 0.0, 0.0, 0.0])],
            vec![Cone::Bilateral { dim: 1 }, Cone::Unilateral],
            vec![
                on_body(0, vec![[0.0, 0.0, 1.0, 0.0, 0.0, 0.0]]),
                on_body(0, vec![[1.0, 0.0, 0.0, 0.0, 0.0, 0.0]]),
            ],
        )
    };
    let sys = System::new(&make(-0.2)).unwrap();
    let r = run(&sys).report;
    assert_eq!(r.status, Status::Converged);
    assert_close(r.gamma[0], m * G * H, 1e-14);
    assert_close(r.gamma[1], m * 0.2, 1e-14);
    let sys = System::new(&make(0.2)).unwrap();
    let r = run(&sys).report;
    assert_close(r.gamma[0], m * G * H, 1e-14);
    assert_eq!(r.gamma[1], 0.0);
}

/// The full mass-ratio stack (masses 1 to 1e9 on guides): complementarity to rounding,
/// where projected Gauss–Seidel stalls far from the solution.
#[test]
fn mass_ratio_stack_is_solved_exactly() {
    let sys = scene_problem("mass_ratio_stack.toml", &[], 5);
    let out = run(&sys);
    assert_eq!(out.report.status, Status::Converged);
    assert!(
        sys.cones()
            .iter()
            .any(|c| matches!(c, Cone::Bilateral { .. }))
    );
    assert_complementary(&sys, &out.report.gamma, 1e-15);
}

/// A joint that drives a body down (bilateral `v_z = −1`) into the ground (unilateral
/// `v_z ≥ 0`) has no solution: the driven row's edge is an unbounded ray, `NoSolution`. The
/// pivot cap gives `MaxIterations`.
#[test]
fn infeasible_problem_and_pivot_cap() {
    let mut p = factored(
        vec![body(1.0, [0.0; 6])],
        vec![Cone::Bilateral { dim: 1 }, Cone::Unilateral],
        vec![
            on_body(0, vec![[0.0, 0.0, 1.0, 0.0, 0.0, 0.0]]),
            on_body(0, vec![[0.0, 0.0, 1.0, 0.0, 0.0, 0.0]]),
        ],
    );
    if let signorini::problem::Operator::Factored(f) = &mut p.operator {
        f.b = vec![1.0, 0.0];
    }
    let out = run(&System::new(&p).unwrap());
    assert_eq!(out.report.status, Status::NoSolution);
    assert_eq!(out.method, Method::Tasora);
    let sys = scene_problem("sphere_pile.toml", &[("lattice.0.count", "250")], 40);
    let capped = Simplex::default()
        .run(
            &sys,
            &Settings {
                max_iter: 10,
                ..exact()
            },
        )
        .unwrap();
    assert_eq!(capped.report.status, Status::MaxIterations);
    assert_eq!(capped.report.iterations, 10);
}

fn sliding_body(m: f64, v_t: [f64; 2]) -> System {
    let p = factored(
        vec![body(m, [v_t[0], v_t[1], -G * H, 0.0, 0.0, 0.0])],
        vec![Cone::Coulomb { mu: 0.5 }],
        vec![on_body(
            0,
            vec![
                [0.0, 0.0, 1.0, 0.0, 0.0, 0.0],
                [1.0, 0.0, 0.0, 0.0, 0.0, 0.0],
                [0.0, 1.0, 0.0, 0.0, 0.0, 0.0],
            ],
        )],
    );
    System::new(&p).unwrap()
}

/// Coulomb cones of the CCP model go through the pyramid: a body sliding along a generator
/// gets exactly the projection of `−m r` on the cone (`N = I/m`), between two generators
/// its friction ratio lies in `[μ cos(π/F), μ)`; the Coulomb model is an input error.
#[test]
fn pyramid_friction_and_its_error() {
    let (m, mu, v) = (2.0, 0.5, 1.0);
    // −m r = (m g h, m v, 0): tangential part along the generator θ = 0.
    let sys = sliding_body(m, [-v, 0.0]);
    let out = run(&sys);
    assert_eq!(out.report.status, Status::Converged);
    let (pn, pt) = (m * G * H, m * v);
    let gn = (pn + mu * pt) / (1.0 + mu * mu);
    let g = &out.report.gamma;
    assert_close(g[0], gn, 1e-13);
    assert_close(g[1], mu * gn, 1e-13);
    assert!(g[2].abs() < 1e-15);
    for facets in [4, 8, 16] {
        let phi = std::f64::consts::PI / facets as f64;
        let sys = sliding_body(m, [-v * phi.cos(), -v * phi.sin()]);
        let pyramid = Simplex {
            facets,
            model: ConeModel::Pyramid,
        };
        let out = pyramid.run(&sys, &exact()).unwrap();
        assert_eq!(out.report.status, Status::Converged);
        // Checked on the true cone, the same answer misses the tolerance.
        let true_cone = Simplex {
            facets,
            ..Simplex::default()
        };
        let checked = true_cone.run(&sys, &exact()).unwrap().report;
        assert_eq!(checked.status, Status::Stalled);
        assert_eq!(checked.gamma, out.report.gamma);
        let g = &out.report.gamma;
        let ratio = g[1].hypot(g[2]) / g[0];
        println!(
            "{facets} facets: friction ratio {ratio:.6} (μ = {mu}, bound {:.6})",
            mu * phi.cos()
        );
        assert!(
            ratio >= mu * phi.cos() - 1e-12 && ratio < mu,
            "{facets}: {ratio}"
        );
    }
    let err = Simplex::default()
        .run(
            &sys,
            &Settings {
                friction: FrictionModel::Coulomb,
                ..exact()
            },
        )
        .unwrap_err();
    assert!(err.to_string().contains("cones[0]"), "{err}");
}

fn siconos(sub: &str) -> Vec<PathBuf> {
    let dir = problems_dir().join("siconos").join(sub);
    let mut v: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "dat"))
        .collect();
    v.sort();
    v
}

/// Every Siconos LCP, MLCP and generic mechanical file: a converged answer always has a
/// Siconos error ≤ 1e-12 (the report's own check, re-verified here), the unique solutions of
/// the MANIFEST are reproduced, `lcp_Pang_isolated_sol_perturbed` (no solution) reports
/// `NoSolution`, and Murty's exponential example is solved (its pivots printed). The table
/// of all outcomes is printed.
#[test]
fn siconos_lcp_mlcp_and_gmp_files() {
    let unique: &[(&str, &[f64])] = &[
        ("lcp_CPS_2", &[0.0, 1.0, 3.0]),
        ("lcp_CPS_4", &[2.0, 2.0, 2.0, 92.0]),
        ("lcp_CPS_5", &[0.0, 1.0]),
        ("lcp_deudeu", &[4.0 / 3.0, 7.0 / 3.0]),
        ("lcp_deudeu_block", &[4.0 / 3.0, 7.0 / 3.0]),
        ("lcp_exp_murty", &[0.0, 0.0, 0.0, 0.0, 0.0, 1.0]),
        ("lcp_inf_sol_perturbed", &[1.0, 0.0, 1e-4]),
        ("lcp_ortiz", &[2.0 / 3.0, 0.0, 1.0 / 3.0, 0.0]),
        ("lcp_ortiz_block", &[2.0 / 3.0, 0.0, 1.0 / 3.0, 0.0]),
    ];
    let mut table = String::from(
        "| problem | status | method | pivots | Siconos error |\n|---|---|---|---:|---:|\n",
    );
    let mut converged = Vec::new();
    for path in ["lcp", "mlcp", "gmp"].iter().flat_map(|s| siconos(s)) {
        let p = io::read(&path, None).unwrap();
        let sys = System::new(&p).unwrap();
        let out = match Simplex::default().run(&sys, &exact()) {
            Ok(o) => o,
            Err(e) => {
                assert!(
                    p.cones.iter().any(|c| matches!(c, Cone::Coulomb { .. })),
                    "{e}"
                );
                table.push_str(&format!("| {} | error: Coulomb cone | | | |\n", p.name));
                continue;
            }
        };
        let r = &out.report;
        let err = r.merit.siconos_error;
        table.push_str(&format!(
            "| {} | {} | {:?} | {} + {} | {:.1e} |\n",
            p.name,
            r.status,
            out.method,
            out.tasora_pivots,
            out.lemke_pivots,
            err.unwrap_or(f64::NAN)
        ));
        if r.status == Status::Converged {
            assert!(err.is_none_or(|e| e <= 1e-12), "{}: {err:?}", p.name);
            converged.push(p.name.clone());
        }
        if let Some((_, z)) = unique.iter().find(|u| u.0 == p.name) {
            assert_eq!(r.status, Status::Converged, "{}", p.name);
            for (a, b) in r.gamma.iter().zip(z.iter()) {
                assert_close(*a, *b, 1e-12);
            }
        }
        if p.name == "lcp_Pang_isolated_sol_perturbed" {
            assert_eq!(r.status, Status::NoSolution);
        }
        if p.name == "lcp_exp_murty" {
            println!("lcp_exp_murty: {} pivots ({:?})", r.iterations, out.method);
            assert!(r.iterations > 0);
        }
    }
    println!("{table}");
    for name in [
        "lcp_trivial",
        "lcp_CPS_1",
        "deudeu_mlcp",
        "PDSym_mlcp",
        "GMP0",
        "GMP1",
        "GMP2",
    ] {
        assert!(
            converged.iter().any(|c| c == name),
            "{name} not solved\n{table}"
        );
    }
}

/// A scene file, its overrides, the step to dump and whether the impulses are unique.
type Case<'a> = (&'a str, &'a [(&'a str, &'a str)], usize, bool);

/// Frictionless scene problems: complementarity to rounding, and the simplex agrees with
/// the interior point to 1e-9 and with PGS run to 1e-12 (1e-8) on the velocities (always
/// unique), the objective, and the impulses where `N` is nonsingular (the pile and box have
/// redundant contacts: there only the velocities and the objective are unique).
#[test]
fn frictionless_scene_problems_agree_with_ip_and_pgs() {
    let cases: [Case; 3] = [
        ("sphere_pile.toml", &[("lattice.0.count", "250")], 40, false),
        (
            "balls_in_box.toml",
            &[("lattice.0.count", "150"), ("friction", "0.0")],
            40,
            false,
        ),
        (
            "mass_ratio_stack.toml",
            &[("stack.0.masses", "[1.0, 10.0, 100.0, 1000.0, 1.0, 10.0]")],
            5,
            true,
        ),
    ];
    for (file, sets, steps, unique_gamma) in cases {
        let sys = scene_problem(file, sets, steps);
        assert!(
            sys.cones()
                .iter()
                .all(|c| !matches!(c, Cone::Coulomb { .. }))
        );
        let out = run(&sys);
        let r = &out.report;
        println!(
            "{file}: {} rows, {} pivots, {} factorizations, {:.2e} s",
            sys.rows(),
            out.tasora_pivots,
            out.factorizations,
            r.time_s
        );
        assert_eq!(r.status, Status::Converged, "{file}");
        assert_complementary(&sys, &r.gamma, 1e-14);
        let pgs = solve(
            &sys,
            "pgs",
            &Settings {
                tol: 1e-12,
                max_iter: 200_000,
                stall_iterations: 200_000,
                criterion: signorini::solver::Criterion::Velocity,
                friction: FrictionModel::Ccp,
                ..Settings::default()
            },
        );
        let (vs, vp) = (
            sys.velocities(&r.gamma).unwrap(),
            sys.velocities(&pgs.gamma).unwrap(),
        );
        let dv = vs
            .iter()
            .zip(&vp)
            .fold(0.0f64, |m, (a, b)| m.max((a - b).abs()));
        let vscale = vp.iter().fold(1.0f64, |m, x| m.max(x.abs()));
        println!(
            "{file}: PGS {} in {} sweeps, max |Δv| = {dv:e}",
            pgs.status, pgs.iterations
        );
        assert!(dv <= 1e-8 * vscale, "{file}: velocities differ by {dv:e}");
        assert_close(r.merit.objective, pgs.merit.objective, 1e-9);
        if unique_gamma {
            for (a, b) in r.gamma.iter().zip(&pgs.gamma) {
                assert_close(*a, *b, 1e-8);
            }
        }
        // The interior point, the project's exact reference: same velocities and objective
        // to 1e-9, same impulses where they are unique.
        let ip = solve(
            &sys,
            "ip",
            &Settings {
                tol: 1e-12,
                friction: FrictionModel::Ccp,
                ..Settings::default()
            },
        );
        assert_eq!(ip.status, Status::Converged, "{file}: ip {}", ip.status);
        let vi = sys.velocities(&ip.gamma).unwrap();
        let dv = vs
            .iter()
            .zip(&vi)
            .fold(0.0f64, |m, (a, b)| m.max((a - b).abs()));
        println!("{file}: IP {} iterations, max |Δv| = {dv:e}", ip.iterations);
        assert!(
            dv <= 1e-9 * vscale,
            "{file}: IP velocities differ by {dv:e}"
        );
        assert_close(r.merit.objective, ip.merit.objective, 1e-9);
        if unique_gamma {
            for (a, b) in r.gamma.iter().zip(&ip.gamma) {
                assert_close(*a, *b, 1e-9);
            }
        }
    }
}

/// A frictional balls-in-box problem (μ = 0.3) through 8-facet pyramids: solved exactly,
/// the impulses lie in the true cones (the pyramid is inscribed), and the optimal objective
/// of the smaller feasible set is at or above that of the cones (PGS, CCP, to 1e-10), by
/// less than 5 % of it.
#[test]
fn pyramid_on_a_frictional_scene_problem() {
    let sys = scene_problem("balls_in_box.toml", &[("lattice.0.count", "20")], 30);
    assert!(
        sys.cones()
            .iter()
            .any(|c| matches!(c, Cone::Coulomb { .. }))
    );
    let out = Simplex::pyramid().run(&sys, &exact()).unwrap();
    let r = &out.report;
    assert_eq!(r.status, Status::Converged);
    assert!(
        r.merit.dual_violation
            <= 1e-15 * (1.0 + r.gamma.iter().fold(0.0f64, |m, x| m.max(x.abs())))
    );
    let pgs = solve(
        &sys,
        "pgs",
        &Settings {
            tol: 1e-10,
            max_iter: 100_000,
            stall_iterations: 100_000,
            ..Settings::default()
        },
    );
    assert_eq!(pgs.status, Status::Converged);
    let (a, b) = (r.merit.objective, pgs.merit.objective);
    println!(
        "pyramid objective {a:.9e}, cone objective {b:.9e}, {} pivots",
        out.tasora_pivots
    );
    assert!(
        a >= b - 1e-9 * b.abs() && (a - b).abs() <= 0.05 * b.abs(),
        "{a} vs {b}"
    );
}

/// `simplex` is reachable from `solve`, `check` and `simulate`: Murty's LCP through the CLI
/// (Lemke, 26 pivots), a side-by-side check with PGS on `lcp_deudeu`, and 5 steps of the
/// mass-ratio stack.
#[test]
fn cli_solve_check_and_simulate() {
    let lcp = |f: &str| problems_dir().join("siconos/lcp").join(f);
    let v = run_cli_json([
        "solve",
        lcp("lcp_exp_murty.dat").to_str().unwrap(),
        "--solver",
        "simplex",
        "--tol",
        "1e-12",
        "--json",
    ]);
    assert_eq!(v["solver"], "simplex");
    assert_eq!(v["status"], "converged");
    assert_eq!(v["iterations"], 26);
    assert_eq!(v["merit"]["siconos_error"], 0.0);
    let v = run_cli_json([
        "check",
        lcp("lcp_deudeu.dat").to_str().unwrap(),
        "--solvers",
        "pgs,simplex",
        "--tol",
        "1e-12",
        "--max-iter",
        "10000",
        "--json",
    ]);
    assert_eq!(v["results"][1]["status"], "converged");
    assert!(v["max_gamma_difference"].as_f64().unwrap() < 1e-9);
    let out = fresh_dir("simplex-simulate");
    let scene = concat!(env!("CARGO_MANIFEST_DIR"), "/scenes/mass_ratio_stack.toml");
    let summary = run_cli_json([
        "simulate",
        scene,
        "--steps",
        "5",
        "--solver",
        "simplex",
        "--snapshot-every",
        "0",
        "--json-summary",
        "--out",
        out.to_str().unwrap(),
    ]);
    assert_eq!(summary["steps"], 5);
}

/// Time per solve and pivots against the number of contacts, simplex and PGS (PGS to the
/// relative residuals 1e-6 and 1e-8, at most 20000 sweeps), on the frictionless sphere pile
/// after 60 steps. Run in release:
/// `cargo test --release --test simplex -- --ignored --nocapture scaling`.
#[test]
#[ignore = "a measurement: run in release"]
fn scaling_with_the_number_of_contacts() {
    println!(
        "| spheres | rows | active | pivots | factorizations | nnz(L) | simplex s | pivots/s | PGS 1e-6 sweeps | PGS 1e-6 s | PGS 1e-8 sweeps | PGS 1e-8 s |"
    );
    println!("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|");
    for count in [25, 50, 100, 200, 400, 700, 1000] {
        let c = count.to_string();
        let sys = scene_problem("sphere_pile.toml", &[("lattice.0.count", &c)], 60);
        let out = run(&sys);
        let r = &out.report;
        assert_eq!(r.status, Status::Converged);
        let pgs = |tol: f64| {
            let p = solve(
                &sys,
                "pgs",
                &Settings {
                    tol,
                    max_iter: 20_000,
                    stall_iterations: 20_000,
                    ..Settings::default()
                },
            );
            let sweeps = if p.status == Status::Converged {
                p.iterations.to_string()
            } else {
                format!("> {} ({})", p.iterations, p.status)
            };
            (sweeps, p.time_s)
        };
        let (p6, p8) = (pgs(1e-6), pgs(1e-8));
        println!(
            "| {count} | {} | {} | {} | {} | {} | {:.3e} | {:.0} | {} | {:.2e} | {} | {:.2e} |",
            sys.rows(),
            r.gamma.iter().filter(|g| **g > 0.0).count(),
            out.tasora_pivots,
            out.factorizations,
            out.factor_entries,
            r.time_s,
            out.tasora_pivots as f64 / r.time_s,
            p6.0,
            p6.1,
            p8.0,
            p8.1,
        );
    }
}
