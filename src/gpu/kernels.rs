//! The registry of kernels: for each, its name, WGSL source, what one invocation covers, its
//! bindings in order (name, access, and what the buffer holds) and its CPU mirror.
//!
//! Adding a kernel takes one WGSL file `shaders/NAME.wgsl` (entry point `main`, group 0), one
//! mirror `NAME` in [`super::cpu`] (a function with one argument per binding, in binding
//! order: `&T` for a uniform or a read struct, `&[T]` for a read array, `&mut T` / `&mut [T]`
//! for what it writes), one `kernel!` line here and its entry in [`ALL`]. The parity test
//! then runs it against its mirror on inputs generated from the bindings' [`Data`], and the
//! reflection test checks the bindings against the WGSL.

use super::cpu::{self, Bindings};
use crate::error::{Error, Result};

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
    /// One invocation per item of a time-step dispatch (a sphere, a sort key, a link
    /// entry), the count given with the dispatch.
    Items,
}

/// What a binding holds: its element type and its length rule. One of the structs shared
/// with the shaders (by its name), or an array.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Data {
    /// One [`super::Params`].
    Params,
    /// One [`super::Apply`].
    Apply,
    /// One [`super::Reduce`].
    Reduce,
    /// One [`super::Monitor`].
    Monitor,
    /// One [`super::SpgConfig`].
    SpgConfig,
    /// One [`super::SpgState`].
    SpgState,
    /// One [`super::ApgdState`].
    ApgdState,
    /// `f32`, one per row (a vector of the solver).
    Rows,
    /// `f32`, one positive entry per row (a diagonal scaling).
    Diagonal,
    /// `f32`, six per dynamic body.
    BodyComponents,
    /// [`super::GpuBlock`], one per block.
    Blocks,
    /// [`super::Partial`], at least one per workgroup of the widest domain.
    Partials,
    /// [`super::Partial`], [`super::SLOTS`] of them.
    Scalars,
    /// `u32`, the factored form's pointers over bodies into the links (`bodies + 1`).
    LinksPtr,
    /// [`super::GpuLink`], the factored form's links.
    Links,
    /// `f32`, the factored form's component-major Jacobian.
    Jacobian,
    /// `f32`, the factored form's rows of `M⁻¹ Jᵀ`.
    MinvJac,
    /// `u32`, the assembled form's row pointers (`rows + 1`).
    Indptr,
    /// `u32`, the assembled form's column of each entry.
    Indices,
    /// `f32`, the assembled form's value of each entry.
    Values,
    /// One [`super::step::StepParams`] (the time step's sizes and scalars).
    StepParams,
    /// One [`super::step::Span`] (the sizes of a sort or scan dispatch).
    Span,
    /// [`super::step::GpuBody`], one per dynamic sphere.
    Spheres,
    /// [`super::step::GpuPlane`], one per plane.
    Planes,
    /// [`super::step::GpuContact`], up to the contact capacity.
    Contacts,
    /// `vec4<i32>`, the grid cell of each sphere.
    Cells,
    /// `u32` words of the time step: keys, counts, prefix sums, sorted item indices, contact
    /// offsets.
    Words,
    /// `u32` item indices scattered into their key's segment: the order within a segment
    /// is the atomics' (compared segment by segment, as sets).
    Scattered,
    /// [`super::Params`] written by a kernel (the solver's sizes of a GPU time step).
    SolverParams,
    /// One [`super::step::StepGate`] (where a step's iterations stand).
    StepGate,
    /// `vec2<f32>` per sphere: `1/m` and `r²/I` (the iterations' constants of the time step).
    SphereConsts,
}

/// One binding of group 0.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Binding {
    /// The WGSL variable's name: the engine binds the buffer of that name.
    pub name: &'static str,
    /// How the kernel declares it.
    pub access: Access,
    /// What it holds.
    pub data: Data,
}

/// The CPU mirror of a kernel: the same `f32` operations in the same order, on the contents
/// of the bindings (in binding order); it replaces the contents of the written ones.
pub type Mirror = fn(&mut Bindings);

/// One compute kernel (entry point `main`).
#[derive(Debug, Clone, Copy)]
pub struct Kernel {
    /// Name (the WGSL file's stem, the mirror's name and the label in errors).
    pub name: &'static str,
    /// WGSL source, compiled after `shaders/common.wgsl` and, when `tree` is set,
    /// `shaders/tree.wgsl`.
    pub source: &'static str,
    /// Whether the kernel uses the workgroup tree reduction of `shaders/tree.wgsl`.
    pub tree: bool,
    /// What one invocation covers.
    pub domain: Domain,
    /// The bindings of group 0, in binding order.
    pub bindings: &'static [Binding],
    /// The CPU mirror.
    pub mirror: Mirror,
}

/// Invocations per workgroup of every kernel (`WORKGROUP` in `shaders/common.wgsl`).
pub const WORKGROUP: u32 = 256;

/// The most workgroups along one dimension of a dispatch
/// (`max_compute_workgroups_per_dimension` of every adapter): a larger domain is dispatched
/// as a two-dimensional grid ([`grid`]), which the kernels flatten (`flat_index` and
/// `flat_group` in `shaders/common.wgsl`).
pub const MAX_WORKGROUPS: u32 = 65_535;

/// The dispatch grid `[x, y, 1]` of `groups` workgroups: one row while they fit in
/// [`MAX_WORKGROUPS`], otherwise the fewest rows of at most that many, as even as they can
/// be (fewer than `y` workgroups past the end; the kernels guard their items).
pub fn grid(groups: u32) -> [u32; 3] {
    if groups == 0 {
        return [0, 1, 1];
    }
    let y = groups.div_ceil(MAX_WORKGROUPS);
    [groups.div_ceil(y), y, 1]
}

/// The workgroup tree reduction, prepended to the kernels that produce partials.
const TREE: &str = include_str!("../../shaders/tree.wgsl");

/// The Rust element type of a [`Data`].
macro_rules! element {
    (Rows) => {
        f32
    };
    (Diagonal) => {
        f32
    };
    (BodyComponents) => {
        f32
    };
    (Jacobian) => {
        f32
    };
    (MinvJac) => {
        f32
    };
    (Values) => {
        f32
    };
    (LinksPtr) => {
        u32
    };
    (Indptr) => {
        u32
    };
    (Indices) => {
        u32
    };
    (Blocks) => {
        super::data::GpuBlock
    };
    (Words) => {
        u32
    };
    (Scattered) => {
        u32
    };
    (Cells) => {
        [i32; 4]
    };
    (SphereConsts) => {
        [f32; 2]
    };
    (SolverParams) => {
        super::data::Params
    };
    (StepParams) => {
        super::step::StepParams
    };
    (Span) => {
        super::step::Span
    };
    (StepGate) => {
        super::step::StepGate
    };
    (Spheres) => {
        super::step::GpuBody
    };
    (Planes) => {
        super::step::GpuPlane
    };
    (Contacts) => {
        super::step::GpuContact
    };
    (Links) => {
        super::data::GpuLink
    };
    (Partials) => {
        super::data::Partial
    };
    (Scalars) => {
        super::data::Partial
    };
    ($one:ident) => {
        super::data::$one
    };
}

/// The mirror's argument for a binding: `[Data]` is an array, `(Data)` one struct.
macro_rules! argument {
    (Write [$data:ident] $v:ident) => {
        &mut $v[..]
    };
    (Write ($data:ident) $v:ident) => {
        &mut $v[0]
    };
    ($access:ident [$data:ident] $v:ident) => {
        &$v[..]
    };
    ($access:ident ($data:ident) $v:ident) => {
        &$v[0]
    };
}

/// A [`Kernel`]: `kernel!(name, tree, Domain, [binding: Access [Data] or (Data), ...])`; the
/// source is `shaders/name.wgsl`, the mirror `cpu::name`. `kernel!(step name, ...)`: a
/// time-step kernel, `shaders/step/name.wgsl` after `shaders/step/step_common.wgsl` and
/// `shaders/step/step_scan.wgsl`; `kernel!(step name + shared + ..., ...)` also after the
/// functions of each `shaders/step/shared.wgsl`, in order.
macro_rules! kernel {
    (step $name:ident $(+ $shared:ident)+, $tree:expr, $domain:ident, $bindings:tt) => {
        kernel!(@with concat!(
            include_str!("../../shaders/step/step_common.wgsl"),
            "\n",
            include_str!("../../shaders/step/step_scan.wgsl"),
            "\n",
            $(include_str!(concat!("../../shaders/step/", stringify!($shared), ".wgsl")), "\n",)+
            include_str!(concat!("../../shaders/step/", stringify!($name), ".wgsl"))
        ), $name, $tree, $domain, $bindings)
    };
    (step $name:ident, $tree:expr, $domain:ident, $bindings:tt) => {
        kernel!(@with concat!(
            include_str!("../../shaders/step/step_common.wgsl"),
            "\n",
            include_str!("../../shaders/step/step_scan.wgsl"),
            "\n",
            include_str!(concat!("../../shaders/step/", stringify!($name), ".wgsl"))
        ), $name, $tree, $domain, $bindings)
    };
    ($name:ident, $tree:expr, $domain:ident, $bindings:tt) => {
        kernel!(@with include_str!(concat!("../../shaders/", stringify!($name), ".wgsl")),
            $name, $tree, $domain, $bindings)
    };
    (@with $source:expr, $name:ident, $tree:expr, $domain:ident,
     [$($b:ident: $access:ident $shape:tt),* $(,)?]) => {
        Kernel {
            name: stringify!($name),
            source: $source,
            tree: $tree,
            domain: Domain::$domain,
            bindings: &[$(kernel!(@binding $b $access $shape)),*],
            mirror: |bindings| {
                $(#[allow(unused_mut)] let mut $b =
                    bindings.get::<kernel!(@element $shape)>(stringify!($b));)*
                cpu::$name($(argument!($access $shape $b)),*);
                $(bindings.set(stringify!($b), &$b);)*
            },
        }
    };
    (@binding $b:ident $access:ident [$data:ident]) => {
        Binding { name: stringify!($b), access: Access::$access, data: Data::$data }
    };
    (@binding $b:ident $access:ident ($data:ident)) => {
        Binding { name: stringify!($b), access: Access::$access, data: Data::$data }
    };
    (@element [$data:ident]) => { element!($data) };
    (@element ($data:ident)) => { element!($data) };
}

/// `w = M⁻¹ Jᵀ x`, body by body (factored form).
pub const FACTORED_BODIES: Kernel = kernel!(factored_bodies, false, BodyComponents, [
    params: Uniform (Params), links_ptr: Read [LinksPtr], links: Read [Links],
    minv_jac: Read [MinvJac], x: Read [Rows], w: Write [BodyComponents]]);
/// `y = J w + E x (+ r)`, block by block (factored form).
pub const FACTORED_ROWS: Kernel = kernel!(factored_rows, false, Blocks, [
    params: Uniform (Params), apply: Uniform (Apply), blocks: Read [Blocks],
    jac: Read [Jacobian], w: Read [BodyComponents], r: Read [Rows], compliance: Read [Rows],
    x: Read [Rows], y: Write [Rows]]);
/// `y = N x + E x (+ r)`, row by row (assembled form).
pub const CSR_ROWS: Kernel = kernel!(csr_rows, false, Rows, [
    params: Uniform (Params), apply: Uniform (Apply), indptr: Read [Indptr],
    indices: Read [Indices], values: Read [Values], r: Read [Rows], compliance: Read [Rows],
    x: Read [Rows], y: Write [Rows]]);
/// The diagonal blocks' steps `η_k` and the preconditioner (factored form), on the device.
pub const BLOCK_STEPS: Kernel = kernel!(block_steps, false, Blocks, [
    params: Uniform (Params), jac: Read [Jacobian], minv_jac: Read [MinvJac],
    compliance: Read [Rows], blocks: Write [Blocks], precond: Write [Diagonal]]);
/// The projected Jacobi step from `u`.
pub const JACOBI_STEP: Kernel = kernel!(jacobi_step, false, Blocks, [
    params: Uniform (Params), blocks: Read [Blocks], u: Read [Rows], gamma_in: Read [Rows],
    gamma_out: Write [Rows]]);
/// Workgroup partials of the natural-map residual.
pub const RESIDUAL: Kernel = kernel!(residual, true, Blocks, [
    params: Uniform (Params), blocks: Read [Blocks], gamma: Read [Rows], u: Read [Rows],
    parts: Write [Partials]]);
/// Partials → one slot of `scalars`.
pub const REDUCE: Kernel = kernel!(reduce, true, Single, [
    cfg: Uniform (Reduce), parts: Read [Partials], scalars: Write [Scalars]]);
/// The residual and the best-iterate bookkeeping.
pub const MEASURE: Kernel = kernel!(measure, false, Single, [
    params: Uniform (Params), scalars: Read [Scalars], monitor: Write (Monitor)]);
/// Saves the iterate when the last measure improved on the best one.
pub const COPY_IF: Kernel = kernel!(copy_if, false, Rows, [
    params: Uniform (Params), monitor: Read (Monitor), src: Read [Rows], dst: Write [Rows]]);
/// P-SPG-FB direction and `d · g` partials.
pub const SPG_DIRECTION: Kernel = kernel!(spg_direction, true, Blocks, [
    params: Uniform (Params), cfg: Uniform (SpgConfig), blocks: Read [Blocks],
    scalars: Read [Scalars], state: Read (SpgState), x: Read [Rows], g: Read [Rows],
    precond: Read [Diagonal], d: Write [Rows], parts: Write [Partials]]);
/// P-SPG-FB curvature and BB partials.
pub const SPG_CURVATURE: Kernel = kernel!(spg_curvature, true, Rows, [
    params: Uniform (Params), precond: Read [Diagonal], d: Read [Rows], ad: Read [Rows],
    parts: Write [Partials]]);
/// P-SPG-FB line search, BB step and GLL memory.
pub const SPG_SCALARS: Kernel = kernel!(spg_scalars, false, Single, [
    cfg: Uniform (SpgConfig), scalars: Read [Scalars], state: Write (SpgState)]);
/// P-SPG-FB update of `x` and `g`.
pub const SPG_UPDATE: Kernel = kernel!(spg_update, false, Rows, [
    params: Uniform (Params), state: Read (SpgState), d: Read [Rows], ad: Read [Rows],
    x: Write [Rows], g: Write [Rows]]);
/// APGD trial point.
pub const APGD_TRIAL: Kernel = kernel!(apgd_trial, false, Blocks, [
    params: Uniform (Params), blocks: Read [Blocks], state: Read (ApgdState), y: Read [Rows],
    g_y: Read [Rows], x_new: Write [Rows], d: Write [Rows]]);
/// APGD curvature and restart partials.
pub const APGD_CURVATURE: Kernel = kernel!(apgd_curvature, true, Rows, [
    params: Uniform (Params), d: Read [Rows], ad: Read [Rows], g_y: Read [Rows],
    x: Read [Rows], x_new: Read [Rows], parts: Write [Partials]]);
/// APGD acceptance, restart, momentum and `L`.
pub const APGD_SCALARS: Kernel = kernel!(apgd_scalars, false, Single, [
    scalars: Read [Scalars], state: Write (ApgdState)]);
/// APGD update of `x`, `u`, `y`, `g_y`.
pub const APGD_UPDATE: Kernel = kernel!(apgd_update, false, Rows, [
    params: Uniform (Params), state: Read (ApgdState), x_new: Read [Rows], ad: Read [Rows],
    x: Write [Rows], u: Write [Rows], y: Write [Rows], g_y: Write [Rows]]);

/// Time step (issue 14): grid cell and hash bucket of each sphere.
pub const STEP_GRID: Kernel = kernel!(step step_grid, false, Items, [
    params: Uniform (StepParams), bodies: Read [Spheres], cells: Write [Cells],
    keys: Write [Words], consts: Write [SphereConsts]]);
/// Counting sort: items per key (on zeroed counts).
pub const STEP_SORT_COUNT: Kernel = kernel!(step step_sort_count, false, Items, [
    span: Uniform (Span), keys: Read [Words], counts: Write [Words]]);
/// Prefix sums within workgroups.
pub const STEP_SCAN_LOCAL: Kernel = kernel!(step step_scan_local, false, Items, [
    span: Uniform (Span), counts: Read [Words], starts: Write [Words], totals: Write [Words]]);
/// Prefix sums of the workgroup totals.
pub const STEP_SCAN_TOTALS: Kernel = kernel!(step step_scan_totals, false, Single, [
    span: Uniform (Span), totals: Write [Words]]);
/// Workgroup offsets added to the prefix sums.
pub const STEP_SCAN_ADD: Kernel = kernel!(step step_scan_add, false, Items, [
    span: Uniform (Span), totals: Read [Words], starts: Write [Words]]);
/// Counting sort: items into their key's segment (in the atomics' order).
pub const STEP_SORT_SCATTER: Kernel = kernel!(step step_sort_scatter, false, Items, [
    span: Uniform (Span), keys: Read [Words], starts: Read [Words], fill: Write [Words],
    sorted: Write [Scattered]]);
/// Counting sort: each segment in item order.
pub const STEP_SORT_SEGMENTS: Kernel = kernel!(step step_sort_segments, false, Items, [
    span: Uniform (Span), starts: Read [Words], sorted: Write [Words]]);
/// Narrow phase: contact counts (`span.mode` 0), then contacts (1).
pub const STEP_NARROW: Kernel = kernel!(step step_narrow, false, Items, [
    params: Uniform (StepParams), span: Uniform (Span), bodies: Read [Spheres],
    planes: Read [Planes], cells: Read [Cells], starts: Read [Words], sorted: Read [Words],
    offsets: Write [Words], contacts: Write [Contacts]]);
/// Contact blocks, friction coefficients, block steps and `r`.
pub const STEP_CONTACT_ROWS: Kernel = kernel!(step step_contact_rows, false, Blocks, [
    params: Uniform (StepParams), offsets: Read [Words], bodies: Read [Spheres],
    planes: Read [Planes], contacts: Write [Contacts], r: Write [Rows]]);
/// The contacts' blocks for the generic kernels of `spg-gpu` and `apgd-gpu`.
pub const STEP_BLOCKS: Kernel = kernel!(step step_blocks + step_block, false, Blocks, [
    solver: Uniform (Params), params: Uniform (StepParams), contacts: Read [Contacts],
    blocks: Write [Blocks]]);
/// Warm start by contact key.
pub const STEP_WARM_START: Kernel = kernel!(step step_warm_start + step_block, false, Blocks, [
    params: Uniform (StepParams), offsets: Read [Words], contacts: Read [Contacts],
    prev_offsets: Read [Words], prev_others: Read [Words], prev_gamma: Read [Rows],
    gamma: Write [Rows]]);
/// Body links: the sort keys.
pub const STEP_LINK_KEYS: Kernel = kernel!(step step_link_keys, false, Items, [
    params: Uniform (StepParams), offsets: Read [Words], contacts: Read [Contacts],
    keys: Write [Words]]);
/// `w = M⁻¹ Jᵀ x` of the sphere rows, sphere by sphere over its sorted links.
pub const STEP_GATHER: Kernel = kernel!(step step_gather, false, Items, [
    params: Uniform (StepParams), starts: Read [Words], sorted: Read [Words],
    contacts: Read [Contacts], consts: Read [SphereConsts], x: Read [Rows],
    w: Write [BodyComponents]]);
/// `u = J w + E x + r` of the sphere rows and the projected Jacobi step, contact by contact.
pub const STEP_JACOBI: Kernel = kernel!(step step_jacobi + step_velocity + step_jacobi_pass,
    false, Blocks, [
    solver: Uniform (Params), params: Uniform (StepParams), contacts: Read [Contacts],
    w: Read [BodyComponents], r: Read [Rows], x: Read [Rows], u: Write [Rows],
    gamma_out: Write [Rows]]);
/// [`STEP_JACOBI`]'s projected step without writing `u`: the iterations whose velocity no
/// check reads.
pub const STEP_JACOBI_NEXT: Kernel = kernel!(step step_jacobi_next + step_velocity
    + step_jacobi_pass, false, Blocks, [
    solver: Uniform (Params), params: Uniform (StepParams), contacts: Read [Contacts],
    w: Read [BodyComponents], r: Read [Rows], x: Read [Rows], gamma_out: Write [Rows]]);
/// `y = J w + E x (+ r)` of the sphere rows, contact by contact: the operator product of
/// `spg-gpu` and `apgd-gpu` in the time step.
pub const STEP_ROWS: Kernel = kernel!(step step_rows + step_velocity, false, Blocks, [
    solver: Uniform (Params), params: Uniform (StepParams), apply: Uniform (Apply),
    contacts: Read [Contacts], w: Read [BodyComponents], r: Read [Rows], x: Read [Rows],
    y: Write [Rows]]);
/// The preconditioner of `spg-gpu` in the time step: `diag(N + E)` averaged per block.
pub const STEP_PRECOND: Kernel = kernel!(step step_precond, false, Blocks, [
    solver: Uniform (Params), params: Uniform (StepParams), contacts: Read [Contacts],
    consts: Read [SphereConsts], precond: Write [Diagonal]]);
/// The state of `apgd-gpu` at the start of a step's solve (`L` from `‖A 1‖`).
pub const STEP_APGD_START: Kernel = kernel!(step step_apgd_start, false, Single, [
    scalars: Read [Scalars], state: Write (ApgdState)]);
/// The solver's `Params` from the contact count.
pub const STEP_SOLVER_PARAMS: Kernel = kernel!(step step_solver_params, false, Single, [
    params: Uniform (StepParams), offsets: Read [Words], solver: Write [SolverParams]]);
/// Semi-implicit Euler.
pub const STEP_INTEGRATE: Kernel = kernel!(step step_integrate, false, Items, [
    params: Uniform (StepParams), offsets: Read [Words], w: Read [BodyComponents],
    bodies: Write [Spheres]]);
/// The convergence test of a step's iterations: stops their indirect dispatches.
pub const STEP_GATE: Kernel = kernel!(step step_gate, false, Single, [
    params: Uniform (StepParams), span: Uniform (Span), monitor: Read (Monitor),
    gate: Write (StepGate), args: Write [Words]]);
/// The De Saxcé term `μ‖u_t‖` of the Coulomb blocks into a shifted copy of `r` (the outer
/// fixed point of `spg-gpu` and `apgd-gpu` in the time step), the velocities moved alike.
pub const STEP_COULOMB: Kernel = kernel!(step step_coulomb, false, Blocks, [
    solver: Uniform (Params), blocks: Read [Blocks], r: Read [Rows], shifted: Write [Rows],
    u: Write [Rows], other: Write [Rows]]);
/// Keeps the step's offsets, contacts' other sides and impulses for the next warm start (not
/// an overflowed step's).
pub const STEP_KEEP: Kernel = kernel!(step step_keep, false, Items, [
    params: Uniform (StepParams), offsets: Read [Words], contacts: Read [Contacts],
    gamma: Read [Rows], prev_offsets: Write [Words], prev_others: Write [Words],
    prev_gamma: Write [Rows]]);
/// Workgroup partials of the natural-map residual of the step's contacts (no stored blocks).
pub const STEP_RESIDUAL: Kernel = kernel!(step step_residual + step_block, true, Blocks, [
    solver: Uniform (Params), params: Uniform (StepParams), contacts: Read [Contacts],
    gamma: Read [Rows], u: Read [Rows], parts: Write [Partials]]);
/// Per-step statistics and the NaN flag (workgroup partials).
pub const STEP_STATS: Kernel = kernel!(step step_stats, true, Items, [
    params: Uniform (StepParams), offsets: Read [Words], bodies: Read [Spheres],
    contacts: Read [Contacts], parts: Write [Partials]]);

/// Every kernel: [`super::GpuContext`] compiles each at its first use and caches it by its
/// position here; the parity and reflection tests loop over it.
pub const ALL: &[Kernel] = &[
    FACTORED_BODIES,
    FACTORED_ROWS,
    CSR_ROWS,
    BLOCK_STEPS,
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
    STEP_GRID,
    STEP_SORT_COUNT,
    STEP_SCAN_LOCAL,
    STEP_SCAN_TOTALS,
    STEP_SCAN_ADD,
    STEP_SORT_SCATTER,
    STEP_SORT_SEGMENTS,
    STEP_NARROW,
    STEP_CONTACT_ROWS,
    STEP_BLOCKS,
    STEP_WARM_START,
    STEP_LINK_KEYS,
    STEP_SOLVER_PARAMS,
    STEP_GATHER,
    STEP_JACOBI,
    STEP_JACOBI_NEXT,
    STEP_ROWS,
    STEP_PRECOND,
    STEP_APGD_START,
    STEP_GATE,
    STEP_COULOMB,
    STEP_INTEGRATE,
    STEP_KEEP,
    STEP_RESIDUAL,
    STEP_STATS,
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

    /// The workgroup grid of one dispatch over `items` invocations of the kernel's domain
    /// ([`grid`]).
    pub fn workgroups(&self, items: u32) -> [u32; 3] {
        match self.domain {
            Domain::Single => [1, 1, 1],
            _ => grid(items.div_ceil(WORKGROUP)),
        }
    }

    /// `given` binding contents must be one per binding (an [`Error::Gpu`] otherwise).
    pub(crate) fn check_bindings(&self, given: usize) -> Result<()> {
        if given != self.bindings.len() {
            return Err(Error::Gpu(format!(
                "kernel `{}` has {} bindings, {given} given",
                self.name,
                self.bindings.len()
            )));
        }
        Ok(())
    }

    /// Its position in [`ALL`] (by name), `None` for an unregistered kernel.
    pub fn index(&self) -> Option<usize> {
        ALL.iter().position(|k| k.name == self.name)
    }
}
