//! The GPU path (DESIGN §4): wgpu + WGSL compute kernels in `f32`.
//!
//! - [`GpuContext`]: instance, adapter (pick one with the environment variable
//!   [`ADAPTER_ENV`]), device with the adapter's buffer limits, queue; [`adapters`] lists
//!   what wgpu finds (`signorini info`). Without a GPU, Mesa's software Vulkan driver
//!   (lavapipe) runs every shader.
//! - [`JacobiGpu`]: projected Jacobi on the factored form, registry name `jacobi-gpu`. Each
//!   iteration is two dispatches: a gather over bodies (`w = M⁻¹ Jᵀ γ`, fixed summation order,
//!   no atomics) and a projected step over blocks (ping-pong `γ` buffers). The host submits
//!   [`READBACK_EVERY`] iterations per command buffer and reads `γ` back only then, to
//!   measure the residual in `f64` on the CPU.
//! - [`bandwidth`]: the device's memory bandwidth, measured by a copy kernel.
//! - [`JacobiData`]: the host arrays the kernels read, in binding order, with the `Pod`
//!   structs shared with the shaders; [`cpu`] mirrors both kernels in `f32` for the parity
//!   tests.

pub mod bandwidth;
mod context;
pub mod cpu;
mod data;
mod jacobi;

pub use context::{ADAPTER_ENV, AdapterSummary, GpuContext, adapters};
pub use data::{
    CONE_BILATERAL, CONE_COULOMB, CONE_UNILATERAL, GpuBlock, GpuLink, JacobiData, Params,
};
pub use jacobi::{GpuStats, JacobiGpu, JacobiKernels, READBACK_EVERY};
