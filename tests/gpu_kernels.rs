//! The kernels of the GPU path (DESIGN §4): every registered kernel against its CPU `f32`
//! mirror, in one loop over the registry on inputs generated from each binding's declared
//! [`Data`] (the solvers' kernels) and on the inputs the mirror executor recorded while
//! stepping scenes (every kernel of the GPU time step, and the solver kernels it runs); the
//! registry's bindings and the host structs against the WGSL (naga's reflection).
//!
//! Without an adapter the parity test fails unless `SIGNORINI_SKIP_GPU=1` is set (then it is
//! skipped with a note); CI installs Mesa's lavapipe, so every shader runs there.

mod common;
use common::Rng;
use common::gpu::{context, random_cone, random_problem};

use signorini::gpu::kernels::{self, Access, Binding, Data, Domain, Kernel};
use signorini::gpu::step::{
    GpuBody, GpuContact, GpuPlane, MirrorExec, Span, StepGate, StepParams, StepSolver,
};
use signorini::gpu::{
    ApgdState, Apply, CONE_BILATERAL, CONE_UNILATERAL, GpuBlock, GpuLink, MAX_GLL, Monitor, Params,
    Partial, ProblemData, Reduce, SLOT_A, SLOT_B, SLOT_C, SLOT_RESIDUAL, SLOTS, SpgConfig,
    SpgState, dispatch_once,
};
use signorini::problem::{Assembled, Cone, CsrMatrix, FrictionModel, Operator, Problem, System};
use signorini::sim::Resident;
use signorini::solver::Settings;

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

/// Kernels whose outputs are differences of the values they read, with the bindings read:
/// `step_coulomb` moves `u` and `other` by `(r + μ‖u_t‖) − shifted`, which cancels where the
/// shift barely changes, so a few ulps of its operands (a real GPU's `sqrt`, a fused
/// multiply-add; 2e-4 relative on an H100) are many of the result. Their parity bound is
/// relative to the largest of those operands as well as to the output.
const CANCELLING: &[(&str, &[&str])] = &[("step_coulomb", &["r", "shifted", "u", "other"])];

/// The largest magnitude among the `f32` bindings `names` of `kernel` in `contents` (the
/// operands of a [`CANCELLING`] kernel), 0 for any other kernel.
fn operand_scale(kernel: &Kernel, contents: &[&[u8]]) -> f32 {
    let Some((_, names)) = CANCELLING.iter().find(|(k, _)| *k == kernel.name) else {
        return 0.0;
    };
    kernel
        .bindings
        .iter()
        .zip(contents)
        .filter(|(b, _)| names.contains(&b.name))
        .flat_map(|(_, c)| bytemuck::pod_collect_to_vec::<u8, f32>(c))
        .fold(0.0f32, |m, x| m.max(x.abs()))
}

/// Asserts the parity bound, its scale at least `operands` ([`operand_scale`]), and returns
/// the largest distance in ulps.
#[track_caller]
fn assert_parity(what: &str, gpu: &[f32], cpu: &[f32], operands: f32) -> u32 {
    assert_eq!(gpu.len(), cpu.len(), "{what}: lengths");
    let scale = cpu.iter().fold(operands, |m, x| m.max(x.abs()));
    for (i, (g, c)) in gpu.iter().zip(cpu).enumerate() {
        let bound = PARITY_EPS * f32::EPSILON * c.abs().max(scale);
        assert!(
            (g - c).abs() <= bound || g.to_bits() == c.to_bits(),
            "{what}[{i}]: gpu {g:e} cpu {c:e}"
        );
    }
    max_ulps(gpu, cpu)
}

/// Words per element of a binding and which of them are integers (compared exactly; the
/// others are `f32`, compared within [`PARITY_EPS`]).
fn words(data: Data) -> (usize, &'static [usize]) {
    match data {
        // inf … gamma_scale; improved, measures, padding.
        Data::Monitor => (12, &[8, 9, 10, 11]),
        // alpha, lambda; j, hist_len, hist_head, padding; the history.
        Data::SpgState => (8 + MAX_GLL, &[2, 3, 4, 5, 6, 7]),
        // lipschitz, step, theta, beta; accepted, padding.
        Data::ApgdState => (8, &[4, 5, 6, 7]),
        Data::LinksPtr | Data::Indptr | Data::Indices | Data::Words | Data::Scattered => (1, &[0]),
        // kind, dim, row, jac, body0, body1; mu, eta.
        Data::Blocks => (8, &[0, 1, 2, 3, 4, 5]),
        Data::Links | Data::Cells | Data::StepGate => (4, &[0, 1, 2, 3]),
        // owner, other; mu, eta, the normal and the gap.
        Data::Contacts => (8, &[0, 1]),
        // n_bodies, n_blocks, n_rows, coulomb; omega, r_norm; criterion, max_dim.
        Data::SolverParams => (8, &[0, 1, 2, 3, 6, 7]),
        _ => (1, &[]),
    }
}

/// The item indices of a counting sort's scatter with each key's segment (`starts`) put in
/// order: the atomics' order within a segment is free, the segment's set is not.
fn ordered_segments(sorted: &[u8], starts: &[u8]) -> Vec<u8> {
    let mut items: Vec<u32> = bytemuck::pod_collect_to_vec(sorted);
    let starts: Vec<u32> = bytemuck::pod_collect_to_vec(starts);
    for w in starts.windows(2) {
        // Past the last key the buffer's padding (zeros) ends the starts.
        let (a, b) = (w[0] as usize, (w[1] as usize).min(items.len()));
        if a < b {
            items[a..b].sort_unstable();
        }
    }
    bytes(&items)
}

/// Compares a written binding: integer words exactly, `f32` words within the parity bound;
/// returns the largest distance in ulps.
#[track_caller]
fn compare(what: &str, data: Data, gpu: &[u8], cpu: &[u8], operands: f32) -> u32 {
    let (gpu, cpu): (Vec<u32>, Vec<u32>) = (
        bytemuck::pod_collect_to_vec(gpu),
        bytemuck::pod_collect_to_vec(cpu),
    );
    assert_eq!(gpu.len(), cpu.len(), "{what}: lengths");
    let (per, integers) = words(data);
    let (mut g, mut c) = (Vec::new(), Vec::new());
    for (k, (&a, &b)) in gpu.iter().zip(&cpu).enumerate() {
        if integers.contains(&(k % per)) {
            assert_eq!(a, b, "{what}: integer word {k}");
        } else {
            g.push(f32::from_bits(a));
            c.push(f32::from_bits(b));
        }
    }
    assert_parity(what, &g, &c, operands)
}

fn bytes<T: bytemuck::Pod>(v: &[T]) -> Vec<u8> {
    bytemuck::cast_slice(v).to_vec()
}

fn random_vec(rng: &mut Rng, n: usize, lo: f64, hi: f64) -> Vec<f32> {
    (0..n).map(|_| rng.uniform(lo, hi) as f32).collect()
}

/// `n` partials with sums in `[lo, 1)` and maxima in `[0, 1)`.
fn random_partials(rng: &mut Rng, n: usize, lo: f64) -> Vec<Partial> {
    (0..n)
        .map(|_| Partial {
            sums: std::array::from_fn(|_| rng.uniform(lo, 1.0) as f32),
            maxes: std::array::from_fn(|_| rng.uniform(0.0, 1.0) as f32),
        })
        .collect()
}

/// The factored form: the random problem under the Coulomb model, with a random warm start
/// (projected on `K`).
fn factored() -> ProblemData {
    let sys = System::new(&random_problem(7, 300, 700)).unwrap();
    let mut rng = Rng(8);
    let settings = Settings {
        friction: FrictionModel::Coulomb,
        warm_start: Some((0..sys.rows()).map(|_| rng.uniform(-1.0, 1.0)).collect()),
        ..Settings::default()
    };
    ProblemData::new(&sys, &settings).unwrap()
}

/// The assembled form: random cones and a random symmetric `N` in CSR (a heavy diagonal and
/// eight entries per row off it), under the Coulomb model.
fn assembled() -> ProblemData {
    let mut rng = Rng(21);
    let cones: Vec<Cone> = (0..500).map(|_| random_cone(&mut rng)).collect();
    let m: usize = cones.iter().map(Cone::dim).sum();
    let mut triplets = Vec::new();
    for i in 0..m {
        triplets.push((i, i, rng.uniform(2.0, 4.0)));
        for _ in 0..4 {
            let (j, v) = (rng.below(m), rng.uniform(-0.5, 0.5));
            triplets.extend([(i, j, v), (j, i, v)]);
        }
    }
    let problem = Problem {
        name: "random-assembled".into(),
        class: Default::default(),
        cones,
        operator: Operator::Assembled(Assembled {
            n: CsrMatrix::from_triplets(m, m, &triplets).unwrap(),
            r: (0..m).map(|_| rng.uniform(-1.0, 1.0)).collect(),
        }),
        compliance: Vec::new(),
    };
    let settings = Settings {
        friction: FrictionModel::Coulomb,
        ..Settings::default()
    };
    ProblemData::new(&System::new(&problem).unwrap(), &settings).unwrap()
}

/// The factored form with the local cones of a refinement round (`src/gpu/refine.rs`)
/// under CCP: of the 3-row blocks, a third become `ℝ₊ × ℝ²` (a 3-row unilateral block, the
/// tangent half-space of a sliding contact) and a third bilateral.
fn correction() -> ProblemData {
    let mut d = factored();
    d.params.coulomb = 0;
    for (k, b) in d.blocks.iter_mut().enumerate() {
        if b.dim == 3 {
            b.kind = [CONE_UNILATERAL, CONE_BILATERAL, b.kind][k % 3];
        }
    }
    d
}

/// Workgroup partials given to the kernels that read or write them: more than one
/// workgroup's worth, so that `reduce` runs its strided loop and its tree.
const PARTS: usize = 700;

/// The P-SPG-FB parameters of the cases.
const SPG_CONFIG: SpgConfig = SpgConfig {
    alpha_min: 1e-9,
    alpha_max: 1e9,
    armijo: 1e-4,
    sigma_min: 0.1,
    sigma_max: 0.9,
    n_gll: 10,
    fallback: 0,
    pad: 0,
};

/// The P-SPG-FB states of the cases: mid-run, fresh (empty GLL memory), full memory.
fn spg_states() -> [SpgState; 3] {
    let state = SpgState {
        alpha: 0.7,
        lambda: 0.37,
        j: 3,
        hist_len: 4,
        hist_head: 4,
        pad: [0; 3],
        history: std::array::from_fn(|i| if i < 4 { -0.1 * i as f32 } else { 0.0 }),
    };
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
    [state, fresh, full]
}

/// The `scalars` of the cases: random partials (non-negative sums: the residual's sums of
/// squares that `measure` takes roots of), the sign
/// of `d · g` (`spg_direction`'s fallback); for `spg_scalars`, `(d·g, d·Pd)` of slots A and
/// B and the curvature `d·Ad` of slot C: a plain step, a backtracking one (negative
/// curvature bound), the fallback, the descent bound, a stationary point; for
/// `apgd_scalars`, `(d·Ad, d·d, g·step)` of slot A: accepted, accepted with restart,
/// rejected.
fn scalars(rng: &mut Rng) -> Vec<Vec<Partial>> {
    let mut cases = vec![random_partials(rng, SLOTS, 0.0)];
    for dg in [-1.0, 1.0] {
        let mut sc = vec![Partial::default(); SLOTS];
        sc[SLOT_A as usize].sums[0] = dg;
        cases.push(sc);
    }
    for (a, b, dad) in [
        ((-0.3, 0.5), (0.0, 0.0), 0.8),
        ((-0.3, 0.5), (0.0, 0.0), 0.01),
        ((0.2, 0.5), (-0.4, 0.3), 2.0),
        ((0.2, 0.5), (1e-7, 0.3), 2.0),
        ((0.2, 0.0), (0.1, 0.0), 2.0),
    ] {
        let mut sc = vec![Partial::default(); SLOTS];
        sc[SLOT_A as usize].sums[..2].copy_from_slice(&[a.0, a.1]);
        sc[SLOT_B as usize].sums[..2].copy_from_slice(&[b.0, b.1]);
        sc[SLOT_C as usize].sums[..3].copy_from_slice(&[dad, 0.4, 1.1]);
        cases.push(sc);
    }
    for abc in [[1.0, 1.0, -0.5], [1.0, 1.0, 0.5], [5.0, 1.0, -0.5]] {
        let mut sc = vec![Partial::default(); SLOTS];
        sc[SLOT_A as usize].sums[..3].copy_from_slice(&abc);
        cases.push(sc);
    }
    cases
}

/// The contents a binding takes on the problem `d`: the edge cases of a struct, random data
/// of an array's length (the problem's own arrays for its structure), `None` when the
/// problem's form lacks the array (the other form's operator).
fn cases(binding: &Binding, d: &ProblemData, rng: &mut Rng) -> Option<Vec<Vec<u8>>> {
    let p = d.params;
    let rows = p.n_rows as usize;
    let one = |v: Vec<u8>| Some(vec![v]);
    let each = |v: Vec<Vec<u8>>| Some(v);
    match binding.data {
        Data::Params => each(
            [0, 1]
                .map(|criterion| bytes(&[Params { criterion, ..p }]))
                .to_vec(),
        ),
        Data::Apply => each(
            [0, 1]
                .map(|add_r| bytes(&[Apply { add_r, pad: [0; 3] }]))
                .to_vec(),
        ),
        Data::Reduce => each(
            [
                (PARTS as u32, SLOT_B),
                (p.n_blocks.div_ceil(kernels::WORKGROUP), SLOT_RESIDUAL),
            ]
            .map(|(count, slot)| {
                bytes(&[Reduce {
                    count,
                    slot,
                    pad: [0; 2],
                }])
            })
            .to_vec(),
        ),
        // The first measure, the second (divergence scale), an improvement and none.
        Data::Monitor => each(
            [(0, 0.0, 0), (1, 1e9, 1), (4, 1e9, 0), (4, 1e-9, 1)]
                .map(|(measures, best, improved)| {
                    bytes(&[Monitor {
                        measures,
                        best,
                        improved,
                        gamma_scale: 0.5,
                        ..Monitor::default()
                    }])
                })
                .to_vec(),
        ),
        Data::SpgConfig => each(
            [0, 1]
                .map(|fallback| {
                    bytes(&[SpgConfig {
                        fallback,
                        ..SPG_CONFIG
                    }])
                })
                .to_vec(),
        ),
        Data::SpgState => each(spg_states().map(|s| bytes(&[s])).to_vec()),
        Data::ApgdState => each(
            [1, 0]
                .map(|accepted| {
                    bytes(&[ApgdState {
                        lipschitz: 3.0,
                        step: 0.2,
                        theta: 0.6,
                        beta: 0.3,
                        accepted,
                        pad: [0; 3],
                    }])
                })
                .to_vec(),
        ),
        Data::Scalars => each(scalars(rng).iter().map(|s| bytes(s)).collect()),
        Data::Rows => one(bytes(&random_vec(rng, rows, -1.0, 1.0))),
        Data::Diagonal => one(bytes(&random_vec(rng, rows, 0.5, 2.0))),
        Data::BodyComponents => one(bytes(&random_vec(rng, 6 * p.n_bodies as usize, -1.0, 1.0))),
        Data::Partials => one(bytes(&random_partials(rng, PARTS, -1.0))),
        Data::Blocks => one(bytes(&d.blocks)),
        // The time step's data: recorded from stepping scenes ([`traced`]), not generated.
        Data::StepParams
        | Data::Span
        | Data::Spheres
        | Data::Planes
        | Data::Contacts
        | Data::Cells
        | Data::Words
        | Data::Scattered
        | Data::SolverParams
        | Data::SphereConsts
        | Data::StepGate => None,
        // The operator's arrays, found by binding name in the problem's form.
        Data::LinksPtr
        | Data::Links
        | Data::Jacobian
        | Data::MinvJac
        | Data::Indptr
        | Data::Indices
        | Data::Values => {
            let arrays = d.op.arrays();
            let (_, array) = arrays.iter().find(|(name, _)| *name == binding.name)?;
            one(array.to_vec())
        }
    }
}

/// The dispatches the mirror executor ran while stepping `balls_in_box` (friction: 3-row
/// blocks) and `shaker` (frictionless, moving walls; a tolerance its first convergence test
/// meets) at 300 spheres for two steps of 13 Jacobi iterations (the second step
/// warm-started), `balls_in_box` with room for one contact per sphere (the overflowed
/// step, then the grown room), and `balls_in_box` and `shaker` solved by `spg-gpu` and
/// `apgd-gpu`, and `balls_in_box` by both under the Coulomb model (`step_coulomb`): the first
/// three of each kernel, with their inputs.
fn traced() -> Vec<signorini::gpu::step::Dispatch> {
    let mut out = Vec::new();
    let (spg, apgd) = (StepSolver::named("spg-gpu").unwrap(), StepSolver::Apgd);
    let (ccp, coulomb) = (FrictionModel::Ccp, FrictionModel::Coulomb);
    for (name, room, tol, method, model) in [
        ("balls_in_box", 4, 1e-3, StepSolver::Jacobi, ccp),
        ("shaker", 4, 1e3, StepSolver::Jacobi, ccp),
        ("balls_in_box", 1, 1e-3, StepSolver::Jacobi, ccp),
        ("balls_in_box", 4, 1e-3, spg, ccp),
        ("shaker", 4, 1e-3, spg, ccp),
        ("balls_in_box", 4, 1e-3, apgd, ccp),
        ("shaker", 4, 1e-3, apgd, ccp),
        ("balls_in_box", 4, 1e-3, spg, coulomb),
        ("balls_in_box", 4, 1e-3, apgd, coulomb),
    ] {
        let mut world =
            common::load_scene(&format!("{name}.toml"), &[("lattice.0.count", "300")]).world;
        world.settings.max_iter = 13;
        world.settings.tol = tol;
        world.settings.friction_model = model;
        let mut res =
            Resident::with_room(MirrorExec::tracing(3), &world, u64::MAX, room, method).unwrap();
        for _ in 0..2 {
            res.step().unwrap();
        }
        res.flush().unwrap();
        out.extend(res.pipeline_mut().executor().trace.iter().cloned());
    }
    // The mirror's scatter leaves each segment in item order; the device's atomics may
    // leave any order: the segment sort's inputs also with every segment reversed.
    let reversed: Vec<_> = out
        .iter()
        .filter(|d| d.kernel.name == kernels::STEP_SORT_SEGMENTS.name)
        .map(|d| {
            let mut d = d.clone();
            let span: Span = bytemuck::pod_read_unaligned(&d.contents[0][..16]);
            let starts: Vec<u32> = bytemuck::pod_collect_to_vec(&d.contents[1]);
            let mut sorted: Vec<u32> = bytemuck::pod_collect_to_vec(&d.contents[2]);
            for k in 0..span.keys as usize {
                sorted[starts[k] as usize..starts[k + 1] as usize].reverse();
            }
            d.contents[2] = bytes(&sorted);
            d
        })
        .collect();
    out.extend(reversed);
    out
}

/// The runs of `kernel` on the problem forms: every combination of its bindings' generated
/// cases on each form that provides them, as `(items, contents)`.
fn generated(kernel: &Kernel, forms: &[ProblemData], rng: &mut Rng) -> Vec<(u32, Vec<Vec<u8>>)> {
    let mut runs = Vec::new();
    for d in forms {
        let Some(cases) = kernel
            .bindings
            .iter()
            .map(|b| cases(b, d, rng))
            .collect::<Option<Vec<_>>>()
        else {
            continue;
        };
        let items = match kernel.domain {
            Domain::BodyComponents => 6 * d.params.n_bodies,
            Domain::Blocks => d.params.n_blocks,
            Domain::Rows => d.params.n_rows,
            Domain::Single => 1,
            Domain::Items => unreachable!("the time step's kernels take traced inputs"),
        };
        let combinations: usize = cases.iter().map(Vec::len).product();
        for n in 0..combinations {
            let mut rest = n;
            let contents = cases
                .iter()
                .map(|c| {
                    let i = rest % c.len();
                    rest /= c.len();
                    c[i].clone()
                })
                .collect();
            runs.push((items, contents));
        }
    }
    runs
}

/// The blocks' steps and the preconditioner the device computes (`block_steps`, for the
/// solvers' data that leaves them to it) are the host's `f64` ones rounded: within 1e-5
/// relative (four Jacobi sweeps of an `f32` 3×3 block against nalgebra's `f64` eigenvalues).
#[test]
fn block_steps_on_the_device_match_the_host() {
    let Some(ctx) = context() else { return };
    let d = factored();
    let op = d.op.arrays();
    let array = |name: &str| op.iter().find(|(n, _)| *n == name).unwrap().1.to_vec();
    // The host's values are overwritten: start from placeholders.
    let blank: Vec<GpuBlock> = d
        .blocks
        .iter()
        .map(|b| GpuBlock { eta: 0.0, ..*b })
        .collect();
    let contents = [
        bytes(&[d.params]),
        array("jac"),
        array("minv_jac"),
        bytes(&d.compliance),
        bytes(&blank),
        bytes(&vec![1.0f32; d.params.n_rows as usize]),
    ];
    let contents: Vec<&[u8]> = contents.iter().map(Vec::as_slice).collect();
    let out = dispatch_once(&ctx, &kernels::BLOCK_STEPS, d.params.n_blocks, &contents).unwrap();
    let blocks: Vec<GpuBlock> = bytemuck::pod_collect_to_vec(&out[4]);
    let precond: Vec<f32> = bytemuck::pod_collect_to_vec(&out[5]);
    let rel = |a: f32, b: f32| f64::from((a - b).abs() / b.abs().max(f32::MIN_POSITIVE));
    let eta = blocks
        .iter()
        .zip(&d.blocks)
        .map(|(g, h)| rel(g.eta, h.eta))
        .fold(0.0, f64::max);
    let pre = precond
        .iter()
        .zip(&d.precond)
        .map(|(&g, &h)| rel(g, h))
        .fold(0.0, f64::max);
    eprintln!("block steps: max relative difference η {eta:e}, preconditioner {pre:e}");
    assert!(eta <= 1e-5 && pre <= 1e-5, "η {eta:e}, P {pre:e}");
    assert!(
        d.blocks.iter().all(|b| b.eta > 0.0),
        "every block has a step"
    );
}

/// The gate of the time step's convergence tests on the device as in its mirror, on the
/// cases of the stall rule of the Coulomb model's outer rounds (`span.keys` tests in a row
/// without a better iterate stop the iterations, not converged): the last allowed test
/// without improvement stops them, one with improvement starts the count again, and
/// without the rule (`keys` 0, CCP and Jacobi) nothing is counted.
#[test]
fn the_gate_stops_stalled_coulomb_rounds() {
    let Some(ctx) = context() else { return };
    let params = StepParams {
        tol: 1e-3,
        ..bytemuck::Zeroable::zeroed()
    };
    let gate = StepGate {
        iterations: 50,
        converged: 0,
        checks: 5,
        stalled: 19,
    };
    // (keys, improved) → (stalled, iterations, stopped).
    for ((keys, improved), want) in [
        ((20, 0), (20, 40, true)),
        ((20, 1), (0, 50, false)),
        ((0, 0), (19, 50, false)),
    ] {
        let span = Span {
            count: 40,
            keys,
            mode: 0,
            pad: 0,
        };
        let monitor = Monitor {
            value: 1.0,
            improved,
            ..bytemuck::Zeroable::zeroed()
        };
        let contents = [
            bytes(&[params]),
            bytes(&[span]),
            bytes(&[monitor]),
            bytes(&[gate]),
            bytes(&[7u32; 12]),
        ];
        let contents: Vec<&[u8]> = contents.iter().map(Vec::as_slice).collect();
        let gpu = dispatch_once(&ctx, &kernels::STEP_GATE, 1, &contents).unwrap();
        let cpu = kernels::STEP_GATE.mirror_once(&contents).unwrap();
        assert_eq!(
            gpu, cpu,
            "keys {keys}, improved {improved}: device and mirror"
        );
        let got: StepGate = bytemuck::pod_read_unaligned(&gpu[3]);
        let args: Vec<u32> = bytemuck::pod_collect_to_vec(&gpu[4]);
        let stopped = args.iter().step_by(3).all(|&a| a == 0);
        assert_eq!(
            (
                got.stalled,
                got.iterations,
                stopped,
                got.converged,
                got.checks
            ),
            (want.0, want.1, want.2, 0, 6),
            "keys {keys}, improved {improved}"
        );
    }
}

/// Every kernel of the registry against its CPU mirror, on every combination of its
/// bindings' generated cases on each problem form that provides them and on the recorded
/// inputs of the time step ([`traced`]), within [`PARITY_EPS`]; every buffer a kernel writes
/// changes in at least one case.
#[test]
fn every_kernel_matches_its_cpu_mirror() {
    let Some(ctx) = context() else { return };
    let forms = [factored(), assembled(), correction()];
    let trace = traced();
    let mut rng = Rng(99);
    for kernel in kernels::ALL {
        let mut runs = generated(kernel, &forms, &mut rng);
        runs.extend(
            trace
                .iter()
                .filter(|d| d.kernel.name == kernel.name)
                .map(|d| (d.items, d.contents.clone())),
        );
        assert!(!runs.is_empty(), "{}: no case binds it", kernel.name);
        let mut ulps = 0;
        let mut moved = vec![false; kernel.bindings.len()];
        for (n, (items, contents)) in runs.iter().enumerate() {
            let contents: Vec<&[u8]> = contents.iter().map(Vec::as_slice).collect();
            let gpu = dispatch_once(&ctx, kernel, *items, &contents).unwrap();
            let cpu = kernel.mirror_once(&contents).unwrap();
            let operands = operand_scale(kernel, &contents);
            for (i, binding) in kernel.bindings.iter().enumerate() {
                if binding.access != Access::Write {
                    continue;
                }
                let what = format!("{} `{}` (case {n})", kernel.name, binding.name);
                let (g, c) = if binding.data == Data::Scattered {
                    let starts = kernel.bindings.iter().position(|b| b.name == "starts");
                    let starts = contents[starts.expect("a scatter binds `starts`")];
                    (
                        ordered_segments(&gpu[i], starts),
                        ordered_segments(&cpu[i], starts),
                    )
                } else {
                    (gpu[i].clone(), cpu[i].clone())
                };
                ulps = ulps.max(compare(&what, binding.data, &g, &c, operands));
                moved[i] |= cpu[i] != contents[i];
            }
        }
        for (binding, moved) in kernel.bindings.iter().zip(moved) {
            assert!(
                moved || binding.access != Access::Write,
                "{}: no case changes `{}`",
                kernel.name,
                binding.name
            );
        }
        eprintln!("{}: {} cases, max {ulps} ulps", kernel.name, runs.len());
    }
}

/// The WGSL type of what a binding holds.
fn wgsl_type(data: Data) -> &'static str {
    match data {
        Data::Params => "Params",
        Data::Apply => "Apply",
        Data::Reduce => "Reduce",
        Data::Monitor => "Monitor",
        Data::SpgConfig => "SpgConfig",
        Data::SpgState => "SpgState",
        Data::ApgdState => "ApgdState",
        Data::Rows
        | Data::Diagonal
        | Data::BodyComponents
        | Data::Jacobian
        | Data::MinvJac
        | Data::Values => "array<f32>",
        Data::LinksPtr | Data::Indptr | Data::Indices | Data::Words | Data::Scattered => {
            "array<u32>"
        }
        Data::Blocks => "array<GpuBlock>",
        Data::StepParams => "StepParams",
        Data::Span => "Span",
        Data::Spheres => "array<GpuBody>",
        Data::Planes => "array<GpuPlane>",
        Data::Contacts => "array<GpuContact>",
        Data::Cells => "array<vec4<i32>>",
        Data::SphereConsts => "array<vec2<f32>>",
        Data::SolverParams => "array<Params>",
        Data::StepGate => "StepGate",
        Data::Links => "array<GpuLink>",
        Data::Partials | Data::Scalars => "array<Partial>",
    }
}

/// A WGSL type as written in the source (`Params`, `array<f32>`).
fn type_name(module: &naga::Module, ty: naga::Handle<naga::Type>) -> String {
    let t = &module.types[ty];
    match &t.inner {
        naga::TypeInner::Array { base, .. } => format!("array<{}>", type_name(module, *base)),
        naga::TypeInner::Scalar(s) | naga::TypeInner::Atomic(s) => scalar_name(*s),
        naga::TypeInner::Vector { size, scalar } => {
            format!("vec{}<{}>", *size as u8, scalar_name(*scalar))
        }
        _ => t.name.clone().unwrap_or_default(),
    }
}

/// A scalar type as WGSL writes it (`f32`, `u32`, `i32`); an atomic is named by its scalar.
fn scalar_name(s: naga::Scalar) -> String {
    format!("{:?}{}", s.kind, 8 * s.width)
        .replace("Float", "f")
        .replace("Uint", "u")
        .replace("Sint", "i")
}

/// Every registered kernel's bindings are the WGSL's: group 0, bindings `0..n` in order,
/// with the registered names, access and types; names are unique.
#[test]
fn the_registry_matches_the_shaders() {
    let mut names: Vec<&str> = kernels::ALL.iter().map(|k| k.name).collect();
    names.sort_unstable();
    names.dedup();
    assert_eq!(names.len(), kernels::ALL.len(), "a name registered twice");
    for kernel in kernels::ALL {
        let module = naga::front::wgsl::parse_str(&kernel.wgsl())
            .unwrap_or_else(|e| panic!("{}: {e}", kernel.name));
        assert!(
            module.entry_points.iter().any(|e| e.name == "main"),
            "{}: no entry point `main`",
            kernel.name
        );
        let mut declared: Vec<_> = module
            .global_variables
            .iter()
            .filter_map(|(_, v)| {
                let b = v.binding.as_ref()?;
                let access = match v.space {
                    naga::AddressSpace::Uniform => Access::Uniform,
                    naga::AddressSpace::Storage { access }
                        if access.contains(naga::StorageAccess::STORE) =>
                    {
                        Access::Write
                    }
                    naga::AddressSpace::Storage { .. } => Access::Read,
                    other => panic!("{}: a binding in {other:?}", kernel.name),
                };
                let name = v.name.clone().unwrap_or_default();
                Some((b.group, b.binding, name, access, type_name(&module, v.ty)))
            })
            .collect();
        declared.sort_by_key(|d| (d.0, d.1));
        let registered: Vec<_> = (0..)
            .zip(kernel.bindings)
            .map(|(i, b)| (0, i, b.name.to_string(), b.access, wgsl_type(b.data).into()))
            .collect();
        assert_eq!(declared, registered, "{}", kernel.name);
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
    use std::mem::{offset_of, size_of};
    // The solvers' structs in `reduce`'s module, the time step's in the narrow phase's
    // (which uses each of them: a module keeps only the types it uses).
    let (solver, step) = (kernels::REDUCE.wgsl(), kernels::STEP_NARROW.wgsl());
    macro_rules! check {
        ($module:ident: $ty:ident { $($field:ident),* }) => {{
            let (size, fields) = wgsl_layout(&$module, stringify!($ty));
            assert_eq!(size as usize, size_of::<$ty>(), "{}", stringify!($ty));
            for (name, offset) in [$((stringify!($field), offset_of!($ty, $field))),*] {
                let wgsl = fields.iter().find(|(n, _)| n == name);
                assert_eq!(wgsl.map(|f| f.1 as usize), Some(offset), "{}.{name}", stringify!($ty));
            }
        }};
    }
    check!(solver: Params {
        n_bodies,
        n_blocks,
        n_rows,
        coulomb,
        omega,
        r_norm,
        criterion,
        max_dim
    });
    check!(solver: GpuLink { minv_row, row, dim });
    check!(solver: GpuBlock {
        kind,
        dim,
        row,
        jac,
        body0,
        body1,
        mu,
        eta
    });
    check!(solver: Partial { sums, maxes });
    check!(solver: Monitor {
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
    check!(solver: Apply { add_r });
    check!(solver: Reduce { count, slot });
    check!(solver: SpgConfig {
        alpha_min,
        alpha_max,
        armijo,
        sigma_min,
        sigma_max,
        n_gll,
        fallback
    });
    check!(solver: SpgState {
        alpha,
        lambda,
        j,
        hist_len,
        hist_head,
        history
    });
    check!(solver: ApgdState {
        lipschitz,
        step,
        theta,
        beta,
        accepted
    });
    check!(step: StepParams {
        n_bodies,
        n_planes,
        mask,
        capacity,
        cell,
        envelope,
        dt,
        max_recovery,
        gravity,
        dim,
        compliance,
        coulomb,
        omega,
        tol,
        criterion,
        max_iter
    });
    let gate = kernels::STEP_GATE.wgsl();
    check!(gate: StepGate {
        iterations,
        converged,
        checks,
        stalled
    });
    check!(step: Span { count, keys, mode });
    check!(step: GpuBody {
        pos,
        quat,
        vel,
        omega,
        inv,
        props
    });
    check!(step: GpuPlane {
        normal,
        point,
        velocity
    });
    check!(step: GpuContact {
        owner,
        other,
        mu,
        eta,
        normal
    });
    // The history holds MAX_GLL values on both sides.
    assert_eq!(size_of::<SpgState>(), 32 + 4 * MAX_GLL);
}

/// A domain past one dispatch row ([`kernels::MAX_WORKGROUPS`] workgroups) runs on a
/// two-dimensional grid: the three passes of the step's prefix sums over 16.8 M counts (their
/// flat invocation and workgroup indices) give the exact exclusive sums.
#[test]
fn prefix_sums_past_one_dispatch_row_are_exact() {
    let Some(ctx) = context() else { return };
    let n = kernels::MAX_WORKGROUPS * kernels::WORKGROUP + 12_345;
    let groups = n.div_ceil(kernels::WORKGROUP);
    assert!(kernels::grid(groups)[1] > 1, "a two-dimensional grid");
    let mut rng = Rng(5);
    let counts: Vec<u32> = (0..n).map(|_| (rng.next() % 4) as u32).collect();
    let span = |count: u32| Span {
        count,
        keys: 0,
        mode: 0,
        pad: 0,
    };
    let starts = vec![0u32; n as usize + 1];
    let totals = vec![0u32; groups as usize];
    let run = |kernel: &Kernel, items: u32, contents: &[&[u8]]| {
        dispatch_once(&ctx, kernel, items, contents).unwrap()
    };
    let local = run(
        &kernels::STEP_SCAN_LOCAL,
        n,
        &[
            bytemuck::bytes_of(&span(n)),
            &bytes(&counts),
            &bytes(&starts),
            &bytes(&totals),
        ],
    );
    let summed = run(
        &kernels::STEP_SCAN_TOTALS,
        1,
        &[bytemuck::bytes_of(&span(groups)), &local[3]],
    );
    let added = run(
        &kernels::STEP_SCAN_ADD,
        n,
        &[bytemuck::bytes_of(&span(n)), &summed[1], &local[2]],
    );
    let gpu: &[u32] = bytemuck::cast_slice(&added[2]);
    let mut acc = 0u32;
    for (i, &c) in counts.iter().enumerate() {
        assert_eq!(gpu[i], acc, "exclusive sum {i}");
        acc += c;
    }
    assert_eq!(gpu[n as usize], acc, "the total");
}
