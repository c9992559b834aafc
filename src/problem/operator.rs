//! The Delassus operator `N` behind one trait, in its factored (matrix-free) and assembled
//! (explicit CSR) forms.
//!
//! Besides the product `y = N x`, the trait offers what a Gauss–Seidel sweep needs: an
//! auxiliary state (`w = M⁻¹ Jᵀ γ` in the factored form, nothing in the assembled one), the
//! product of one block row of `N` with `γ`, and the immediate update of the state after a
//! block changes (paper 001, Algorithm 4.1). Compliance is not part of the operator: the
//! [`super::System`] adds it.

use std::sync::Mutex;

use rayon::prelude::*;

use super::{BlockBodies, CsrMatrix, Factored};

/// `N = J M⁻¹ Jᵀ` (or an explicit `N`) on rows grouped in blocks of 1 to 3 rows.
pub trait DelassusOperator: Send + Sync {
    /// Number of rows (and columns) of `N`.
    fn rows(&self) -> usize;

    /// `y = N x`.
    fn apply(&self, x: &[f64], y: &mut [f64]);

    /// The diagonal block `N_kk`, `d × d` row-major, into `out[..d·d]`.
    fn diagonal_block(&self, k: usize, out: &mut [f64]);

    /// Length of the auxiliary state of a Gauss–Seidel sweep.
    fn aux_len(&self) -> usize;

    /// Sets the auxiliary state for impulses `gamma`.
    fn init_aux(&self, gamma: &[f64], aux: &mut [f64]);

    /// `out = (N γ)_k`, the rows of block `k`, from `gamma` and the auxiliary state.
    fn block_product(&self, k: usize, gamma: &[f64], aux: &[f64], out: &mut [f64]);

    /// Updates the auxiliary state after block `k` of `gamma` changed by `delta`.
    fn scatter(&self, k: usize, delta: &[f64], aux: &mut [f64]);

    /// The factored form, for the kernels that work on it directly (the GPU path); `None`
    /// for an explicit `N`.
    fn as_factored(&self) -> Option<&FactoredOperator> {
        None
    }

    /// The explicit matrix `N`, for the solvers that work on it directly (interior point,
    /// simplex, the GPU path); `None` for the factored form.
    fn as_matrix(&self) -> Option<&CsrMatrix> {
        None
    }

    /// The factored form by value (a time stepper reuses its memory for the next step);
    /// `None` for an explicit `N`.
    fn into_factored(self: Box<Self>) -> Option<FactoredOperator> {
        None
    }
}

/// Row offsets of the blocks: block `k` holds rows `offsets[k]..offsets[k + 1]`.
pub fn block_offsets(dims: impl IntoIterator<Item = usize>) -> Vec<usize> {
    let mut offsets = vec![0];
    for d in dims {
        offsets.push(offsets.last().copied().unwrap_or(0) + d);
    }
    offsets
}

/// The largest buffers of a [`FactoredOperator`] (its rows), kept from one time step to the
/// next. A clone is empty: the buffers are scratch memory, not state.
#[derive(Debug, Default)]
pub(crate) struct Storage {
    jac: Vec<[f64; 6]>,
    minv_jac: Vec<[f64; 6]>,
}

impl Clone for Storage {
    fn clone(&self) -> Self {
        Storage::default()
    }
}

/// The factored form: bodies with a diagonal `M⁻¹`, and per-block Jacobians.
///
/// Precomputes `s = M⁻¹ Jᵀ` row by row (the `s_i` of Algorithm 4.1) and a body → (block,
/// side) list, so that `M⁻¹ Jᵀ γ` is a gather per body with a fixed summation order: the
/// result is the same whatever the number of threads.
#[derive(Debug)]
pub struct FactoredOperator {
    offsets: Vec<usize>,
    /// Bodies of each block (1 or 2).
    block_bodies: Vec<BlockBodies>,
    /// First entry of each block in `jac`/`minv_jac`; block `k` has `d_k · bodies` rows.
    jac_start: Vec<usize>,
    jac: Vec<[f64; 6]>,
    minv_jac: Vec<[f64; 6]>,
    /// The diagonal of `M⁻¹`, 6 entries per body.
    inv_mass: Vec<[f64; 6]>,
    /// Block of each row.
    row_block: Vec<usize>,
    /// CSR over bodies of the (block, side) pairs acting on each body, in block order.
    links_ptr: Vec<usize>,
    links: Vec<(usize, usize)>,
    /// Body velocities of [`DelassusOperator::apply`], kept so that a product per iteration
    /// allocates nothing.
    scratch: Mutex<Vec<f64>>,
}

impl FactoredOperator {
    /// Builds the operator of a validated factored problem with the given block dimensions:
    /// linear in the size of the problem, the copies of the rows in parallel.
    pub fn new(f: &Factored, dims: &[usize]) -> Self {
        Self::new_in(f, dims, Storage::default())
    }

    /// [`FactoredOperator::new`] in the memory of `storage` (that of an operator of the same
    /// size or larger, from [`FactoredOperator::into_storage`]): a time stepper reuses the
    /// pages of the last step's rows instead of having fresh ones mapped and zeroed.
    pub(crate) fn new_in(f: &Factored, dims: &[usize], storage: Storage) -> Self {
        let Storage {
            mut jac,
            mut minv_jac,
        } = storage;
        let offsets = block_offsets(dims.iter().copied());
        let inv_mass: Vec<[f64; 6]> = f.bodies.par_iter().map(|b| b.inv_mass()).collect();
        let jac_start = block_offsets(f.jacobians.iter().map(|j| j.rows.len()));
        let rows = jac_start[f.jacobians.len()];
        jac.clear();
        jac.resize(rows, [0.0; 6]);
        fill_by_blocks(&mut jac, &jac_start, |k, out| {
            out.copy_from_slice(&f.jacobians[k].rows);
        });
        minv_jac.clear();
        minv_jac.resize(rows, [0.0; 6]);
        fill_by_blocks(&mut minv_jac, &jac_start, |k, out| {
            let block = &f.jacobians[k];
            let d = dims[k];
            for (s, &body) in block.bodies.iter().enumerate() {
                let im = &inv_mass[body];
                for (o, row) in out[s * d..(s + 1) * d].iter_mut().zip(&block.rows[s * d..]) {
                    *o = std::array::from_fn(|c| im[c] * row[c]);
                }
            }
        });
        let mut row_block = vec![0; offsets[dims.len()]];
        fill_by_blocks(&mut row_block, &offsets, |k, out| out.fill(k));
        // The (block, side) pairs of each body: a counting sort by body, in block order.
        let mut links_ptr = vec![0usize; f.bodies.len() + 1];
        for block in &f.jacobians {
            for &body in &block.bodies {
                links_ptr[body + 1] += 1;
            }
        }
        for i in 0..f.bodies.len() {
            links_ptr[i + 1] += links_ptr[i];
        }
        let mut fill = links_ptr.clone();
        let mut links = vec![(0, 0); links_ptr[f.bodies.len()]];
        for (k, block) in f.jacobians.iter().enumerate() {
            for (s, &body) in block.bodies.iter().enumerate() {
                links[fill[body]] = (k, s);
                fill[body] += 1;
            }
        }
        FactoredOperator {
            offsets,
            block_bodies: f.jacobians.par_iter().map(|j| j.bodies.clone()).collect(),
            jac_start,
            jac,
            minv_jac,
            inv_mass,
            row_block,
            scratch: Mutex::new(vec![0.0; 6 * f.bodies.len()]),
            links_ptr,
            links,
        }
    }

    /// The memory of the rows, for [`FactoredOperator::new_in`].
    pub(crate) fn into_storage(self) -> Storage {
        Storage {
            jac: self.jac,
            minv_jac: self.minv_jac,
        }
    }

    fn dim(&self, k: usize) -> usize {
        self.offsets[k + 1] - self.offsets[k]
    }

    /// Rows of block `k` for its body on side `s`, in `table` (`jac` or `minv_jac`).
    fn side_rows<'a>(&self, table: &'a [[f64; 6]], k: usize, s: usize) -> &'a [[f64; 6]] {
        let d = self.dim(k);
        let start = self.jac_start[k] + s * d;
        &table[start..start + d]
    }

    /// The diagonal of `M⁻¹` of each body.
    pub fn inv_mass(&self) -> &[[f64; 6]] {
        &self.inv_mass
    }

    /// Number of dynamic bodies.
    pub fn bodies(&self) -> usize {
        self.links_ptr.len() - 1
    }

    /// Row offsets of the blocks: block `k` holds rows `offsets[k]..offsets[k + 1]`.
    pub fn offsets(&self) -> &[usize] {
        &self.offsets
    }

    /// The bodies of block `k` (1 or 2), side by side.
    pub fn block_bodies(&self, k: usize) -> &[usize] {
        &self.block_bodies[k]
    }

    /// First entry of each block in [`Self::jac`] and [`Self::minv_jac`]: block `k` has
    /// `d_k` rows per body, side by side.
    pub fn jac_start(&self) -> &[usize] {
        &self.jac_start
    }

    /// The Jacobian rows of every block, block by block, side by side.
    pub fn jac(&self) -> &[[f64; 6]] {
        &self.jac
    }

    /// The rows of `M⁻¹ Jᵀ` (transposed: one row of 6 per Jacobian row), same layout as
    /// [`Self::jac`].
    pub fn minv_jac(&self) -> &[[f64; 6]] {
        &self.minv_jac
    }

    /// CSR over bodies of the `(block, side)` pairs acting on each body, in block order:
    /// body `i` has `links()[links_ptr()[i]..links_ptr()[i + 1]]`.
    pub fn links_ptr(&self) -> &[usize] {
        &self.links_ptr
    }

    /// The `(block, side)` pairs of [`Self::links_ptr`].
    pub fn links(&self) -> &[(usize, usize)] {
        &self.links
    }

    /// The explicit `N = J M⁻¹ Jᵀ` in CSR: for each body, the product of every pair of blocks
    /// acting on it, `N_kl += J_k,s (M⁻¹ J_l,t)ᵀ`, summed over the shared bodies (for export
    /// to formats that store `N`, such as FCLIB's local problem).
    pub fn assemble(&self) -> CsrMatrix {
        let mut triplets = Vec::new();
        for body in 0..self.bodies() {
            let links = &self.links[self.links_ptr[body]..self.links_ptr[body + 1]];
            for &(k, s) in links {
                for &(l, t) in links {
                    let rows = self.side_rows(&self.jac, k, s);
                    let cols = self.side_rows(&self.minv_jac, l, t);
                    for (a, ra) in rows.iter().enumerate() {
                        for (c, rc) in cols.iter().enumerate() {
                            let v = dot6(ra, rc);
                            triplets.push((self.offsets[k] + a, self.offsets[l] + c, v));
                        }
                    }
                }
            }
        }
        let m = self.rows();
        CsrMatrix::from_triplets(m, m, &triplets).expect("block rows are in range")
    }

    /// `w = M⁻¹ Jᵀ γ`, 6 entries per body, bodies in parallel.
    pub fn impulse_to_velocity(&self, gamma: &[f64], w: &mut [f64]) {
        w.par_chunks_mut(6)
            .with_min_len(crate::PAR_MIN_ITEMS)
            .enumerate()
            .for_each(|(body, wb)| {
                wb.fill(0.0);
                for &(k, s) in &self.links[self.links_ptr[body]..self.links_ptr[body + 1]] {
                    let g = &gamma[self.offsets[k]..self.offsets[k + 1]];
                    for (row, gr) in self.side_rows(&self.minv_jac, k, s).iter().zip(g) {
                        for c in 0..6 {
                            wb[c] += row[c] * gr;
                        }
                    }
                }
            });
    }

    /// `(J w)_i` for one row `i`.
    fn row_times_velocity(&self, i: usize, w: &[f64]) -> f64 {
        let k = self.row_block[i];
        let r = i - self.offsets[k];
        self.block_bodies[k]
            .iter()
            .enumerate()
            .map(|(s, &body)| dot6(&self.side_rows(&self.jac, k, s)[r], &w[6 * body..]))
            .sum()
    }

    /// `y = J w`, rows in parallel.
    pub fn velocity_to_rows(&self, w: &[f64], y: &mut [f64]) {
        y.par_iter_mut()
            .with_min_len(crate::PAR_MIN_ITEMS)
            .enumerate()
            .for_each(|(i, yi)| *yi = self.row_times_velocity(i, w));
    }
}

/// Fills `out` in parallel, block by block: block `k` owns `out[start[k]..start[k + 1]]`
/// and `fill(k, part)` writes it. Runs of consecutive blocks go to the threads, so the
/// result does not depend on their number.
fn fill_by_blocks<T: Send>(out: &mut [T], start: &[usize], fill: impl Fn(usize, &mut [T]) + Sync) {
    /// Blocks per run: enough to amortize a task, few enough to balance the threads.
    const RUN: usize = 4096;
    let blocks = start.len() - 1;
    let mut runs = Vec::with_capacity(blocks.div_ceil(RUN));
    let mut rest = out;
    for first in (0..blocks).step_by(RUN) {
        let last = (first + RUN).min(blocks);
        let (part, tail) = rest.split_at_mut(start[last] - start[first]);
        runs.push((first..last, part));
        rest = tail;
    }
    runs.into_par_iter().for_each(|(run, part)| {
        let base = start[run.start];
        for k in run {
            fill(k, &mut part[start[k] - base..start[k + 1] - base]);
        }
    });
}

fn dot6(a: &[f64; 6], b: &[f64]) -> f64 {
    (0..6).map(|c| a[c] * b[c]).sum()
}

impl DelassusOperator for FactoredOperator {
    fn rows(&self) -> usize {
        self.row_block.len()
    }

    fn apply(&self, x: &[f64], y: &mut [f64]) {
        let mut w = self.scratch.lock().unwrap_or_else(|e| e.into_inner());
        self.impulse_to_velocity(x, &mut w);
        self.velocity_to_rows(&w, y);
    }

    fn diagonal_block(&self, k: usize, out: &mut [f64]) {
        let d = self.dim(k);
        out[..d * d].fill(0.0);
        for s in 0..self.block_bodies[k].len() {
            let j = self.side_rows(&self.jac, k, s);
            let mj = self.side_rows(&self.minv_jac, k, s);
            for a in 0..d {
                for b in 0..d {
                    out[a * d + b] += dot6(&j[a], &mj[b]);
                }
            }
        }
    }

    fn aux_len(&self) -> usize {
        6 * (self.links_ptr.len() - 1)
    }

    fn init_aux(&self, gamma: &[f64], aux: &mut [f64]) {
        self.impulse_to_velocity(gamma, aux);
    }

    fn block_product(&self, k: usize, _gamma: &[f64], aux: &[f64], out: &mut [f64]) {
        for (r, o) in out[..self.dim(k)].iter_mut().enumerate() {
            *o = self.row_times_velocity(self.offsets[k] + r, aux);
        }
    }

    fn as_factored(&self) -> Option<&FactoredOperator> {
        Some(self)
    }

    fn into_factored(self: Box<Self>) -> Option<FactoredOperator> {
        Some(*self)
    }

    fn scatter(&self, k: usize, delta: &[f64], aux: &mut [f64]) {
        for (s, &body) in self.block_bodies[k].iter().enumerate() {
            for (row, dr) in self.side_rows(&self.minv_jac, k, s).iter().zip(delta) {
                for c in 0..6 {
                    aux[6 * body + c] += row[c] * dr;
                }
            }
        }
    }
}

/// An explicit `N` in CSR storage.
#[derive(Debug, Clone)]
pub struct AssembledOperator {
    n: CsrMatrix,
    offsets: Vec<usize>,
}

impl AssembledOperator {
    /// Wraps a validated square matrix whose rows are grouped by `dims`.
    pub fn new(n: CsrMatrix, dims: &[usize]) -> Self {
        AssembledOperator {
            n,
            offsets: block_offsets(dims.iter().copied()),
        }
    }

    /// The matrix.
    pub fn matrix(&self) -> &CsrMatrix {
        &self.n
    }
}

impl DelassusOperator for AssembledOperator {
    fn rows(&self) -> usize {
        self.n.nrows
    }

    fn apply(&self, x: &[f64], y: &mut [f64]) {
        self.n.mul_vec(x, y);
    }

    fn diagonal_block(&self, k: usize, out: &mut [f64]) {
        let (o, d) = (self.offsets[k], self.offsets[k + 1] - self.offsets[k]);
        for a in 0..d {
            for b in 0..d {
                out[a * d + b] = self.n.get(o + a, o + b);
            }
        }
    }

    fn aux_len(&self) -> usize {
        0
    }

    fn init_aux(&self, _gamma: &[f64], _aux: &mut [f64]) {}

    fn block_product(&self, k: usize, gamma: &[f64], _aux: &[f64], out: &mut [f64]) {
        for (r, i) in (self.offsets[k]..self.offsets[k + 1]).enumerate() {
            out[r] = self.n.row_dot(i, gamma);
        }
    }

    fn scatter(&self, _k: usize, _delta: &[f64], _aux: &mut [f64]) {}

    fn as_matrix(&self) -> Option<&CsrMatrix> {
        Some(&self.n)
    }
}
