//! The solve `L D Lᵀ x = b` with faer's supernodal factor, in parallel over the elimination
//! tree (issue 20). faer's own solve visits the supernodes one after another on one thread
//! (on the 4000-sphere pile, 8 solves of ~50 ms per interior-point iteration, a third of its
//! time, at 6 GB/s); the tree's subtrees are independent, as in the factorization.
//!
//! The rows are laid out supernode by supernode in a postorder of the tree, so that every
//! subtree's rows are contiguous. The tree is cut into disjoint subtrees and the supernodes
//! above them, the *top* (their ancestors: the dense separators of a nested dissection), by
//! splitting the heaviest subtree at its root while it holds more than [`PARTS`]⁻¹ of the
//! factor's entries; neighbouring subtrees then share a *task* while it stays that light.
//! Forward (`L y = b`, then `D`): the tasks in parallel, each on its own rows in place and
//! with its updates of the top rows (its *halo*) in an accumulator of its own, added in task
//! order afterwards (so the result depends neither on the threads' timing nor on their
//! number); then the top in order. Backward (`Lᵀ x = y`): the top in reverse order, then
//! the tasks in parallel, each reading the top rows' final values. Each supernode's
//! arithmetic is faer's dense unit-triangular solve and product, as in faer's solve; on a
//! top supernode, blocked, with the products split by rows over rayon's threads.

use std::collections::BinaryHeap;
use std::ops::Range;

use faer::linalg::matmul::matmul;
use faer::linalg::triangular_solve::{
    solve_unit_lower_triangular_in_place, solve_unit_upper_triangular_in_place,
};
use faer::perm::PermRef;
use faer::sparse::linalg::cholesky::supernodal::{SupernodalLdltRef, SymbolicSupernodalCholesky};
use faer::{Accum, MatMut, MatRef, Par};
use rayon::prelude::*;

/// The tree is split until no task holds more than this fraction of the factor's entries:
/// a fixed number, so that the split, and the sums, do not depend on the threads.
const PARTS: usize = 16;

/// Rows of a top supernode's dense product per rayon task.
const CHUNK: usize = 64;

/// Columns of a top supernode's diagonal block per step of its blocked triangular solves.
const BLOCK: usize = 256;

/// A cap on the top's supernodes (a chain-like tree is not worth splitting further).
const MAX_TOP: usize = 256;

/// One subtree of the tree, solved by one rayon task.
struct Task {
    /// Its supernodes, a contiguous range of the postorder (its root last).
    supernodes: Range<usize>,
    /// The top rows its supernodes update in the forward solve, increasing.
    halo: Vec<usize>,
    /// Those updates (as `halo`).
    acc: Vec<f64>,
    /// The gathered or computed values of one supernode's pattern.
    tmp: Vec<f64>,
}

/// The split of one supernodal factor's tree ([`Layout`]), with its buffers.
pub(crate) struct TreeSolve {
    layout: Layout,
    tasks: Vec<Task>,
    /// The right-hand side in the layout.
    x: Vec<f64>,
    /// The top rows' values for the backward solve of the tasks.
    top_values: Vec<f64>,
    /// The pattern's values of a top supernode.
    tmp: Vec<f64>,
}

/// What the solves read of the tree: rows laid out supernode by supernode in a postorder
/// of the tree (faer's numbering is a topological order, not always a postorder), so that
/// every subtree's rows are contiguous, and the top.
struct Layout {
    /// The supernodes in postorder.
    order: Vec<usize>,
    /// Each supernode's first row in the layout.
    start: Vec<usize>,
    /// Each supernode's pattern (rows below its diagonal block) in the layout: the rows of
    /// supernode `s` at `pattern[pattern_at[s]..pattern_at[s + 1]]`.
    pattern: Vec<usize>,
    pattern_at: Vec<usize>,
    /// `x[j] = b[source[j]]`: the fill-reducing permutation and the layout.
    source: Vec<usize>,
    /// The tasks' rows, contiguous, in order.
    task_rows: Vec<Range<usize>>,
    /// The top supernodes, in postorder.
    top: Vec<usize>,
    /// The top supernodes' rows, increasing.
    top_rows: Vec<usize>,
    /// Row → its index in `top_rows`, `usize::MAX` for a task's row.
    top_index: Vec<usize>,
}

/// The rows a supernode's step reads and writes: `own` holds rows `start..` in place; a row
/// past them is a top row, in `other` at its place in `halo` (forward: a task's updates)
/// or at `top_index[row]` (backward: the top rows' values).
struct Rows<'a, V> {
    own: &'a mut [f64],
    start: usize,
    other: V,
    halo: Option<&'a [usize]>,
    top_index: &'a [usize],
}

impl<V> Rows<'_, V> {
    /// The columns of `node`, the place of its first row in `own`, and the end of `own`'s
    /// rows.
    fn place(&self, node: &Node<'_>) -> (usize, usize, usize) {
        (
            node.diag.ncols(),
            node.start - self.start,
            self.start + self.own.len(),
        )
    }

    /// The place in `other` of top row `r`.
    fn slot(&self, r: usize) -> usize {
        match self.halo {
            Some(h) => h.binary_search(&r).expect("a top row of the task's halo"),
            None => self.top_index[r],
        }
    }
}

/// One supernode's step: its `L` columns, its first row and pattern in the layout.
#[derive(Clone, Copy)]
struct Node<'a> {
    /// The unit lower triangle of the diagonal block (its diagonal holds `D`).
    diag: MatRef<'a, f64>,
    /// The rows below it.
    below: MatRef<'a, f64>,
    start: usize,
    pattern: &'a [usize],
}

/// The split of a supernodal factor's elimination tree into independent subtrees (the
/// *tasks*) and the supernodes above them (the *top*), shared by the solves and the
/// factorization (`supernodal.rs`).
pub(crate) struct Tree {
    /// The supernodes in postorder (children in increasing order).
    pub(crate) order: Vec<usize>,
    /// The tasks: contiguous ranges of `order`, in order.
    pub(crate) tasks: Vec<Range<usize>>,
    /// The top supernodes, in postorder.
    pub(crate) top: Vec<usize>,
}

/// faer's supernodal structure, read: each supernode's columns and the rows of its pattern.
struct Supernodes<'a> {
    symbolic: &'a SymbolicSupernodalCholesky<usize>,
    /// The number of supernodes.
    count: usize,
    /// Each supernode's first column.
    begin: &'a [usize],
}

impl<'a> Supernodes<'a> {
    fn new(symbolic: &'a SymbolicSupernodalCholesky<usize>) -> Self {
        let count = symbolic.n_supernodes();
        Supernodes {
            symbolic,
            count,
            begin: &symbolic.supernode_begin()[..count],
        }
    }

    /// Supernode `s`'s columns.
    fn columns(&self, s: usize) -> Range<usize> {
        self.begin[s]..self.symbolic.supernode_end()[s]
    }

    /// Supernode `s`'s number of columns.
    fn width(&self, s: usize) -> usize {
        self.columns(s).len()
    }

    /// Supernode `s`'s pattern: its rows below its diagonal block.
    fn pattern(&self, s: usize) -> &'a [usize] {
        let at = self.symbolic.col_ptr_for_row_idx()[s];
        &self.symbolic.row_idx()[at..at + self.symbolic.nnz_per_super()[s]]
    }

    /// The supernode of column `row`.
    fn owner(&self, row: usize) -> usize {
        self.begin.partition_point(|&b| b <= row) - 1
    }
}

impl Tree {
    /// The split of `symbolic`'s tree, or `None` when it does not split into at least two
    /// tasks: the heaviest subtree (by its factor entries) split at its root while it holds
    /// more than [`PARTS`]⁻¹ of the entries, then neighbouring subtrees merged into a task
    /// while it stays that light.
    pub(crate) fn new(symbolic: &SymbolicSupernodalCholesky<usize>) -> Option<Tree> {
        let nodes = Supernodes::new(symbolic);
        let n_super = nodes.count;
        // The parent: the supernode of the first row below the diagonal block.
        let parent: Vec<Option<usize>> = (0..n_super)
            .map(|s| nodes.pattern(s).iter().min().map(|&r| nodes.owner(r)))
            .collect();
        let mut children = vec![Vec::new(); n_super];
        let mut weight: Vec<usize> = (0..n_super)
            .map(|s| {
                let w = nodes.width(s);
                (w + nodes.pattern(s).len()) * w
            })
            .collect();
        for s in 0..n_super {
            if let Some(p) = parent[s] {
                if p <= s {
                    return None;
                }
                children[p].push(s);
                weight[p] += weight[s];
            }
        }
        let roots: Vec<usize> = (0..n_super).filter(|&s| parent[s].is_none()).collect();
        // The postorder, with each subtree's first position.
        let mut order = Vec::with_capacity(n_super);
        let mut first = vec![0; n_super];
        let mut stack: Vec<(usize, usize)> = roots.iter().rev().map(|&r| (r, 0)).collect();
        while let Some((s, next)) = stack.pop() {
            if next == 0 {
                first[s] = order.len();
            }
            if let Some(&c) = children[s].get(next) {
                stack.push((s, next + 1));
                stack.push((c, 0));
            } else {
                order.push(s);
            }
        }
        let mut position = vec![0; n_super];
        for (k, &s) in order.iter().enumerate() {
            position[s] = k;
        }
        // Split the heaviest subtree at its root while it is too heavy.
        let total: usize = roots.iter().map(|&s| weight[s]).sum();
        let mut heap: BinaryHeap<(usize, usize)> = roots.iter().map(|&s| (weight[s], s)).collect();
        let mut top = Vec::new();
        while let Some(&(w, s)) = heap.peek() {
            if w * PARTS <= total || children[s].is_empty() || top.len() == MAX_TOP {
                break;
            }
            heap.pop();
            top.push(s);
            heap.extend(children[s].iter().map(|&c| (weight[c], c)));
        }
        let mut roots: Vec<usize> = heap.into_iter().map(|(_, s)| s).collect();
        if roots.len() < 2 {
            return None;
        }
        roots.sort_unstable_by_key(|&s| position[s]);
        top.sort_unstable_by_key(|&s| position[s]);
        // Neighbouring subtrees (contiguous in the postorder) share a task while it stays
        // light: most subtrees left by the split are leaves or small.
        let mut merged: Vec<(Range<usize>, usize)> = Vec::new();
        for &root in &roots {
            let range = first[root]..position[root] + 1;
            match merged.last_mut() {
                Some((last, w))
                    if last.end == range.start && (*w + weight[root]) * PARTS <= total =>
                {
                    last.end = range.end;
                    *w += weight[root];
                }
                _ => merged.push((range, weight[root])),
            }
        }
        Some(Tree {
            order,
            tasks: merged.into_iter().map(|(r, _)| r).collect(),
            top,
        })
    }
}

impl TreeSolve {
    /// The solve over `tree`, the split of `symbolic`'s tree (`perm` its fill-reducing
    /// permutation).
    pub(crate) fn new(
        symbolic: &SymbolicSupernodalCholesky<usize>,
        perm: Option<PermRef<'_, usize>>,
        tree: &Tree,
    ) -> TreeSolve {
        let sn = Supernodes::new(symbolic);
        let n_super = sn.count;
        let (begin, pattern) = (sn.begin, |s| sn.pattern(s));
        let n = symbolic.nrows();
        let Tree { order, tasks, top } = tree;
        let mut start = vec![0; n_super];
        let mut row = 0;
        for &s in order {
            start[s] = row;
            row += sn.width(s);
        }
        let layout = |r: usize| {
            let s = sn.owner(r);
            start[s] + r - begin[s]
        };
        let mut source = vec![0; n];
        for s in 0..n_super {
            for r in sn.columns(s) {
                source[layout(r)] = perm.map_or(r, |p| p.arrays().0[r]);
            }
        }
        let mut pattern_at = vec![0; n_super + 1];
        for s in 0..n_super {
            pattern_at[s + 1] = pattern_at[s] + pattern(s).len();
        }
        let mapped: Vec<usize> = (0..n_super)
            .flat_map(|s| pattern(s).iter().map(|&r| layout(r)).collect::<Vec<_>>())
            .collect();
        let top_rows: Vec<usize> = {
            let mut rows: Vec<usize> = top
                .iter()
                .flat_map(|&s| start[s]..start[s] + sn.width(s))
                .collect();
            rows.sort_unstable();
            rows
        };
        let mut top_index = vec![usize::MAX; n];
        for (j, &r) in top_rows.iter().enumerate() {
            top_index[r] = j;
        }
        let longest = |s: &[usize]| s.iter().map(|&s| pattern(s).len()).max().unwrap_or(0);
        let (task_rows, tasks): (Vec<Range<usize>>, Vec<Task>) = tasks
            .iter()
            .map(|supernodes| {
                let nodes = &order[supernodes.clone()];
                let (first_node, root) = (nodes[0], nodes[nodes.len() - 1]);
                let rows = start[first_node]..start[root] + sn.width(root);
                let mut halo: Vec<usize> = nodes
                    .iter()
                    .flat_map(|&s| mapped[pattern_at[s]..pattern_at[s + 1]].iter().copied())
                    .filter(|&r| r >= rows.end)
                    .collect();
                halo.sort_unstable();
                halo.dedup();
                let task = Task {
                    tmp: vec![0.0; longest(nodes)],
                    acc: vec![0.0; halo.len()],
                    halo,
                    supernodes: supernodes.clone(),
                };
                (rows, task)
            })
            .unzip();
        TreeSolve {
            tasks,
            tmp: vec![0.0; longest(order)],
            top_values: vec![0.0; top_rows.len()],
            x: vec![0.0; n],
            layout: Layout {
                task_rows,
                top_rows,
                top_index,
                top: top.clone(),
                order: order.clone(),
                start,
                pattern: mapped,
                pattern_at,
                source,
            },
        }
    }

    /// Solves `A x = b` in place of `b` with the factor `L D Lᵀ = P A Pᵀ` of `symbolic`
    /// (the permutation `P` the one [`TreeSolve::new`] was given), `values` its values.
    pub(crate) fn solve(
        &mut self,
        symbolic: &SymbolicSupernodalCholesky<usize>,
        values: &[f64],
        b: &mut [f64],
    ) {
        let ldlt = SupernodalLdltRef::new(symbolic, values);
        let TreeSolve {
            layout,
            tasks,
            x,
            top_values,
            tmp,
        } = self;
        let top_index = &layout.top_index[..];
        for (xi, &f) in x.iter_mut().zip(&layout.source) {
            *xi = b[f];
        }
        // Forward: the tasks, their top updates in task order, then the top.
        tasks
            .par_iter_mut()
            .zip(split_rows(x, &layout.task_rows))
            .for_each(|(task, (start, own))| {
                task.acc.fill(0.0);
                let mut rows = Rows {
                    own,
                    start,
                    other: &mut task.acc[..],
                    halo: Some(&task.halo),
                    top_index,
                };
                for &s in &layout.order[task.supernodes.clone()] {
                    forward(layout.node(ldlt, s), &mut rows, &mut task.tmp, false);
                }
            });
        for task in tasks.iter() {
            for (&r, a) in task.halo.iter().zip(&task.acc) {
                x[r] += a;
            }
        }
        for &s in &layout.top {
            let mut rows = Rows {
                own: &mut x[..],
                start: 0,
                other: &mut [][..],
                halo: None,
                top_index,
            };
            forward(layout.node(ldlt, s), &mut rows, tmp, true);
        }
        // Backward: the top, then the tasks with the top rows' values.
        for &s in layout.top.iter().rev() {
            let mut rows = Rows {
                own: &mut x[..],
                start: 0,
                other: &[][..],
                halo: None,
                top_index,
            };
            backward(layout.node(ldlt, s), &mut rows, tmp, true);
        }
        for (v, &r) in top_values.iter_mut().zip(&layout.top_rows) {
            *v = x[r];
        }
        let top_values = &top_values[..];
        tasks
            .par_iter_mut()
            .zip(split_rows(x, &layout.task_rows))
            .for_each(|(task, (start, own))| {
                let mut rows = Rows {
                    own,
                    start,
                    other: top_values,
                    halo: None,
                    top_index,
                };
                for &s in layout.order[task.supernodes.clone()].iter().rev() {
                    backward(layout.node(ldlt, s), &mut rows, &mut task.tmp, false);
                }
            });
        for (xi, &f) in x.iter().zip(&layout.source) {
            b[f] = *xi;
        }
    }
}

impl Layout {
    /// Supernode `s`'s step in `ldlt`'s factor.
    fn node<'a>(&'a self, ldlt: SupernodalLdltRef<'a, usize, f64>, s: usize) -> Node<'a> {
        let val = ldlt.supernode(s).val();
        let (diag, below) = val.split_at_row(val.ncols());
        Node {
            diag,
            below,
            start: self.start[s],
            pattern: &self.pattern[self.pattern_at[s]..self.pattern_at[s + 1]],
        }
    }
}

/// The tasks' rows of `x` (disjoint and in order), each its first row and a slice of its
/// own.
fn split_rows<'a>(mut x: &'a mut [f64], rows: &[Range<usize>]) -> Vec<(usize, &'a mut [f64])> {
    let mut at = 0;
    let mut out = Vec::with_capacity(rows.len());
    for r in rows {
        let (_, rest) = std::mem::take(&mut x).split_at_mut(r.start - at);
        let (own, rest) = rest.split_at_mut(r.len());
        out.push((r.start, own));
        x = rest;
        at = r.end;
    }
    out
}

/// The forward step of a supernode: its rows of `L⁻¹ b`, their updates of the rows below
/// (ancestors) subtracted, then its rows divided by `D`; its dense products on rayon's
/// threads when `parallel` (a top supernode).
fn forward(node: Node<'_>, rows: &mut Rows<'_, &mut [f64]>, tmp: &mut [f64], parallel: bool) {
    let (w, lo, end) = rows.place(&node);
    let (diag, pattern) = (node.diag, node.pattern);
    let tmp = &mut tmp[..pattern.len()];
    let xs = &mut rows.own[lo..lo + w];
    lower_solve(diag, xs, parallel);
    product(tmp, Accum::Replace, node.below, xs, 1.0, parallel);
    for (&r, t) in pattern.iter().zip(tmp.iter()) {
        if r < end {
            rows.own[r - rows.start] -= t;
        } else {
            let k = rows.slot(r);
            rows.other[k] -= t;
        }
    }
    for j in 0..w {
        rows.own[lo + j] /= diag[(j, j)];
    }
}

/// The backward step of a supernode: its rows of `x` from the rows below (final).
fn backward(node: Node<'_>, rows: &mut Rows<'_, &[f64]>, tmp: &mut [f64], parallel: bool) {
    let (w, lo, end) = rows.place(&node);
    let (diag, pattern) = (node.diag, node.pattern);
    let tmp = &mut tmp[..pattern.len()];
    for (&r, t) in pattern.iter().zip(tmp.iter_mut()) {
        *t = if r < end {
            rows.own[r - rows.start]
        } else {
            rows.other[rows.slot(r)]
        };
    }
    let xs = &mut rows.own[lo..lo + w];
    product(xs, Accum::Add, node.below.transpose(), tmp, -1.0, parallel);
    upper_solve(diag, xs, parallel);
}

/// `x` as a one-column matrix.
fn column(x: &mut [f64]) -> MatMut<'_, f64> {
    let n = x.len();
    MatMut::from_column_major_slice_mut(x, n, 1)
}

/// `y = α A x` (`Accum::Replace`) or `y += α A x`: faer's product, in chunks of [`CHUNK`]
/// rows on rayon's threads when `parallel` (faer's own product of one column runs on one).
fn product(y: &mut [f64], accum: Accum, a: MatRef<'_, f64>, x: &[f64], alpha: f64, parallel: bool) {
    let x = MatRef::from_column_major_slice(x, x.len(), 1);
    if !parallel || y.len() <= CHUNK {
        matmul(column(y), accum, a, x, alpha, Par::Seq);
        return;
    }
    y.par_chunks_mut(CHUNK).enumerate().for_each(|(i, y)| {
        let rows = a.subrows(i * CHUNK, y.len());
        matmul(column(y), accum, rows, x, alpha, Par::Seq);
    });
}

/// `x ← L⁻¹ x` for the unit lower triangle of `l`; by blocks of [`BLOCK`] columns, the
/// products below each block in parallel ([`product`]) when `parallel`.
fn lower_solve(l: MatRef<'_, f64>, x: &mut [f64], parallel: bool) {
    let w = x.len();
    if !parallel {
        solve_unit_lower_triangular_in_place(l, column(x), Par::Seq);
        return;
    }
    for j0 in (0..w).step_by(BLOCK) {
        let j1 = (j0 + BLOCK).min(w);
        let (head, tail) = x.split_at_mut(j1);
        let block = l.submatrix(j0, j0, j1 - j0, j1 - j0);
        solve_unit_lower_triangular_in_place(block, column(&mut head[j0..]), Par::Seq);
        product(
            tail,
            Accum::Add,
            l.submatrix(j1, j0, w - j1, j1 - j0),
            &head[j0..],
            -1.0,
            true,
        );
    }
}

/// `x ← L⁻ᵀ x` for the unit lower triangle of `l`, by blocks from the last, as
/// [`lower_solve`].
fn upper_solve(l: MatRef<'_, f64>, x: &mut [f64], parallel: bool) {
    let w = x.len();
    if !parallel {
        solve_unit_upper_triangular_in_place(l.transpose(), column(x), Par::Seq);
        return;
    }
    for j0 in (0..w).step_by(BLOCK).rev() {
        let j1 = (j0 + BLOCK).min(w);
        let (head, tail) = x.split_at_mut(j1);
        let below = l.submatrix(j1, j0, w - j1, j1 - j0).transpose();
        product(&mut head[j0..], Accum::Add, below, tail, -1.0, true);
        let block = l.submatrix(j0, j0, j1 - j0, j1 - j0).transpose();
        solve_unit_upper_triangular_in_place(block, column(&mut head[j0..]), Par::Seq);
    }
}
