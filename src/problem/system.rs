//! A validated problem prepared for the solvers: cones, block offsets, `r`, compliance and the
//! Delassus operator.

use std::ops::Range;

use faer::dyn_stack::{MemBuffer, MemStack};
use faer::linalg::cholesky::llt::factor::LltRegularization;
use faer::sparse::linalg::cholesky::{
    CholeskySymbolicParams, LltRef, SymbolicCholesky, SymmetricOrdering,
    factorize_symbolic_cholesky,
};
use faer::sparse::{SparseColMat, Triplet};
use faer::{Conj, MatMut, Par, Side};

use super::operator::{
    AssembledOperator, DelassusOperator, FactoredOperator, Storage, block_offsets,
};
use super::{Cone, CsrMatrix, Global, Operator, Problem, ProblemClass};
use crate::error::{Error, Result};
use crate::limits::{self, Limits};

/// What a global problem keeps to recover `v = H⁻¹ (f + Jᵀ γ)` and measure its residuals.
struct GlobalParts {
    data: Global,
    h_factor: SparseLlt,
}

/// A factored system by its parts, for [`System::from_factored`].
pub(crate) struct FactoredParts {
    /// The problem's name.
    pub name: String,
    /// Where it comes from.
    pub class: ProblemClass,
    /// The cones, one per block of `op`.
    pub cones: Vec<Cone>,
    /// The operator.
    pub op: FactoredOperator,
    /// `r = J v_free + b`, one entry per row ([`FactoredOperator::build_in`] with the free
    /// velocities).
    pub r: Vec<f64>,
    /// The free velocities, 6 per body of `op`.
    pub v_free: Vec<f64>,
    /// The compliance of each row; empty = rigid.
    pub compliance: Vec<f64>,
}

/// The problem every solver works on: `K ∋ γ ⊥ u = (N + E) γ + r ∈ K*`.
pub struct System {
    name: String,
    class: ProblemClass,
    cones: Vec<Cone>,
    offsets: Vec<usize>,
    r: Vec<f64>,
    compliance: Vec<f64>,
    op: Box<dyn DelassusOperator>,
    global: Option<GlobalParts>,
    /// Free velocities of the factored form, 6 per body.
    v_free: Option<Vec<f64>>,
}

impl System {
    /// Validates `problem` and prepares its operator, within the default [`Limits`].
    ///
    /// A global problem is reduced to its Delassus form `N = J H⁻¹ Jᵀ`, `r = J H⁻¹ f + b`
    /// with a sparse Cholesky factorization of `H` (faer); an `H` that is not positive
    /// definite is an error.
    pub fn new(problem: &Problem) -> Result<Self> {
        Self::with_limits(problem, &Limits::default())
    }

    /// [`System::new`] within `limits`: the memory the prepared operator needs is estimated
    /// (the copies of the data; for a global problem the factor of `H` and the reduced `N`)
    /// and refused, before it is allocated, when it exceeds the limit.
    pub fn with_limits(problem: &Problem, limits: &Limits) -> Result<Self> {
        Self::build(problem, limits)
    }

    /// The system of a factored problem given by its parts, its compliance and offsets in
    /// the memory of `storage` (see [`FactoredOperator::build_in`]): what a time stepper
    /// builds straight from its contacts, without a [`Problem`] (which validation would
    /// check; the parts must be valid).
    pub(crate) fn from_factored(parts: FactoredParts, storage: &mut Storage) -> Self {
        let FactoredParts {
            name,
            class,
            cones,
            op,
            r,
            v_free,
            compliance,
        } = parts;
        let m = r.len();
        let mut offsets = std::mem::take(&mut storage.system_offsets);
        offsets.clear();
        offsets.extend_from_slice(op.offsets());
        let compliance = if compliance.is_empty() {
            let mut zeros = std::mem::take(&mut storage.compliance);
            zeros.clear();
            zeros.resize(m, 0.0);
            zeros
        } else {
            compliance
        };
        System {
            name,
            class,
            offsets,
            cones,
            r,
            compliance,
            op: Box::new(op),
            global: None,
            v_free: Some(v_free),
        }
    }

    /// The memory of a factored system, for [`System::from_factored`] (empty for the other
    /// forms).
    pub(crate) fn into_storage(self) -> Storage {
        let mut storage = match self.global {
            None => self.op.into_factored().map(|op| op.into_storage()),
            Some(_) => None,
        }
        .unwrap_or_default();
        storage.r = self.r;
        storage.compliance = self.compliance;
        storage.cones = self.cones;
        storage.v_free = self.v_free.unwrap_or_default();
        storage.system_offsets = self.offsets;
        storage
    }

    fn build(problem: &Problem, limits: &Limits) -> Result<Self> {
        problem.validate()?;
        limits.check(
            || format!("problem `{}` ({} rows)", problem.name, problem.rows()),
            estimate(problem),
        )?;
        let dims: Vec<usize> = problem.cones.iter().map(Cone::dim).collect();
        let offsets = block_offsets(dims.iter().copied());
        let m = offsets[dims.len()];
        let mut global = None;
        let (op, r): (Box<dyn DelassusOperator>, Vec<f64>) = match &problem.operator {
            Operator::Factored(f) => {
                let mut storage = Storage::default();
                let v_free: Vec<f64> = f.bodies.iter().flat_map(|b| b.v_free).collect();
                let (op, r) = FactoredOperator::new_in(f, &dims, Some(&v_free), &mut storage);
                let parts = FactoredParts {
                    name: problem.name.clone(),
                    class: problem.class,
                    cones: problem.cones.clone(),
                    op,
                    r,
                    v_free,
                    compliance: problem.compliance.clone(),
                };
                return Ok(Self::from_factored(parts, &mut storage));
            }
            Operator::Assembled(a) => (
                Box::new(AssembledOperator::new(a.n.clone(), &dims)),
                a.r.clone(),
            ),
            Operator::Global(g) => {
                let (n, r, h_factor) = reduce_global(g, limits)?;
                global = Some(GlobalParts {
                    data: g.clone(),
                    h_factor,
                });
                (Box::new(AssembledOperator::new(n, &dims)), r)
            }
        };
        let compliance = if problem.compliance.is_empty() {
            vec![0.0; m]
        } else {
            problem.compliance.clone()
        };
        Ok(System {
            name: problem.name.clone(),
            class: problem.class,
            cones: problem.cones.clone(),
            offsets,
            r,
            compliance,
            op,
            global,
            v_free: None,
        })
    }

    /// The problem's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Where the problem comes from.
    pub fn class(&self) -> ProblemClass {
        self.class
    }

    /// Number of rows `m`.
    pub fn rows(&self) -> usize {
        self.r.len()
    }

    /// Number of blocks.
    pub fn blocks(&self) -> usize {
        self.cones.len()
    }

    /// The cones, one per block.
    pub fn cones(&self) -> &[Cone] {
        &self.cones
    }

    /// Rows of block `k`.
    pub fn block_range(&self, k: usize) -> Range<usize> {
        self.offsets[k]..self.offsets[k + 1]
    }

    /// The vector `r`.
    pub fn r(&self) -> &[f64] {
        &self.r
    }

    /// The compliance of each row (zeros for a rigid problem).
    pub fn compliance(&self) -> &[f64] {
        &self.compliance
    }

    /// The Delassus operator without compliance.
    pub fn operator(&self) -> &dyn DelassusOperator {
        self.op.as_ref()
    }

    /// The factored operator (bodies and per-block Jacobians), `None` for an assembled or a
    /// global problem.
    pub fn factored(&self) -> Option<&FactoredOperator> {
        self.op.as_factored()
    }

    /// `y = (N + E) x`.
    pub fn apply(&self, x: &[f64], y: &mut [f64]) {
        self.op.apply(x, y);
        for ((yi, xi), ei) in y.iter_mut().zip(x).zip(&self.compliance) {
            *yi += ei * xi;
        }
    }

    /// `u = (N + E) γ + r`.
    pub fn velocity(&self, gamma: &[f64]) -> Vec<f64> {
        let mut u = vec![0.0; self.rows()];
        self.apply(gamma, &mut u);
        u.iter_mut().zip(&self.r).for_each(|(ui, ri)| *ui += ri);
        u
    }

    /// The diagonal block `(N + E)_kk`, `d × d` row-major, in a 3 × 3 array.
    pub fn diagonal_block(&self, k: usize) -> [f64; 9] {
        let mut out = [0.0; 9];
        self.op.diagonal_block(k, &mut out);
        let range = self.block_range(k);
        let d = range.len();
        for (a, e) in self.compliance[range].iter().enumerate() {
            out[a * d + a] += e;
        }
        out
    }

    /// The generalized velocities after the step, `v_free + M⁻¹ Jᵀ γ` (factored form) or
    /// `H⁻¹ (f + Jᵀ γ)` (global form); `None` for an assembled problem.
    pub fn velocities(&self, gamma: &[f64]) -> Option<Vec<f64>> {
        if let Some(g) = &self.global {
            return Some(g.velocities(gamma));
        }
        let v_free = self.v_free.as_ref()?;
        let mut w = vec![0.0; self.op.aux_len()];
        self.op.init_aux(gamma, &mut w);
        Some(w.iter().zip(v_free).map(|(a, b)| a + b).collect())
    }

    /// The free velocities of the factored form (6 per body), `None` for the other forms.
    pub fn v_free(&self) -> Option<&[f64]> {
        self.v_free.as_deref()
    }

    /// The data `(H, J, f, b)` of a global problem, `None` for the other forms.
    pub fn global(&self) -> Option<&Global> {
        self.global.as_ref().map(|g| &g.data)
    }

    /// For a global problem: `(H, J, f, b)` and the velocities of `gamma`.
    pub(crate) fn global_parts(&self, gamma: &[f64]) -> Option<(&Global, Vec<f64>)> {
        self.global.as_ref().map(|g| (&g.data, g.velocities(gamma)))
    }
}

impl GlobalParts {
    fn velocities(&self, gamma: &[f64]) -> Vec<f64> {
        let mut rhs = vec![0.0; self.data.h.nrows];
        self.data.j.mul_transpose_vec(gamma, &mut rhs);
        rhs.iter_mut().zip(&self.data.f).for_each(|(a, f)| *a += f);
        self.h_factor.solve(&mut rhs);
        rhs
    }
}

/// Bytes per stored entry of a sparse matrix (value and index) and per row (pointer).
const ENTRY_BYTES: usize = 16;

/// The memory `System::new` allocates beside the problem: the copies of its vectors and
/// matrices (a global problem's data is kept, its `N` estimated separately while it is
/// built; see `reduce_global`). `None` when a size overflows.
fn estimate(p: &Problem) -> Option<u64> {
    let m = p.rows();
    let vectors = limits::bytes_of(m, 3 * 8 + 8);
    let operator = match &p.operator {
        Operator::Factored(f) => limits::total(&[
            limits::bytes_of(f.bodies.len(), 2 * 6 * 8),
            limits::bytes_of(f.jacobians.iter().map(|j| j.rows.len()).sum(), 6 * 8 + 8),
        ]),
        Operator::Assembled(a) => limits::bytes_of(a.n.nnz() + a.n.nrows, ENTRY_BYTES),
        Operator::Global(g) => limits::total(&[
            limits::bytes_of(
                g.h.nnz() + g.j.nnz() + g.h.nrows + g.j.nrows,
                2 * ENTRY_BYTES,
            ),
            limits::bytes_of(g.f.len() + g.b.len(), 8),
        ]),
    };
    limits::total(&[vectors, operator])
}

/// A sparse Cholesky factor `A = L Lᵀ` of the lower triangle of a symmetric positive
/// definite `A` (faer, AMD ordering): `H` of a global problem, or the joints' `J M⁻¹ Jᵀ + εI`
/// of the position projection (`crate::sim::projection`).
pub(crate) struct SparseLlt {
    symbolic: SymbolicCholesky<usize>,
    values: Vec<f64>,
}

impl SparseLlt {
    /// Factors the lower triangle of `h`, named `name` in errors; the factor's size is
    /// checked against `limits` before its values are allocated. A matrix that is not
    /// positive definite is an [`Error::Factorization`].
    pub(crate) fn new(h: &CsrMatrix, limits: &Limits, name: &str) -> Result<Self> {
        let n = h.nrows;
        let lower: Vec<Triplet<usize, usize, f64>> = (0..n)
            .flat_map(|i| {
                let (cols, vals) = h.row(i);
                cols.iter()
                    .zip(vals)
                    .filter(move |(j, _)| **j <= i)
                    .map(move |(&j, &v)| Triplet::new(i, j, v))
            })
            .collect();
        let not_factored = |e: String| Error::Factorization(format!("{name}: {e}"));
        let a = SparseColMat::<usize, f64>::try_new_from_triplets(n, n, &lower)
            .map_err(|e| not_factored(format!("{e:?}")))?;
        let symbolic = factorize_symbolic_cholesky(
            a.symbolic(),
            Side::Lower,
            SymmetricOrdering::Amd,
            CholeskySymbolicParams::default(),
        )
        .map_err(|e| not_factored(format!("{e:?}")))?;
        limits.check(
            || {
                format!(
                    "the Cholesky factor of {name} ({n}×{n}, {} entries)",
                    h.nnz()
                )
            },
            limits::bytes_of(symbolic.len_val(), 8),
        )?;
        let mut values = vec![0.0; symbolic.len_val()];
        let mut mem = MemBuffer::new(
            symbolic.factorize_numeric_llt_scratch::<f64>(Par::Seq, Default::default()),
        );
        symbolic
            .factorize_numeric_llt(
                &mut values,
                a.as_ref(),
                Side::Lower,
                LltRegularization::default(),
                Par::Seq,
                MemStack::new(&mut mem),
                Default::default(),
            )
            .map_err(|_| Error::Factorization(format!("{name} is not positive definite")))?;
        Ok(SparseLlt { symbolic, values })
    }

    /// `x ← A⁻¹ x`.
    pub(crate) fn solve(&self, x: &mut [f64]) {
        let n = x.len();
        let mut mem = MemBuffer::new(self.symbolic.solve_in_place_scratch::<f64>(1, Par::Seq));
        LltRef::new(&self.symbolic, &self.values).solve_in_place_with_conj(
            Conj::No,
            MatMut::from_column_major_slice_mut(x, n, 1),
            Par::Seq,
            MemStack::new(&mut mem),
        );
    }
}

/// Largest relative asymmetry of `H` accepted (FCLIB's LMGC matrices carry about 1e-7);
/// the factorization reads the lower triangle.
const ASYMMETRY_TOLERANCE: f64 = 1e-6;

/// `N = J H⁻¹ Jᵀ` and `r = J H⁻¹ f + b` with a sparse Cholesky factor of `H`. `N` is built
/// a column at a time (`H⁻¹ Jᵀ e_i`, then `J` on the non-zero entries only) and its size is
/// checked against `limits` as it grows.
fn reduce_global(g: &Global, limits: &Limits) -> Result<(CsrMatrix, Vec<f64>, SparseLlt)> {
    let h = &g.h;
    let scale = h
        .values
        .iter()
        .fold(f64::MIN_POSITIVE, |a, v| a.max(v.abs()));
    let asym = (0..h.nrows)
        .flat_map(|i| {
            let (cols, vals) = h.row(i);
            cols.iter()
                .zip(vals)
                .map(move |(&j, &v)| (v - h.get(j, i)).abs())
        })
        .fold(0.0, f64::max);
    if asym > ASYMMETRY_TOLERANCE * scale {
        return Err(Error::invalid(
            "h",
            format!("is not symmetric (max |H − Hᵀ| = {asym:e})"),
        ));
    }
    let factor = SparseLlt::new(h, limits, "H").map_err(|e| match e {
        Error::Factorization(m) => Error::Factorization(format!(
            "{m}: the global problem cannot be reduced to N = J H⁻¹ Jᵀ"
        )),
        other => other,
    })?;
    let (m, ndof) = (g.j.nrows, h.nrows);
    let jt = g.j.transpose();
    let mut triplets = Vec::new();
    let mut x = vec![0.0; ndof];
    let mut column = vec![0.0; m];
    let mut touched = Vec::new();
    for i in 0..m {
        x.iter_mut().for_each(|v| *v = 0.0);
        let (cols, vals) = g.j.row(i);
        cols.iter().zip(vals).for_each(|(&k, &v)| x[k] = v);
        factor.solve(&mut x);
        // Column i of N = J x, from the rows of J that meet the non-zeros of x.
        for (k, &xk) in x.iter().enumerate().filter(|(_, v)| **v != 0.0) {
            let (rows, vals) = jt.row(k);
            for (&r, &v) in rows.iter().zip(vals) {
                if column[r] == 0.0 {
                    touched.push(r);
                }
                column[r] += v * xk;
            }
        }
        for &r in &touched {
            // An entry that cancels to zero stays out; it is not in the pattern.
            if column[r] != 0.0 {
                triplets.push((r, i, column[r]));
            }
            column[r] = 0.0;
        }
        touched.clear();
        limits.check(
            || format!("the reduced operator N = J H⁻¹ Jᵀ ({m}×{m}, {ndof} degrees of freedom)"),
            limits::bytes_of(triplets.len(), 3 * 8),
        )?;
    }
    let n = CsrMatrix::from_triplets(m, m, &triplets)?;
    let mut v_free = g.f.clone();
    factor.solve(&mut v_free);
    let mut r = vec![0.0; m];
    g.j.mul_vec(&v_free, &mut r);
    r.iter_mut().zip(&g.b).for_each(|(ri, bi)| *ri += bi);
    Ok((n, r, factor))
}
