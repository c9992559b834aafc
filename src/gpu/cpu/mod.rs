//! CPU mirrors of the kernels of `shaders/`, one module per family: the same `f32`
//! operations in the same order. Each mirror takes one argument per binding, in binding order
//! (uniforms and read structs by reference, read arrays as slices, written buffers mutably);
//! [`super::kernels`] registers it with its kernel behind the common signature
//! [`super::kernels::Mirror`] over [`Bindings`], so that the parity test runs every
//! registered kernel against its mirror in one loop.

mod apgd;
mod jacobi;
mod measure;
mod operator;
mod reduce;
mod spg;
mod step;

pub use apgd::{apgd_curvature, apgd_scalars, apgd_trial, apgd_update};
pub use jacobi::jacobi_step;
pub use measure::{copy_if, measure, residual};
pub use operator::{block_steps, csr_rows, factored_bodies, factored_rows, max_eigenvalue};
pub use reduce::{reduce, workgroup_tree};
pub use spg::{spg_curvature, spg_direction, spg_scalars, spg_update};
pub use step::{
    step_apgd_start, step_block, step_blocks, step_contact_rows, step_coulomb, step_gate,
    step_gather, step_grid, step_integrate, step_jacobi, step_jacobi_next, step_keep,
    step_link_keys, step_narrow, step_precond, step_residual, step_rows, step_scan_add,
    step_scan_local, step_scan_totals, step_solver_params, step_sort_count, step_sort_scatter,
    step_sort_segments, step_stats, step_warm_start,
};

use super::data::{CONE_COULOMB, CONE_UNILATERAL, GpuBlock};
use super::kernels::{Access, Binding, Kernel};
use crate::error::Result;

/// The contents of a kernel's bindings, in binding order, as a mirror reads and writes them.
#[derive(Debug, Clone)]
pub struct Bindings {
    bindings: &'static [Binding],
    contents: Vec<Vec<u8>>,
}

impl Bindings {
    /// The contents of `name`, as elements of `T` (zero-padded to a whole element).
    ///
    /// # Panics
    /// When the kernel has no binding `name` (the registry's mirrors only ask for theirs).
    pub fn get<T: bytemuck::Pod>(&self, name: &str) -> Vec<T> {
        bytemuck::pod_collect_to_vec(&self.contents[self.position(name)])
    }

    /// Replaces the contents of `name` when the kernel writes it (its length is kept).
    pub fn set<T: bytemuck::Pod>(&mut self, name: &str, values: &[T]) {
        let i = self.position(name);
        if self.bindings[i].access == Access::Write {
            let out = &mut self.contents[i];
            let len = out.len();
            out.copy_from_slice(&bytemuck::cast_slice(values)[..len]);
        }
    }

    fn position(&self, name: &str) -> usize {
        self.bindings
            .iter()
            .position(|b| b.name == name)
            .unwrap_or_else(|| panic!("no binding `{name}`"))
    }
}

impl Kernel {
    /// Runs the kernel's CPU mirror on the given binding contents (in binding order) and
    /// returns the contents of every binding after it, as [`super::dispatch_once`] does on
    /// the device.
    pub fn mirror_once(&self, contents: &[&[u8]]) -> Result<Vec<Vec<u8>>> {
        self.check_bindings(contents.len())?;
        let mut bindings = Bindings {
            bindings: self.bindings,
            contents: contents.iter().map(|c| c.to_vec()).collect(),
        };
        (self.mirror)(&mut bindings);
        Ok(bindings.contents)
    }
}

/// `project` of `shaders/common.wgsl`: the projection on the cone of a block.
pub fn project(kind: u32, mu: f32, v: [f32; 3]) -> [f32; 3] {
    let mut x = v;
    if kind == CONE_UNILATERAL {
        x[0] = x[0].max(0.0);
    } else if kind == CONE_COULOMB {
        let (a, n) = (mu, x[0]);
        let s = (x[1] * x[1] + x[2] * x[2]).sqrt();
        if s <= a * n && n >= 0.0 {
            // Inside the cone.
        } else if a * s <= -n {
            x = [0.0; 3];
        } else {
            let n_new = (a * s + n) / (1.0 + a * a);
            let scale = a * n_new / s;
            x = [n_new, x[1] * scale, x[2] * scale];
        }
    }
    x
}

/// `projected_move` of `shaders/common.wgsl`: `Π_K(x + s) − x`, exactly `s` or `−x` where
/// the projection is the identity or zero (a unilateral block of 3 rows, `ℝ₊ × ℝ²`, clamps
/// its first row only).
pub fn projected_move(kind: u32, mu: f32, x: [f32; 3], s: [f32; 3]) -> [f32; 3] {
    let v: [f32; 3] = std::array::from_fn(|i| x[i] + s[i]);
    let neg = x.map(|xi| -xi);
    if kind == CONE_UNILATERAL {
        return if v[0] >= 0.0 { s } else { [-x[0], s[1], s[2]] };
    }
    if kind == CONE_COULOMB {
        let (a, n) = (mu, v[0]);
        let t = (v[1] * v[1] + v[2] * v[2]).sqrt();
        if t <= a * n && n >= 0.0 {
            return s;
        }
        if a * t <= -n {
            return neg;
        }
        let p = project(kind, mu, v);
        return std::array::from_fn(|i| p[i] - x[i]);
    }
    s
}

/// `model_velocity` of `shaders/common.wgsl`: the De Saxcé shift under the Coulomb model.
pub fn model_velocity(b: &GpuBlock, coulomb: u32, u: [f32; 3]) -> [f32; 3] {
    let mut v = u;
    if coulomb == 1 && b.kind == CONE_COULOMB {
        v[0] += b.mu * (v[1] * v[1] + v[2] * v[2]).sqrt();
    }
    v
}

pub(super) fn load(v: &[f32], b: &GpuBlock) -> [f32; 3] {
    let mut out = [0.0; 3];
    for (i, o) in out.iter_mut().enumerate().take(b.dim as usize) {
        *o = v[b.row as usize + i];
    }
    out
}
