//! A validated problem prepared for the solvers: cones, block offsets, `r`, compliance and the
//! Delassus operator.

use std::ops::Range;

use nalgebra::{Cholesky, DMatrix, DVector, Dyn};

use super::operator::{AssembledOperator, DelassusOperator, FactoredOperator, block_offsets};
use super::{Cone, CsrMatrix, Global, Operator, Problem, ProblemClass};
use crate::error::{Error, Result};

/// What a global problem keeps to recover `v = H⁻¹ (f + Jᵀ γ)` and measure its residuals.
struct GlobalParts {
    data: Global,
    h_chol: Cholesky<f64, Dyn>,
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
    /// Validates `problem` and prepares its operator.
    ///
    /// A global problem is reduced to its Delassus form `N = J H⁻¹ Jᵀ`, `r = J H⁻¹ f + b`
    /// with a dense Cholesky factorization of `H`; an `H` that is not positive definite is an
    /// error.
    pub fn new(problem: &Problem) -> Result<Self> {
        problem.validate()?;
        let dims: Vec<usize> = problem.cones.iter().map(Cone::dim).collect();
        let offsets = block_offsets(dims.iter().copied());
        let m = offsets[dims.len()];
        let mut global = None;
        let mut v_free = None;
        let (op, r): (Box<dyn DelassusOperator>, Vec<f64>) = match &problem.operator {
            Operator::Factored(f) => {
                let op = FactoredOperator::new(f, &dims);
                let vf: Vec<f64> = f.bodies.iter().flat_map(|b| b.v_free).collect();
                let mut r = vec![0.0; m];
                op.velocity_to_rows(&vf, &mut r);
                r.iter_mut().zip(&f.b).for_each(|(ri, bi)| *ri += bi);
                v_free = Some(vf);
                (Box::new(op), r)
            }
            Operator::Assembled(a) => (
                Box::new(AssembledOperator::new(a.n.clone(), &dims)),
                a.r.clone(),
            ),
            Operator::Global(g) => {
                let (n, r, h_chol) = reduce_global(g)?;
                global = Some(GlobalParts {
                    data: g.clone(),
                    h_chol,
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
            v_free,
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
        self.h_chol
            .solve(&DVector::from_vec(rhs))
            .as_slice()
            .to_vec()
    }
}

/// Largest relative asymmetry of `H` accepted (FCLIB's LMGC matrices carry about 1e-7);
/// the factorization reads the lower triangle.
const ASYMMETRY_TOLERANCE: f64 = 1e-6;

/// `N = J H⁻¹ Jᵀ` and `r = J H⁻¹ f + b` with a dense Cholesky factor of `H`.
fn reduce_global(g: &Global) -> Result<(CsrMatrix, Vec<f64>, Cholesky<f64, Dyn>)> {
    let h = g.h.to_dense();
    let asym = (&h - h.transpose()).amax();
    if asym > ASYMMETRY_TOLERANCE * h.amax().max(f64::MIN_POSITIVE) {
        return Err(Error::invalid(
            "h",
            format!("is not symmetric (max |H − Hᵀ| = {asym:e})"),
        ));
    }
    let chol = Cholesky::new(h).ok_or_else(|| {
        Error::Factorization(
            "H is not positive definite: the global problem cannot be reduced to N = J H⁻¹ Jᵀ"
                .into(),
        )
    })?;
    let jt: DMatrix<f64> = g.j.to_dense().transpose();
    let h_inv_jt = chol.solve(&jt);
    let n = g.j.to_dense() * &h_inv_jt;
    let m = g.j.nrows;
    let n = CsrMatrix::from_dense_col_major(m, m, n.as_slice());
    let v_free = chol.solve(&DVector::from_column_slice(&g.f));
    let mut r = vec![0.0; m];
    g.j.mul_vec(v_free.as_slice(), &mut r);
    r.iter_mut().zip(&g.b).for_each(|(ri, bi)| *ri += bi);
    Ok((n, r, chol))
}
