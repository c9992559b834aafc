//! What the refinement tests share (`tests/gpu_refine.rs`, `tests/gpu_refine_fclib.rs`): the
//! three GPU solvers and the check of the README's claim, a relative natural-map residual of
//! 1e-10 in `f64` with status `converged`.

use std::sync::Arc;

use signorini::gpu::{ApgdGpu, GpuContext, JacobiGpu, SpgGpu};
use signorini::problem::merit;
use signorini::problem::{FrictionModel, System};
use signorini::solver::{Report, Settings, Solver, Status};

/// A Siconos problem, `file` under `tests/data/siconos` (solved here under the CCP model).
pub fn siconos(file: &str) -> System {
    let path = super::problems_dir().join("siconos").join(file);
    System::new(&signorini::problem::io::read(&path, None).unwrap()).unwrap()
}

/// The three GPU solvers on `ctx`.
pub fn solvers(ctx: &Arc<GpuContext>) -> Vec<Box<dyn Solver>> {
    vec![
        Box::new(JacobiGpu::with_context(ctx.clone())),
        Box::new(SpgGpu::with_context(ctx.clone())),
        Box::new(ApgdGpu::with_context(ctx.clone())),
    ]
}

/// The relative natural-map residual of the report's impulses under CCP, in `f64` by the
/// merit code (unit steps).
pub fn relative_residual(sys: &System, r: &Report) -> f64 {
    let u = sys.velocity(&r.gamma);
    let eta = vec![1.0; sys.blocks()];
    merit::residual(sys, &r.gamma, &u, FrictionModel::Ccp, &eta).relative
}

/// CCP at `tol`, with room for the rounds.
pub fn refined(tol: f64, max_iter: usize) -> Settings {
    Settings {
        friction: FrictionModel::Ccp,
        tol,
        max_iter,
        ..Settings::default()
    }
}

/// The wall time of the report's phase `name` (the `f64` finish: `f64_finish`), if it ran.
pub fn phase(r: &Report, name: &str) -> Option<f64> {
    r.phases.iter().find(|p| p.name == name).map(|p| p.time_s)
}

/// Solves `sys` with `solver` at 1e-10 and checks the `f64` residual, the status and that
/// refinement ran (correction rounds on the GPU, or the `f64` finish after the `f32` solve);
/// returns the report.
pub fn reaches_1e_10(what: &str, sys: &System, solver: &dyn Solver, max_iter: usize) -> Report {
    let r = solver.solve(sys, &refined(1e-10, max_iter)).unwrap();
    let rel = relative_residual(sys, &r);
    eprintln!(
        "{what} {}: {:?}, {} iterations, {} rounds, phases {:?}, relative {rel:e}",
        r.solver, r.status, r.iterations, r.refinements, r.phases
    );
    assert_eq!(r.status, Status::Converged, "{what} {}", r.solver);
    assert!(rel <= 1e-10, "{what} {}: relative {rel:e}", r.solver);
    assert!(
        r.refinements >= 1 || phase(&r, "f64_finish").is_some(),
        "{what} {}: no refinement",
        r.solver
    );
    assert_eq!(r.trace.last().unwrap().residual, r.residual.relative);
    r
}

/// All three GPU solvers reach 1e-10 on the Siconos problem `file` ([`reaches_1e_10`]); the
/// check is skipped only where the GPU tests are ([`super::gpu::context`]).
pub fn all_reach_1e_10(what: &str, file: &str, max_iter: usize) {
    let Some(ctx) = super::gpu::context() else {
        return;
    };
    let sys = siconos(file);
    for solver in solvers(&ctx) {
        reaches_1e_10(what, &sys, solver.as_ref(), max_iter);
    }
}
