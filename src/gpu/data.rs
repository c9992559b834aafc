//! The host side of the kernels: the structs shared with WGSL and the arrays uploaded to the
//! GPU, in `f32`.

use bytemuck::{Pod, Zeroable};
use rayon::prelude::*;

use crate::error::{Error, Result};
use crate::problem::operator::FactoredOperator;
use crate::problem::{Cone, FrictionModel, System};
use crate::solver::{Bias, BlockStep, Criterion, Jacobi, Settings, block_steps, effective_r};

/// Cone kind of a [`GpuBlock`]: bilateral (projection = identity).
pub const CONE_BILATERAL: u32 = 0;
/// Cone kind of a [`GpuBlock`]: unilateral `ℝ₊`.
pub const CONE_UNILATERAL: u32 = 1;
/// Cone kind of a [`GpuBlock`]: Coulomb `K_μ`.
pub const CONE_COULOMB: u32 = 2;

/// Slot of [`Partial`] in the `scalars` buffer: the residual's sums and maxima.
pub const SLOT_RESIDUAL: u32 = 0;
/// Slot of [`Partial`] in the `scalars` buffer: first reduction of a solver iteration.
pub const SLOT_A: u32 = 1;
/// Slot of [`Partial`] in the `scalars` buffer: second reduction of a solver iteration.
pub const SLOT_B: u32 = 2;
/// Slot of [`Partial`] in the `scalars` buffer: third reduction of a solver iteration.
pub const SLOT_C: u32 = 3;
/// Number of slots of the `scalars` buffer.
pub const SLOTS: usize = 4;

/// Largest GLL memory `N_GLL` of `spg-gpu` (the length of [`SpgState::history`]).
pub const MAX_GLL: usize = 32;

/// The sizes and scalars of a solve. Keep in sync with `struct Params` in
/// `shaders/common.wgsl`.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Pod, Zeroable)]
pub struct Params {
    /// Number of dynamic bodies (0 for an assembled problem).
    pub n_bodies: u32,
    /// Number of blocks.
    pub n_blocks: u32,
    /// Number of rows `m`.
    pub n_rows: u32,
    /// 1 under the Coulomb friction model (De Saxcé shift), 0 under CCP.
    pub coulomb: u32,
    /// Relaxation `ω` of projected Jacobi.
    pub omega: f32,
    /// `‖r‖₂` of the problem: the normalization of the relative residual.
    pub r_norm: f32,
    /// The stopping criterion: 0 relative, 1 velocity ([`Criterion`]).
    pub criterion: u32,
    /// Largest block dimension: the Jacobian slots per side of the factored form's `jac`.
    pub max_dim: u32,
}

/// One `(block, side)` link of a body: what the gather over bodies reads. Keep in sync with
/// `struct GpuLink` in `shaders/common.wgsl`.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Pod, Zeroable)]
pub struct GpuLink {
    /// First row of this side of the block in `minv_jac`.
    pub minv_row: u32,
    /// First row of the block in `x`.
    pub row: u32,
    /// Number of rows `d_k`.
    pub dim: u32,
    /// Padding to 16 bytes.
    pub pad: u32,
}

/// One constraint block. Keep in sync with `struct GpuBlock` in `shaders/common.wgsl`.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Pod, Zeroable)]
pub struct GpuBlock {
    /// [`CONE_BILATERAL`], [`CONE_UNILATERAL`] or [`CONE_COULOMB`].
    pub kind: u32,
    /// Number of rows `d_k` (1 to 3).
    pub dim: u32,
    /// First row of the block in `γ`, `r` and the compliance.
    pub row: u32,
    /// First row of the block in the factored form's `minv_jac` (`d_k` rows per side); 0
    /// for an assembled problem.
    pub jac: u32,
    /// Body of side 0, −1 for none (always −1 for an assembled problem).
    pub body0: i32,
    /// Body of side 1, −1 for none.
    pub body1: i32,
    /// Friction coefficient (Coulomb cones), 0 otherwise.
    pub mu: f32,
    /// Step length `η_k` of the settings' block step rule
    /// ([`crate::solver::BlockStep`]): Jacobi's step and the velocity residual's scale.
    pub eta: f32,
}

/// Sums and maxima of a deterministic tree reduction. Keep in sync with `struct Partial` in
/// `shaders/common.wgsl`.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Default, Pod, Zeroable)]
pub struct Partial {
    /// Four sums (dot products).
    pub sums: [f32; 4],
    /// Four maxima (of non-negative quantities).
    pub maxes: [f32; 4],
}

/// The residual of the last measured iterate and the best-iterate bookkeeping, written by
/// `shaders/measure.wgsl`. Keep in sync with `struct Monitor` in `shaders/common.wgsl`.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Default, Pod, Zeroable)]
pub struct Monitor {
    /// `‖γ − Π_K(γ − û)‖∞`.
    pub inf: f32,
    /// `‖γ − Π_K(γ − û)‖₂`.
    pub two: f32,
    /// `two / max(‖r‖, ‖γ‖, ‖u‖)`.
    pub relative: f32,
    /// The natural map with each block's step, in velocity units.
    pub velocity: f32,
    /// The value of the settings' criterion.
    pub value: f32,
    /// `‖γ‖∞`.
    pub gamma_inf: f32,
    /// Smallest value so far (the iterate in the `best` buffer).
    pub best: f32,
    /// `‖γ‖∞` of the first iterates and [`ProblemData::gamma_scale`], the reference of the
    /// divergence test.
    pub gamma_scale: f32,
    /// 1 when this measure improved on `best` (the `copy_if` kernel then saves `γ`).
    pub improved: u32,
    /// Measures so far in this solve.
    pub measures: u32,
    /// Padding to 16 bytes.
    pub pad: [u32; 2],
}

/// Which rows a product kernel writes: `(N + E) x`, plus `r` when `add_r` is 1. Keep in sync
/// with `struct Apply` in `shaders/common.wgsl`.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Pod, Zeroable)]
pub struct Apply {
    /// 1: add `r` (a velocity), 0: the plain product.
    pub add_r: u32,
    /// Padding to 16 bytes.
    pub pad: [u32; 3],
}

/// The configuration of one `reduce` dispatch. Keep in sync with `struct Reduce` in
/// `shaders/reduce.wgsl`.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Pod, Zeroable)]
pub struct Reduce {
    /// Number of workgroup partials to combine.
    pub count: u32,
    /// Slot of the `scalars` buffer that receives the result.
    pub slot: u32,
    /// Padding to 16 bytes.
    pub pad: [u32; 2],
}

/// The parameters of `spg-gpu`. Keep in sync with `struct SpgConfig` in
/// `shaders/common.wgsl`.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Pod, Zeroable)]
pub struct SpgConfig {
    /// `α_min`.
    pub alpha_min: f32,
    /// `α_max`.
    pub alpha_max: f32,
    /// Armijo parameter.
    pub armijo: f32,
    /// `σ_min`.
    pub sigma_min: f32,
    /// `σ_max`.
    pub sigma_max: f32,
    /// `N_GLL` (at most [`MAX_GLL`]).
    pub n_gll: u32,
    /// 1 in the dispatch of `spg_direction` that recomputes the unpreconditioned direction.
    pub fallback: u32,
    /// Padding to 16 bytes.
    pub pad: u32,
}

/// The scalar state of `spg-gpu`. Keep in sync with `struct SpgState` in
/// `shaders/common.wgsl`.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Pod, Zeroable)]
pub struct SpgState {
    /// Spectral step `α`.
    pub alpha: f32,
    /// Step `λ` of the last line search (0: the iterate did not move).
    pub lambda: f32,
    /// Line searches performed (the parity of the BB formula).
    pub j: u32,
    /// Entries of `history` in use.
    pub hist_len: u32,
    /// Next entry of `history` to write.
    pub hist_head: u32,
    /// Padding to 16 bytes.
    pub pad: [u32; 3],
    /// The GLL memory as differences `f_i − f` with the current objective `f` (exact in
    /// exact arithmetic since `f` is quadratic; in `f32` the Armijo test then compares small
    /// differences, not values rounded at the scale of `f`).
    pub history: [f32; MAX_GLL],
}

/// The scalar state of `apgd-gpu`. Keep in sync with `struct ApgdState` in
/// `shaders/common.wgsl`.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Pod, Zeroable)]
pub struct ApgdState {
    /// The Lipschitz estimate `L`.
    pub lipschitz: f32,
    /// The step `t = 1/L` of the next trial.
    pub step: f32,
    /// Nesterov's `θ`.
    pub theta: f32,
    /// Momentum `β` of the last accepted step.
    pub beta: f32,
    /// 1 when the last trial was accepted (the update kernel moves the iterate).
    pub accepted: u32,
    /// Padding to 16 bytes.
    pub pad: [u32; 3],
}

/// The Delassus operator as the kernels read it.
#[derive(Debug, Clone, PartialEq)]
pub enum OperatorData {
    /// The factored form: body → block gather, then block rows.
    Factored {
        /// CSR pointers over bodies into `links` (`n_bodies + 1` entries).
        links_ptr: Vec<u32>,
        /// The `(block, side)` links acting on each body, in block order.
        links: Vec<GpuLink>,
        /// The Jacobian, component-major across blocks so that neighbouring invocations of
        /// `factored_rows` read neighbouring words: entry `c` of row `i` of side `s` of block
        /// `k` is at `(slot·6 + c)·n_blocks + k`, `slot = s·max_dim + i`; absent rows are 0.
        jac: Vec<f32>,
        /// Rows of `M⁻¹ Jᵀ`, 6 entries each, block after block and side after side
        /// ([`GpuBlock::jac`] is a block's first row).
        minv_jac: Vec<f32>,
    },
    /// An explicit `N` in CSR storage (assembled problems, and global ones after the
    /// reduction of [`System::new`]).
    Csr {
        /// Row pointers (`n_rows + 1` entries).
        indptr: Vec<u32>,
        /// Column of each entry.
        indices: Vec<u32>,
        /// Value of each entry.
        values: Vec<f32>,
    },
}

impl OperatorData {
    /// The arrays with the names the kernels bind them by: `links_ptr`, `links`, `jac` and
    /// `minv_jac` (factored form), or `indptr`, `indices` and `values` (CSR).
    pub fn arrays(&self) -> Vec<(&'static str, &[u8])> {
        match self {
            OperatorData::Factored {
                links_ptr,
                links,
                jac,
                minv_jac,
            } => vec![
                ("links_ptr", bytemuck::cast_slice(links_ptr)),
                ("links", bytemuck::cast_slice(links)),
                ("jac", bytemuck::cast_slice(jac)),
                ("minv_jac", bytemuck::cast_slice(minv_jac)),
            ],
            OperatorData::Csr {
                indptr,
                indices,
                values,
            } => vec![
                ("indptr", bytemuck::cast_slice(indptr)),
                ("indices", bytemuck::cast_slice(indices)),
                ("values", bytemuck::cast_slice(values)),
            ],
        }
    }
}

/// Everything the kernels read about one problem under one set of settings, in `f32`.
#[derive(Debug, Clone, PartialEq)]
pub struct ProblemData {
    /// The scalars.
    pub params: Params,
    /// One entry per block.
    pub blocks: Vec<GpuBlock>,
    /// The operator.
    pub op: OperatorData,
    /// `r` plus the settings' bias, one entry per row.
    pub r: Vec<f32>,
    /// Compliance, one entry per row.
    pub compliance: Vec<f32>,
    /// The diagonal preconditioner of P-SPG-FB: `diag(N + E)` averaged within each block.
    pub precond: Vec<f32>,
    /// Initial impulses: the warm start projected on `K`, or zeros.
    pub gamma: Vec<f32>,
    /// The initial impulses in `f64`, as the CPU solvers start.
    pub gamma_f64: Vec<f64>,
    /// The step lengths `η_k` in `f64`, for the residual the host certifies; empty when
    /// [`ProblemData::device_steps`] (the host then computes them only to certify).
    pub eta: Vec<f64>,
    /// Whether the kernel `block_steps` computes the blocks' `η_k` and the preconditioner
    /// on the device before the solve (factored form under the `MaxEigenvalue` rule, see
    /// the solvers' data); the host's `blocks[k].eta` and `precond` are then
    /// placeholders.
    pub device_steps: bool,
    /// APGD's initial Lipschitz estimate `‖(N + E) 1‖ / √m`
    /// ([`ProblemData::with_lipschitz`]); 0 until set.
    pub lipschitz: f32,
    /// The `‖γ‖∞` the divergence test measures growth against, besides the first iterates:
    /// 0 for a problem; for a correction problem of refinement ([`super::refine`]), whose
    /// `δ` starts at 0, that of its base.
    pub gamma_scale: f64,
}

pub(crate) fn index(v: usize) -> Result<u32> {
    u32::try_from(v)
        .map_err(|_| Error::Gpu(format!("{v} exceeds the 32-bit indices of the kernels")))
}

pub(crate) fn to_f32(v: &[f64]) -> Vec<f32> {
    v.iter().map(|&x| x as f32).collect()
}

/// The links of each body with the rows they read (`shaders/factored_bodies.wgsl`).
fn factored_links(op: &FactoredOperator, blocks: &[GpuBlock]) -> Vec<GpuLink> {
    op.links()
        .iter()
        .map(|&(k, side)| {
            let b = &blocks[k];
            GpuLink {
                minv_row: b.jac + side as u32 * b.dim,
                row: b.row,
                dim: b.dim,
                pad: 0,
            }
        })
        .collect()
}

/// The Jacobian rows `rows` of `op` (its own, or rotated ones in the same places) in the
/// component-major layout of [`OperatorData::Factored`]'s `jac`.
pub(crate) fn component_major(
    rows: &[[f64; 6]],
    op: &FactoredOperator,
    blocks: &[GpuBlock],
    max_dim: u32,
) -> Vec<f32> {
    let n = blocks.len();
    let max_dim = max_dim as usize;
    let mut jac = vec![0.0f32; 2 * max_dim * 6 * n];
    if n == 0 {
        return jac;
    }
    // One plane of `n` entries per (slot, component), each written in order by one thread:
    // the writes stream (block by block they would stride by `n`).
    jac.par_chunks_mut(n).enumerate().for_each(|(plane, out)| {
        let (slot, c) = (plane / 6, plane % 6);
        let (side, a) = (slot / max_dim, slot % max_dim);
        for (k, (b, v)) in blocks.iter().zip(out.iter_mut()).enumerate() {
            let dim = b.dim as usize;
            if a < dim && side < op.block_bodies(k).len() {
                *v = rows[b.jac as usize + side * dim + a][c] as f32;
            }
        }
    });
    jac
}

impl ProblemData {
    /// The data of `sys` under `settings` (`ω` defaults to [`Jacobi::DEFAULT_OMEGA`]). Any
    /// form runs: factored problems as such, assembled and global ones (reduced by
    /// [`System::new`]) through their CSR matrix `N`.
    pub fn new(sys: &System, settings: &Settings) -> Result<Self> {
        Self::shifted(sys, settings, None)
    }

    /// [`ProblemData::new`] of the problem with `bias` added to `r` (the inner solves of the
    /// Coulomb fixed point).
    pub(crate) fn shifted(sys: &System, settings: &Settings, bias: Bias) -> Result<Self> {
        Self::build(sys, settings, bias, false)
    }

    /// [`ProblemData::shifted`] with the blocks' steps and the preconditioner left to the
    /// device where it can compute them (factored form, `MaxEigenvalue` rule): the host skips
    /// the eigenvalues of every diagonal block (the largest part of its work per solve).
    pub(crate) fn for_device(sys: &System, settings: &Settings, bias: Bias) -> Result<Self> {
        let device = sys.factored().is_some() && settings.block_step == BlockStep::MaxEigenvalue;
        Self::build(sys, settings, bias, device)
    }

    fn build(sys: &System, settings: &Settings, bias: Bias, device_steps: bool) -> Result<Self> {
        let eta = if device_steps {
            Vec::new()
        } else {
            block_steps(sys, settings.block_step)
        };
        let blocks = sys
            .cones()
            .iter()
            .enumerate()
            .map(|(k, cone)| {
                let (kind, mu) = match *cone {
                    Cone::Bilateral { .. } => (CONE_BILATERAL, 0.0),
                    Cone::Unilateral => (CONE_UNILATERAL, 0.0),
                    Cone::Coulomb { mu } => (CONE_COULOMB, mu as f32),
                };
                let side = |s: usize| match sys.factored() {
                    Some(op) => op
                        .block_bodies(k)
                        .get(s)
                        .map_or(Ok(-1), |&b| index(b).map(|b| b as i32)),
                    None => Ok(-1),
                };
                Ok(GpuBlock {
                    kind,
                    dim: index(cone.dim())?,
                    row: index(sys.block_range(k).start)?,
                    jac: index(sys.factored().map_or(0, |op| op.jac_start()[k]))?,
                    body0: side(0)?,
                    body1: side(1)?,
                    mu,
                    eta: eta.get(k).map_or(0.0, |&e| e as f32),
                })
            })
            .collect::<Result<Vec<_>>>()?;
        let indices = |v: &[usize]| v.iter().map(|&p| index(p)).collect::<Result<Vec<_>>>();
        let max_dim = blocks.iter().map(|b| b.dim).max().unwrap_or(1);
        let (op, n_bodies) = if let Some(op) = sys.factored() {
            let flat = |rows: &[[f64; 6]]| rows.iter().flatten().map(|&v| v as f32).collect();
            (
                OperatorData::Factored {
                    links_ptr: indices(op.links_ptr())?,
                    links: factored_links(op, &blocks),
                    jac: component_major(op.jac(), op, &blocks, max_dim),
                    minv_jac: flat(op.minv_jac()),
                },
                op.bodies(),
            )
        } else {
            let n = sys.operator().as_matrix().ok_or_else(|| {
                Error::Gpu("the GPU solvers need a factored or an assembled operator".into())
            })?;
            (
                OperatorData::Csr {
                    indptr: indices(&n.indptr)?,
                    indices: indices(&n.indices)?,
                    values: to_f32(&n.values),
                },
                0,
            )
        };
        // P = diag(N + E) averaged within each block (paper 004's preconditioner).
        let mut precond = vec![1.0f32; sys.rows()];
        if !device_steps {
            let mean = block_steps(sys, BlockStep::MeanDiagonal);
            for (k, e) in mean.iter().enumerate() {
                if *e > 0.0 {
                    precond[sys.block_range(k)].fill((1.0 / e) as f32);
                }
            }
        }
        let gamma_f64 = crate::solver::progress::initial_iterate(sys, settings);
        let r_norm = sys.r().iter().map(|x| x * x).sum::<f64>().sqrt();
        Ok(ProblemData {
            params: Params {
                n_bodies: index(n_bodies)?,
                n_blocks: index(sys.blocks())?,
                n_rows: index(sys.rows())?,
                coulomb: u32::from(settings.friction == FrictionModel::Coulomb),
                omega: settings.omega.unwrap_or(Jacobi::DEFAULT_OMEGA) as f32,
                r_norm: r_norm as f32,
                criterion: match settings.criterion {
                    Criterion::Relative => 0,
                    Criterion::Velocity => 1,
                },
                max_dim,
            },
            blocks,
            op,
            r: to_f32(&effective_r(sys, bias)),
            compliance: to_f32(sys.compliance()),
            precond,
            gamma: to_f32(&gamma_f64),
            gamma_f64,
            eta,
            device_steps,
            lipschitz: 0.0,
            gamma_scale: 0.0,
        })
    }

    /// Sets [`ProblemData::lipschitz`] as [`crate::solver::Apgd`] starts: `‖(N + E) 1‖ / √m`
    /// (a lower bound of `λ_max`), one product on the CPU.
    pub fn with_lipschitz(mut self, sys: &System) -> Self {
        let m = sys.rows();
        let mut image = vec![0.0; m];
        sys.apply(&vec![1.0; m], &mut image);
        let norm2 = image.iter().map(|v| v * v).sum::<f64>();
        self.lipschitz = ((norm2 / m.max(1) as f64).sqrt() as f32).max(f32::MIN_POSITIVE);
        self
    }
}
