//! The augmented system of the interior point (thesis eq. 4.28 with compliance, paper 000
//! eq. 39) on faer's sparse LDLᵀ:
//!
//! ```text
//! [ P + δ      −Aᵀ          ] [Δx]   [r₁]
//! [ −A     −(Q + G² + δ)    ] [Δz] = [r₂]
//! ```
//!
//! symmetric quasi-definite (`G` the NT scaling of the cone rows, zero on free rows). The
//! upper triangle is assembled once per sparsity pattern with an index map, so that an
//! iteration only writes values: the static part (`P`, `A`, `Q`) is copied, then `−G²` is
//! added at the cone positions. The matrix is equilibrated (symmetric Ruiz scaling), factored
//! with dynamic regularization signs (+ for `x`, − for `z`) and a small static
//! regularization `δ`, and every solve is refined iteratively against the unregularized
//! matrix; on a factor past the caches the solves run in parallel over the elimination tree
//! ([`TreeSolve`], `tree.rs`). The symbolic analysis (AMD or METIS' nested dissection,
//! whichever factors cheaper) is computed once per pattern and kept in an [`Analysis`] that
//! the interior point's session owns, across iterations, Coulomb rounds and time steps.
//! Systems of at most [`DENSE_DIM`] unknowns (the small Siconos files: 3 to 75 rows) skip
//! faer's sparse machinery, whose fixed cost per
//! factorization and solve outweighs the arithmetic there, for a dense LDLᵀ with the same
//! regularization; every buffer of the factorization and of the refined solves is allocated
//! once per [`Kkt`].

use std::sync::Arc;

use faer::dyn_stack::{MemBuffer, MemStack};
use faer::linalg::cholesky::ldlt::factor::LdltRegularization;
use faer::perm::PermRef;
use faer::sparse::linalg::cholesky::{
    CholeskySymbolicParams, LdltRef, SymbolicCholesky, SymbolicCholeskyRaw, SymmetricOrdering,
    factorize_symbolic_cholesky,
};
use faer::sparse::{SparseColMatRef, SymbolicSparseColMatRef};
use faer::{Conj, MatMut, Par, Side};

use super::cones::{Kind, Scaling};
use super::ordering::nested_dissection;
use super::standard::Standard;
use super::supernodal::{Regularization, SupernodalLdlt};
use super::tree::{Tree, TreeSolve};
use super::upper::Upper;
use crate::error::{Error, Result};

/// The pattern of a KKT matrix (upper triangle, column-compressed) and its symbolic
/// factorization: what a new problem of the same pattern reuses.
pub(crate) struct Analysis {
    col_ptr: Vec<usize>,
    row_idx: Vec<usize>,
    symbolic: Arc<SymbolicCholesky<usize>>,
}

impl Analysis {
    /// The values of a matrix of pattern (`col_ptr`, `row_idx`) on this analysis' pattern
    /// (zeros elsewhere), or `None` when that pattern does not lie within this one.
    fn embed(&self, col_ptr: &[usize], row_idx: &[usize], vals: &[f64]) -> Option<Vec<f64>> {
        if col_ptr.len() != self.col_ptr.len() {
            return None;
        }
        let mut out = vec![0.0; self.row_idx.len()];
        for c in 0..col_ptr.len() - 1 {
            let (lo, hi) = (self.col_ptr[c], self.col_ptr[c + 1]);
            let own = &self.row_idx[lo..hi];
            for k in col_ptr[c]..col_ptr[c + 1] {
                out[lo + own.binary_search(&row_idx[k]).ok()?] = vals[k];
            }
        }
        Some(out)
    }
}

/// Static regularization on the equilibrated matrix.
const STATIC_REG: f64 = 1e-14;
/// Dynamic regularization: pivots below `EPS` (or of the wrong sign) become `±DELTA`.
const DYNAMIC_EPS: f64 = 1e-16;
const DYNAMIC_DELTA: f64 = 1e-8;
/// Iterative refinement: at most this many corrections, stopping at this relative residual
/// (∞-norm, of the equilibrated system)...
/// (Clarabel's rule — 1e-13, and stop when a correction gains less than 5× — saves a tenth of
/// the time on the piles of 1000 and 4000 spheres but, with two correctors, jams the pile of
/// 16 000 near the cone boundaries: `benches/RESULTS.md`, eleventh session.)
const REFINE_STEPS: usize = 8;
const REFINE_TOL: f64 = 1e-14;
/// ...or this one on systems of at least [`PARALLEL_DIM`] unknowns, where a refinement step
/// (a triangular solve and a product: 50 ms at 4000 spheres) costs a tenth of the
/// factorization: the directions need no more there (the settled piles of 1000, 4000 and
/// 16 000 spheres take the same iterations to the same answers) and most solves then take
/// no correction (4000 spheres: 222 triangular solves → 103; `benches/RESULTS.md`, sixteenth
/// session). On the small, singular Siconos problems the tight one stays: at 1e-10 `ip`
/// stalls on Capsules-i103-990 at 4.2e-9.
const REFINE_TOL_LARGE: f64 = 1e-10;
/// The KKT size from which faer factors and solves on rayon's threads: below it the
/// supernodes are too small to share.
const PARALLEL_DIM: usize = 4096;
/// The fixed cost of a supernode in faer's numeric factorization, in multiply–adds: the
/// least-squares fit `t = a·flops + b·supernodes` of ten factorizations (AMD and nested
/// dissection on settled piles of 1000 and 4000 spheres and on 20³–40³ grid Laplacians,
/// 2-core VM; within ±11 %) gives `b/a ≈ 1.3e5`. A fit, not a mechanism: on the pile of 1000
/// spheres the dissection, with a third fewer multiply–adds and half again as many (smaller)
/// supernodes, factors a quarter slower, and the term ranks the orderings as measured.
const SUPERNODE_COST: f64 = 1.3e5;
/// The factorization cost ([`factor_cost`]) above which nested dissection is tried beside
/// AMD: METIS' ordering costs about as much as one factorization of that size.
const TRY_DISSECTION: f64 = 2e9;
/// The factor's entries from which the solves run in parallel over the tree
/// ([`TreeSolve`]): 64 MB, past the caches. Below (the pile of 1000 spheres, 2.4 M
/// entries under AMD, whose dense root chain holds 61 % of them) faer's sequential solve,
/// from the caches, is faster (3.4 ms against 4.1 ms, 2-core VM).
const TREE_ENTRIES: usize = 8 << 20;
/// Passes of the symmetric Ruiz equilibration.
const RUIZ_PASSES: usize = 6;
/// The KKT size up to which the factorization is dense ([`Factor::Dense`]).
pub(crate) const DENSE_DIM: usize = 32;

/// The numeric factorization of one KKT pattern.
enum Factor {
    /// faer's sparse LDLᵀ on the symbolic analysis of the pattern.
    Sparse(SparseLdlt),
    /// A dense LDLᵀ without pivoting (the quasi-definite matrix needs none; Vanderbei 1995),
    /// `L` strictly below the diagonal and `D` on it, row-major `dim × dim`; `w` a row of
    /// workspace.
    Dense { l: Vec<f64>, w: Vec<f64> },
}

/// faer's sparse LDLᵀ: the symbolic analysis, the factor's values and faer's workspace.
struct SparseLdlt {
    symbolic: Arc<SymbolicCholesky<usize>>,
    l_vals: Vec<f64>,
    mem: MemBuffer,
    /// faer's parallelism: rayon's pool (supernodal factorization and solves) from
    /// [`PARALLEL_DIM`] unknowns, sequential below.
    par: Par,
    /// The factorization in parallel over the tree ([`SupernodalLdlt`]), where it runs on
    /// rayon's pool and is supernodal with a tree that splits.
    parallel: Option<Box<SupernodalLdlt>>,
    /// The solves in parallel over the tree ([`TreeSolve`]), where the factor also holds at
    /// least [`TREE_ENTRIES`] entries.
    tree: Option<Box<TreeSolve>>,
}

/// The KKT matrix of one problem, its index map and its factorization.
pub(crate) struct Kkt {
    n: usize,
    /// The pattern (upper triangle) and its row view.
    upper: Upper,
    /// Values of `P`, `−Aᵀ`, `−Q` (upper triangle), the same for every iteration.
    static_vals: Vec<f64>,
    /// Position of the diagonal entry of each column.
    diag_pos: Vec<usize>,
    /// Positions of the upper entries `(a, b)`, `a ≤ b`, of each cone block, row-major
    /// `d × d` (unused slots hold `usize::MAX`).
    cone_pos: Vec<[usize; 9]>,
    /// Current unregularized values, equilibrated.
    vals: Vec<f64>,
    /// Ruiz scaling `S`: the factored matrix is `S K S`.
    scale: Vec<f64>,
    fact_vals: Vec<f64>,
    signs: Vec<i8>,
    factor: Factor,
    /// Workspace of the Ruiz passes: the rows' ∞-norms and their scaling.
    ruiz: [Vec<f64>; 2],
    /// Workspace of [`Kkt::solve`]: target, iterate, residual, product and last correction.
    work: [Vec<f64>; 5],
}

impl Kkt {
    /// Assembles the pattern of `std`'s KKT matrix and its index map. When the pattern lies
    /// within the pattern of `analysis` (an entry that is zero in this problem, e.g. a
    /// Jacobian component of a joint whose direction is still axis-aligned, is kept as an
    /// explicit zero) the symbolic factorization is reused; otherwise the new pattern is
    /// analysed and stored there (the `bool` says so). A system of at most [`DENSE_DIM`]
    /// unknowns is factored dense and takes no analysis.
    pub fn new(std: &Standard, analysis: &mut Option<Analysis>) -> Result<(Self, bool)> {
        let (n, m) = (std.n, std.m);
        let dim = n + m;
        // (col, row, value, tag) of the upper triangle; tag marks entries whose position is
        // looked up afterwards.
        let mut entries: Vec<(usize, usize, f64)> = Vec::new();
        entries.extend(std.p.iter().map(|&(i, j, v)| (j, i, v)));
        entries.extend(std.a.iter().map(|&(i, j, v)| (n + i, j, -v)));
        entries.extend(std.qz.iter().map(|&(i, j, v)| (n + j, n + i, -v)));
        entries.extend((0..dim).map(|i| (i, i, 0.0)));
        for b in &std.blocks {
            if b.kind == Kind::Soc {
                for (x, y) in [(0, 1), (0, 2), (1, 2)] {
                    entries.push((n + b.start + y, n + b.start + x, 0.0));
                }
            }
        }
        entries.sort_by_key(|&(c, r, _)| (c, r));
        let mut col_ptr = vec![0; dim + 1];
        let mut row_idx = Vec::with_capacity(entries.len());
        let mut static_vals: Vec<f64> = Vec::with_capacity(entries.len());
        let mut last = None;
        for (c, r, v) in entries {
            if last == Some((c, r)) {
                *static_vals.last_mut().expect("a previous entry") += v;
            } else {
                row_idx.push(r);
                static_vals.push(v);
                col_ptr[c + 1] += 1;
                last = Some((c, r));
            }
        }
        for c in 0..dim {
            col_ptr[c + 1] += col_ptr[c];
        }
        let dense = dim <= DENSE_DIM;
        let mut fresh = !dense;
        if let (false, Some(a)) = (dense, analysis.as_ref())
            && let Some(vals) = a.embed(&col_ptr, &row_idx, &static_vals)
        {
            col_ptr.clone_from(&a.col_ptr);
            row_idx.clone_from(&a.row_idx);
            static_vals = vals;
            fresh = false;
        }
        let pos = |r: usize, c: usize| -> usize {
            let (lo, hi) = (col_ptr[c], col_ptr[c + 1]);
            lo + row_idx[lo..hi]
                .binary_search(&r)
                .expect("the entry belongs to the pattern")
        };
        let diag_pos: Vec<usize> = (0..dim).map(|i| pos(i, i)).collect();
        let cone_pos = std
            .blocks
            .iter()
            .map(|b| {
                let mut p = [usize::MAX; 9];
                let d = b.dim();
                for x in 0..d {
                    for y in x..d {
                        p[x * d + y] = pos(n + b.start + x, n + b.start + y);
                    }
                }
                p
            })
            .collect();
        let factor = if dense {
            Factor::Dense {
                l: vec![0.0; dim * dim],
                w: vec![0.0; dim],
            }
        } else {
            let symbolic = match analysis.as_ref() {
                Some(a) if !fresh => a.symbolic.clone(),
                _ => {
                    let sym = Arc::new(analyse(&col_ptr, &row_idx)?);
                    *analysis = Some(Analysis {
                        col_ptr: col_ptr.clone(),
                        row_idx: row_idx.clone(),
                        symbolic: sym.clone(),
                    });
                    sym
                }
            };
            let par = if dim >= PARALLEL_DIM {
                Par::rayon(0)
            } else {
                Par::Seq
            };
            let req = symbolic
                .factorize_numeric_ldlt_scratch::<f64>(par, Default::default())
                .or(symbolic.solve_in_place_scratch::<f64>(1, par));
            let (mut parallel, mut tree) = (None, None);
            if let (SymbolicCholeskyRaw::Supernodal(s), false) = (symbolic.raw(), par == Par::Seq)
                && let Some(split) = Tree::new(s)
            {
                let signs = signs(n, dim);
                let regularization = Regularization {
                    signs: &signs,
                    epsilon: DYNAMIC_EPS,
                    delta: DYNAMIC_DELTA,
                };
                parallel = Some(Box::new(SupernodalLdlt::new(
                    s,
                    symbolic.perm(),
                    &split,
                    &col_ptr,
                    &row_idx,
                    &regularization,
                )));
                if symbolic.len_val() >= TREE_ENTRIES {
                    tree = Some(Box::new(TreeSolve::new(s, symbolic.perm(), &split)));
                }
            }
            Factor::Sparse(SparseLdlt {
                l_vals: vec![0.0; symbolic.len_val()],
                symbolic,
                mem: MemBuffer::new(req),
                par,
                parallel,
                tree,
            })
        };
        let nnz = row_idx.len();
        let kkt = Kkt {
            n,
            upper: Upper::new(col_ptr, row_idx),
            static_vals,
            diag_pos,
            cone_pos,
            vals: vec![0.0; nnz],
            scale: vec![1.0; dim],
            fact_vals: vec![0.0; nnz],
            signs: signs(n, dim),
            factor,
            ruiz: std::array::from_fn(|_| vec![0.0; dim]),
            work: std::array::from_fn(|_| vec![0.0; dim]),
        };
        Ok((kkt, fresh))
    }

    /// Writes the values for the NT scalings of the cone blocks (free blocks take none; `G = I`
    /// is `Scaling` with identity), equilibrates and factors.
    pub fn factor(&mut self, std: &Standard, scalings: &[Scaling]) -> Result<()> {
        self.factor_with(std, |k, d| scalings[k].g_squared(d))
    }

    /// Writes the values with `blocks[k]` (symmetric, row-major `d × d`) in place of `G²` in
    /// the cone block `k` (free blocks take none), equilibrates and factors.
    pub fn factor_blocks(&mut self, std: &Standard, blocks: &[[f64; 9]]) -> Result<()> {
        self.factor_with(std, |k, _| blocks[k])
    }

    /// [`Kkt::factor_blocks`] with `block(k, d)` the block of cone `k` (dimension `d`).
    fn factor_with(
        &mut self,
        std: &Standard,
        block: impl Fn(usize, usize) -> [f64; 9],
    ) -> Result<()> {
        self.vals.copy_from_slice(&self.static_vals);
        for (k, (b, pos)) in std.blocks.iter().zip(&self.cone_pos).enumerate() {
            if b.kind == Kind::Free {
                continue;
            }
            let d = b.dim();
            let c = block(k, d);
            for x in 0..d {
                for y in x..d {
                    self.vals[pos[x * d + y]] -= c[x * d + y];
                }
            }
        }
        self.equilibrate();
        self.fact_vals.copy_from_slice(&self.vals);
        for (i, &p) in self.diag_pos.iter().enumerate() {
            self.fact_vals[p] += if i < self.n { STATIC_REG } else { -STATIC_REG };
        }
        let dim = self.scale.len();
        match &mut self.factor {
            Factor::Sparse(SparseLdlt {
                parallel: Some(p),
                l_vals,
                ..
            }) => p.factor(&self.fact_vals, l_vals)?,
            Factor::Sparse(f) => {
                let pattern = SymbolicSparseColMatRef::new_checked(
                    dim,
                    dim,
                    &self.upper.col_ptr,
                    None,
                    &self.upper.row_idx,
                );
                let a = SparseColMatRef::new(pattern, &self.fact_vals);
                f.symbolic
                    .factorize_numeric_ldlt(
                        &mut f.l_vals,
                        a,
                        Side::Upper,
                        LdltRegularization {
                            dynamic_regularization_signs: Some(&self.signs),
                            dynamic_regularization_delta: DYNAMIC_DELTA,
                            dynamic_regularization_epsilon: DYNAMIC_EPS,
                        },
                        f.par,
                        MemStack::new(&mut f.mem),
                        Default::default(),
                    )
                    .map_err(|e| Error::Factorization(format!("KKT LDLᵀ: {e:?}")))?;
            }
            Factor::Dense { l, w } => {
                l.fill(0.0);
                // The upper triangle's column c is the lower triangle's row c.
                for c in 0..dim {
                    for p in self.upper.col_ptr[c]..self.upper.col_ptr[c + 1] {
                        l[c * dim + self.upper.row_idx[p]] = self.fact_vals[p];
                    }
                }
                dense_ldlt(l, w, &self.signs)?;
            }
        }
        Ok(())
    }

    /// Symmetric Ruiz equilibration of `vals` in place: `S K S` with every row's ∞-norm
    /// close to 1.
    fn equilibrate(&mut self) {
        let [norm, d] = &mut self.ruiz;
        self.scale.fill(1.0);
        for _ in 0..RUIZ_PASSES {
            self.upper.row_norms(&self.vals, norm);
            for (di, &x) in d.iter_mut().zip(norm.iter()) {
                *di = if x > 0.0 { 1.0 / x.sqrt() } else { 1.0 };
            }
            self.upper.scale(&mut self.vals, d);
            for (s, di) in self.scale.iter_mut().zip(d.iter()) {
                *s *= di;
            }
        }
    }

    /// `y = K̂ x` with the equilibrated, unregularized matrix.
    fn apply(&self, x: &[f64], y: &mut [f64]) {
        self.upper.product(&self.vals, x, y);
    }

    /// Solves `K Δ = rhs` in place (the last factorization), with iterative refinement.
    pub fn solve(&mut self, rhs: &mut [f64]) {
        let [mut target, mut y, mut res, mut ky, mut corr] = std::mem::take(&mut self.work);
        // K Δ = rhs  ⇔  (S K S)(S⁻¹ Δ) = S rhs.
        for ((t, r), s) in target.iter_mut().zip(rhs.iter()).zip(&self.scale) {
            *t = r * s;
        }
        let tnorm = target.iter().fold(0.0f64, |m, v| m.max(v.abs()));
        let tol = if target.len() >= PARALLEL_DIM {
            REFINE_TOL_LARGE
        } else {
            REFINE_TOL
        };
        y.copy_from_slice(&target);
        self.back_solve(&mut y);
        corr.fill(0.0);
        let mut last_norm = f64::INFINITY;
        for step in 0..=REFINE_STEPS {
            self.apply(&y, &mut ky);
            let mut rnorm = 0.0f64;
            for ((r, t), k) in res.iter_mut().zip(&target).zip(&ky) {
                *r = t - k;
                rnorm = rnorm.max(r.abs());
            }
            if rnorm >= last_norm {
                // The last correction did not help: take it back.
                y.iter_mut().zip(&corr).for_each(|(a, b)| *a -= b);
                break;
            }
            if rnorm <= tol * tnorm || step == REFINE_STEPS {
                break;
            }
            last_norm = rnorm;
            self.back_solve(&mut res);
            y.iter_mut().zip(&res).for_each(|(a, b)| *a += b);
            // Keep the correction to take it back if it does not reduce the residual.
            corr.copy_from_slice(&res);
        }
        for ((r, yi), s) in rhs.iter_mut().zip(&y).zip(&self.scale) {
            *r = yi * s;
        }
        self.work = [target, y, res, ky, corr];
    }

    fn back_solve(&mut self, x: &mut [f64]) {
        let dim = x.len();
        match &mut self.factor {
            Factor::Sparse(SparseLdlt {
                symbolic,
                l_vals,
                tree: Some(tree),
                ..
            }) => {
                let SymbolicCholeskyRaw::Supernodal(s) = symbolic.raw() else {
                    unreachable!("a tree solve is built for a supernodal factor only")
                };
                tree.solve(s, l_vals, x);
            }
            Factor::Sparse(f) => {
                let ldlt = LdltRef::<usize, f64>::new(&f.symbolic, &f.l_vals);
                ldlt.solve_in_place_with_conj(
                    Conj::No,
                    MatMut::from_column_major_slice_mut(x, dim, 1),
                    f.par,
                    MemStack::new(&mut f.mem),
                );
            }
            Factor::Dense { l, .. } => dense_solve(l, x),
        }
    }
}

/// The expected signs of the pivots of a KKT matrix of `n` unknowns `x` and `dim` in all:
/// `+` for `x`, `−` for `z`.
fn signs(n: usize, dim: usize) -> Vec<i8> {
    (0..dim).map(|i| if i < n { 1 } else { -1 }).collect()
}

/// The symbolic factorization of the pattern (`col_ptr`, `row_idx`) (upper triangle) under
/// the cheaper ([`factor_cost`]) of faer's AMD and METIS' nested dissection; the latter is
/// tried only where AMD's factorization costs more than [`TRY_DISSECTION`] (below, METIS'
/// own run costs about as much as what it could save over an interior point's iterations).
fn analyse(col_ptr: &[usize], row_idx: &[usize]) -> Result<SymbolicCholesky<usize>> {
    let dim = col_ptr.len() - 1;
    let symbolic = |ordering| symbolic_under(col_ptr, row_idx, ordering);
    let amd = symbolic(SymmetricOrdering::Amd)?;
    if factor_cost(&amd) <= TRY_DISSECTION {
        return Ok(amd);
    }
    let Some((fwd, inv)) = nested_dissection(col_ptr, row_idx) else {
        return Ok(amd);
    };
    let nd = symbolic(SymmetricOrdering::Custom(PermRef::new_checked(
        &fwd, &inv, dim,
    )))?;
    Ok(if factor_cost(&nd) < factor_cost(&amd) {
        nd
    } else {
        amd
    })
}

/// faer's symbolic factorization of the pattern (`col_ptr`, `row_idx`) (upper triangle)
/// under `ordering`.
pub(super) fn symbolic_under(
    col_ptr: &[usize],
    row_idx: &[usize],
    ordering: SymmetricOrdering<'_, usize>,
) -> Result<SymbolicCholesky<usize>> {
    let dim = col_ptr.len() - 1;
    let pattern = SymbolicSparseColMatRef::new_checked(dim, dim, col_ptr, None, row_idx);
    factorize_symbolic_cholesky(
        pattern,
        Side::Upper,
        ordering,
        CholeskySymbolicParams::default(),
    )
    .map_err(|e| Error::Factorization(format!("symbolic analysis: {e:?}")))
}

/// The cost of a numeric factorization under `symbolic`, in multiply–adds: its arithmetic
/// ([`factor_work`]) plus [`SUPERNODE_COST`] per supernode.
fn factor_cost(symbolic: &SymbolicCholesky<usize>) -> f64 {
    let (flops, supernodes) = factor_work(symbolic);
    flops + SUPERNODE_COST * supernodes as f64
}

/// The multiply–adds of a numeric factorization under `symbolic`, `Σ c²/2` over the columns'
/// entry counts `c` of `L` (a supernode of `w` columns over `r` further rows has columns of
/// `w − j + r` entries), and its number of supernodes (columns, if simplicial).
fn factor_work(symbolic: &SymbolicCholesky<usize>) -> (f64, usize) {
    let half_square = |c: usize| (c * c) as f64 / 2.0;
    match symbolic.raw() {
        SymbolicCholeskyRaw::Simplicial(s) => (
            s.col_ptr()
                .windows(2)
                .map(|w| half_square(w[1] - w[0]))
                .sum(),
            s.nrows(),
        ),
        SymbolicCholeskyRaw::Supernodal(s) => {
            let rows = s.col_ptr_for_row_idx();
            let flops = (0..s.n_supernodes())
                .map(|k| {
                    let w = s.supernode_end()[k] - s.supernode_begin()[k];
                    let r = rows[k + 1] - rows[k];
                    (0..w).map(|j| half_square(w - j + r)).sum::<f64>()
                })
                .sum();
            (flops, s.n_supernodes())
        }
    }
}

/// `K = L D Lᵀ` in place of the lower triangle of `l` (row-major `dim × dim`): `L` strictly
/// below the diagonal, `D` on it; `w` a row of workspace. Left-looking without pivoting,
/// with faer's dynamic regularization: a pivot of the wrong sign (`signs`) or below
/// [`DYNAMIC_EPS`] in magnitude becomes `±`[`DYNAMIC_DELTA`].
fn dense_ldlt(l: &mut [f64], w: &mut [f64], signs: &[i8]) -> Result<()> {
    let dim = w.len();
    for j in 0..dim {
        let (done, rest) = l.split_at_mut(j * dim);
        let row_j = &mut rest[..dim];
        // w_k = L_jk D_k.
        for (k, wk) in w[..j].iter_mut().enumerate() {
            *wk = row_j[k] * done[k * dim + k];
        }
        let mut pivot = row_j[j] - dot(&row_j[..j], &w[..j]);
        if signs[j] > 0 && pivot <= DYNAMIC_EPS {
            pivot = DYNAMIC_DELTA;
        } else if signs[j] < 0 && pivot >= -DYNAMIC_EPS {
            pivot = -DYNAMIC_DELTA;
        }
        if !pivot.is_finite() {
            return Err(Error::Factorization(format!(
                "KKT LDLᵀ: pivot {pivot} at {j}"
            )));
        }
        row_j[j] = pivot;
        for i in j + 1..dim {
            let row_i = &mut l[i * dim..][..dim];
            row_i[j] = (row_i[j] - dot(&row_i[..j], &w[..j])) / pivot;
        }
    }
    Ok(())
}

/// Solves `L D Lᵀ x = b` in place with the factor of [`dense_ldlt`].
fn dense_solve(l: &[f64], x: &mut [f64]) {
    let dim = x.len();
    for i in 0..dim {
        x[i] -= dot(&l[i * dim..][..i], &x[..i]);
    }
    for (i, xi) in x.iter_mut().enumerate() {
        *xi /= l[i * dim + i];
    }
    for i in (0..dim).rev() {
        let xi = x[i];
        for (xk, lik) in x[..i].iter_mut().zip(&l[i * dim..][..i]) {
            *xk -= lik * xi;
        }
    }
}

fn dot(a: &[f64], b: &[f64]) -> f64 {
    a.iter().zip(b).map(|(x, y)| x * y).sum()
}

#[cfg(test)]
pub(super) mod tests_support {
    /// The upper triangle (column-compressed) of the 7-point Laplacian plus identity on an
    /// `n³` grid: the graph of a pile in three dimensions, where nested dissection is known
    /// to leave less fill than minimum degree.
    pub(crate) fn grid(n: usize) -> (Vec<usize>, Vec<usize>, Vec<f64>) {
        let id = |x: usize, y: usize, z: usize| (z * n + y) * n + x;
        let (mut col_ptr, mut row_idx, mut vals) = (vec![0], Vec::new(), Vec::new());
        for z in 0..n {
            for y in 0..n {
                for x in 0..n {
                    let c = id(x, y, z);
                    let mut rows: Vec<usize> = [
                        (x > 0).then(|| id(x - 1, y, z)),
                        (y > 0).then(|| id(x, y - 1, z)),
                        (z > 0).then(|| id(x, y, z - 1)),
                    ]
                    .into_iter()
                    .flatten()
                    .collect();
                    rows.sort_unstable();
                    vals.extend(rows.iter().map(|_| -1.0));
                    row_idx.extend(rows);
                    row_idx.push(c);
                    vals.push(7.0);
                    col_ptr.push(row_idx.len());
                }
            }
        }
        (col_ptr, row_idx, vals)
    }
}

#[cfg(test)]
mod tests {
    use super::tests_support::grid;
    use super::*;

    #[test]
    fn nested_dissection_orders_a_grid_cheaper_than_amd_and_solves_it() {
        let _metis = METIS.lock();
        let (col_ptr, row_idx, vals) = grid(30);
        let dim = col_ptr.len() - 1;
        let symbolic =
            |ordering| symbolic_under(&col_ptr, &row_idx, ordering).expect("symbolic analysis");
        let amd = symbolic(SymmetricOrdering::Amd);
        let (fwd, inv) = nested_dissection(&col_ptr, &row_idx).expect("METIS orders the grid");
        let nd = symbolic(SymmetricOrdering::Custom(PermRef::new_checked(
            &fwd, &inv, dim,
        )));
        let (f_amd, f_nd) = (factor_work(&amd).0, factor_work(&nd).0);
        assert!(
            f_nd < 0.6 * f_amd,
            "nested dissection {f_nd:.3e}, AMD {f_amd:.3e}"
        );
        // Past the fixed cost of its extra supernodes, it is the ordering chosen.
        let chosen = factor_cost(&analyse(&col_ptr, &row_idx).expect("analysis"));
        assert!(factor_cost(&nd) < factor_cost(&amd));
        assert_eq!(chosen, factor_cost(&nd));

        // The factorization under METIS' ordering solves the system.
        let (l_vals, mut mem) = factor(&nd, &col_ptr, &row_idx, &vals);
        let b = rhs(dim);
        let mut x = b.clone();
        LdltRef::<usize, f64>::new(&nd, &l_vals).solve_in_place_with_conj(
            Conj::No,
            MatMut::from_column_major_slice_mut(&mut x, dim, 1),
            Par::Seq,
            MemStack::new(&mut mem),
        );
        let mut ax = vec![0.0; dim];
        Upper::new(col_ptr.clone(), row_idx.clone()).product(&vals, &x, &mut ax);
        let err = ax
            .iter()
            .zip(&b)
            .fold(0.0f64, |m, (a, b)| m.max((a - b).abs()));
        assert!(err < 1e-12, "residual {err:.3e}");
    }

    /// METIS' random choices are shared by its concurrent calls: tests that compare two of
    /// its orderings take turns.
    static METIS: std::sync::Mutex<()> = std::sync::Mutex::new(());

    /// The values of `symbolic`'s factor of the matrix (`col_ptr`, `row_idx`, `vals`), and
    /// a workspace for its solves.
    fn factor(
        symbolic: &SymbolicCholesky<usize>,
        col_ptr: &[usize],
        row_idx: &[usize],
        vals: &[f64],
    ) -> (Vec<f64>, MemBuffer) {
        let dim = col_ptr.len() - 1;
        let pattern = SymbolicSparseColMatRef::new_checked(dim, dim, col_ptr, None, row_idx);
        let mut l_vals = vec![0.0; symbolic.len_val()];
        let mut mem = MemBuffer::new(
            symbolic
                .factorize_numeric_ldlt_scratch::<f64>(Par::Seq, Default::default())
                .or(symbolic.solve_in_place_scratch::<f64>(1, Par::Seq)),
        );
        symbolic
            .factorize_numeric_ldlt(
                &mut l_vals,
                SparseColMatRef::new(pattern, vals),
                Side::Upper,
                Default::default(),
                Par::Seq,
                MemStack::new(&mut mem),
                Default::default(),
            )
            .expect("LDLᵀ");
        (l_vals, mem)
    }

    /// A right-hand side of `dim` rows.
    fn rhs(dim: usize) -> Vec<f64> {
        (0..dim).map(|i| ((i * 7919) % 13) as f64 - 6.0).collect()
    }

    #[test]
    fn the_tree_solve_is_faers_solve() {
        let _metis = METIS.lock();
        let (col_ptr, row_idx, vals) = grid(24);
        let dim = col_ptr.len() - 1;
        let (fwd, inv) = nested_dissection(&col_ptr, &row_idx).expect("METIS orders the grid");
        let orderings = [
            SymmetricOrdering::Amd,
            SymmetricOrdering::Custom(PermRef::new_checked(&fwd, &inv, dim)),
        ];
        for ordering in orderings {
            let symbolic = symbolic_under(&col_ptr, &row_idx, ordering).expect("analysis");
            let (l_vals, mut mem) = factor(&symbolic, &col_ptr, &row_idx, &vals);
            let mut want = rhs(dim);
            LdltRef::<usize, f64>::new(&symbolic, &l_vals).solve_in_place_with_conj(
                Conj::No,
                MatMut::from_column_major_slice_mut(&mut want, dim, 1),
                Par::Seq,
                MemStack::new(&mut mem),
            );
            let SymbolicCholeskyRaw::Supernodal(s) = symbolic.raw() else {
                panic!("a supernodal factor")
            };
            let split = Tree::new(s).expect("a tree that splits");
            let mut tree = TreeSolve::new(s, symbolic.perm(), &split);
            let mut got = rhs(dim);
            tree.solve(s, &l_vals, &mut got);
            let err = got
                .iter()
                .zip(&want)
                .fold(0.0f64, |m, (a, b)| m.max((a - b).abs()));
            assert!(err < 1e-12, "{err:.3e}");
        }
    }
}
