//! The time step on the GPU (issue 14) for scenes of dynamic spheres against fixed or
//! kinematic planes: the state stays in GPU buffers from one step to the next.
//!
//! One WGSL file per stage in `shaders/step/`, each registered in [`crate::gpu::kernels`]
//! (`STEP_*`) with its `f32` mirror in [`crate::gpu::cpu`]:
//! 1. the sphere state ([`GpuBody`]: pose, velocities, mass properties) uploaded once;
//! 2. broad phase: a uniform grid of cells at least a diameter plus the envelope wide, the
//!    cells hashed into buckets and counting-sorted (atomic counts, prefix sums, an atomic
//!    scatter whose order within a bucket the next pass fixes by sorting each bucket by
//!    item: the result does not depend on timing);
//! 3. narrow phase: each sphere counts, then writes, the contacts it owns with the spheres
//!    of the 27 cells around its own and with the planes (the CPU's envelope rule), into a
//!    list sorted by the key (owner, other);
//! 4. assembly: contact frames, the block steps `1/λ_max` of the Delassus blocks (with the
//!    friction coefficient, into the contact), the blocks the residual reads,
//!    `r = J v_free + b`, and the body links (a second counting sort of the contacts' sides
//!    by sphere); no Jacobian is stored (matrix-free sphere rows, issue 16);
//! 5. warm start: the previous step's impulses by binary search of the key;
//! 6. the solve ([`StepSolver`]): projected Jacobi (`jacobi-gpu`'s method) on rows rebuilt
//!    from each contact's normal and the spheres' radii (`step_gather`: `M⁻¹Jᵀγ` per
//!    sphere; `step_jacobi`: `u` and the projected step per contact), or the kernels of
//!    `spg-gpu` or `apgd-gpu` with the product `A x = J M⁻¹ Jᵀ x + E x` of the same rows
//!    (`step_gather`, `step_rows`; `step_precond`, `step_apgd_start` for their starts),
//!    convergence tested on the GPU every [`CHECK_EVERY`] iterations (under the Coulomb
//!    model the last two in the outer rounds of `solver::coulomb`'s De Saxcé fixed point:
//!    `step_coulomb` writes `s = μ‖u_t‖` into a shifted copy of `r` before each test), the
//!    natural-map residual of the answer, then semi-implicit Euler;
//! 7. statistics (kinetic energy, mean height, largest penetration, non-finite entries)
//!    reduced on the GPU and copied into a ring read back every [`RING`] steps.
//!
//! [`Schedule`] lists the buffers and operations; an [`Executor`] runs them: [`DeviceExec`]
//! on the GPU, [`MirrorExec`] on the CPU through the mirrors (the `f32` reference of the
//! whole step; its trace gives the kernels' parity test real inputs). [`StepPipeline`] is
//! the host's side; `crate::sim::resident` builds it from a `World`.

mod data;
mod exec;
mod pipeline;
mod schedule;

pub use data::{GpuBody, GpuContact, GpuPlane, Span, StepGate, StepParams};
pub use exec::{Carry, DeviceExec, DeviceProgram, Dispatch, Executor, MirrorExec};
pub use pipeline::{Assembly, GpuStepStats, KernelTimes, RING, StageTimes, StepPipeline};
pub use schedule::{
    Buf, BufferSpec, CHECK_EVERY, Named, Op, SLOT_BYTES, Schedule, StatsSlot, StepSolver,
};
