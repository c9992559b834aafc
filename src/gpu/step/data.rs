//! The structs the time-step kernels share with `shaders/step/step_common.wgsl`.

use bytemuck::{Pod, Zeroable};

/// The scene's sizes and the stepper's scalars. Keep in sync with `struct StepParams`.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Pod, Zeroable)]
pub struct StepParams {
    /// Dynamic spheres: GPU bodies `0..n_bodies`; plane `p` has the id `n_bodies + p`.
    pub n_bodies: u32,
    /// Planes (fixed or kinematic).
    pub n_planes: u32,
    /// Buckets of the grid's hash table minus one (a power of two minus one).
    pub mask: u32,
    /// Room for contacts: a larger contact count writes none and is reported.
    pub capacity: u32,
    /// Side of a grid cell: at least the largest diameter plus twice the envelope, so that
    /// every contact of a sphere lies in the 27 cells around its own.
    pub cell: f32,
    /// Collision envelope: a contact is kept when its gap is at most this.
    pub envelope: f32,
    /// Time step `h`.
    pub dt: f32,
    /// Largest separation speed of the stabilization.
    pub max_recovery: f32,
    /// Gravity in `xyz`; `w` is 1 with the gyroscopic term, else 0.
    pub gravity: [f32; 4],
    /// Rows of every contact block: 3 (Coulomb) when any surface has friction, else 1.
    pub dim: u32,
    /// Compliance of every contact row.
    pub compliance: f32,
    /// 1 under the Coulomb friction model (De Saxcé shift), 0 under CCP.
    pub coulomb: u32,
    /// Relaxation `ω` of the projected Jacobi iterations.
    pub omega: f32,
    /// Tolerance of the solve on the residual `criterion`.
    pub tol: f32,
    /// 0: the relative residual, 1: the velocity residual (as [`crate::gpu::Params`]).
    pub criterion: u32,
    /// Iterations of a step at most.
    pub max_iter: u32,
    /// Padding to 16 bytes.
    pub pad: u32,
}

/// Where a step's iterations stand. Keep in sync with `struct StepGate`.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Pod, Zeroable)]
pub struct StepGate {
    /// Iterations done when they stopped (`max_iter` until then).
    pub iterations: u32,
    /// 1 when they stopped on the tolerance.
    pub converged: u32,
    /// Convergence tests run (under the Coulomb model with `spg-gpu` or `apgd-gpu`, each
    /// follows an update of the De Saxcé term: the outer rounds).
    pub checks: u32,
    /// Tests in a row whose iterate did not improve on the best one (counted, and stopping
    /// the iterations, only under the stall rule of the Coulomb model's outer rounds).
    pub stalled: u32,
}

/// The sizes of a generic sort or scan dispatch, and the pass of the narrow phase. Keep in
/// sync with `struct Span`.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Pod, Zeroable)]
pub struct Span {
    /// Items (or counts) the dispatch covers.
    pub count: u32,
    /// Keys (segments) of a sort.
    pub keys: u32,
    /// Pass of the narrow phase: 0 counts, 1 writes.
    pub mode: u32,
    /// Padding to 16 bytes.
    pub pad: u32,
}

/// One dynamic sphere. Keep in sync with `struct GpuBody`.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Default, Pod, Zeroable)]
pub struct GpuBody {
    /// Position, then the radius.
    pub pos: [f32; 4],
    /// Orientation body → world as `(x, y, z, w)`.
    pub quat: [f32; 4],
    /// Linear velocity (world), then the friction coefficient.
    pub vel: [f32; 4],
    /// Angular velocity (body frame), then 0.
    pub omega: [f32; 4],
    /// `1/m`, then the inverse principal moments of inertia.
    pub inv: [f32; 4],
    /// `m`, then the principal moments of inertia.
    pub props: [f32; 4],
}

/// One plane (a fixed or kinematic body). Keep in sync with `struct GpuPlane`.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Default, Pod, Zeroable)]
pub struct GpuPlane {
    /// Unit normal (out of the solid), then the friction coefficient.
    pub normal: [f32; 4],
    /// A point of the plane, then 0.
    pub point: [f32; 4],
    /// Velocity over the coming step (kinematic planes), then 0.
    pub velocity: [f32; 4],
}

/// One contact. Keep in sync with `struct GpuContact`.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Default, Pod, Zeroable)]
pub struct GpuContact {
    /// The sphere that owns it (the smaller id of a sphere pair).
    pub owner: u32,
    /// The other sphere, or `n_bodies + plane`.
    pub other: u32,
    /// Friction coefficient (written by `step_contact_rows`).
    pub mu: f32,
    /// Block step `1/λ_max` (written by `step_contact_rows`).
    pub eta: f32,
    /// Unit normal from A to B (A: the owner of a pair, or the plane), then the signed gap.
    pub normal: [f32; 4],
}
