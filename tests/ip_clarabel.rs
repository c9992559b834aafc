//! The interior point against Clarabel.rs on seeded random sparse convex problems: QPs with
//! equality and inequality rows, and SOCPs (Coulomb cones under the CCP model), in the
//! factored, global and assembled forms. Objective and solution agree to 1e-7 relative.
//!
//! The ignored test `benchmark_against_clarabel` times both on settled `balls_in_box` piles
//! and the Siconos fc3d files:
//! `cargo test --release --test ip_clarabel -- --ignored --nocapture`.

mod common;
use common::Rng;

use clarabel::algebra::CscMatrix;
use clarabel::solver::{
    DefaultSettings, DefaultSettingsBuilder, DefaultSolver, IPSolver, SolverStatus, SupportedConeT,
};
use signorini::problem::{
    Assembled, Body, Cone, CsrMatrix, Factored, Global, JacobianBlock, Operator, Problem, System,
};
use signorini::solver::{Ip, Settings, Solver, Status};

/// A random factored problem: `nb` bodies, `nk` blocks on one or two bodies with cones
/// drawn from `cones`.
fn random_factored(rng: &mut Rng, nb: usize, nk: usize, cones: &[Cone]) -> Problem {
    let bodies: Vec<Body> = (0..nb)
        .map(|_| Body {
            mass: rng.uniform(0.5, 5.0),
            inertia: [
                rng.uniform(0.1, 1.0),
                rng.uniform(0.1, 1.0),
                rng.uniform(0.1, 1.0),
            ],
            v_free: std::array::from_fn(|_| rng.uniform(-1.0, 1.0)),
        })
        .collect();
    let mut cone_list = Vec::new();
    let mut jacobians = Vec::new();
    let mut b = Vec::new();
    for _ in 0..nk {
        let cone = cones[rng.below(cones.len())];
        let d = cone.dim();
        let first = rng.below(nb);
        let mut on = vec![first];
        if nb > 1 && rng.uniform(0.0, 1.0) < 0.5 {
            on.push((first + 1 + rng.below(nb - 1)) % nb);
        }
        let rows = (0..d * on.len())
            .map(|_| std::array::from_fn(|_| rng.uniform(-1.0, 1.0)))
            .collect();
        jacobians.push(JacobianBlock {
            bodies: on.into(),
            rows,
        });
        b.extend((0..d).map(|_| rng.uniform(-0.5, 0.5)));
        cone_list.push(cone);
    }
    Problem {
        name: "random".into(),
        class: Default::default(),
        cones: cone_list,
        operator: Operator::Factored(Factored {
            bodies,
            jacobians,
            b,
        }),
        compliance: Vec::new(),
    }
}

/// The global form `(H = M, J, f = M v_free, b)` of a factored problem.
fn to_global(p: &Problem) -> Problem {
    let Operator::Factored(f) = &p.operator else {
        panic!("factored expected")
    };
    let n = 6 * f.bodies.len();
    let mut h = Vec::new();
    let mut rhs = Vec::new();
    for (i, body) in f.bodies.iter().enumerate() {
        for (c, w) in body.inv_mass().iter().enumerate() {
            h.push((6 * i + c, 6 * i + c, 1.0 / w));
            rhs.push(body.v_free[c] / w);
        }
    }
    let mut j = Vec::new();
    let mut row = 0;
    for (k, block) in f.jacobians.iter().enumerate() {
        let d = p.cones[k].dim();
        for (s, &body) in block.bodies.iter().enumerate() {
            for r in 0..d {
                for c in 0..6 {
                    j.push((row + r, 6 * body + c, block.rows[s * d + r][c]));
                }
            }
        }
        row += d;
    }
    Problem {
        operator: Operator::Global(Global {
            h: CsrMatrix::from_triplets(n, n, &h).unwrap(),
            j: CsrMatrix::from_triplets(row, n, &j).unwrap(),
            f: rhs,
            b: f.b.clone(),
        }),
        ..p.clone()
    }
}

/// The global problem with a general sparse SPD `H` (a random sparse symmetric part plus a
/// dominant diagonal) in place of the mass matrix.
fn with_sparse_h(rng: &mut Rng, p: &Problem) -> Problem {
    let Operator::Global(g) = &p.operator else {
        panic!("global expected")
    };
    let n = g.h.nrows;
    let mut t = Vec::new();
    for i in 0..n {
        t.push((i, i, rng.uniform(2.0, 4.0)));
        for _ in 0..2 {
            let j = rng.below(n);
            if j != i {
                let v = rng.uniform(-0.5, 0.5);
                t.push((i, j, v));
                t.push((j, i, v));
            }
        }
    }
    Problem {
        operator: Operator::Global(Global {
            h: CsrMatrix::from_triplets(n, n, &t).unwrap(),
            ..g.clone()
        }),
        ..p.clone()
    }
}

/// The assembled form `(N = J H⁻¹ Jᵀ, r)` of any problem.
fn to_assembled(p: &Problem) -> Problem {
    let sys = System::new(p).unwrap();
    let m = sys.rows();
    let mut cols = Vec::new();
    for j in 0..m {
        let mut e = vec![0.0; m];
        e[j] = 1.0;
        let mut col = vec![0.0; m];
        sys.operator().apply(&e, &mut col);
        cols.extend(col);
    }
    Problem {
        operator: Operator::Assembled(Assembled {
            n: CsrMatrix::from_dense_col_major(m, m, &cols),
            r: sys.r().to_vec(),
        }),
        ..p.clone()
    }
}

/// Clarabel on the global form: `min ½vᵀHv − fᵀv` with `Jv + b ∈ K*`, to rounding level;
/// returns `(objective, v, γ)`.
fn clarabel(p: &Problem) -> (f64, Vec<f64>, Vec<f64>) {
    let run = clarabel_solve(&conic_global(p), tight_settings());
    assert!(
        matches!(
            run.status,
            SolverStatus::Solved | SolverStatus::AlmostSolved
        ),
        "clarabel: {:?}",
        run.status
    );
    (run.objective, run.x, run.gamma)
}

/// Clarabel's settings of the cross-checks: every tolerance near rounding level.
fn tight_settings() -> DefaultSettings<f64> {
    DefaultSettingsBuilder::default()
        .verbose(false)
        .tol_gap_abs(1e-12)
        .tol_gap_rel(1e-12)
        .tol_feas(1e-12)
        .tol_ktratio(1e-10)
        .static_regularization_constant(1e-12)
        .iterative_refinement_reltol(1e-16)
        .iterative_refinement_abstol(1e-16)
        .iterative_refinement_max_iter(50)
        .build()
        .unwrap()
}

/// A cone QP in Clarabel's form: `min ½xᵀPx + qᵀx` s.t. `Ax + s = b`, `s ∈ cones`; `gamma_of`
/// maps `(x, z)` of Clarabel's answer to the impulses.
struct Conic {
    p: CscMatrix<f64>,
    q: Vec<f64>,
    a: CscMatrix<f64>,
    b: Vec<f64>,
    cones: Vec<SupportedConeT<f64>>,
    gamma_of: fn(&Conic, &[f64], &[f64]) -> Vec<f64>,
    /// The cone scaling `D` per row (`1/μ` on Coulomb normal rows, 1 elsewhere).
    scale: Vec<f64>,
}

/// `m` as a column-compressed matrix, its upper triangle only if `upper`.
fn to_csc(m: &CsrMatrix, upper: bool) -> CscMatrix<f64> {
    let t = m.transpose();
    let mut colptr = vec![0];
    let (mut rowval, mut nzval) = (Vec::new(), Vec::new());
    for c in 0..m.ncols {
        let (rows, vals) = t.row(c);
        for (&r, &v) in rows.iter().zip(vals) {
            if !upper || r <= c {
                rowval.push(r);
                nzval.push(v);
            }
        }
        colptr.push(rowval.len());
    }
    CscMatrix::new(m.nrows, m.ncols, colptr, rowval, nzval)
}

/// The second-order cones of `cones` (a Coulomb cone scaled by `D = diag(1/μ, 1, 1)`; one
/// with `μ = 0` as `γn ≥ 0`, `γt = 0`) and the scaling `D` per row.
fn clarabel_cones(cones: &[Cone]) -> (Vec<SupportedConeT<f64>>, Vec<f64>) {
    let (mut out, mut scale) = (Vec::new(), Vec::new());
    for c in cones {
        match *c {
            Cone::Bilateral { dim } => {
                scale.extend(vec![1.0; dim]);
                out.push(SupportedConeT::ZeroConeT(dim));
            }
            Cone::Unilateral => {
                scale.push(1.0);
                out.push(SupportedConeT::NonnegativeConeT(1));
            }
            Cone::Coulomb { mu: 0.0 } => {
                scale.extend([1.0; 3]);
                out.push(SupportedConeT::NonnegativeConeT(1));
                out.push(SupportedConeT::ZeroConeT(2));
            }
            Cone::Coulomb { mu } => {
                scale.extend([1.0 / mu, 1.0, 1.0]);
                out.push(SupportedConeT::SecondOrderConeT(3));
            }
        }
    }
    (out, scale)
}

/// The global form as Clarabel's cone QP in the velocities: `A = −D J`, `b = D b`, the dual
/// `z = D⁻¹γ`.
fn conic_global(p: &Problem) -> Conic {
    let Operator::Global(g) = &p.operator else {
        panic!("global expected")
    };
    let n = g.h.nrows;
    let (cones, scale) = clarabel_cones(&p.cones);
    let mut at = Vec::new();
    for (i, si) in scale.iter().enumerate() {
        let (cols, vals) = g.j.row(i);
        at.extend(cols.iter().zip(vals).map(|(&c, &v)| (i, c, -si * v)));
    }
    let a = CsrMatrix::from_triplets(g.j.nrows, n, &at).unwrap();
    Conic {
        p: to_csc(&g.h, true),
        q: g.f.iter().map(|f| -f).collect(),
        a: to_csc(&a, false),
        b: g.b.iter().zip(&scale).map(|(b, s)| b * s).collect(),
        cones,
        gamma_of: |c, _, z| z.iter().zip(&c.scale).map(|(z, s)| z * s).collect(),
        scale,
    }
}

/// The QP in the impulses as Clarabel's cone QP (the `W` form): `P` the symmetric part of
/// `W + E` (`W = N`, assembled from a factored operator), `q = r`, `A = −D⁻¹` (`s = D⁻¹γ` in
/// the second-order cone), `b = 0`.
fn conic_w(sys: &System) -> Conic {
    let assembled;
    let n = match sys.operator().as_matrix() {
        Some(n) => n,
        None => {
            assembled = sys
                .factored()
                .expect("an assembled or factored problem")
                .assemble();
            &assembled
        }
    };
    let m = sys.rows();
    let mut t = Vec::new();
    for i in 0..m {
        let (cols, vals) = n.row(i);
        for (&j, &v) in cols.iter().zip(vals) {
            t.push((i, j, 0.5 * v));
            t.push((j, i, 0.5 * v));
        }
        t.push((i, i, sys.compliance()[i]));
    }
    let (cones, scale) = clarabel_cones(sys.cones());
    let a: Vec<_> = scale
        .iter()
        .enumerate()
        .map(|(i, s)| (i, i, -1.0 / s))
        .collect();
    Conic {
        p: to_csc(&CsrMatrix::from_triplets(m, m, &t).unwrap(), true),
        q: sys.r().to_vec(),
        a: to_csc(&CsrMatrix::from_triplets(m, m, &a).unwrap(), false),
        b: vec![0.0; m],
        cones,
        gamma_of: |_, x, _| x.to_vec(),
        scale,
    }
}

/// One Clarabel solve: status, objective, `x`, the impulses, iterations, the time of its
/// setup and solve together and of its setup alone (seconds), and its linear solver: name,
/// threads and the entries of the KKT factor `L`.
struct ClarabelRun {
    status: SolverStatus,
    objective: f64,
    x: Vec<f64>,
    gamma: Vec<f64>,
    iterations: u32,
    time_s: f64,
    setup_s: f64,
    ldl: String,
    threads: usize,
    nnz_l: usize,
}

/// Clarabel on `c`; with `IP_BENCH_VERBOSE` set, its timers (setup, factorizations, solves)
/// are printed after its iteration table.
fn clarabel_solve(c: &Conic, settings: DefaultSettings<f64>) -> ClarabelRun {
    let verbose = settings.verbose;
    let start = std::time::Instant::now();
    let mut solver = DefaultSolver::new(&c.p, &c.q, &c.a, &c.b, &c.cones, settings).unwrap();
    let setup_s = start.elapsed().as_secs_f64();
    solver.solve();
    let time_s = start.elapsed().as_secs_f64();
    if let Some(timers) = solver.timers.as_ref().filter(|_| verbose) {
        timers.print();
    }
    let s = &solver.solution;
    let ldl = &solver.info.linsolver;
    ClarabelRun {
        status: s.status,
        objective: s.obj_val,
        gamma: (c.gamma_of)(c, &s.x, &s.z),
        x: s.x.clone(),
        iterations: s.iterations,
        time_s,
        setup_s,
        ldl: ldl.name.clone(),
        threads: ldl.threads,
        nnz_l: ldl.nnzL,
    }
}

/// `½vᵀHv − fᵀv` of the global form at `v`.
fn objective(p: &Problem, v: &[f64]) -> f64 {
    let Operator::Global(g) = &p.operator else {
        panic!("global expected")
    };
    let mut hv = vec![0.0; v.len()];
    g.h.mul_vec(v, &mut hv);
    v.iter()
        .zip(&hv)
        .zip(&g.f)
        .map(|((v, hv), f)| 0.5 * v * hv - f * v)
        .sum()
}

fn norm(a: &[f64]) -> f64 {
    a.iter().map(|x| x * x).sum::<f64>().sqrt()
}

fn rel_diff(a: &[f64], b: &[f64]) -> f64 {
    let d = a
        .iter()
        .zip(b)
        .map(|(x, y)| (x - y).powi(2))
        .sum::<f64>()
        .sqrt();
    let s = b.iter().map(|x| x * x).sum::<f64>().sqrt();
    d / s.max(1.0)
}

/// Solves `p` (any form) with the interior point and compares with Clarabel on `global`.
fn check_against(p: &Problem, global: &Problem, reference: &(f64, Vec<f64>, Vec<f64>), what: &str) {
    let sys = System::new(p).unwrap();
    let settings = Settings {
        tol: 1e-14,
        ..Settings::default()
    };
    let report = Ip::default().solve(&sys, &settings).unwrap();
    assert_eq!(report.status, Status::Converged, "{what}: {report:?}");
    let gsys = System::new(global).unwrap();
    let v = gsys.velocities(&report.gamma).unwrap();
    let obj = objective(global, &v);
    let (obj_ref, v_ref, gamma_ref) = reference;
    assert!(
        (obj - obj_ref).abs() <= 1e-7 * obj_ref.abs().max(1.0),
        "{what}: objective {obj} vs Clarabel {obj_ref}"
    );
    let dv = rel_diff(&v, v_ref);
    let dg = rel_diff(&report.gamma, gamma_ref);
    // Clarabel's own answer is only as exact as its natural map: on second-order cones its
    // Nesterov–Todd iterates stop at a residual near 1e-7 (sliding contacts), where ours are
    // polished to rounding; the solutions must agree to 1e-7 or to that residual.
    let ref_res = signorini::problem::merit::evaluate(&sys, gamma_ref, Default::default());
    let tol = 1e-7f64.max(20.0 * ref_res.natural_map_2 / norm(gamma_ref).max(1.0));
    assert!(
        dv <= tol && dg <= tol,
        "{what}: Δv {dv:e}, Δγ {dg:e} (tolerance {tol:e}); natural map: IP {:e}, Clarabel {:e}",
        report.merit.natural_map_inf,
        ref_res.natural_map_inf
    );
    assert!(
        report.merit.natural_map_inf <= 1e-10,
        "{what}: {:?}",
        report.merit
    );
}

fn cross_check(seed: u64, cones: &[Cone], sizes: (usize, usize)) {
    let mut rng = Rng(seed);
    let factored = random_factored(&mut rng, sizes.0, sizes.1, cones);
    let global = to_global(&factored);
    let reference = clarabel(&global);
    check_against(
        &factored,
        &global,
        &reference,
        &format!("seed {seed} factored"),
    );
    check_against(&global, &global, &reference, &format!("seed {seed} global"));
    check_against(
        &to_assembled(&factored),
        &global,
        &reference,
        &format!("seed {seed} assembled"),
    );
    let sparse_h = with_sparse_h(&mut rng, &global);
    let reference = clarabel(&sparse_h);
    check_against(
        &sparse_h,
        &sparse_h,
        &reference,
        &format!("seed {seed} sparse H"),
    );
}

#[test]
fn random_qps_with_equality_and_inequality_rows_match_clarabel() {
    for seed in 0..8 {
        cross_check(
            seed,
            &[
                Cone::Unilateral,
                Cone::Unilateral,
                Cone::Bilateral { dim: 1 },
            ],
            (6, 20),
        );
    }
}

#[test]
fn random_socps_with_coulomb_cones_match_clarabel() {
    for seed in 100..108 {
        cross_check(
            seed,
            &[
                Cone::Coulomb { mu: 0.5 },
                Cone::Coulomb { mu: 0.2 },
                Cone::Unilateral,
                Cone::Bilateral { dim: 1 },
            ],
            (6, 12),
        );
    }
}

/// The benchmark's tolerance: `ip`'s on the relative natural map, Clarabel's on its gaps and
/// feasibility (its other settings as recommended, the defaults).
const BENCH_TOL: f64 = 1e-8;

/// The relative CCP natural map of `gamma` (of `W` itself): the one accuracy both answers
/// are compared on.
fn natural_map(sys: &System, gamma: &[f64]) -> f64 {
    let u = sys.velocity(gamma);
    let unit = vec![1.0; sys.blocks()];
    signorini::problem::merit::residual(sys, gamma, &u, Default::default(), &unit).relative
}

/// Clarabel's cone QP of a pile (a factored problem) in the form `IP_BENCH_CLARABEL_FORM`
/// names: `global` (the default), velocities and impulses with `P = H` ([`conic_global`]), or
/// `w`, the QP in the impulses with `P = W` ([`conic_w`]).
fn pile_conic(problem: &Problem, sys: &System) -> Conic {
    match std::env::var("IP_BENCH_CLARABEL_FORM").as_deref() {
        Err(_) | Ok("global") => conic_global(&to_global(problem)),
        Ok("w") => conic_w(sys),
        Ok(other) => panic!("IP_BENCH_CLARABEL_FORM: `w` or `global`, not `{other}`"),
    }
}

/// One problem of the benchmark: its name, the problem as ip takes it, Clarabel's cone QP
/// and the time taken to build it from the problem (seconds; in neither solver's time), and
/// whether it is a pile (left out of the files' geometric mean).
struct BenchProblem {
    name: String,
    sys: System,
    conic: Conic,
    conic_s: f64,
    pile: bool,
}

/// The benchmark's problems: settled piles, Clarabel in the form of [`pile_conic`], then, unless `IP_BENCH_SICONOS=0`, every Siconos fc3d file,
/// Clarabel on the QP of `W`'s symmetric part. The piles: `balls_in_box` stepped 30 times by
/// its own solver, then the 31st step's problem, at each size of `IP_BENCH_SPHERES`; then
/// the problem files of `IP_BENCH_PROBLEMS` (comma-separated paths, any format `signorini`
/// reads: dumps of `signorini simulate scenes/balls_in_box.toml --set lattice.0.count=N
/// --steps 31 --dump-step 31 --dump-format bin --snapshot-every 0`), named by their path.
/// `IP_BENCH_SPHERES` defaults to `1000,4000,16000` without `IP_BENCH_PROBLEMS`, to none
/// with it.
fn bench_problems() -> impl Iterator<Item = BenchProblem> {
    let dumps = std::env::var("IP_BENCH_PROBLEMS").unwrap_or_default();
    let default_sizes = if dumps.is_empty() {
        "1000,4000,16000"
    } else {
        ""
    };
    let sizes = std::env::var("IP_BENCH_SPHERES").unwrap_or(default_sizes.into());
    let stepped = sizes
        .split(',')
        .filter(|s| !s.is_empty())
        .map(|s| s.trim().parse::<usize>().expect("IP_BENCH_SPHERES: sizes"))
        .collect::<Vec<_>>()
        .into_iter()
        .map(|count| {
            let count = count.to_string();
            let mut sc = common::load_scene("balls_in_box.toml", &[("lattice.0.count", &count)]);
            let mut runner = signorini::solver::Runner::new(
                signorini::registry::solver(&sc.run.solver).unwrap(),
            );
            for _ in 0..30 {
                sc.world.step(&mut runner).unwrap();
            }
            (format!("balls_in_box {count}"), sc.world.problem().problem)
        });
    let dumped = dumps
        .split(',')
        .filter(|s| !s.is_empty())
        .map(str::to_string)
        .collect::<Vec<_>>()
        .into_iter()
        .map(|path| {
            let problem = signorini::problem::io::read(std::path::Path::new(&path), None)
                .unwrap_or_else(|e| panic!("IP_BENCH_PROBLEMS: {path}: {e}"));
            (path, problem)
        });
    let piles = stepped.chain(dumped).map(|(name, problem)| {
        let sys = System::new(&problem).unwrap();
        let start = std::time::Instant::now();
        let conic = pile_conic(&problem, &sys);
        BenchProblem {
            name,
            conic,
            conic_s: start.elapsed().as_secs_f64(),
            sys,
            pile: true,
        }
    });
    let siconos = std::env::var("IP_BENCH_SICONOS").map_or(true, |v| v != "0");
    let dir = common::problems_dir().join("siconos/fc3d");
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| siconos && p.extension().is_some_and(|e| e == "dat"))
        .collect();
    files.sort();
    let files = files.into_iter().map(|f| {
        let p = signorini::problem::io::read(&f, None).unwrap();
        let sys = System::new(&p).unwrap();
        let start = std::time::Instant::now();
        BenchProblem {
            name: p.name,
            conic: conic_w(&sys),
            conic_s: start.elapsed().as_secs_f64(),
            sys,
            pile: false,
        }
    });
    piles.chain(files)
}

/// The best (shortest) of `repeats` runs of `run` by `time`.
fn best_of<T>(repeats: usize, mut run: impl FnMut() -> T, time: impl Fn(&T) -> f64) -> T {
    (0..repeats.max(1))
        .map(|_| run())
        .min_by(|a, b| time(a).total_cmp(&time(b)))
        .expect("at least one run")
}

/// `ip` against Clarabel on settled `balls_in_box` piles and the Siconos fc3d files (CCP model,
/// both at [`BENCH_TOL`], Clarabel as recommended otherwise: its default settings),
/// interleaved in one process, each solve repeated `IP_BENCH_REPEATS` times (default 2), the
/// best time kept; prints a markdown table with the relative natural map of both answers.
/// Equal accuracy: where Clarabel's answer misses [`BENCH_TOL`], `ip` runs again with
/// Clarabel's natural map as its tolerance (the "ip at Clarabel's accuracy" columns).
///
/// Clarabel's defaults are those of its Python and Julia builds: the crate's `faer-sparse`
/// feature is on, so `direct_solve_method = "auto"` factors a KKT system whose AMD ordering
/// costs at least 40 operations per entry of `L` (the piles) with faer's supernodal LDLᵀ,
/// the others (the Siconos files) with qdldl, on rayon's threads (`max_threads = 0`). On the
/// piles it takes the global form (velocities and impulses, `P = H`, [`pile_conic`]): its
/// best form there, 3.4× faster than the QP in `W` at 1000 spheres, whose factor has 3.4×
/// the entries (benches/RESULTS.md, issue 20, tenth session).
///
/// Knobs: `IP_BENCH_CLARABEL_FORM` (`w`, `global`), `IP_BENCH_CLARABEL_LDL` (Clarabel's
/// `direct_solve_method`: `auto`, `qdldl`, `faer`), `IP_BENCH_CLARABEL_MAX_ITER`,
/// `IP_BENCH_CLARABEL_TIME_LIMIT` (seconds: a cap; a capped row prints its iterations and the
/// ratio as a lower bound, `>`), `IP_BENCH_CLARABEL_ROWS` (Clarabel left out of larger
/// problems; default: none left out), `IP_BENCH_EQUAL=0` (no run of `ip` at Clarabel's
/// accuracy), `IP_BENCH_VERBOSE` (Clarabel's per-iteration table and timers). The column
/// "setup + its form": Clarabel's setup (in its time) + building its cone QP from the problem
/// (in neither time). `cargo test --release --test ip_clarabel -- --ignored --nocapture`.
#[test]
#[ignore = "a benchmark: run in release with --ignored --nocapture"]
fn benchmark_against_clarabel() {
    let env = |name: &str| std::env::var(name).ok();
    let repeats: usize = env("IP_BENCH_REPEATS").map_or(2, |v| v.parse().unwrap());
    let clarabel_rows: usize =
        env("IP_BENCH_CLARABEL_ROWS").map_or(usize::MAX, |v| v.parse().unwrap());
    let threads = rayon::current_num_threads();
    println!(
        "ip on {threads} rayon threads; Clarabel's form on the piles: {}\n",
        env("IP_BENCH_CLARABEL_FORM").unwrap_or("global".into())
    );
    println!(
        "| problem | rows | ip it. | ip (s) | ip s/it. | ip IP / polish (s) | ip natural map | \
         Clarabel it. | Clarabel (s) | Clarabel s/it. | Clarabel natural map | Clarabel / ip | \
         ip at Clarabel's accuracy: it. | (s) | Clarabel / ip | Clarabel setup + its form (s) | \
         Clarabel LDL: threads, L entries |"
    );
    println!(
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|"
    );
    let settings = |tol| Settings {
        tol,
        ..Settings::default()
    };
    let clarabel_settings = || {
        let mut b = DefaultSettingsBuilder::default();
        b.verbose(env("IP_BENCH_VERBOSE").is_some())
            .tol_gap_abs(BENCH_TOL)
            .tol_gap_rel(BENCH_TOL)
            .tol_feas(BENCH_TOL);
        if let Some(method) = env("IP_BENCH_CLARABEL_LDL") {
            b.direct_solve_method(method);
        }
        if let Some(n) = env("IP_BENCH_CLARABEL_MAX_ITER") {
            b.max_iter(n.parse().unwrap());
        }
        if let Some(t) = env("IP_BENCH_CLARABEL_TIME_LIMIT") {
            b.time_limit(t.parse().unwrap());
        }
        b.build().unwrap()
    };
    let ip_time = |r: &signorini::solver::Report| r.time_s;
    let (mut log_ratio, mut log_equal, mut files) = (0.0, 0.0, 0);
    for BenchProblem {
        name,
        sys,
        conic,
        conic_s,
        pile,
    } in bench_problems()
    {
        let (mut ip, mut cl) = (None::<signorini::solver::Report>, None::<ClarabelRun>);
        for _ in 0..repeats {
            let r = Ip::default().solve(&sys, &settings(BENCH_TOL)).unwrap();
            if ip.as_ref().is_none_or(|b| r.time_s < b.time_s) {
                ip = Some(r);
            }
            if sys.rows() <= clarabel_rows {
                let c = clarabel_solve(&conic, clarabel_settings());
                if cl.as_ref().is_none_or(|b| c.time_s < b.time_s) {
                    cl = Some(c);
                }
            }
        }
        let ip = ip.unwrap();
        let phase = |n: &str| {
            ip.phases
                .iter()
                .find(|p| p.name == n)
                .map_or(0.0, |p| p.time_s)
        };
        let status = |s: &str, it: usize| match s {
            "converged" | "Solved" => it.to_string(),
            other => format!("{it} ({other})"),
        };
        let ip_columns = format!(
            "| {name} | {} | {} | {:.3} | {:.4} | {:.3} / {:.3} | {:.1e} |",
            sys.rows(),
            status(&ip.status.to_string(), ip.iterations),
            ip.time_s,
            ip.time_s / ip.iterations.max(1) as f64,
            phase("interior_point"),
            phase("polish"),
            natural_map(&sys, &ip.gamma),
        );
        assert_ne!(ip.status, Status::NumericalError, "{name}");
        let Some(cl) = cl else {
            println!("{ip_columns} — | not run | — | — | — | — | — | — | — | — | — |");
            continue;
        };
        let ratio = cl.time_s / ip.time_s;
        let cl_map = natural_map(&sys, &cl.gamma);
        // A capped or failed Clarabel run bounds the ratio from below; it has no accuracy to
        // be equal to.
        let solved = matches!(cl.status, SolverStatus::Solved | SolverStatus::AlmostSolved);
        let bound = if solved { "" } else { "> " };
        // Equal accuracy: ip to the natural map Clarabel reached, where that misses ours.
        // `IP_BENCH_EQUAL=0` skips that run (minutes on a large pile): the ratio of the
        // answers at 1e-8 then bounds the one at equal accuracy from below.
        let needs_equal = solved && cl_map > BENCH_TOL;
        let skip_equal = env("IP_BENCH_EQUAL").is_some_and(|v| v == "0");
        let equal = (needs_equal && !skip_equal).then(|| {
            best_of(
                repeats,
                || Ip::default().solve(&sys, &settings(cl_map)).unwrap(),
                ip_time,
            )
        });
        let equal_ratio = cl.time_s / equal.as_ref().map_or(ip.time_s, |e| e.time_s);
        if !pile {
            log_ratio += ratio.ln();
            log_equal += equal_ratio.ln();
            files += 1;
        }
        let equal_columns = match &equal {
            Some(e) => format!(
                "{} | {:.3} |",
                status(&e.status.to_string(), e.iterations),
                e.time_s
            ),
            None if needs_equal => "not run | — |".into(),
            None if solved => "= | = |".into(),
            None => "— | — |".into(),
        };
        let equal_bound = if needs_equal && equal.is_none() {
            "≥ "
        } else {
            bound
        };
        println!(
            "{ip_columns} {} | {:.3} | {:.4} | {:.1e} | {bound}{:.2} | {equal_columns} \
             {equal_bound}{:.2} | {:.3} + {conic_s:.3} | {} {}, {} |",
            status(&format!("{:?}", cl.status), cl.iterations as usize),
            cl.time_s,
            cl.time_s / f64::from(cl.iterations.max(1)),
            cl_map,
            ratio,
            equal_ratio,
            cl.setup_s,
            cl.ldl,
            cl.threads,
            cl.nnz_l,
        );
    }
    if files > 0 {
        println!(
            "\nSiconos fc3d files: {files}, geometric mean of Clarabel / ip time {:.2} (both \
             at 1e-8), {:.2} (ip at Clarabel's natural map where that misses 1e-8).",
            (log_ratio / files as f64).exp(),
            (log_equal / files as f64).exp()
        );
    }
}

/// `ip` on one Siconos fc3d file, `IP_PROFILE_FILE` (its name without `.dat`), solved
/// `IP_PROFILE_SOLVES` times (default 1000) at [`BENCH_TOL`], CCP model: a loop for a profiler
/// (`perf record -g target/release/deps/ip_clarabel-… profile_one_file --ignored`); prints the
/// mean time of a solve.
#[test]
#[ignore = "a profiling loop: run in release with --ignored --nocapture"]
fn profile_one_file() {
    let name = std::env::var("IP_PROFILE_FILE").expect("IP_PROFILE_FILE: a Siconos fc3d file");
    let solves: usize = std::env::var("IP_PROFILE_SOLVES").map_or(1000, |v| v.parse().unwrap());
    let path = common::problems_dir().join(format!("siconos/fc3d/{name}.dat"));
    let sys = System::new(&signorini::problem::io::read(&path, None).unwrap()).unwrap();
    let settings = Settings {
        tol: BENCH_TOL,
        ..Settings::default()
    };
    let start = std::time::Instant::now();
    for _ in 0..solves {
        let report = Ip::default().solve(&sys, &settings).unwrap();
        assert_eq!(report.status, Status::Converged, "{name}");
    }
    println!(
        "{name}: {solves} solves, {:.1} µs per solve",
        1e6 * start.elapsed().as_secs_f64() / solves as f64
    );
}
