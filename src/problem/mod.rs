//! The cone complementarity problem of one time step (DESIGN §1), in its three forms, with
//! validation, the prepared operator the solvers work on, the merit set and file formats.
//!
//! A [`Problem`] is plain data (what files hold); [`System::new`] validates it and prepares
//! the Delassus operator `N` and the vector `r`, and every solver works on a [`System`].

pub mod cone;
pub mod io;
pub mod merit;
pub mod operator;
pub mod real;
pub mod sparse;
mod system;
mod validate;

use serde::{Deserialize, Serialize};
use smallvec::SmallVec;

pub use cone::Cone;
pub use merit::Merit;
pub use operator::DelassusOperator;
pub use sparse::CsrMatrix;
pub(crate) use system::FactoredParts;
pub(crate) use system::SparseLlt;
pub use system::System;

/// Where a problem comes from; it selects the Siconos error measure of the problem's class.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ProblemClass {
    /// A problem of ours (simulator, JSON): no external error measure.
    #[default]
    Native,
    /// A Siconos linear complementarity problem (all blocks unilateral).
    Lcp,
    /// A Siconos mixed LCP (bilateral rows first, then unilateral rows).
    Mlcp,
    /// A Siconos/FCLIB local 3-D frictional contact problem (all blocks Coulomb).
    Fc3d,
    /// A Siconos/FCLIB global 3-D frictional contact problem (the [`Operator::Global`] form).
    Gfc3d,
    /// A Siconos generic mechanical problem (equalities, LCP and FC3D blocks mixed).
    GenericMechanical,
}

/// The friction model of a solve (DESIGN §1).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FrictionModel {
    /// The convex relaxation of Anitescu–Tasora: exactly the QP `min ½γᵀNγ + rᵀγ, γ ∈ K`.
    #[default]
    Ccp,
    /// Coulomb friction in De Saxcé's form: `K ∋ γ ⊥ û ∈ K*`, `û = u + (μ‖u_t‖, 0, 0)`.
    Coulomb,
}

impl std::str::FromStr for FrictionModel {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "ccp" => Ok(FrictionModel::Ccp),
            "coulomb" => Ok(FrictionModel::Coulomb),
            _ => Err(format!("unknown friction model `{s}`; valid: ccp, coulomb")),
        }
    }
}

/// One dynamic body of the factored form: fixed bodies have no velocity unknowns and are
/// simply absent.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Body {
    /// Mass (> 0).
    pub mass: f64,
    /// Principal moments of inertia `(Jx, Jy, Jz)` (> 0), body frame.
    pub inertia: [f64; 3],
    /// Free velocity `v + h M⁻¹ f_ext`: linear (world frame) then angular (body frame).
    pub v_free: [f64; 6],
}

impl Body {
    /// The diagonal of `M⁻¹`: `(1/m, 1/m, 1/m, 1/Jx, 1/Jy, 1/Jz)`.
    pub fn inv_mass(&self) -> [f64; 6] {
        let im = 1.0 / self.mass;
        let [jx, jy, jz] = self.inertia;
        [im, im, im, 1.0 / jx, 1.0 / jy, 1.0 / jz]
    }
}

/// The bodies of a [`JacobianBlock`]: one or two, stored inline.
pub type BlockBodies = SmallVec<[usize; 2]>;

/// The rows of a [`JacobianBlock`]: up to 2 bodies × 3 rows are stored inline, so that a
/// contact or joint block costs no heap allocation (a longer list spills to the heap, and
/// validation refuses it).
pub type BlockRows = SmallVec<[[f64; 6]; 6]>;

/// The Jacobian of one constraint block: `d × 6` per body it acts on. Both lists are stored
/// inline (no heap allocation for a valid block) and read and written as plain sequences
/// in the file formats; build them with `vec![…].into()`, `push` or `collect`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct JacobianBlock {
    /// One or two distinct body indices.
    #[serde(with = "inline_seq")]
    pub bodies: BlockBodies,
    /// `d · bodies.len()` rows of 6 entries, body by body: `rows[s·d + i]` is row `i` of the
    /// block for body `bodies[s]`.
    #[serde(with = "inline_seq")]
    pub rows: BlockRows,
}

/// Serde of the inline lists of a [`JacobianBlock`] as plain sequences.
mod inline_seq {
    use serde::{Deserialize, Deserializer, Serialize, Serializer};
    use smallvec::{Array, SmallVec};

    pub fn serialize<A: Array, S: Serializer>(v: &SmallVec<A>, s: S) -> Result<S::Ok, S::Error>
    where
        A::Item: Serialize,
    {
        s.collect_seq(v.iter())
    }

    pub fn deserialize<'de, A: Array, D: Deserializer<'de>>(d: D) -> Result<SmallVec<A>, D::Error>
    where
        A::Item: Deserialize<'de>,
    {
        Vec::<A::Item>::deserialize(d).map(|v| v.into_iter().collect())
    }
}

/// The matrix-free form built by the simulator: `N = J M⁻¹ Jᵀ`, `r = J v_free + b`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Factored {
    /// The dynamic bodies.
    pub bodies: Vec<Body>,
    /// One Jacobian block per constraint block, in block order.
    pub jacobians: Vec<JacobianBlock>,
    /// The bias `b` (stabilization), one entry per row.
    pub b: Vec<f64>,
}

/// An explicit Delassus matrix: the `W, q` of a Siconos/FCLIB local problem, or the `M, q`
/// of an LCP/MLCP.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Assembled {
    /// The square matrix `N`.
    pub n: CsrMatrix,
    /// The vector `r`.
    pub r: Vec<f64>,
}

/// A global problem: `H v = f + Jᵀ γ`, `u = J v + b`, with `H` sparse symmetric positive
/// definite (mass, stiffness, ...). Siconos' `M, H, q, b` are our `H, Jᵀ, f, b`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Global {
    /// `ndof × ndof` matrix `H`.
    pub h: CsrMatrix,
    /// `m × ndof` constraint Jacobian `J`.
    pub j: CsrMatrix,
    /// Right-hand side `f` (`H v_free = f`).
    pub f: Vec<f64>,
    /// Bias `b`, one entry per row.
    pub b: Vec<f64>,
}

/// The three forms of the operator (DESIGN §1, "two operator forms, one interface").
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
pub enum Operator {
    /// Bodies, per-block Jacobians and a diagonal inverse mass.
    Factored(Factored),
    /// An explicit sparse `N` and `r`.
    Assembled(Assembled),
    /// A global problem with a general sparse `H`.
    Global(Global),
}

/// One cone complementarity problem `K ∋ γ ⊥ Nγ + r ∈ K*`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Problem {
    /// A name for reports (usually the file name).
    #[serde(default)]
    pub name: String,
    /// Where the problem comes from.
    #[serde(default)]
    pub class: ProblemClass,
    /// The cone of each block; the rows of block `k` follow those of block `k − 1`.
    pub cones: Vec<Cone>,
    /// The operator.
    pub operator: Operator,
    /// Compliance `E` (diagonal, ≥ 0), one entry per row; empty means rigid.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub compliance: Vec<f64>,
}

impl Problem {
    /// Total number of rows `Σ d_k`.
    pub fn rows(&self) -> usize {
        self.cones.iter().map(Cone::dim).sum()
    }

    /// Checks every field; the error names the first offending field with its index.
    pub fn validate(&self) -> crate::Result<()> {
        validate::problem(self)
    }
}
