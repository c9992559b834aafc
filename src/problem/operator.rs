//! The Delassus operator `N` behind one trait, in its factored (matrix-free) and assembled
//! (explicit CSR) forms.
//!
//! Besides the product `y = N x`, the trait offers what a Gauss–Seidel sweep needs: an
//! auxiliary state (`w = M⁻¹ Jᵀ γ` in the factored form, nothing in the assembled one), the
//! product of one block row of `N` with `γ`, and the immediate update of the state after a
//! block changes (paper 001, Algorithm 4.1). Compliance is not part of the operator: the
//! [`super::System`] adds it.

use std::mem::take;
use std::ops::Range;
use std::sync::Mutex;

use rayon::prelude::*;

use super::{BlockBodies, Cone, CsrMatrix, Factored, JacobianBlock};

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
    let mut offsets = Vec::new();
    offsets_into(&mut offsets, dims);
    offsets
}

/// [`block_offsets`] in the memory of `out` (cleared first).
fn offsets_into(out: &mut Vec<usize>, dims: impl IntoIterator<Item = usize>) {
    out.clear();
    out.push(0);
    let mut at = 0;
    out.extend(dims.into_iter().map(|d| {
        at += d;
        at
    }));
}

/// The buffers of a [`FactoredOperator`] and of the [`super::System`] around it, kept from
/// one time step to the next so that a step maps and zeroes no fresh pages. A clone is
/// empty: the buffers are scratch memory, not state.
#[derive(Debug, Default)]
pub(crate) struct Storage {
    offsets: Vec<usize>,
    block_bodies: Vec<BlockBodies>,
    jac_start: Vec<usize>,
    jac: Vec<[f64; 6]>,
    minv_jac: Vec<[f64; 6]>,
    links_ptr: Vec<usize>,
    links: Vec<(usize, usize)>,
    scratch: Vec<f64>,
    inv_mass: Vec<[f64; 6]>,
    /// The system's `r = J v_free + b`.
    pub(super) r: Vec<f64>,
    /// The system's compliance, one entry per row.
    pub(super) compliance: Vec<f64>,
    /// The system's cones.
    pub(super) cones: Vec<Cone>,
    /// The system's free velocities.
    pub(super) v_free: Vec<f64>,
    /// The system's copy of the block offsets.
    pub(super) system_offsets: Vec<usize>,
}

impl Storage {
    /// The memory of the last system's cones, emptied.
    pub(crate) fn take_cones(&mut self) -> Vec<Cone> {
        let mut cones = take(&mut self.cones);
        cones.clear();
        cones
    }

    /// The memory of the last system's free velocities, emptied.
    pub(crate) fn take_v_free(&mut self) -> Vec<f64> {
        let mut v_free = take(&mut self.v_free);
        v_free.clear();
        v_free
    }
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
        Self::new_in(f, dims, None, &mut Storage::default()).0
    }

    /// [`FactoredOperator::new`] in the memory of `storage` (see [`Self::build_in`]); also
    /// returns the problem's `b`, or `r = J v + b` with `velocity` `v`.
    pub(crate) fn new_in(
        f: &Factored,
        dims: &[usize],
        velocity: Option<&[f64]>,
        storage: &mut Storage,
    ) -> (Self, Vec<f64>) {
        let offsets = block_offsets(dims.iter().copied());
        Self::build_in(
            f.bodies.par_iter().map(|b| b.inv_mass()),
            dims,
            |k| f.jacobians[k].bodies.clone(),
            |k, rows, b| {
                rows.copy_from_slice(&f.jacobians[k].rows);
                b.copy_from_slice(&f.b[offsets[k]..offsets[k + 1]]);
            },
            velocity,
            storage,
        )
    }

    /// Builds the operator of blocks of dimensions `dims` on bodies with the diagonal
    /// `inv_mass` of `M⁻¹`: block `k` acts on bodies `bodies_of(k)` (1 or 2, distinct, in
    /// range), and `fill(k, rows, b)` writes its `d_k · bodies` Jacobian rows (body by body,
    /// as [`super::JacobianBlock::rows`]) and its `d_k` entries of the bias `b`, which comes
    /// back beside the operator; it must write every one of them (the buffers hold the last
    /// operator's values). With `velocity` `v` (6 per body), `r = J v + b` comes back
    /// instead of `b`, each block's rows times `v` added while they are in cache. The blocks
    /// are written in parallel, each block's rows of `M⁻¹ Jᵀ` right after its rows of `J`;
    /// the buffers are taken from `storage` (that of an earlier operator, from
    /// [`Self::into_storage`]) so that a time stepper reuses the pages of the last step
    /// instead of having fresh ones mapped and zeroed.
    pub(crate) fn build_in(
        inv_mass: impl IndexedParallelIterator<Item = [f64; 6]>,
        dims: &[usize],
        bodies_of: impl Fn(usize) -> BlockBodies + Sync,
        fill: impl Fn(usize, &mut [[f64; 6]], &mut [f64]) + Sync,
        velocity: Option<&[f64]>,
        storage: &mut Storage,
    ) -> (Self, Vec<f64>) {
        let mut masses = take(&mut storage.inv_mass);
        masses.clear();
        masses.par_extend(inv_mass);
        let inv_mass = masses;
        let mut offsets = take(&mut storage.offsets);
        let mut block_bodies = take(&mut storage.block_bodies);
        let mut jac_start = take(&mut storage.jac_start);
        let mut jac = take(&mut storage.jac);
        let mut minv_jac = take(&mut storage.minv_jac);
        let mut links_ptr = take(&mut storage.links_ptr);
        let mut links = take(&mut storage.links);
        let mut scratch = take(&mut storage.scratch);
        let mut b = take(&mut storage.r);
        offsets_into(&mut offsets, dims.iter().copied());
        block_bodies.clear();
        block_bodies.par_extend((0..dims.len()).into_par_iter().map(&bodies_of));
        offsets_into(
            &mut jac_start,
            dims.iter().zip(&block_bodies).map(|(d, bb)| d * bb.len()),
        );
        let rows = jac_start[dims.len()];
        let m = offsets[dims.len()];
        // `fill` and the pass below write every entry: the buffers are only resized, so that
        // the last step's values are overwritten instead of zeroed first.
        jac.resize(rows, [0.0; 6]);
        minv_jac.resize(rows, [0.0; 6]);
        b.resize(m, 0.0);
        let parts = block_runs(&jac_start, &mut jac)
            .into_iter()
            .zip(block_runs(&jac_start, &mut minv_jac))
            .zip(block_runs(&offsets, &mut b));
        parts.collect::<Vec<_>>().into_par_iter().for_each(
            |(((run, jac), (_, minv_jac)), (_, b))| {
                let (base, row_base) = (jac_start[run.start], offsets[run.start]);
                for k in run {
                    let (start, end) = (jac_start[k] - base, jac_start[k + 1] - base);
                    let j = &mut jac[start..end];
                    fill(
                        k,
                        j,
                        &mut b[offsets[k] - row_base..offsets[k + 1] - row_base],
                    );
                    let d = dims[k];
                    for (s, &body) in block_bodies[k].iter().enumerate() {
                        let im = &inv_mass[body];
                        let side = s * d..(s + 1) * d;
                        for (o, row) in minv_jac[start..end][side.clone()].iter_mut().zip(&j[side])
                        {
                            *o = std::array::from_fn(|c| im[c] * row[c]);
                        }
                    }
                    if let Some(v) = velocity {
                        let rows = &mut b[offsets[k] - row_base..offsets[k + 1] - row_base];
                        for (r, ri) in rows.iter_mut().enumerate() {
                            *ri += row_times_velocity(&block_bodies[k], j, d, r, v);
                        }
                    }
                }
            },
        );
        // The (block, side) pairs of each body: a counting sort by body, in block order
        // (counts shifted by one place so that the cursors of the placement end as the
        // ends of the bodies' lists).
        let nb = inv_mass.len();
        links_ptr.clear();
        links_ptr.resize(nb + 2, 0);
        for bodies in &block_bodies {
            for &body in bodies {
                links_ptr[body + 2] += 1;
            }
        }
        for i in 0..nb {
            links_ptr[i + 2] += links_ptr[i + 1];
        }
        links.resize(links_ptr[nb + 1], (0, 0));
        for (k, bodies) in block_bodies.iter().enumerate() {
            for (s, &body) in bodies.iter().enumerate() {
                links[links_ptr[body + 1]] = (k, s);
                links_ptr[body + 1] += 1;
            }
        }
        links_ptr.pop();
        // Each product zeroes it first.
        scratch.resize(6 * nb, 0.0);
        let op = FactoredOperator {
            offsets,
            block_bodies,
            jac_start,
            jac,
            minv_jac,
            inv_mass,
            scratch: Mutex::new(scratch),
            links_ptr,
            links,
        };
        (op, b)
    }

    /// The Jacobian blocks of the operator, block by block (what a [`Factored`] problem
    /// holds).
    pub fn jacobian_blocks(&self) -> Vec<JacobianBlock> {
        (0..self.block_bodies.len())
            .into_par_iter()
            .map(|k| JacobianBlock {
                bodies: self.block_bodies[k].clone(),
                rows: self.jac[self.jac_start[k]..self.jac_start[k + 1]].into(),
            })
            .collect()
    }

    /// The memory of the operator, for [`FactoredOperator::build_in`].
    pub(crate) fn into_storage(self) -> Storage {
        Storage {
            offsets: self.offsets,
            block_bodies: self.block_bodies,
            jac_start: self.jac_start,
            jac: self.jac,
            minv_jac: self.minv_jac,
            links_ptr: self.links_ptr,
            links: self.links,
            scratch: self.scratch.into_inner().unwrap_or_else(|e| e.into_inner()),
            inv_mass: self.inv_mass,
            ..Storage::default()
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

    /// `(J w)` for row `r` of block `k`.
    fn block_row_times_velocity(&self, k: usize, r: usize, w: &[f64]) -> f64 {
        let rows = &self.jac[self.jac_start[k]..self.jac_start[k + 1]];
        row_times_velocity(&self.block_bodies[k], rows, self.dim(k), r, w)
    }

    /// `y = J w`, runs of blocks in parallel.
    pub fn velocity_to_rows(&self, w: &[f64], y: &mut [f64]) {
        block_runs(&self.offsets, y)
            .into_par_iter()
            .for_each(|(run, part)| {
                let base = self.offsets[run.start];
                for k in run {
                    let rows = &mut part[self.offsets[k] - base..self.offsets[k + 1] - base];
                    for (r, yi) in rows.iter_mut().enumerate() {
                        *yi = self.block_row_times_velocity(k, r, w);
                    }
                }
            });
    }
}

/// `out` cut into runs of consecutive blocks for the threads: block `k` owns
/// `out[start[k]..start[k + 1]]`, and each run comes with its blocks and its part. The runs
/// do not depend on the number of threads, so neither does what is written in them.
fn block_runs<'a, T>(start: &[usize], out: &'a mut [T]) -> Vec<(Range<usize>, &'a mut [T])> {
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
    runs
}

fn dot6(a: &[f64; 6], b: &[f64]) -> f64 {
    (0..6).map(|c| a[c] * b[c]).sum()
}

/// `(J w)` for row `r` of a block on `bodies` whose rows are `rows`, `d` per body.
fn row_times_velocity(bodies: &[usize], rows: &[[f64; 6]], d: usize, r: usize, w: &[f64]) -> f64 {
    bodies
        .iter()
        .enumerate()
        .map(|(s, &body)| dot6(&rows[s * d + r], &w[6 * body..]))
        .sum()
}

impl DelassusOperator for FactoredOperator {
    fn rows(&self) -> usize {
        self.offsets.last().copied().unwrap_or(0)
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
            *o = self.block_row_times_velocity(k, r, aux);
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
