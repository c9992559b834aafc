//! The registry of kernels: name, WGSL source, what one invocation covers, and the
//! bindings in order. Adding a kernel takes one WGSL file in `shaders/`, one mirror in
//! [`super::cpu`] and one line here.

/// How a binding is declared in the kernel.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Access {
    /// `var<uniform>`.
    Uniform,
    /// `var<storage, read>`.
    Read,
    /// `var<storage, read_write>`: the kernel writes it.
    Write,
}

/// What one invocation of a kernel covers, which fixes the number of workgroups.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Domain {
    /// Six invocations per dynamic body, one per velocity component.
    BodyComponents,
    /// One invocation per block.
    Blocks,
    /// One invocation per row.
    Rows,
    /// A single workgroup.
    Single,
}

/// One compute kernel (entry point `main`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Kernel {
    /// Name (the pipeline cache key and the label in errors).
    pub name: &'static str,
    /// WGSL source, compiled after `shaders/common.wgsl` and, when `tree` is set,
    /// `shaders/tree.wgsl`.
    pub source: &'static str,
    /// Whether the kernel uses the workgroup tree reduction of `shaders/tree.wgsl`.
    pub tree: bool,
    /// What one invocation covers.
    pub domain: Domain,
    /// The bindings of group 0, in binding order.
    pub bindings: &'static [(&'static str, Access)],
}

/// Invocations per workgroup of every kernel (`WORKGROUP` in `shaders/common.wgsl`).
pub const WORKGROUP: u32 = 256;

/// The most workgroups of one dispatch (`max_compute_workgroups_per_dimension` of every
/// adapter): a domain holds at most `WORKGROUP` times this many items.
pub const MAX_WORKGROUPS: u32 = 65_535;

/// The workgroup tree reduction, prepended to the kernels that produce partials.
const TREE: &str = include_str!("../../shaders/tree.wgsl");

use Access::{Read, Uniform, Write};

macro_rules! kernel {
    ($name:literal, $tree:expr, $domain:ident, [$($binding:literal: $access:ident),* $(,)?]) => {
        Kernel {
            name: $name,
            source: include_str!(concat!("../../shaders/", $name, ".wgsl")),
            tree: $tree,
            domain: Domain::$domain,
            bindings: &[$(($binding, $access)),*],
        }
    };
}

/// `w = M⁻¹ Jᵀ x`, body by body (factored form).
pub const FACTORED_BODIES: Kernel = kernel!("factored_bodies", false, BodyComponents, [
    "params": Uniform, "links_ptr": Read, "links": Read, "minv_jac": Read, "x": Read,
    "w": Write]);
/// `y = J w + E x (+ r)`, block by block (factored form).
pub const FACTORED_ROWS: Kernel = kernel!("factored_rows", false, Blocks, [
    "params": Uniform, "apply": Uniform, "blocks": Read, "jac": Read, "w": Read, "r": Read,
    "compliance": Read, "x": Read, "y": Write]);
/// `y = N x + E x (+ r)`, row by row (assembled form).
pub const CSR_ROWS: Kernel = kernel!("csr_rows", false, Rows, [
    "params": Uniform, "apply": Uniform, "indptr": Read, "indices": Read, "values": Read,
    "r": Read, "compliance": Read, "x": Read, "y": Write]);
/// The projected Jacobi step from `u`.
pub const JACOBI_STEP: Kernel = kernel!("jacobi_step", false, Blocks, [
    "params": Uniform, "blocks": Read, "u": Read, "gamma_in": Read, "gamma_out": Write]);
/// Workgroup partials of the natural-map residual.
pub const RESIDUAL: Kernel = kernel!("residual", true, Blocks, [
    "params": Uniform, "blocks": Read, "gamma": Read, "u": Read, "parts": Write]);
/// Partials → one slot of `scalars`.
pub const REDUCE: Kernel = kernel!("reduce", true, Single, [
    "cfg": Uniform, "parts": Read, "scalars": Write]);
/// The residual and the best-iterate bookkeeping.
pub const MEASURE: Kernel = kernel!("measure", false, Single, [
    "params": Uniform, "scalars": Read, "monitor": Write]);
/// Saves the iterate when the last measure improved on the best one.
pub const COPY_IF: Kernel = kernel!("copy_if", false, Rows, [
    "params": Uniform, "monitor": Read, "src": Read, "dst": Write]);
/// P-SPG-FB direction and `d · g` partials.
pub const SPG_DIRECTION: Kernel = kernel!("spg_direction", true, Blocks, [
    "params": Uniform, "cfg": Uniform, "blocks": Read, "scalars": Read, "state": Read,
    "x": Read, "g": Read, "precond": Read, "d": Write, "parts": Write]);
/// P-SPG-FB curvature and BB partials.
pub const SPG_CURVATURE: Kernel = kernel!("spg_curvature", true, Rows, [
    "params": Uniform, "precond": Read, "d": Read, "ad": Read, "parts": Write]);
/// P-SPG-FB line search, BB step and GLL memory.
pub const SPG_SCALARS: Kernel = kernel!("spg_scalars", false, Single, [
    "cfg": Uniform, "scalars": Read, "state": Write]);
/// P-SPG-FB update of `x` and `g`.
pub const SPG_UPDATE: Kernel = kernel!("spg_update", false, Rows, [
    "params": Uniform, "state": Read, "d": Read, "ad": Read, "x": Write, "g": Write]);
/// APGD trial point.
pub const APGD_TRIAL: Kernel = kernel!("apgd_trial", false, Blocks, [
    "params": Uniform, "blocks": Read, "state": Read, "y": Read, "g_y": Read,
    "x_new": Write, "d": Write]);
/// APGD curvature and restart partials.
pub const APGD_CURVATURE: Kernel = kernel!("apgd_curvature", true, Rows, [
    "params": Uniform, "d": Read, "ad": Read, "g_y": Read, "x": Read, "x_new": Read,
    "parts": Write]);
/// APGD acceptance, restart, momentum and `L`.
pub const APGD_SCALARS: Kernel = kernel!("apgd_scalars", false, Single, [
    "scalars": Read, "state": Write]);
/// APGD update of `x`, `u`, `y`, `g_y`.
pub const APGD_UPDATE: Kernel = kernel!("apgd_update", false, Rows, [
    "params": Uniform, "state": Read, "x_new": Read, "ad": Read, "x": Write, "u": Write,
    "y": Write, "g_y": Write]);

/// Every kernel, for the tests that compile them all.
pub const ALL: &[Kernel] = &[
    FACTORED_BODIES,
    FACTORED_ROWS,
    CSR_ROWS,
    JACOBI_STEP,
    RESIDUAL,
    REDUCE,
    MEASURE,
    COPY_IF,
    SPG_DIRECTION,
    SPG_CURVATURE,
    SPG_SCALARS,
    SPG_UPDATE,
    APGD_TRIAL,
    APGD_CURVATURE,
    APGD_SCALARS,
    APGD_UPDATE,
];

impl Kernel {
    /// The WGSL source [`super::GpuContext`] compiles after `shaders/common.wgsl`: the tree
    /// reduction when used, then the kernel.
    pub fn source(&self) -> String {
        let tree = if self.tree { TREE } else { "" };
        format!("{tree}\n{}", self.source)
    }

    /// The complete WGSL module (for reflection and validation).
    pub fn wgsl(&self) -> String {
        format!("{}\n{}", super::context::COMMON, self.source())
    }

    /// Workgroups of one dispatch over `items` invocations of the kernel's domain.
    pub fn workgroups(&self, items: u32) -> u32 {
        match self.domain {
            Domain::Single => 1,
            _ => items.div_ceil(WORKGROUP),
        }
    }
}
