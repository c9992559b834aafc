//! The GPU path (DESIGN §4): wgpu + WGSL compute kernels in `f32`.
//!
//! - [`GpuContext`]: instance, adapter (pick one with the environment variable
//!   [`ADAPTER_ENV`]), device with the adapter's buffer limits, queue, and the compiled
//!   pipelines (one slot per registered kernel, filled at its first use, no lock);
//!   [`adapters`] lists what wgpu finds (`signorini info`). Without a GPU, Mesa's software
//!   Vulkan driver (lavapipe) runs every shader.
//! - [`kernels`]: the registry of kernels (WGSL file, domain, bindings in order with what
//!   each holds, CPU mirror); [`cpu`] holds the mirrors, one module per kernel family, in
//!   `f32`. The parity test runs every registered kernel once ([`dispatch_once`]) and its
//!   mirror ([`kernels::Kernel::mirror_once`]) on the same inputs.
//! - [`ProblemData`]: the arrays the kernels read (factored form, or `N` in CSR for
//!   assembled and global problems) with the `Pod` structs shared with the shaders.
//! - The engine (private): the problem's buffers and upload, the one bind helper (a kernel
//!   bound by binding name to its buffers, one dispatch) and the one readback helper (copies
//!   into a staging buffer, mapped once per submission), shared by the solvers and
//!   [`dispatch_once`].
//! - [`GpuKernels`]: the kernels and buffers of one solver; [`GpuKernels::run`] records
//!   iterations without convergence tests (the throughput benchmark). All scalars (dot
//!   products by deterministic tree reductions, step lengths, BB coefficients, GLL memory,
//!   Armijo test, momentum and restart, residual and best iterate) stay on the GPU; the host
//!   submits [`READBACK_EVERY`] iterations per command buffer and reads back a few scalars
//!   after each, and the impulses once at the end, certified in `f64` on the CPU.
//! - [`step`]: the time step of sphere scenes resident on the GPU (issue 14).
//! - [`bandwidth`]: the device's memory bandwidth, measured by a copy kernel.
//! - The solvers [`JacobiGpu`], [`SpgGpu`], [`ApgdGpu`] (`jacobi-gpu`, `spg-gpu`,
//!   `apgd-gpu`): one shell, [`GpuSolver`] over a [`Method`] whose kernels are one schedule
//!   of dispatches (the private `Program`: start, iteration, measure, refresh period);
//!   their [`GpuSession`]s keep kernels and buffers for the next problem of the same sizes.
//! - [`refine`]: mixed-precision refinement of their answers to `f64` accuracy when the
//!   tolerance is below [`F32_REACH`] (correction problems in `f32` on the GPU, residuals in
//!   `f64` on the CPU).

mod apgd;
pub mod bandwidth;
mod context;
pub mod cpu;
mod data;
mod engine;
mod jacobi;
pub mod kernels;
mod program;
pub mod refine;
mod spg;
pub mod step;

pub use apgd::{ApgdGpu, ApgdMethod};
pub use context::{ADAPTER_ENV, AdapterSummary, GpuContext, adapters};
pub use data::{
    ApgdState, Apply, CONE_BILATERAL, CONE_COULOMB, CONE_UNILATERAL, GpuBlock, GpuLink, MAX_GLL,
    Monitor, OperatorData, Params, Partial, ProblemData, Reduce, SLOT_A, SLOT_B, SLOT_C,
    SLOT_RESIDUAL, SLOTS, SpgConfig, SpgState,
};
pub use engine::{GpuStats, dispatch_once};
pub use jacobi::{JacobiGpu, JacobiMethod};
pub use program::{GpuKernels, GpuSession, GpuSolver, Method, READBACK_EVERY};
pub use refine::{F32_REACH, MAX_ROUNDS};
pub use spg::{SpgGpu, SpgMethod};
