//! The GPU path (DESIGN §4): every kernel against its CPU `f32` mirror, certification of
//! `jacobi-gpu`, `spg-gpu` and `apgd-gpu` against the CPU `f64` solvers of the same names on
//! scene and Siconos problems, determinism, the readback schedule, buffer reuse, and the
//! host structs against the shaders.
//!
//! Without an adapter these tests print a note and pass, except under `CI=true` where they
//! fail: CI installs Mesa's lavapipe, so every shader runs there.

mod common;
use common::{Rng, problems_dir, scene_problem};

use std::cell::RefCell;
use std::path::Path;
use std::sync::{Arc, OnceLock};

use signorini::gpu::kernels::{self, Kernel};
use signorini::gpu::{
    ApgdGpu, ApgdMethod, ApgdState, Apply, GpuContext, GpuSession, GpuStats, JacobiGpu,
    JacobiMethod, MAX_GLL, Monitor, OperatorData, Params, Partial, ProblemData, READBACK_EVERY,
    Reduce, SLOT_A, SLOT_B, SLOT_C, SLOTS, SpgConfig, SpgGpu, SpgMethod, SpgState, cpu,
    dispatch_once,
};
use signorini::problem::{
    Body, Cone, Factored, FrictionModel, JacobianBlock, Operator, Problem, System,
};
use signorini::registry;
use signorini::solver::{Report, Settings, Status};

/// The shared device, or `None` (with a note) when there is no adapter outside CI.
fn context() -> Option<Arc<GpuContext>> {
    static CONTEXT: OnceLock<Result<Arc<GpuContext>, String>> = OnceLock::new();
    match CONTEXT.get_or_init(|| GpuContext::new().map(Arc::new).map_err(|e| e.to_string())) {
        Ok(ctx) => Some(ctx.clone()),
        Err(e) if std::env::var("CI").as_deref() == Ok("true") => {
            panic!("CI=true but the GPU path cannot run: {e}")
        }
        Err(e) => {
            eprintln!("note: skipping a GPU test: {e}");
            None
        }
    }
}

/// A random factored problem mixing unilateral, Coulomb and bilateral blocks (1 to 3 rows),
/// one- and two-body blocks, with some compliant rows.
fn random_problem(seed: u64, n_bodies: usize, n_blocks: usize) -> Problem {
    let mut rng = Rng(seed);
    let bodies = (0..n_bodies)
        .map(|_| Body {
            mass: rng.uniform(0.5, 2.0),
            inertia: [
                rng.uniform(0.1, 1.0),
                rng.uniform(0.1, 1.0),
                rng.uniform(0.1, 1.0),
            ],
            v_free: std::array::from_fn(|_| rng.uniform(-1.0, 1.0)),
        })
        .collect();
    let (mut cones, mut jacobians, mut compliance) = (Vec::new(), Vec::new(), Vec::new());
    for _ in 0..n_blocks {
        let cone = match rng.below(3) {
            0 => Cone::Unilateral,
            1 => Cone::Coulomb {
                mu: rng.uniform(0.0, 1.0),
            },
            _ => Cone::Bilateral {
                dim: 1 + rng.below(3),
            },
        };
        let a = rng.below(n_bodies);
        let mut blk = vec![a];
        if rng.below(3) > 0 {
            let b = (a + 1 + rng.below(n_bodies - 1)) % n_bodies;
            blk.push(b);
        }
        let rows = (0..cone.dim() * blk.len())
            .map(|_| std::array::from_fn(|_| rng.uniform(-1.0, 1.0)))
            .collect();
        let c = if matches!(cone, Cone::Bilateral { .. }) {
            1e-3
        } else {
            0.0
        };
        compliance.extend(std::iter::repeat_n(c, cone.dim()));
        cones.push(cone);
        jacobians.push(JacobianBlock { bodies: blk, rows });
    }
    let m = compliance.len();
    let b = (0..m).map(|_| rng.uniform(-0.1, 0.1)).collect();
    Problem {
        name: format!("random-{seed}"),
        class: Default::default(),
        cones,
        operator: Operator::Factored(Factored {
            bodies,
            jacobians,
            b,
        }),
        compliance,
    }
}

/// Largest distance in units in the last place between two `f32` buffers.
fn max_ulps(a: &[f32], b: &[f32]) -> u32 {
    assert_eq!(a.len(), b.len());
    let key = |x: f32| {
        let i = x.to_bits() as i32;
        if i < 0 { i32::MIN - i } else { i }
    };
    a.iter()
        .zip(b)
        .map(|(&x, &y)| (i64::from(key(x)) - i64::from(key(y))).unsigned_abs() as u32)
        .max()
        .unwrap_or(0)
}

/// The parity bound: `|gpu − cpu| ≤ PARITY_EPS · ε_f32 · max(|cpu|, ‖cpu‖∞)` per entry. The
/// kernels and their mirrors do the same `f32` operations in the same order, so lavapipe
/// (LLVM: IEEE division and square root, no contraction) gives bit-identical results (the
/// ulps are printed); the bound leaves room for a real GPU's approximate `sqrt` and division
/// (Vulkan allows a few ulps) and fused multiply-adds.
const PARITY_EPS: f32 = 8.0;

#[track_caller]
fn assert_parity(what: &str, gpu: &[f32], cpu: &[f32]) {
    assert_eq!(gpu.len(), cpu.len(), "{what}: lengths");
    let scale = cpu.iter().fold(0.0f32, |m, x| m.max(x.abs()));
    for (i, (g, c)) in gpu.iter().zip(cpu).enumerate() {
        let bound = PARITY_EPS * f32::EPSILON * c.abs().max(scale);
        assert!(
            (g - c).abs() <= bound || g.to_bits() == c.to_bits(),
            "{what}[{i}]: gpu {g:e} cpu {c:e}"
        );
    }
    eprintln!(
        "{what}: max {} ulps over {} values",
        max_ulps(gpu, cpu),
        cpu.len()
    );
}

fn bytes<T: bytemuck::Pod>(v: &[T]) -> Vec<u8> {
    bytemuck::cast_slice(v).to_vec()
}

fn one<T: bytemuck::Pod>(v: &T) -> Vec<u8> {
    bytemuck::bytes_of(v).to_vec()
}

fn f32s(b: &[u8]) -> Vec<f32> {
    bytemuck::pod_collect_to_vec(b)
}

fn flat(parts: &[Partial]) -> Vec<f32> {
    parts
        .iter()
        .flat_map(|p| p.sums.into_iter().chain(p.maxes))
        .collect()
}

fn random_vec(rng: &mut Rng, n: usize, lo: f64, hi: f64) -> Vec<f32> {
    (0..n).map(|_| rng.uniform(lo, hi) as f32).collect()
}

/// Runs `kernel` once on `inputs` (binding order) and returns the binding `out`.
fn dispatch(
    ctx: &GpuContext,
    kernel: &Kernel,
    items: u32,
    inputs: &[Vec<u8>],
    out: usize,
) -> Vec<u8> {
    let refs: Vec<&[u8]> = inputs.iter().map(Vec::as_slice).collect();
    dispatch_once(ctx, kernel, items, &refs)
        .unwrap()
        .swap_remove(out)
}

fn groups(n: u32) -> usize {
    n.div_ceil(kernels::WORKGROUP) as usize
}

/// The data of the random problem under the Coulomb model, with a random warm start
/// (projected on `K`) so that every projection case occurs.
fn random_data(seed: u64) -> ProblemData {
    let sys = System::new(&random_problem(seed, 300, 700)).unwrap();
    let mut rng = Rng(seed + 1);
    let settings = Settings {
        friction: FrictionModel::Coulomb,
        warm_start: Some((0..sys.rows()).map(|_| rng.uniform(-1.0, 1.0)).collect()),
        ..Settings::default()
    };
    ProblemData::new(&sys, &settings).unwrap()
}

/// A Siconos fc3d problem: an assembled `N` in CSR.
fn siconos(file: &str) -> System {
    let path = problems_dir().join("siconos/fc3d").join(file);
    System::new(&signorini::problem::io::read(&path, None).unwrap()).unwrap()
}

/// Every kernel of the registry against its CPU mirror, on seeded random inputs, within
/// [`PARITY_EPS`].
#[test]
fn every_kernel_matches_its_cpu_mirror() {
    let Some(ctx) = context() else { return };
    let data = random_data(7);
    let p = data.params;
    let (nb, m) = (p.n_bodies as usize, p.n_rows as usize);
    let OperatorData::Factored {
        links_ptr,
        links,
        jac,
        minv_jac,
    } = &data.op
    else {
        panic!("factored expected")
    };
    let mut rng = Rng(99);
    let mut tested = Vec::new();
    let mut check = |k: &Kernel| tested.push(k.name);
    let x = random_vec(&mut rng, m, -1.0, 1.0);
    let with_r = Apply {
        add_r: 1,
        pad: [0; 3],
    };

    // Products, both forms.
    check(&kernels::FACTORED_BODIES);
    let gpu = dispatch(
        &ctx,
        &kernels::FACTORED_BODIES,
        6 * p.n_bodies,
        &[
            one(&p),
            bytes(links_ptr),
            bytes(links),
            bytes(minv_jac),
            bytes(&x),
            bytes(&vec![0f32; 6 * nb]),
        ],
        5,
    );
    let mut w = vec![0f32; 6 * nb];
    cpu::factored_bodies(&p, links_ptr, links, minv_jac, &x, &mut w);
    assert_parity("factored_bodies w", &f32s(&gpu), &w);

    check(&kernels::FACTORED_ROWS);
    let gpu = dispatch(
        &ctx,
        &kernels::FACTORED_ROWS,
        p.n_blocks,
        &[
            one(&p),
            one(&with_r),
            bytes(&data.blocks),
            bytes(jac),
            bytes(&w),
            bytes(&data.r),
            bytes(&data.compliance),
            bytes(&x),
            bytes(&vec![0f32; m]),
        ],
        8,
    );
    let mut y = vec![0f32; m];
    cpu::factored_rows(
        &p,
        &with_r,
        &data.blocks,
        jac,
        &w,
        &data.r,
        &data.compliance,
        &x,
        &mut y,
    );
    assert_parity("factored_rows y", &f32s(&gpu), &y);

    check(&kernels::CSR_ROWS);
    let assembled =
        ProblemData::new(&siconos("Capsules-i101-404.dat"), &Settings::default()).unwrap();
    let OperatorData::Csr {
        indptr,
        indices,
        values,
    } = &assembled.op
    else {
        panic!("CSR expected")
    };
    let pa = assembled.params;
    let xa = random_vec(&mut rng, pa.n_rows as usize, -1.0, 1.0);
    for add_r in [0, 1] {
        let apply = Apply { add_r, pad: [0; 3] };
        let gpu = dispatch(
            &ctx,
            &kernels::CSR_ROWS,
            pa.n_rows,
            &[
                one(&pa),
                one(&apply),
                bytes(indptr),
                bytes(indices),
                bytes(values),
                bytes(&assembled.r),
                bytes(&assembled.compliance),
                bytes(&xa),
                bytes(&vec![0f32; xa.len()]),
            ],
            8,
        );
        let mut y = vec![0f32; xa.len()];
        cpu::csr_rows(
            &pa,
            &apply,
            indptr,
            indices,
            values,
            &assembled.r,
            &assembled.compliance,
            &xa,
            &mut y,
        );
        assert_parity("csr_rows y", &f32s(&gpu), &y);
    }

    // Jacobi step and residual: u random, γ the (projected) warm start.
    let u = random_vec(&mut rng, m, -1.0, 1.0);
    check(&kernels::JACOBI_STEP);
    let gpu = dispatch(
        &ctx,
        &kernels::JACOBI_STEP,
        p.n_blocks,
        &[
            one(&p),
            bytes(&data.blocks),
            bytes(&u),
            bytes(&data.gamma),
            bytes(&vec![0f32; m]),
        ],
        4,
    );
    let mut g = vec![0f32; m];
    cpu::jacobi_step(&p, &data.blocks, &u, &data.gamma, &mut g);
    assert_ne!(g, data.gamma, "the step moved nothing");
    assert_parity("jacobi_step gamma", &f32s(&gpu), &g);

    check(&kernels::RESIDUAL);
    let np = groups(p.n_blocks);
    let gpu = dispatch(
        &ctx,
        &kernels::RESIDUAL,
        p.n_blocks,
        &[
            one(&p),
            bytes(&data.blocks),
            bytes(&data.gamma),
            bytes(&u),
            bytes(&vec![Partial::default(); np]),
        ],
        4,
    );
    let mut parts = vec![Partial::default(); np];
    cpu::residual(&p, &data.blocks, &data.gamma, &u, &mut parts);
    assert_parity("residual parts", &f32s(&gpu), &flat(&parts));

    // Reduction of 700 partials (the strided loop and the tree) into slot 2.
    check(&kernels::REDUCE);
    let many: Vec<Partial> = (0..700)
        .map(|_| Partial {
            sums: std::array::from_fn(|_| rng.uniform(-1.0, 1.0) as f32),
            maxes: std::array::from_fn(|_| rng.uniform(0.0, 1.0) as f32),
        })
        .collect();
    let cfg = Reduce {
        count: 700,
        slot: 2,
        pad: [0; 2],
    };
    let gpu = dispatch(
        &ctx,
        &kernels::REDUCE,
        1,
        &[one(&cfg), bytes(&many), bytes(&[Partial::default(); SLOTS])],
        2,
    );
    let mut scalars = vec![Partial::default(); SLOTS];
    cpu::reduce(&cfg, &many, &mut scalars);
    assert_parity("reduce scalars", &f32s(&gpu), &flat(&scalars));

    // Measure: the first measure, the second (divergence scale), an improvement and none,
    // under both criteria.
    check(&kernels::MEASURE);
    for (criterion, measures, best) in [(0, 0, 0.0), (1, 1, 1e9), (0, 4, 1e9), (1, 4, 1e-9)] {
        let params = Params { criterion, ..p };
        let monitor = Monitor {
            measures,
            best,
            gamma_scale: 0.5,
            ..Monitor::default()
        };
        let gpu: Monitor = bytemuck::pod_read_unaligned(&dispatch(
            &ctx,
            &kernels::MEASURE,
            1,
            &[one(&params), bytes(&scalars), one(&monitor)],
            2,
        ));
        let mut mirror = monitor;
        cpu::measure(&params, &scalars, &mut mirror);
        assert_eq!(
            (gpu.improved, gpu.measures),
            (mirror.improved, mirror.measures)
        );
        let f = |m: &Monitor| {
            vec![
                m.inf,
                m.two,
                m.relative,
                m.velocity,
                m.value,
                m.gamma_inf,
                m.best,
                m.gamma_scale,
            ]
        };
        assert_parity("measure monitor", &f(&gpu), &f(&mirror));
    }

    check(&kernels::COPY_IF);
    for improved in [0, 1] {
        let monitor = Monitor {
            improved,
            ..Monitor::default()
        };
        let gpu = dispatch(
            &ctx,
            &kernels::COPY_IF,
            p.n_rows,
            &[one(&p), one(&monitor), bytes(&u), bytes(&x)],
            3,
        );
        let mut dst = x.clone();
        cpu::copy_if(&p, &monitor, &u, &mut dst);
        assert_eq!(f32s(&gpu), dst);
    }

    // P-SPG-FB kernels.
    let spg_cfg = SpgConfig {
        alpha_min: 1e-9,
        alpha_max: 1e9,
        armijo: 1e-4,
        sigma_min: 0.1,
        sigma_max: 0.9,
        n_gll: 10,
        fallback: 0,
        pad: 0,
    };
    let state = SpgState {
        alpha: 0.7,
        lambda: 0.37,
        j: 3,
        hist_len: 4,
        hist_head: 4,
        pad: [0; 3],
        history: std::array::from_fn(|i| if i < 4 { -0.1 * i as f32 } else { 0.0 }),
    };
    let d0 = random_vec(&mut rng, m, -1.0, 1.0);
    check(&kernels::SPG_DIRECTION);
    for (fallback, dg_pre) in [(0, -1.0), (1, 1.0), (1, -1.0)] {
        let cfg = SpgConfig {
            fallback,
            ..spg_cfg
        };
        let mut sc = vec![Partial::default(); SLOTS];
        sc[SLOT_A as usize].sums[0] = dg_pre;
        let out = dispatch_once(
            &ctx,
            &kernels::SPG_DIRECTION,
            p.n_blocks,
            &[
                &one(&p),
                &one(&cfg),
                &bytes(&data.blocks),
                &bytes(&sc),
                &one(&state),
                &bytes(&data.gamma),
                &bytes(&u),
                &bytes(&data.precond),
                &bytes(&d0),
                &bytes(&vec![Partial::default(); np]),
            ],
        )
        .unwrap();
        let (mut d, mut parts) = (d0.clone(), vec![Partial::default(); np]);
        cpu::spg_direction(
            &p,
            &cfg,
            &data.blocks,
            &sc,
            &state,
            &data.gamma,
            &u,
            &data.precond,
            &mut d,
            &mut parts,
        );
        assert_parity("spg_direction d", &f32s(&out[8]), &d);
        assert_parity("spg_direction parts", &f32s(&out[9]), &flat(&parts));
    }

    let ad = random_vec(&mut rng, m, -1.0, 1.0);
    check(&kernels::SPG_CURVATURE);
    let npr = groups(p.n_rows);
    let gpu = dispatch(
        &ctx,
        &kernels::SPG_CURVATURE,
        p.n_rows,
        &[
            one(&p),
            bytes(&data.precond),
            bytes(&d0),
            bytes(&ad),
            bytes(&vec![Partial::default(); npr]),
        ],
        4,
    );
    let mut parts = vec![Partial::default(); npr];
    cpu::spg_curvature(&p, &data.precond, &d0, &ad, &mut parts);
    assert_parity("spg_curvature parts", &f32s(&gpu), &flat(&parts));

    check(&kernels::SPG_SCALARS);
    let fresh = SpgState {
        j: 0,
        hist_len: 0,
        hist_head: 0,
        history: [0.0; MAX_GLL],
        ..state
    };
    let full = SpgState {
        hist_len: 10,
        hist_head: 7,
        history: std::array::from_fn(|i| -0.01 * i as f32),
        ..state
    };
    // (dg, d·Pd) of slot A, of slot B, curvature d·Ad: a plain step, a backtracking one
    // (negative curvature bound), the fallback, the descent bound, a stationary point.
    for (a, b, dad, st) in [
        ((-0.3, 0.5), (0.0, 0.0), 0.8, fresh),
        ((-0.3, 0.5), (0.0, 0.0), 0.01, state),
        ((0.2, 0.5), (-0.4, 0.3), 2.0, full),
        ((0.2, 0.5), (1e-7, 0.3), 2.0, state),
        ((0.2, 0.0), (0.1, 0.0), 2.0, state),
    ] {
        let mut sc = vec![Partial::default(); SLOTS];
        sc[SLOT_A as usize].sums[..2].copy_from_slice(&[a.0, a.1]);
        sc[SLOT_B as usize].sums[..2].copy_from_slice(&[b.0, b.1]);
        sc[SLOT_C as usize].sums[..3].copy_from_slice(&[dad, 0.4, 1.1]);
        let gpu: SpgState = bytemuck::pod_read_unaligned(&dispatch(
            &ctx,
            &kernels::SPG_SCALARS,
            1,
            &[one(&spg_cfg), bytes(&sc), one(&st)],
            2,
        ));
        let mut mirror = st;
        cpu::spg_scalars(&spg_cfg, &sc, &mut mirror);
        assert_eq!(
            (gpu.j, gpu.hist_len, gpu.hist_head),
            (mirror.j, mirror.hist_len, mirror.hist_head)
        );
        let f = |s: &SpgState| {
            let mut v = vec![s.alpha, s.lambda];
            v.extend(s.history);
            v
        };
        let (fg, fm) = (f(&gpu), f(&mirror));
        assert_parity("spg_scalars state", &fg, &fm);
    }

    check(&kernels::SPG_UPDATE);
    let out = dispatch_once(
        &ctx,
        &kernels::SPG_UPDATE,
        p.n_rows,
        &[
            &one(&p),
            &one(&state),
            &bytes(&d0),
            &bytes(&ad),
            &bytes(&x),
            &bytes(&u),
        ],
    )
    .unwrap();
    let (mut xs, mut gs) = (x.clone(), u.clone());
    cpu::spg_update(&p, &state, &d0, &ad, &mut xs, &mut gs);
    assert_parity("spg_update x", &f32s(&out[4]), &xs);
    assert_parity("spg_update g", &f32s(&out[5]), &gs);

    // APGD kernels.
    let ast = ApgdState {
        lipschitz: 3.0,
        step: 0.2,
        theta: 0.6,
        beta: 0.3,
        accepted: 1,
        pad: [0; 3],
    };
    check(&kernels::APGD_TRIAL);
    let out = dispatch_once(
        &ctx,
        &kernels::APGD_TRIAL,
        p.n_blocks,
        &[
            &one(&p),
            &bytes(&data.blocks),
            &one(&ast),
            &bytes(&data.gamma),
            &bytes(&u),
            &bytes(&vec![0f32; m]),
            &bytes(&vec![0f32; m]),
        ],
    )
    .unwrap();
    let (mut xn, mut d) = (vec![0f32; m], vec![0f32; m]);
    cpu::apgd_trial(&p, &data.blocks, &ast, &data.gamma, &u, &mut xn, &mut d);
    assert_parity("apgd_trial x_new", &f32s(&out[5]), &xn);
    assert_parity("apgd_trial d", &f32s(&out[6]), &d);

    check(&kernels::APGD_CURVATURE);
    let gpu = dispatch(
        &ctx,
        &kernels::APGD_CURVATURE,
        p.n_rows,
        &[
            one(&p),
            bytes(&d),
            bytes(&ad),
            bytes(&u),
            bytes(&x),
            bytes(&xn),
            bytes(&vec![Partial::default(); npr]),
        ],
        6,
    );
    let mut parts = vec![Partial::default(); npr];
    cpu::apgd_curvature(&p, &d, &ad, &u, &x, &xn, &mut parts);
    assert_parity("apgd_curvature parts", &f32s(&gpu), &flat(&parts));

    check(&kernels::APGD_SCALARS);
    // Accepted, accepted with restart, rejected.
    for (dad, dd, gstep) in [(1.0, 1.0, -0.5), (1.0, 1.0, 0.5), (5.0, 1.0, -0.5)] {
        let mut sc = vec![Partial::default(); SLOTS];
        sc[SLOT_A as usize].sums[..3].copy_from_slice(&[dad, dd, gstep]);
        let gpu: ApgdState = bytemuck::pod_read_unaligned(&dispatch(
            &ctx,
            &kernels::APGD_SCALARS,
            1,
            &[bytes(&sc), one(&ast)],
            1,
        ));
        let mut mirror = ast;
        cpu::apgd_scalars(&sc, &mut mirror);
        assert_eq!(gpu.accepted, mirror.accepted);
        let f = |s: &ApgdState| vec![s.lipschitz, s.step, s.theta, s.beta];
        assert_parity("apgd_scalars state", &f(&gpu), &f(&mirror));
    }

    check(&kernels::APGD_UPDATE);
    let out = dispatch_once(
        &ctx,
        &kernels::APGD_UPDATE,
        p.n_rows,
        &[
            &one(&p),
            &one(&ast),
            &bytes(&xn),
            &bytes(&ad),
            &bytes(&x),
            &bytes(&u),
            &bytes(&d0),
            &bytes(&ad),
        ],
    )
    .unwrap();
    let (mut xa, mut ua, mut ya, mut gya) = (x.clone(), u.clone(), d0.clone(), ad.clone());
    cpu::apgd_update(&p, &ast, &xn, &ad, &mut xa, &mut ua, &mut ya, &mut gya);
    for (i, (what, v)) in [("x", &xa), ("u", &ua), ("y", &ya), ("g_y", &gya)]
        .into_iter()
        .enumerate()
    {
        assert_parity(&format!("apgd_update {what}"), &f32s(&out[4 + i]), v);
    }

    let mut all: Vec<_> = kernels::ALL.iter().map(|k| k.name).collect();
    all.sort_unstable();
    tested.sort_unstable();
    assert_eq!(tested, all, "every registered kernel is tested");
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

#[test]
fn jacobi_gpu_agrees_with_cpu_jacobi() {
    let Some(ctx) = context() else { return };
    let sys = System::new(&balls_in_box()).unwrap();
    assert!(sys.blocks() > 50, "only {} blocks", sys.blocks());
    let gpu = JacobiGpu::with_context(ctx);
    let settings = Settings {
        tol: 1e-4,
        max_iter: 20_000,
        ..Settings::default()
    };
    let cpu = registry::solver("jacobi")
        .unwrap()
        .solve(&sys, &settings)
        .unwrap();
    let (g, stats) = gpu.solve_with_stats(&sys, &settings).unwrap();
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
    let diff = cpu
        .gamma
        .iter()
        .zip(&g.gamma)
        .fold(0.0f64, |m, (x, y)| m.max((x - y).abs()));
    eprintln!(
        "converged gamma: max |Δγ| / ‖γ‖∞ = {:e}",
        diff / norm_inf(&cpu.gamma)
    );
    // Stopped at different iterations (92 vs 100 here): they differ by about the tolerance.
    assert!(diff <= 1e-3 * norm_inf(&cpu.gamma));

    // The same number of iterations: the difference is f32 rounding only.
    let fixed = Settings {
        tol: 0.0,
        max_iter: 300,
        ..Settings::default()
    };
    let c = registry::solver("jacobi")
        .unwrap()
        .solve(&sys, &fixed)
        .unwrap();
    let (g, _) = gpu.solve_with_stats(&sys, &fixed).unwrap();
    // Both return their best iterate; compare the last ones' residuals and the iterates.
    assert_eq!(c.iterations, g.iterations);
    let diff = c
        .gamma
        .iter()
        .zip(&g.gamma)
        .fold(0.0f64, |m, (x, y)| m.max((x - y).abs()));
    eprintln!(
        "300 iterations: max |Δγ| / ‖γ‖∞ = {:e}",
        diff / norm_inf(&c.gamma)
    );
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

/// Size and field offsets of the WGSL struct `name` in `source`, by naga's reflection.
fn wgsl_layout(source: &str, name: &str) -> (u32, Vec<(String, u32)>) {
    let module = naga::front::wgsl::parse_str(source).unwrap();
    let mut layouter = naga::proc::Layouter::default();
    layouter.update(module.to_ctx()).unwrap();
    let (handle, ty) = module
        .types
        .iter()
        .find(|(_, t)| t.name.as_deref() == Some(name))
        .unwrap_or_else(|| panic!("no struct {name}"));
    let naga::TypeInner::Struct { members, .. } = &ty.inner else {
        panic!("{name} is not a struct")
    };
    let fields = members
        .iter()
        .map(|m| (m.name.clone().unwrap_or_default(), m.offset))
        .collect();
    (layouter[handle].size, fields)
}

/// Every host struct shared with the shaders has the size and field offsets of its WGSL
/// twin (padding fields may be split differently: only named fields are compared).
#[test]
fn host_structs_match_the_shaders() {
    use signorini::gpu::{GpuBlock, GpuLink};
    use std::mem::{offset_of, size_of};
    let common = kernels::REDUCE.wgsl();
    macro_rules! check {
        ($ty:ident { $($field:ident),* }) => {{
            let (size, fields) = wgsl_layout(&common, stringify!($ty));
            assert_eq!(size as usize, size_of::<$ty>(), "{}", stringify!($ty));
            for (name, offset) in [$((stringify!($field), offset_of!($ty, $field))),*] {
                let wgsl = fields.iter().find(|(n, _)| n == name);
                assert_eq!(wgsl.map(|f| f.1 as usize), Some(offset), "{}.{name}", stringify!($ty));
            }
        }};
    }
    check!(Params {
        n_bodies,
        n_blocks,
        n_rows,
        coulomb,
        omega,
        r_norm,
        criterion,
        max_dim
    });
    check!(GpuLink { minv_row, row, dim });
    check!(GpuBlock {
        kind,
        dim,
        row,
        jac,
        body0,
        body1,
        mu,
        eta
    });
    check!(Partial { sums, maxes });
    check!(Monitor {
        inf,
        two,
        relative,
        velocity,
        value,
        gamma_inf,
        best,
        gamma_scale,
        improved,
        measures
    });
    check!(Apply { add_r });
    check!(Reduce { count, slot });
    check!(SpgConfig {
        alpha_min,
        alpha_max,
        armijo,
        sigma_min,
        sigma_max,
        n_gll,
        fallback
    });
    check!(SpgState {
        alpha,
        lambda,
        j,
        hist_len,
        hist_head,
        history
    });
    check!(ApgdState {
        lipschitz,
        step,
        theta,
        beta,
        accepted
    });
    // The history holds MAX_GLL values on both sides.
    assert_eq!(size_of::<SpgState>(), 32 + 4 * MAX_GLL);
}

/// `--device gpu` runs the `-gpu` variant of the chosen solver; a solver without one is a
/// clear error.
#[test]
fn device_gpu_selects_the_gpu_variant() {
    if context().is_none() {
        return;
    }
    let bin = env!("CARGO_BIN_EXE_signorini");
    let scene = concat!(env!("CARGO_MANIFEST_DIR"), "/scenes/balls_in_box.toml");
    let out_dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("device-gpu");
    let run = std::process::Command::new(bin)
        .args([
            "simulate",
            scene,
            "--steps",
            "3",
            "--set",
            "lattice.0.count=20",
        ])
        .args(["--solver", "jacobi", "--device", "gpu", "--json-summary"])
        .args(["--snapshot-every", "0", "--out"])
        .arg(&out_dir)
        .output()
        .unwrap();
    assert!(
        run.status.success(),
        "{}",
        String::from_utf8_lossy(&run.stderr)
    );
    let summary: serde_json::Value = serde_json::from_slice(&run.stdout).unwrap();
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
