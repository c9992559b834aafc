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
use std::sync::{Mutex, OnceLock};

use rayon::prelude::*;

use super::{BlockBodies, Cone, CsrMatrix, Factored, JacobianBlock};
use crate::par::{grow_for_overwrite, split_by, starts};

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
/// Stores the rows of `J` and a body → (block, side) list, so that `M⁻¹ Jᵀ γ` is a gather
/// per body with a fixed summation order: the result is the same whatever the number of
/// threads. The rows of `s = M⁻¹ Jᵀ` (the `s_i` of Algorithm 4.1) are the rows of `J`
/// scaled by the body's diagonal `M⁻¹`: the products form them on the fly (the bytes of a
/// stored copy would cost more to write each time step than the multiplications), and
/// [`Self::minv_jac`] stores them only when a consumer asks for the table.
#[derive(Debug)]
pub struct FactoredOperator {
    offsets: Vec<usize>,
    /// Bodies of each block (1 or 2).
    block_bodies: Vec<BlockBodies>,
    /// First entry of each block in `jac`; block `k` has `d_k · bodies` rows.
    jac_start: Vec<usize>,
    jac: Vec<[f64; 6]>,
    /// The rows of `M⁻¹ Jᵀ`, formed on the first call of [`Self::minv_jac`].
    minv_jac: OnceLock<Vec<[f64; 6]>>,
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
    /// instead of `b`, each block's rows times `v` added while they are in cache. Two
    /// parallel passes over fixed runs of blocks: the blocks' bodies and the runs' sizes,
    /// then each run's offsets and rows (the body → block links counted on one thread
    /// beside it); the buffers are taken from `storage` (that of an earlier operator, from
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
        let mut inv_mass_out = take(&mut storage.inv_mass);
        inv_mass_out.clear();
        inv_mass_out.par_extend(inv_mass);
        let inv_mass = inv_mass_out;
        let mut offsets = take(&mut storage.offsets);
        let mut bodies_vec = take(&mut storage.block_bodies);
        let mut jac_start = take(&mut storage.jac_start);
        let mut jac = take(&mut storage.jac);
        let mut links_ptr = take(&mut storage.links_ptr);
        let mut links = take(&mut storage.links);
        let mut scratch = take(&mut storage.scratch);
        let mut b = take(&mut storage.r);
        let n = dims.len();
        // Every buffer is only resized, never cleared: the passes below overwrite each entry,
        // so the last step's pages are reused instead of zeroed first.
        bodies_vec.resize(n, BlockBodies::new());
        // Each run's blocks' bodies, and the run's rows and Jacobian rows.
        let sizes: Vec<(usize, usize)> = bodies_vec
            .par_chunks_mut(RUN)
            .enumerate()
            .map(|(r, part)| {
                let first = r * RUN;
                part.iter_mut()
                    .enumerate()
                    .fold((0, 0), |(m, rows), (i, bodies)| {
                        *bodies = bodies_of(first + i);
                        let d = dims[first + i];
                        (m + d, rows + d * bodies.len())
                    })
            })
            .collect();
        // The runs' first row and first Jacobian row, and the totals.
        let (row_starts, m) = starts(sizes.iter().map(|s| s.0));
        let (jac_starts, rows) = starts(sizes.iter().map(|s| s.1));
        offsets.resize(n + 1, 0);
        jac_start.resize(n + 1, 0);
        grow_for_overwrite(&mut jac, rows, [0.0; 6]);
        grow_for_overwrite(&mut b, m, 0.0);
        let nb = inv_mass.len();
        let block_bodies = &bodies_vec[..];
        let fill_runs = || {
            let row_parts = split_by(&mut b, sizes.iter().map(|s| s.0));
            let jac_parts = split_by(&mut jac, sizes.iter().map(|s| s.1));
            let offset_parts = offsets[1..]
                .chunks_mut(RUN)
                .zip(jac_start[1..].chunks_mut(RUN));
            let runs: Vec<_> = offset_parts
                .zip(row_parts.into_iter().zip(jac_parts))
                .collect();
            runs.into_par_iter()
                .zip(row_starts.par_iter().zip(&jac_starts))
                .enumerate()
                .for_each(|(r, (((offsets, jac_start), (b, jac)), (&m0, &r0)))| {
                    let first = r * RUN;
                    let (mut at, mut row_at) = (0, 0);
                    for (i, (o, js)) in offsets.iter_mut().zip(jac_start).enumerate() {
                        let (k, d) = (first + i, dims[first + i]);
                        let bodies = &block_bodies[k];
                        let (j, bk) = (
                            &mut jac[row_at..row_at + d * bodies.len()],
                            &mut b[at..at + d],
                        );
                        fill(k, j, bk);
                        if let Some(v) = velocity {
                            for (r, ri) in bk.iter_mut().enumerate() {
                                *ri += row_times_velocity(bodies, j, d, r, v);
                            }
                        }
                        at += d;
                        row_at += j.len();
                        (*o, *js) = (m0 + at, r0 + row_at);
                    }
                });
        };
        // The links need only the blocks' bodies: built on one thread while the others fill
        // the rows.
        rayon::join(fill_runs, || {
            body_links(block_bodies, nb, &mut links_ptr, &mut links);
        });
        (offsets[0], jac_start[0]) = (0, 0);
        // Each product zeroes it first.
        scratch.resize(6 * nb, 0.0);
        let op = FactoredOperator {
            offsets,
            block_bodies: bodies_vec,
            jac_start,
            jac,
            minv_jac: OnceLock::new(),
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

    /// Jacobian rows of block `k` for its body on side `s`.
    fn side_rows(&self, k: usize, s: usize) -> &[[f64; 6]] {
        let d = self.dim(k);
        let start = self.jac_start[k] + s * d;
        &self.jac[start..start + d]
    }

    /// Row `row` of `J` for `body` scaled by its diagonal `M⁻¹`: a row of `M⁻¹ Jᵀ`.
    fn scaled(&self, body: usize, row: &[f64; 6]) -> [f64; 6] {
        let im = &self.inv_mass[body];
        std::array::from_fn(|c| im[c] * row[c])
    }

    /// Rows of `M⁻¹ Jᵀ` of block `k` for its body on side `s` (up to 3; the first `d_k`).
    fn minv_side(&self, k: usize, s: usize) -> [[f64; 6]; 3] {
        let body = self.block_bodies[k][s];
        let mut out = [[0.0; 6]; 3];
        for (o, row) in out.iter_mut().zip(self.side_rows(k, s)) {
            *o = self.scaled(body, row);
        }
        out
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
    /// [`Self::jac`]: formed in parallel on the first call (the operator's own products
    /// form them on the fly).
    pub fn minv_jac(&self) -> &[[f64; 6]] {
        self.minv_jac.get_or_init(|| {
            let mut out = vec![[0.0; 6]; self.jac.len()];
            block_runs(&self.jac_start, &mut out)
                .into_par_iter()
                .for_each(|(run, part)| {
                    let base = self.jac_start[run.start];
                    for k in run {
                        let mut at = self.jac_start[k] - base;
                        for (s, &body) in self.block_bodies[k].iter().enumerate() {
                            for row in self.side_rows(k, s) {
                                part[at] = self.scaled(body, row);
                                at += 1;
                            }
                        }
                    }
                });
            out
        })
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
                    let rows = self.side_rows(k, s);
                    let cols = self.minv_side(l, t);
                    for (a, ra) in rows.iter().enumerate() {
                        for (c, rc) in cols[..self.dim(l)].iter().enumerate() {
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
                let im = &self.inv_mass[body];
                for &(k, s) in &self.links[self.links_ptr[body]..self.links_ptr[body + 1]] {
                    let g = &gamma[self.offsets[k]..self.offsets[k + 1]];
                    for (row, gr) in self.side_rows(k, s).iter().zip(g) {
                        for c in 0..6 {
                            // The row of M⁻¹ Jᵀ, im · row, formed as `scaled` forms it.
                            wb[c] += im[c] * row[c] * gr;
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

/// Blocks per run of the parallel passes: enough to amortize a task, few enough to balance
/// the threads. The runs do not depend on the number of threads, so neither does what is
/// written in them.
const RUN: usize = 4096;

/// `out` cut into runs of [`RUN`] consecutive blocks for the threads: block `k` owns
/// `out[start[k]..start[k + 1]]`, and each run comes with its blocks and its part.
fn block_runs<'a, T>(start: &[usize], out: &'a mut [T]) -> Vec<(Range<usize>, &'a mut [T])> {
    let blocks = start.len() - 1;
    let lengths = (0..blocks)
        .step_by(RUN)
        .map(|first| start[(first + RUN).min(blocks)] - start[first]);
    let ranges = (0..blocks)
        .step_by(RUN)
        .map(|first| first..(first + RUN).min(blocks));
    ranges.zip(split_by(out, lengths)).collect()
}

/// The `(block, side)` pairs acting on each of `nb` bodies, in block order, as CSR into
/// `links_ptr` and `links`: a counting sort by body (counts shifted by one place, so that
/// the cursors of the placement end as the ends of the bodies' lists).
fn body_links(
    block_bodies: &[BlockBodies],
    nb: usize,
    links_ptr: &mut Vec<usize>,
    links: &mut Vec<(usize, usize)>,
) {
    links_ptr.clear();
    links_ptr.resize(nb + 2, 0);
    for bodies in block_bodies {
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
            let j = self.side_rows(k, s);
            let mj = self.minv_side(k, s);
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
            let im = &self.inv_mass[body];
            for (row, dr) in self.side_rows(k, s).iter().zip(delta) {
                for c in 0..6 {
                    aux[6 * body + c] += im[c] * row[c] * dr;
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
