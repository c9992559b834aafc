//! Mixed-precision refinement of the GPU solvers on the shared FCLIB files of the Siconos
//! test data (issue 20; cargo feature `fclib`, which reads HDF5): `jacobi-gpu`, `spg-gpu`
//! and `apgd-gpu` reach relative natural-map residuals of 1e-10, measured in `f64` by the CPU
//! merit code, with status `converged`. CI runs it on lavapipe with the feature on.

mod common;
use common::refine::all_reach_1e_10;

/// All three GPU solvers reach 1e-10 on Box_Stacks-i0122-82-5 (a global problem: 82
/// contacts of a box stack, `M` and `H` given) through the correction rounds alone.
#[test]
fn refinement_reaches_1e_10_on_box_stacks() {
    all_reach_1e_10(
        "Box_Stacks-i0122-82-5",
        "fclib-hdf5/Box_Stacks-i0122-82-5.hdf5",
        45_000,
    );
}

/// All three GPU solvers reach 1e-10 on Capsules-i125-1213 (858 rows, non-symmetric `W`),
/// where the rounds stall near 5e-7 and the warm-started interior point finishes.
#[test]
fn refinement_reaches_1e_10_on_capsules_1213() {
    all_reach_1e_10(
        "Capsules-i125-1213",
        "fclib-hdf5/Capsules-i125-1213.hdf5",
        45_000,
    );
}
