//! The host side of the projected Jacobi kernels: the structs shared with WGSL and the arrays
//! uploaded to the GPU, in `f32`.

use bytemuck::{Pod, Zeroable};

use crate::error::{Error, Result};
use crate::problem::{Cone, FrictionModel, System};
use crate::solver::{Jacobi, Settings, block_steps, effective_r};

/// Cone kind of a [`GpuBlock`]: bilateral (projection = identity).
pub const CONE_BILATERAL: u32 = 0;
/// Cone kind of a [`GpuBlock`]: unilateral `ℝ₊`.
pub const CONE_UNILATERAL: u32 = 1;
/// Cone kind of a [`GpuBlock`]: Coulomb `K_μ`.
pub const CONE_COULOMB: u32 = 2;

/// The scalars of a solve. Keep in sync with `struct Params` in `shaders/common.wgsl`.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Pod, Zeroable)]
pub struct Params {
    /// Number of dynamic bodies.
    pub n_bodies: u32,
    /// Number of blocks.
    pub n_blocks: u32,
    /// 1 under the Coulomb friction model (De Saxcé shift), 0 under CCP.
    pub coulomb: u32,
    /// Relaxation `ω`.
    pub omega: f32,
    /// Largest block dimension: the Jacobian slots per side in [`JacobiData::jac`].
    pub max_dim: u32,
    /// Padding to 32 bytes.
    pub pad: [u32; 3],
}

/// One `(block, side)` link of a body: what the gather over bodies reads. Keep in sync with
/// `struct GpuLink` in `shaders/common.wgsl`.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Pod, Zeroable)]
pub struct GpuLink {
    /// First row of this side of the block in [`JacobiData::minv_jac`].
    pub minv_row: u32,
    /// First row of the block in `γ`.
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
    /// First row of the block in `minv_jac` (`d_k` rows per side).
    pub jac: u32,
    /// Body of side 0.
    pub body0: i32,
    /// Body of side 1, −1 for none.
    pub body1: i32,
    /// Friction coefficient (Coulomb cones), 0 otherwise.
    pub mu: f32,
    /// Step length `η_k` ([`crate::solver::BlockStep`]).
    pub eta: f32,
}

/// Everything the kernels read, in `f32`, fields in binding order.
#[derive(Debug, Clone, PartialEq)]
pub struct JacobiData {
    /// The scalars.
    pub params: Params,
    /// CSR pointers over bodies into `links` (`n_bodies + 1` entries).
    pub links_ptr: Vec<u32>,
    /// The `(block, side)` links acting on each body, in block order.
    pub links: Vec<GpuLink>,
    /// One entry per block.
    pub blocks: Vec<GpuBlock>,
    /// The Jacobian, component-major across blocks so that neighbouring invocations of the
    /// block kernel read neighbouring words: entry `c` of row `i` of side `s` of block `k` is
    /// at `(slot·6 + c)·n_blocks + k` with `slot = s·max_dim + i`; absent rows are zero.
    pub jac: Vec<f32>,
    /// Rows of `M⁻¹ Jᵀ`, 6 entries each, block after block and side after side
    /// ([`GpuBlock::jac`] is a block's first row).
    pub minv_jac: Vec<f32>,
    /// `r` (plus the settings' bias), one entry per row.
    pub r: Vec<f32>,
    /// Compliance, one entry per row.
    pub compliance: Vec<f32>,
    /// Initial impulses: the warm start projected on `K`, or zeros.
    pub gamma: Vec<f32>,
    /// The step lengths `η_k` in `f64`, for the residual the host measures.
    pub eta: Vec<f64>,
}

fn index(v: usize) -> Result<u32> {
    u32::try_from(v)
        .map_err(|_| Error::Gpu(format!("{v} exceeds the 32-bit indices of the kernels")))
}

impl JacobiData {
    /// The data of a factored system under `settings` (`ω` defaults to
    /// [`Jacobi::DEFAULT_OMEGA`]). An assembled or global problem is an [`Error::Gpu`].
    pub fn new(sys: &System, settings: &Settings) -> Result<Self> {
        let op = sys
            .factored()
            .ok_or_else(|| Error::Gpu("jacobi-gpu needs the factored form".into()))?;
        let eta = block_steps(sys, settings.block_step);
        let offsets = op.offsets();
        let blocks = sys
            .cones()
            .iter()
            .enumerate()
            .map(|(k, cone)| {
                let bodies = op.block_bodies(k);
                let (kind, mu) = match *cone {
                    Cone::Bilateral { .. } => (CONE_BILATERAL, 0.0),
                    Cone::Unilateral => (CONE_UNILATERAL, 0.0),
                    Cone::Coulomb { mu } => (CONE_COULOMB, mu as f32),
                };
                Ok(GpuBlock {
                    kind,
                    dim: index(cone.dim())?,
                    row: index(offsets[k])?,
                    jac: index(op.jac_start()[k])?,
                    body0: bodies
                        .first()
                        .map_or(Ok(-1), |&b| index(b).map(|b| b as i32))?,
                    body1: bodies
                        .get(1)
                        .map_or(Ok(-1), |&b| index(b).map(|b| b as i32))?,
                    mu,
                    eta: eta[k] as f32,
                })
            })
            .collect::<Result<Vec<_>>>()?;
        let gamma = crate::solver::progress::initial_iterate(sys, settings);
        let to_f32 = |v: &[f64]| v.iter().map(|&x| x as f32).collect();
        let max_dim = blocks.iter().map(|b| b.dim).max().unwrap_or(1);
        let links = op
            .links()
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
            .collect();
        let n = blocks.len();
        let mut jac = vec![0.0f32; 2 * max_dim as usize * 6 * n];
        for (k, b) in blocks.iter().enumerate() {
            let rows = &op.jac()[b.jac as usize..][..op.block_bodies(k).len() * b.dim as usize];
            for (j, row) in rows.iter().enumerate() {
                let (side, i) = (j / b.dim as usize, j % b.dim as usize);
                let slot = side * max_dim as usize + i;
                for (c, v) in row.iter().enumerate() {
                    jac[(slot * 6 + c) * n + k] = *v as f32;
                }
            }
        }
        Ok(JacobiData {
            params: Params {
                n_bodies: index(op.bodies())?,
                n_blocks: index(sys.blocks())?,
                coulomb: u32::from(settings.friction == FrictionModel::Coulomb),
                omega: settings.omega.unwrap_or(Jacobi::DEFAULT_OMEGA) as f32,
                max_dim,
                pad: [0; 3],
            },
            links_ptr: op
                .links_ptr()
                .iter()
                .map(|&p| index(p))
                .collect::<Result<_>>()?,
            links,
            blocks,
            jac,
            minv_jac: op.minv_jac().iter().flatten().map(|&v| v as f32).collect(),
            r: to_f32(&effective_r(sys, settings)),
            compliance: to_f32(sys.compliance()),
            gamma: to_f32(&gamma),
            eta,
        })
    }
}

impl JacobiData {
    /// The fewest bytes one Jacobi iteration moves through device memory: every buffer each
    /// of the two kernels reads, read once, and each output written once.
    pub fn bytes_per_iteration(&self) -> u64 {
        let bytes = |len: usize, size: usize| (len * size) as u64;
        let (f, u) = (4, 4);
        let w = bytes(6 * self.params.n_bodies as usize, f);
        let blocks = bytes(self.blocks.len(), std::mem::size_of::<GpuBlock>());
        let gamma = bytes(self.gamma.len(), f);
        let gather = bytes(self.links_ptr.len(), u)
            + bytes(self.links.len(), std::mem::size_of::<GpuLink>())
            + bytes(self.minv_jac.len(), f)
            + gamma
            + w;
        // The block kernel reads only the Jacobian rows that exist (as many as `minv_jac`
        // holds), not the zero padding of `jac`.
        let step = blocks
            + bytes(self.minv_jac.len(), f)
            + w
            + bytes(self.r.len() + self.compliance.len(), f)
            + 2 * gamma;
        gather + step
    }
}
