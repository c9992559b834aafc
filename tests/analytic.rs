//! Analytic cases with known impulses, for every CPU solver of the registry.

mod common;

use common::*;
use signorini::problem::{Cone, FrictionModel, Global, Operator, System};
use signorini::registry;
use signorini::solver::{Settings, Status};

const SOLVERS: [&str; 2] = ["jacobi", "pgs"];

/// A sphere at rest on a fixed plane: one unilateral row, `γ = m g h` exactly, and the
/// normal velocity after the step is zero.
#[test]
fn sphere_resting_on_a_plane() {
    let m = 2.5;
    let p = factored(
        vec![body(m, [0.0, 0.0, -G * H, 0.0, 0.0, 0.0])],
        vec![Cone::Unilateral],
        vec![on_body(0, vec![[0.0, 0.0, 1.0, 0.0, 0.0, 0.0]])],
    );
    let sys = System::new(&p).unwrap();
    for solver in SOLVERS {
        let r = solve(&sys, solver, &tight(FrictionModel::Ccp));
        assert_eq!(r.status, Status::Converged, "{solver}");
        assert_close(r.gamma[0], m * G * H, 1e-12);
        let v = sys.velocities(&r.gamma).unwrap();
        assert!(v[2].abs() < 1e-12, "{solver}: v_z = {}", v[2]);
        assert!(r.merit.primal_violation < 1e-12 && r.merit.complementarity < 1e-12);
    }
}

/// A column of `n` spheres on the ground: the impulse under sphere `k` (from the bottom)
/// carries the `n − k` spheres above it, `γ_k = (n − k) m g h`.
#[test]
fn column_of_spheres_impulses_grow_linearly_downwards() {
    let (n, m) = (6, 1.5);
    let bodies = vec![body(m, [0.0, 0.0, -G * H, 0.0, 0.0, 0.0]); n];
    let up = [0.0, 0.0, 1.0, 0.0, 0.0, 0.0];
    let down = [0.0, 0.0, -1.0, 0.0, 0.0, 0.0];
    let mut jacobians = vec![on_body(0, vec![up])];
    for k in 1..n {
        jacobians.push(signorini::problem::JacobianBlock {
            bodies: vec![k - 1, k].into(),
            rows: vec![down, up].into(),
        });
    }
    let p = factored(bodies, vec![Cone::Unilateral; n], jacobians);
    let sys = System::new(&p).unwrap();
    for solver in SOLVERS {
        let r = solve(&sys, solver, &tight(FrictionModel::Ccp));
        assert_eq!(r.status, Status::Converged, "{solver}");
        for k in 0..n {
            assert_close(r.gamma[k], (n - k) as f64 * m * G * H, 1e-10);
        }
    }
}

/// A point mass on a frictional plane pushed tangentially by a force `F` during the step.
fn pushed_block(mu: f64, force: f64) -> (System, f64) {
    let m = 3.0;
    let p = factored(
        vec![body(m, [H * force / m, 0.0, -G * H, 0.0, 0.0, 0.0])],
        vec![Cone::Coulomb { mu }],
        vec![on_body(
            0,
            vec![
                [0.0, 0.0, 1.0, 0.0, 0.0, 0.0],
                [1.0, 0.0, 0.0, 0.0, 0.0, 0.0],
                [0.0, 1.0, 0.0, 0.0, 0.0, 0.0],
            ],
        )],
    );
    (System::new(&p).unwrap(), m)
}

#[test]
fn frictional_contact_sticks_below_mu_times_normal() {
    let mu = 0.4;
    for friction in [FrictionModel::Ccp, FrictionModel::Coulomb] {
        let (sys, m) = pushed_block(mu, 0.9 * mu * 3.0 * G);
        for solver in SOLVERS {
            let r = solve(&sys, solver, &tight(friction));
            assert_eq!(r.status, Status::Converged, "{solver} {friction:?}");
            assert_close(r.gamma[0], m * G * H, 1e-10);
            assert_close(r.gamma[1], -0.9 * mu * m * G * H, 1e-10);
            assert!(r.gamma[2].abs() < 1e-12);
            let v = sys.velocities(&r.gamma).unwrap();
            assert!(v[0].abs() < 1e-10 && v[2].abs() < 1e-10, "{solver}: sticks");
        }
    }
}

#[test]
fn frictional_contact_slides_above_mu_times_normal() {
    let mu = 0.4;
    let force = 2.0 * mu * 3.0 * G;
    let (sys, m) = pushed_block(mu, force);
    for solver in SOLVERS {
        // Coulomb: normal impulse m g h, friction on the cone boundary, the block slides
        // with acceleration (F − μ m g)/m and does not leave the plane.
        let r = solve(&sys, solver, &tight(FrictionModel::Coulomb));
        assert_eq!(r.status, Status::Converged, "{solver}");
        assert_close(r.gamma[0], m * G * H, 1e-10);
        assert_close(r.gamma[1], -mu * m * G * H, 1e-10);
        let v = sys.velocities(&r.gamma).unwrap();
        assert_close(v[0], H * (force - mu * m * G) / m, 1e-10);
        assert!(v[2].abs() < 1e-10);
        // CCP: γ = Π_K(m g h, −h F, 0), on the boundary with a larger normal impulse, and
        // the contact separates with u_n = μ‖u_t‖ (the known artifact of the relaxation).
        let r = solve(&sys, solver, &tight(FrictionModel::Ccp));
        let gn = (m * G * H + mu * H * force) / (1.0 + mu * mu);
        assert_close(r.gamma[0], gn, 1e-10);
        assert_close(r.gamma[1], -mu * gn, 1e-10);
        let v = sys.velocities(&r.gamma).unwrap();
        assert_close(v[2], mu * v[0].abs(), 1e-10);
    }
}

/// A pendulum bob on a massless rod to a fixed pivot: one bilateral row along the rod. After
/// the step the radial velocity equals `−b` (zero without stabilization).
#[test]
fn bilateral_pendulum_row() {
    let (m, theta) = (0.7, 0.6f64);
    let dir = [theta.sin(), 0.0, -theta.cos()];
    let tangential = 2.0;
    let v = [
        tangential * theta.cos(),
        0.0,
        tangential * theta.sin() - G * H,
    ];
    for bias in [0.0, 0.05] {
        let mut p = factored(
            vec![body(m, [v[0], v[1], v[2], 0.0, 0.0, 0.0])],
            vec![Cone::Bilateral { dim: 1 }],
            vec![on_body(0, vec![[-dir[0], -dir[1], -dir[2], 0.0, 0.0, 0.0]])],
        );
        if let Operator::Factored(f) = &mut p.operator {
            f.b[0] = bias;
        }
        let sys = System::new(&p).unwrap();
        for solver in SOLVERS {
            let r = solve(&sys, solver, &tight(FrictionModel::Ccp));
            assert_eq!(r.status, Status::Converged, "{solver}");
            let after = sys.velocities(&r.gamma).unwrap();
            let radial: f64 = (0..3).map(|i| after[i] * dir[i]).sum();
            assert_close(radial, bias, 1e-12);
            let v_dot_dir: f64 = (0..3).map(|i| v[i] * dir[i]).sum();
            assert_close(r.gamma[0], m * (v_dot_dir - bias), 1e-12);
        }
    }
}

/// A compliant contact: `u = (N + c) γ + r = 0` gives `γ = −r/(N + c)`.
#[test]
fn compliance_softens_the_contact() {
    let m = 2.0;
    let mut p = factored(
        vec![body(m, [0.0, 0.0, -G * H, 0.0, 0.0, 0.0])],
        vec![Cone::Unilateral],
        vec![on_body(0, vec![[0.0, 0.0, 1.0, 0.0, 0.0, 0.0]])],
    );
    p.compliance = vec![0.3];
    let sys = System::new(&p).unwrap();
    for solver in SOLVERS {
        let r = solve(&sys, solver, &tight(FrictionModel::Ccp));
        assert_close(r.gamma[0], G * H / (1.0 / m + 0.3), 1e-12);
    }
}

/// The same physical problem in factored and global form gives the same impulses.
#[test]
fn global_form_matches_factored_form() {
    let (n, m) = (4, 1.2);
    let bodies = vec![body(m, [0.1, 0.0, -G * H, 0.0, 0.2, 0.0]); n];
    let mut jacobians = vec![on_body(
        0,
        vec![
            [0.0, 0.0, 1.0, 0.0, 0.0, 0.0],
            [1.0, 0.0, 0.0, 0.0, -0.1, 0.0],
            [0.0, 1.0, 0.0, 0.1, 0.0, 0.0],
        ],
    )];
    for k in 1..n {
        jacobians.push(signorini::problem::JacobianBlock {
            bodies: vec![k - 1, k].into(),
            rows: vec![
                [0.0, 0.0, -1.0, 0.0, 0.0, 0.0],
                [-1.0, 0.0, 0.0, 0.0, -0.1, 0.0],
                [0.0, -1.0, 0.0, 0.1, 0.0, 0.0],
                [0.0, 0.0, 1.0, 0.0, 0.0, 0.0],
                [1.0, 0.0, 0.0, 0.0, -0.1, 0.0],
                [0.0, 1.0, 0.0, 0.1, 0.0, 0.0],
            ]
            .into(),
        });
    }
    let fac = factored(
        bodies.clone(),
        vec![Cone::Coulomb { mu: 0.3 }; n],
        jacobians.clone(),
    );
    // Global: H = diag(M), J dense from the blocks, f = H v_free.
    let ndof = 6 * n;
    let mut h = Vec::new();
    let mut f = vec![0.0; ndof];
    for (i, b) in bodies.iter().enumerate() {
        let inv = b.inv_mass();
        for c in 0..6 {
            h.push((6 * i + c, 6 * i + c, 1.0 / inv[c]));
            f[6 * i + c] = b.v_free[c] / inv[c];
        }
    }
    let mut j = Vec::new();
    for (k, block) in jacobians.iter().enumerate() {
        for (s, &b) in block.bodies.iter().enumerate() {
            for row in 0..3 {
                for c in 0..6 {
                    j.push((3 * k + row, 6 * b + c, block.rows[s * 3 + row][c]));
                }
            }
        }
    }
    let mut glob = fac.clone();
    glob.operator = Operator::Global(Global {
        h: signorini::problem::CsrMatrix::from_triplets(ndof, ndof, &h).unwrap(),
        j: signorini::problem::CsrMatrix::from_triplets(3 * n, ndof, &j).unwrap(),
        f,
        b: vec![0.0; 3 * n],
    });
    let (sf, sg) = (System::new(&fac).unwrap(), System::new(&glob).unwrap());
    for friction in [FrictionModel::Ccp, FrictionModel::Coulomb] {
        let a = solve(&sf, "pgs", &tight(friction));
        let b = solve(&sg, "pgs", &tight(friction));
        assert_eq!(a.status, Status::Converged);
        assert_eq!(b.status, Status::Converged);
        for (x, y) in a.gamma.iter().zip(&b.gamma) {
            assert_close(*x, *y, 1e-9);
        }
        let (va, vb) = (
            sf.velocities(&a.gamma).unwrap(),
            sg.velocities(&b.gamma).unwrap(),
        );
        for (x, y) in va.iter().zip(&vb) {
            assert_close(*x, *y, 1e-9);
        }
    }
}

/// Warm starting from the solution converges at once; a tiny iteration cap returns the best
/// iterate with its status; Jacobi is deterministic across runs.
#[test]
fn warm_start_cap_and_determinism() {
    let (sys, _) = pushed_block(0.4, 10.0);
    let cold = solve(&sys, "pgs", &tight(FrictionModel::Coulomb));
    let warm = solve(
        &sys,
        "pgs",
        &Settings {
            warm_start: Some(cold.gamma.clone()),
            ..tight(FrictionModel::Coulomb)
        },
    );
    assert!(warm.iterations <= 1, "{} iterations", warm.iterations);
    let capped = solve(
        &sys,
        "jacobi",
        &Settings {
            max_iter: 2,
            ..tight(FrictionModel::Coulomb)
        },
    );
    assert_eq!(capped.status, Status::MaxIterations);
    assert_eq!(capped.iterations, 2);
    assert_eq!(capped.trace.len(), 3);
    let best = capped
        .trace
        .iter()
        .map(|t| t.residual)
        .fold(f64::INFINITY, f64::min);
    let u = sys.velocity(&capped.gamma);
    // The relative residual does not depend on the block steps.
    let res = signorini::problem::merit::residual(
        &sys,
        &capped.gamma,
        &u,
        FrictionModel::Coulomb,
        &[1.0],
    );
    assert_close(res.relative, best, 1e-12);
    let again = solve(
        &sys,
        "jacobi",
        &Settings {
            max_iter: 2,
            ..tight(FrictionModel::Coulomb)
        },
    );
    assert_eq!(capped.gamma, again.gamma);
    assert!(registry::names().contains(&"pgs"));
}
