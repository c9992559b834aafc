//! What the GPU tests share: the device (required unless `SIGNORINI_SKIP_GPU=1`) and a random
//! factored problem.

use std::sync::{Arc, OnceLock};

use super::Rng;
use signorini::gpu::GpuContext;
use signorini::problem::{Body, Cone, Factored, JacobianBlock, Operator, Problem};

/// The environment variable that lets the GPU tests pass without an adapter (skipped with a
/// note on stderr). Unset, a test that needs an adapter fails without one: CI installs
/// Mesa's lavapipe, so every shader runs there.
pub const SKIP_ENV: &str = "SIGNORINI_SKIP_GPU";

/// The shared device; without an adapter, `None` (with a note) when [`SKIP_ENV`] is `1`, a
/// failure otherwise.
pub fn context() -> Option<Arc<GpuContext>> {
    static CONTEXT: OnceLock<Result<Arc<GpuContext>, String>> = OnceLock::new();
    match CONTEXT.get_or_init(|| GpuContext::new().map(Arc::new).map_err(|e| e.to_string())) {
        Ok(ctx) => Some(ctx.clone()),
        Err(e) if std::env::var(SKIP_ENV).as_deref() == Ok("1") => {
            eprintln!("note: {SKIP_ENV}=1, skipping a GPU test: {e}");
            None
        }
        Err(e) => panic!(
            "the GPU tests need an adapter (Debian: mesa-vulkan-drivers); set {SKIP_ENV}=1 to \
             skip them: {e}"
        ),
    }
}

/// A random factored problem mixing unilateral, Coulomb and bilateral blocks (1 to 3 rows),
/// one- and two-body blocks, with some compliant rows.
pub fn random_problem(seed: u64, n_bodies: usize, n_blocks: usize) -> Problem {
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
        let cone = random_cone(&mut rng);
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
        jacobians.push(JacobianBlock {
            bodies: blk.into(),
            rows,
        });
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

/// A unilateral, Coulomb (random `μ` in `[0, 1)`) or bilateral (1 to 3 rows) cone.
pub fn random_cone(rng: &mut Rng) -> Cone {
    match rng.below(3) {
        0 => Cone::Unilateral,
        1 => Cone::Coulomb {
            mu: rng.uniform(0.0, 1.0),
        },
        _ => Cone::Bilateral {
            dim: 1 + rng.below(3),
        },
    }
}
