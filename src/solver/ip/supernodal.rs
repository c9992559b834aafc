//! The numeric LDLᵀ on faer's supernodal symbolic factorization, in parallel over the
//! elimination tree (issue 20).
//!
//! faer's `factorize_supernodal_numeric_ldlt` is left-looking and visits the supernodes one
//! after another, handing only each dense product to rayon: on the 2-core VM it factors the
//! 4000-sphere pile's KKT matrix in 0.59 s with two threads and 0.62 s with one — the tree's
//! lower levels, 36 000 supernodes and 109 000 updates of a few hundred multiply–adds each,
//! run on one thread at a fixed cost per call. Here the same left-looking algorithm runs the
//! tasks of the tree's split ([`Tree`]) in parallel, each on its own supernodes' values, then
//! the top supernodes in order with their dense products on rayon's threads. A supernode's
//! step is faer's: its columns of the matrix, minus the update `L_{r,d} D_d L_{c,d}ᵀ` of each
//! descendant `d` whose rows reach its columns `c`, then the dense LDLᵀ of its diagonal block
//! (faer's, with its dynamic regularization) and the solve of the rows below with it. An
//! update is a dense product into a buffer (faer's `matmul` from [`SMALL`] multiply–adds, a
//! loop below), scattered into the ancestor's columns. The values keep faer's layout, so
//! faer's solves and [`super::tree::TreeSolve`] read them unchanged.

use faer::dyn_stack::{MemBuffer, MemStack};
use faer::linalg::cholesky::ldlt::factor::{
    LdltRegularization, cholesky_in_place, cholesky_in_place_scratch,
};
use faer::linalg::matmul::matmul;
use faer::linalg::triangular_solve::solve_unit_lower_triangular_in_place;
use faer::perm::PermRef;
use faer::sparse::linalg::cholesky::supernodal::SymbolicSupernodalCholesky;
use faer::{Accum, MatMut, MatRef, Par};
use rayon::prelude::*;

use super::tree::Tree;
use crate::error::{Error, Result};

/// An update of at most this many multiply–adds is computed by a loop, a larger one by
/// faer's `matmul` (whose fixed cost per call is that of a few thousand).
const SMALL: usize = 1 << 14;

/// A top supernode's columns per rayon task of its updates.
const COLUMNS: usize = 32;

/// Stretches of the factor's values zeroed and filled with the matrix's entries in parallel.
const PIECES: usize = 64;

/// Columns of an update computed and scattered at once (bounds the product's buffer).
const BLOCK: usize = 256;

/// The regularization of the factorization: each pivot's expected sign (in the matrix's
/// order), and faer's dynamic regularization (a pivot of the wrong sign or below `epsilon`
/// in magnitude becomes `±delta`).
pub(crate) struct Regularization<'a> {
    pub(crate) signs: &'a [i8],
    pub(crate) epsilon: f64,
    pub(crate) delta: f64,
}

/// What the factorization of one pattern reads: the supernodes, the updates, where each
/// matrix entry goes, and the tree's split.
struct Plan {
    /// Each supernode's first column, and the end of the last.
    begin: Vec<usize>,
    /// Each supernode's pattern (rows below its diagonal block): `rows[rows_at[s]..rows_at[s + 1]]`.
    rows: Vec<usize>,
    rows_at: Vec<usize>,
    /// Each supernode's first value in the factor.
    values_at: Vec<usize>,
    /// The updates of each supernode `s`, `updates[updates_at[s]..updates_at[s + 1]]`:
    /// the descendants `d` whose pattern reaches its columns, in increasing order, each with
    /// the index in `d`'s pattern of its first row in them.
    updates: Vec<(usize, usize)>,
    updates_at: Vec<usize>,
    /// The matrix's entries as (place in the factor's values, index in the matrix's
    /// column-compressed values), in the order of their places...
    entries: Vec<(usize, usize)>,
    /// ...cut into [`PIECES`] stretches of the factor's values: `(first place, first entry)`
    /// of each, and `(values, entries)` at the end.
    pieces: Vec<(usize, usize)>,
    /// The expected sign of each pivot, in the factor's order.
    signs: Vec<i8>,
    epsilon: f64,
    delta: f64,
    /// The tasks' supernodes (each a subtree's postorder), and the top's.
    tasks: Vec<Vec<usize>>,
    top: Vec<usize>,
    /// Each task's supernode's index in its task.
    in_task: Vec<usize>,
}

/// One task's workspace (or the top's).
struct Work {
    /// Row → its place in the current supernode's rows (rows of its pattern only).
    local: Vec<u32>,
    /// The updates' buffers.
    scratch: Scratch,
    /// faer's workspace for the dense LDLᵀ.
    mem: MemBuffer,
}

/// The buffers of one thread's updates.
#[derive(Default)]
struct Scratch {
    /// The places of an update's rows in the supernode it updates.
    places: Vec<usize>,
    /// An update's product.
    product: Vec<f64>,
    /// An update's columns scaled by `D`.
    scaled: Vec<f64>,
}

/// The parallel numeric factorization of one supernodal pattern.
pub(crate) struct SupernodalLdlt {
    plan: Plan,
    /// One workspace per task, and the top's.
    works: Vec<Work>,
    top_work: Work,
}

impl SupernodalLdlt {
    /// The factorization of the matrix whose upper triangle has the pattern (`col_ptr`,
    /// `row_idx`), under `symbolic` (its supernodal analysis, `perm` its fill-reducing
    /// permutation) split as `tree`.
    pub(crate) fn new(
        symbolic: &SymbolicSupernodalCholesky<usize>,
        perm: Option<PermRef<'_, usize>>,
        tree: &Tree,
        col_ptr: &[usize],
        row_idx: &[usize],
        regularization: &Regularization<'_>,
    ) -> Self {
        let n_super = symbolic.n_supernodes();
        let n = symbolic.nrows();
        let mut begin = symbolic.supernode_begin()[..n_super].to_vec();
        begin.push(n);
        let counts = symbolic.nnz_per_super();
        let at = symbolic.col_ptr_for_row_idx();
        let mut rows_at = vec![0; n_super + 1];
        let mut rows = Vec::new();
        for s in 0..n_super {
            rows.extend_from_slice(&symbolic.row_idx()[at[s]..at[s] + counts[s]]);
            rows_at[s + 1] = rows.len();
        }
        let values_at = symbolic.col_ptr_for_val()[..=n_super].to_vec();
        let mut owner = vec![0; n];
        for s in 0..n_super {
            owner[begin[s]..begin[s + 1]].fill(s);
        }
        // The updates: each descendant's pattern cut at its ancestors' columns.
        let mut found: Vec<(usize, usize, usize)> = Vec::new();
        for d in 0..n_super {
            let pattern = &rows[rows_at[d]..rows_at[d + 1]];
            let mut i = 0;
            while i < pattern.len() {
                let s = owner[pattern[i]];
                found.push((s, d, i));
                i += pattern[i..].partition_point(|&r| r < begin[s + 1]);
            }
        }
        found.sort_unstable();
        let mut updates_at = vec![0; n_super + 1];
        for &(s, _, _) in &found {
            updates_at[s + 1] += 1;
        }
        for s in 0..n_super {
            updates_at[s + 1] += updates_at[s];
        }
        let updates = found.into_iter().map(|(_, d, i)| (d, i)).collect();
        // Each matrix entry's place: row and column permuted, in the lower triangle.
        let inv = |i: usize| perm.map_or(i, |p| p.arrays().1[i]);
        let mut entries = Vec::with_capacity(row_idx.len());
        for c in 0..col_ptr.len() - 1 {
            for &r in &row_idx[col_ptr[c]..col_ptr[c + 1]] {
                let (a, b) = (inv(r), inv(c));
                let (lo, hi) = (a.min(b), a.max(b));
                let s = owner[lo];
                let width = begin[s + 1] - begin[s];
                let pattern = &rows[rows_at[s]..rows_at[s + 1]];
                let row = if hi < begin[s + 1] {
                    hi - begin[s]
                } else {
                    width
                        + pattern
                            .binary_search(&hi)
                            .expect("an entry of the matrix lies in the factor's pattern")
                };
                let place = values_at[s] + (lo - begin[s]) * (width + pattern.len()) + row;
                entries.push((place, entries.len()));
            }
        }
        entries.sort_unstable();
        let len = values_at[n_super];
        let pieces = (0..=PIECES)
            .map(|k| {
                let place = len * k / PIECES;
                (place, entries.partition_point(|&(p, _)| p < place))
            })
            .collect();
        let fwd = |i: usize| perm.map_or(i, |p| p.arrays().0[i]);
        let signs = (0..n).map(|i| regularization.signs[fwd(i)]).collect();
        let tasks: Vec<Vec<usize>> = tree
            .tasks
            .iter()
            .map(|r| tree.order[r.clone()].to_vec())
            .collect();
        let mut in_task = vec![usize::MAX; n_super];
        for nodes in &tasks {
            for (k, &s) in nodes.iter().enumerate() {
                in_task[s] = k;
            }
        }
        let widest = |nodes: &[usize]| {
            nodes
                .iter()
                .map(|&s| begin[s + 1] - begin[s])
                .max()
                .unwrap_or(0)
        };
        let work = |width: usize, par: Par| Work {
            local: vec![0; n],
            scratch: Scratch::default(),
            mem: MemBuffer::new(cholesky_in_place_scratch::<f64>(
                width,
                par,
                Default::default(),
            )),
        };
        let works = tasks.iter().map(|t| work(widest(t), Par::Seq)).collect();
        let top_work = work(widest(&tree.top), Par::rayon(0));
        SupernodalLdlt {
            plan: Plan {
                begin,
                rows,
                rows_at,
                values_at,
                updates,
                updates_at,
                entries,
                pieces,
                signs,
                epsilon: regularization.epsilon,
                delta: regularization.delta,
                tasks,
                top: tree.top.clone(),
                in_task,
            },
            works,
            top_work,
        }
    }

    /// Factors the matrix of values `vals` (its upper triangle, in the pattern's order) into
    /// `l` (faer's layout of the factor's values).
    pub(crate) fn factor(&mut self, vals: &[f64], l: &mut [f64]) -> Result<()> {
        let plan = &self.plan;
        // The matrix's values into the zeroed factor, by stretches on rayon's threads.
        let mut stretches = Vec::with_capacity(PIECES);
        let mut rest = &mut *l;
        for w in plan.pieces.windows(2) {
            let (own, tail) = std::mem::take(&mut rest).split_at_mut(w[1].0 - w[0].0);
            stretches.push((own, w[0].0, &plan.entries[w[0].1..w[1].1]));
            rest = tail;
        }
        stretches.into_par_iter().for_each(|(own, first, entries)| {
            own.fill(0.0);
            for &(place, index) in entries {
                own[place - first] = vals[index];
            }
        });
        let mut slots: Vec<&mut [f64]> = Vec::with_capacity(plan.values_at.len() - 1);
        let mut rest = l;
        for w in plan.values_at.windows(2) {
            let (own, tail) = std::mem::take(&mut rest).split_at_mut(w[1] - w[0]);
            slots.push(own);
            rest = tail;
        }
        let mut owned: Vec<Vec<&mut [f64]>> = plan
            .tasks
            .iter()
            .map(|nodes| {
                nodes
                    .iter()
                    .map(|&s| std::mem::take(&mut slots[s]))
                    .collect()
            })
            .collect();
        owned
            .par_iter_mut()
            .zip(plan.tasks.par_iter())
            .zip(self.works.par_iter_mut())
            .try_for_each(|((mine, nodes), work)| -> Result<()> {
                for (k, &s) in nodes.iter().enumerate() {
                    let ls = std::mem::take(&mut mine[k]);
                    plan.supernode(s, ls, |d| &*mine[plan.in_task[d]], work, Par::Seq)?;
                    mine[k] = ls;
                }
                Ok(())
            })?;
        for (nodes, mine) in plan.tasks.iter().zip(owned) {
            for (&s, values) in nodes.iter().zip(mine) {
                slots[s] = values;
            }
        }
        for &s in &plan.top {
            let ls = std::mem::take(&mut slots[s]);
            plan.supernode(s, ls, |d| &*slots[d], &mut self.top_work, Par::rayon(0))?;
            slots[s] = ls;
        }
        Ok(())
    }
}

impl Plan {
    /// Supernode `s`'s step: `ls` its values (the matrix's, on entry), `ld(d)` the final
    /// values of a descendant `d`.
    fn supernode<'a>(
        &self,
        s: usize,
        ls: &mut [f64],
        ld: impl Fn(usize) -> &'a [f64] + Sync,
        work: &mut Work,
        par: Par,
    ) -> Result<()> {
        let (b, e) = (self.begin[s], self.begin[s + 1]);
        let width = e - b;
        let pattern = &self.rows[self.rows_at[s]..self.rows_at[s + 1]];
        let nrows = width + pattern.len();
        for (i, &r) in pattern.iter().enumerate() {
            work.local[r] = (width + i) as u32;
        }
        let updates = &self.updates[self.updates_at[s]..self.updates_at[s + 1]];
        let local = &work.local[..];
        if par == Par::Seq {
            for &(d, first) in updates {
                let at = Columns {
                    ls: &mut *ls,
                    nrows,
                    s: (b, e),
                    cols: (b, e),
                };
                self.update(at, d, first, ld(d), local, &mut work.scratch);
            }
        } else {
            // A top supernode: its columns in chunks on rayon's threads, each chunk taking
            // every update's part in its columns.
            ls.par_chunks_mut(nrows * COLUMNS)
                .enumerate()
                .for_each_init(Scratch::default, |scratch, (k, own)| {
                    let cols = (b + k * COLUMNS, (b + (k + 1) * COLUMNS).min(e));
                    for &(d, first) in updates {
                        let at = Columns {
                            ls: &mut *own,
                            nrows,
                            s: (b, e),
                            cols,
                        };
                        self.update(at, d, first, ld(d), local, scratch);
                    }
                });
        }
        let (diag, _) =
            MatMut::from_column_major_slice_mut(ls, nrows, width).split_at_row_mut(width);
        cholesky_in_place(
            diag,
            LdltRegularization {
                dynamic_regularization_signs: Some(&self.signs[b..e]),
                dynamic_regularization_delta: self.delta,
                dynamic_regularization_epsilon: self.epsilon,
            },
            par,
            MemStack::new(&mut work.mem),
            Default::default(),
        )
        .map_err(|err| Error::Factorization(format!("KKT LDLᵀ, supernode {s}: {err:?}")))?;
        for j in 1..width {
            ls[j * nrows..j * nrows + j].fill(0.0);
        }
        let (diag, below) =
            MatMut::from_column_major_slice_mut(ls, nrows, width).split_at_row_mut(width);
        solve_unit_lower_triangular_in_place(diag.as_ref(), below.transpose_mut(), par);
        // The rows below times D⁻¹.
        for (j, col) in ls.chunks_exact_mut(nrows).enumerate() {
            let inv = 1.0 / col[j];
            for x in &mut col[width..] {
                *x *= inv;
            }
        }
        Ok(())
    }

    /// Subtracts from the columns `at` of a supernode the update of its descendant `d`
    /// (values `lv`), whose pattern reaches the supernode's columns at its index `first`:
    /// `L_{r,d} D_d L_{c,d}ᵀ` over `d`'s rows `r` from the first of the columns on and
    /// those of them in the columns, `c`; by blocks of [`BLOCK`] columns. `local` places the
    /// supernode's pattern rows.
    fn update(
        &self,
        at: Columns<'_>,
        d: usize,
        first: usize,
        lv: &[f64],
        local: &[u32],
        scratch: &mut Scratch,
    ) {
        let Columns {
            ls,
            nrows,
            s: (b, e),
            cols: (cb, ce),
        } = at;
        let wd = self.begin[d + 1] - self.begin[d];
        let drows = wd + self.rows_at[d + 1] - self.rows_at[d];
        let pattern = &self.rows[self.rows_at[d] + first..self.rows_at[d + 1]];
        let skip = pattern.partition_point(|&r| r < cb);
        let (first, pattern) = (first + skip, &pattern[skip..]);
        let mid = pattern.partition_point(|&r| r < ce);
        if mid == 0 {
            return;
        }
        let Scratch {
            places,
            product,
            scaled,
        } = scratch;
        places.clear();
        places.extend(
            pattern
                .iter()
                .map(|&r| if r < e { r - b } else { local[r] as usize }),
        );
        for j0 in (0..mid).step_by(BLOCK) {
            let j1 = (j0 + BLOCK).min(mid);
            // Rows j0.. of the pattern (the lower triangle of the block and below it).
            let (m, c) = (pattern.len() - j0, j1 - j0);
            let top = wd + first + j0;
            if product.len() < m * c {
                product.resize(m * c, 0.0);
            }
            let product = &mut product[..m * c];
            if m * c * wd > SMALL {
                if scaled.len() < c * wd {
                    scaled.resize(c * wd, 0.0);
                }
                let scaled = &mut scaled[..c * wd];
                for k in 0..wd {
                    let dk = lv[k * drows + k];
                    let col = &lv[k * drows + top..k * drows + top + c];
                    for (x, &v) in scaled[k * c..(k + 1) * c].iter_mut().zip(col) {
                        *x = v * dk;
                    }
                }
                let a = MatRef::from_column_major_slice_with_stride(&lv[top..], m, wd, drows);
                let bt = MatRef::from_column_major_slice(scaled, c, wd);
                matmul(
                    MatMut::from_column_major_slice_mut(product, m, c),
                    Accum::Replace,
                    a,
                    bt.transpose(),
                    1.0,
                    Par::Seq,
                );
            } else {
                product.fill(0.0);
                for k in 0..wd {
                    let dk = lv[k * drows + k];
                    let col = &lv[k * drows + top..k * drows + top + m];
                    for (jj, out) in product.chunks_exact_mut(m).enumerate() {
                        let coef = col[jj] * dk;
                        for (x, &v) in out[jj..].iter_mut().zip(&col[jj..]) {
                            *x += v * coef;
                        }
                    }
                }
            }
            let places = &places[j0..];
            // Rows in a run (as below a separator's diagonal block) take a slice's
            // subtraction, which vectorizes; others a scatter.
            let run = places[m - 1] - places[0] == m - 1;
            for (jj, out) in product.chunks_exact(m).enumerate() {
                let col = places[jj] - (cb - b);
                let dst = &mut ls[col * nrows..(col + 1) * nrows];
                if run {
                    let dst = &mut dst[places[jj]..places[jj] + m - jj];
                    for (x, &v) in dst.iter_mut().zip(&out[jj..]) {
                        *x -= v;
                    }
                } else {
                    for (&p, &v) in places[jj..].iter().zip(&out[jj..]) {
                        dst[p] -= v;
                    }
                }
            }
        }
    }
}

/// The columns `cols` (absolute) of a supernode of columns `s`, its values from the first
/// of them on in `ls` (`nrows` rows each).
struct Columns<'a> {
    ls: &'a mut [f64],
    nrows: usize,
    s: (usize, usize),
    cols: (usize, usize),
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::solver::ip::kkt::symbolic_under;
    use crate::solver::ip::kkt::tests_support::grid;
    use faer::sparse::linalg::cholesky::{SymbolicCholeskyRaw, SymmetricOrdering};
    use faer::sparse::{SparseColMatRef, SymbolicSparseColMatRef};
    use faer::{Par, Side};

    /// The upper triangle of a quasi-definite KKT matrix `[G Aᵀ; A −εI]`: `G` the grid
    /// Laplacian of `n³` unknowns, `A` a row per unknown coupling it to its successor.
    fn kkt(n: usize) -> (Vec<usize>, Vec<usize>, Vec<f64>, Vec<i8>) {
        let (mut col_ptr, mut row_idx, mut vals) = grid(n);
        let nx = col_ptr.len() - 1;
        for i in 0..nx - 1 {
            row_idx.extend([i, i + 1, nx + i]);
            vals.extend([1.0, -1.0, -1e-3]);
            col_ptr.push(row_idx.len());
        }
        let signs = (0..2 * nx - 1)
            .map(|i| if i < nx { 1 } else { -1 })
            .collect();
        (col_ptr, row_idx, vals, signs)
    }

    #[test]
    fn the_parallel_factorization_is_faers() {
        let (col_ptr, row_idx, vals, signs) = kkt(16);
        let dim = col_ptr.len() - 1;
        let regularization = Regularization {
            signs: &signs,
            epsilon: 1e-16,
            delta: 1e-8,
        };
        let symbolic = symbolic_under(&col_ptr, &row_idx, SymmetricOrdering::Amd).expect("AMD");
        let SymbolicCholeskyRaw::Supernodal(s) = symbolic.raw() else {
            panic!("a supernodal factor")
        };
        let pattern = SymbolicSparseColMatRef::new_checked(dim, dim, &col_ptr, None, &row_idx);
        let mut want = vec![0.0; symbolic.len_val()];
        let mut mem = MemBuffer::new(
            symbolic.factorize_numeric_ldlt_scratch::<f64>(Par::Seq, Default::default()),
        );
        symbolic
            .factorize_numeric_ldlt(
                &mut want,
                SparseColMatRef::new(pattern, &vals),
                Side::Upper,
                LdltRegularization {
                    dynamic_regularization_signs: Some(&signs),
                    dynamic_regularization_delta: 1e-8,
                    dynamic_regularization_epsilon: 1e-16,
                },
                Par::Seq,
                MemStack::new(&mut mem),
                Default::default(),
            )
            .expect("faer's LDLᵀ");
        let tree = Tree::new(s).expect("a tree that splits");
        assert!(tree.tasks.len() >= 2 && !tree.top.is_empty());
        let mut ours = SupernodalLdlt::new(
            s,
            symbolic.perm(),
            &tree,
            &col_ptr,
            &row_idx,
            &regularization,
        );
        let mut got = vec![f64::NAN; symbolic.len_val()];
        ours.factor(&vals, &mut got).expect("the parallel LDLᵀ");
        let scale = want.iter().fold(0.0f64, |m, v| m.max(v.abs()));
        let err = got
            .iter()
            .zip(&want)
            .fold(0.0f64, |m, (a, b)| m.max((a - b).abs()));
        assert!(err <= 1e-12 * scale, "{err:.3e} of {scale:.3e}");
    }
}
