//! `Problem`: one cone complementarity problem, read from a file (`read`) or built from
//! numpy arrays and `scipy.sparse` matrices in its three forms; `write`.

use std::path::PathBuf;

use pyo3::prelude::*;
use pyo3::types::{PyFloat, PyInt};
use signorini::problem::io::{self, Format};
use signorini::problem::{self as sp, Cone, CsrMatrix, Operator};

use crate::convert::{self, error, invalid};

/// A cone complementarity problem `K ∋ γ ⊥ u = Nγ + r ∈ K*`, from `read` or built from
/// arrays by `Problem.assembled`, `Problem.factored` or `Problem.global_`. `K` is, in this
/// order, `bilateral` one-row bilateral blocks, `unilateral` frictionless rows, and one
/// 3-row Coulomb cone (normal first) per entry of `mu`. Arrays are float64 (int64 indices),
/// C-contiguous and finite, or lists; a refusal is a ValueError naming the argument.
#[pyclass(frozen, module = "signorini")]
pub struct Problem {
    /// The library's problem, validated.
    pub inner: sp::Problem,
}

/// The file format named `format` (`json`, `bin`, `fclib`, `siconos-fc3d`, ...).
fn format(format: Option<&str>) -> PyResult<Option<Format>> {
    format
        .map(|f| f.parse().map_err(|e| invalid("format", e)))
        .transpose()
}

/// The cones of `bilateral` one-row bilateral blocks, `unilateral` unilateral rows, then one
/// Coulomb block per contact; `mu` is one coefficient per contact, or a number for every
/// contact of the `rows` (named `rows_of` in errors) left after the others.
fn cones(
    bilateral: usize,
    unilateral: usize,
    mu: &Bound<'_, PyAny>,
    rows: usize,
    rows_of: &str,
) -> PyResult<Vec<Cone>> {
    let contact_rows = rows.checked_sub(bilateral + unilateral).ok_or_else(|| {
        invalid(
            "bilateral",
            format!("{bilateral} bilateral and {unilateral} unilateral rows, but {rows_of} has {rows} rows"),
        )
    })?;
    // A number (not a one-entry array, which converts to one too) is every contact's.
    let number = mu.is_instance_of::<PyFloat>() || mu.is_instance_of::<PyInt>();
    let mu = match number {
        true if contact_rows % 3 == 0 => vec![mu.extract::<f64>()?; contact_rows / 3],
        true => {
            return Err(invalid(
                "mu",
                format!("{contact_rows} contact rows is not a number of 3-row contacts"),
            ));
        }
        false => convert::vector(mu, "mu")?,
    };
    if 3 * mu.len() != contact_rows {
        return Err(invalid(
            "mu",
            format!(
                "{} contacts of 3 rows after {bilateral} bilateral and {unilateral} unilateral \
                 rows make {} rows, but {rows_of} has {rows}",
                mu.len(),
                bilateral + unilateral + 3 * mu.len()
            ),
        ));
    }
    if let Some(k) = mu.iter().position(|m| !(*m >= 0.0 && m.is_finite())) {
        return Err(invalid(
            &format!("mu[{k}]"),
            format!("{} (a friction coefficient is finite and ≥ 0)", mu[k]),
        ));
    }
    let mut cones = vec![Cone::Bilateral { dim: 1 }; bilateral];
    cones.extend(std::iter::repeat_n(Cone::Unilateral, unilateral));
    cones.extend(mu.into_iter().map(|mu| Cone::Coulomb { mu }));
    Ok(cones)
}

/// An optional vector of `len` entries (`name` in errors); `None` is zeros, or empty when
/// `empty_if_none`.
fn optional(
    obj: Option<&Bound<'_, PyAny>>,
    name: &str,
    len: usize,
    empty_if_none: bool,
) -> PyResult<Vec<f64>> {
    let Some(obj) = obj else {
        return Ok(if empty_if_none {
            vec![]
        } else {
            vec![0.0; len]
        });
    };
    let v = convert::vector(obj, name)?;
    if v.len() != len {
        return Err(invalid(
            name,
            format!("{} entries, expected {len}", v.len()),
        ));
    }
    Ok(v)
}

/// Refuses a matrix that is not `rows × cols` (`None`: any).
fn shape(m: &CsrMatrix, name: &str, rows: Option<usize>, cols: Option<usize>) -> PyResult<()> {
    let fits = rows.is_none_or(|r| r == m.nrows) && cols.is_none_or(|c| c == m.ncols);
    if fits {
        return Ok(());
    }
    let want = |n: Option<usize>| n.map_or("any".to_string(), |n| n.to_string());
    Err(invalid(
        name,
        format!(
            "shape ({}, {}), expected ({}, {})",
            m.nrows,
            m.ncols,
            want(rows),
            want(cols)
        ),
    ))
}

impl Problem {
    /// The problem of `cones` and `operator`, validated by the library.
    fn new(
        name: Option<String>,
        cones: Vec<Cone>,
        operator: Operator,
        compliance: Vec<f64>,
    ) -> PyResult<Self> {
        let inner = sp::Problem {
            name: name.unwrap_or_default(),
            class: Default::default(),
            cones,
            operator,
            compliance,
        };
        inner.validate().map_err(error)?;
        Ok(Problem { inner })
    }
}

#[pymethods]
impl Problem {
    /// An explicit Delassus matrix `W` (`N`: a dense ndarray or any scipy.sparse matrix,
    /// `rows × rows`) and vector `q` (`r`, `(rows,)`), as Siconos' FC3D problems; `mu`: one
    /// friction coefficient per contact, or a number for all; `compliance`: the diagonal `E`.
    #[staticmethod]
    #[pyo3(signature = (W, q, mu, *, bilateral=0, unilateral=0, compliance=None, name=None))]
    #[allow(non_snake_case, clippy::too_many_arguments)]
    fn assembled(
        W: &Bound<'_, PyAny>,
        q: &Bound<'_, PyAny>,
        mu: &Bound<'_, PyAny>,
        bilateral: usize,
        unilateral: usize,
        compliance: Option<&Bound<'_, PyAny>>,
        name: Option<String>,
    ) -> PyResult<Self> {
        let n = convert::matrix(W, "W")?;
        shape(&n, "W", Some(n.nrows), Some(n.nrows))?;
        let r = optional(Some(q), "q", n.nrows, false)?;
        let cones = cones(bilateral, unilateral, mu, n.nrows, "W")?;
        let compliance = optional(compliance, "compliance", n.nrows, true)?;
        let operator = Operator::Assembled(sp::Assembled { n, r });
        Problem::new(name, cones, operator, compliance)
    }

    /// The form the simulator builds, `N = J M⁻¹ Jᵀ`, `r = J v_free + b`: `mass` `(n,)`,
    /// `inertia` `(n, 3)` (principal moments), `v_free` `(n, 6)` (linear, world frame, then
    /// angular, body frame), `bodies` `(blocks, 2)` int64 (the block's bodies, `-1` second:
    /// one body), `J` `(rows, 2, 6)` (each row for the block's first and second body), `b`
    /// `(rows,)` (default zero).
    #[staticmethod]
    #[pyo3(signature = (mass, inertia, v_free, bodies, J, mu, *, b=None, bilateral=0, unilateral=0, compliance=None, name=None))]
    #[allow(non_snake_case, clippy::too_many_arguments)]
    fn factored(
        mass: &Bound<'_, PyAny>,
        inertia: &Bound<'_, PyAny>,
        v_free: &Bound<'_, PyAny>,
        bodies: &Bound<'_, PyAny>,
        J: &Bound<'_, PyAny>,
        mu: &Bound<'_, PyAny>,
        b: Option<&Bound<'_, PyAny>>,
        bilateral: usize,
        unilateral: usize,
        compliance: Option<&Bound<'_, PyAny>>,
        name: Option<String>,
    ) -> PyResult<Self> {
        let mass = convert::vector(mass, "mass")?;
        let nb = mass.len();
        let (inertia, ishape) = convert::dense(inertia, "inertia")?;
        if ishape != [nb, 3] {
            return Err(invalid(
                "inertia",
                format!("shape {ishape:?}, expected [{nb}, 3]"),
            ));
        }
        let (v_free, vshape) = convert::dense(v_free, "v_free")?;
        if vshape != [nb, 6] {
            return Err(invalid(
                "v_free",
                format!("shape {vshape:?}, expected [{nb}, 6]"),
            ));
        }
        let (pairs, pshape) = convert::indices(bodies, "bodies", 2)?;
        if pshape[1] != 2 {
            return Err(invalid(
                "bodies",
                format!("shape {pshape:?}, expected [blocks, 2]"),
            ));
        }
        let (jac, jshape) = convert::jacobian(J, "J")?;
        let rows = jshape[0];
        let cones = cones(bilateral, unilateral, mu, rows, "J")?;
        if pshape[0] != cones.len() {
            return Err(invalid(
                "bodies",
                format!(
                    "{} pairs, expected one per block ({})",
                    pshape[0],
                    cones.len()
                ),
            ));
        }
        let mut jacobians = Vec::with_capacity(cones.len());
        let mut row = 0;
        for (k, cone) in cones.iter().enumerate() {
            let d = cone.dim();
            let mut block = sp::JacobianBlock::default();
            for side in 0..2 {
                let body = pairs[2 * k + side];
                if side == 1 && body == -1 {
                    continue;
                }
                let body = usize::try_from(body).map_err(|_| {
                    invalid(
                        &format!("bodies[{k}, {side}]"),
                        format!("{body} is not a body index"),
                    )
                })?;
                block.bodies.push(body);
                for i in row..row + d {
                    let at = (2 * i + side) * 6;
                    block
                        .rows
                        .push(jac[at..at + 6].try_into().expect("6 entries"));
                }
            }
            jacobians.push(block);
            row += d;
        }
        let bodies = (0..nb)
            .map(|i| sp::Body {
                mass: mass[i],
                inertia: inertia[3 * i..3 * i + 3].try_into().expect("3 entries"),
                v_free: v_free[6 * i..6 * i + 6].try_into().expect("6 entries"),
            })
            .collect();
        let b = optional(b, "b", rows, false)?;
        let compliance = optional(compliance, "compliance", rows, true)?;
        let operator = Operator::Factored(sp::Factored {
            bodies,
            jacobians,
            b,
        });
        Problem::new(name, cones, operator, compliance)
    }

    /// A global problem (Siconos' GFC3D) `M v = f + H γ`, `u = Hᵀ v + w`: `M` `ndof × ndof`
    /// symmetric positive definite and `H` `ndof × rows` (dense or scipy.sparse), `f`
    /// `(ndof,)`, `w` `(rows,)`.
    #[staticmethod]
    #[pyo3(signature = (M, H, f, w, mu, *, bilateral=0, unilateral=0, name=None))]
    #[allow(non_snake_case, clippy::too_many_arguments)]
    fn global_(
        M: &Bound<'_, PyAny>,
        H: &Bound<'_, PyAny>,
        f: &Bound<'_, PyAny>,
        w: &Bound<'_, PyAny>,
        mu: &Bound<'_, PyAny>,
        bilateral: usize,
        unilateral: usize,
        name: Option<String>,
    ) -> PyResult<Self> {
        let h = convert::matrix(M, "M")?;
        shape(&h, "M", Some(h.nrows), Some(h.nrows))?;
        let jt = convert::matrix(H, "H")?;
        shape(&jt, "H", Some(h.nrows), None)?;
        let f = optional(Some(f), "f", h.nrows, false)?;
        let b = optional(Some(w), "w", jt.ncols, false)?;
        let cones = cones(bilateral, unilateral, mu, jt.ncols, "H")?;
        let operator = Operator::Global(sp::Global {
            h,
            j: jt.transpose(),
            f,
            b,
        });
        Problem::new(name, cones, operator, vec![])
    }

    /// Writes the problem to `path`, in `format` or the one its extension names.
    #[pyo3(signature = (path, format=None))]
    fn write(&self, py: Python<'_>, path: PathBuf, format: Option<&str>) -> PyResult<()> {
        let format = self::format(format)?;
        py.detach(|| io::write(&self.inner, &path, format))
            .map_err(error)
    }

    /// The problem's name.
    #[getter]
    fn name(&self) -> &str {
        &self.inner.name
    }

    /// Number of rows `Σ d_k`.
    #[getter]
    fn rows(&self) -> usize {
        self.inner.rows()
    }

    /// Number of blocks (cones).
    #[getter]
    fn blocks(&self) -> usize {
        self.inner.cones.len()
    }

    /// The operator's form: `factored`, `assembled` or `global`.
    #[getter]
    fn form(&self) -> &'static str {
        match self.inner.operator {
            Operator::Factored(_) => "factored",
            Operator::Assembled(_) => "assembled",
            Operator::Global(_) => "global",
        }
    }

    /// Where the problem comes from (`native`, `lcp`, `mlcp`, `fc3d`, `gfc3d`,
    /// `generic_mechanical`): it selects the Siconos error measure.
    #[getter]
    fn problem_class<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        convert::serde(py, &self.inner.class)
    }

    fn __repr__(&self) -> String {
        format!(
            "Problem({:?}, {}, {} blocks, {} rows)",
            self.inner.name,
            self.form(),
            self.blocks(),
            self.rows()
        )
    }
}

/// Reads a problem file (`.json`, `.bin`, Siconos `.dat`, FCLIB `.hdf5` when built with the
/// `fclib` feature); `format` overrides the detection from the name (json, bin, fclib,
/// siconos-lcp, -mlcp, -fc3d, -gfc3d, -gmp). A note on the `.dat` kind taken comes as a
/// `UserWarning`; a missing file is an OSError, a bad one a ValueError naming it.
#[pyfunction]
#[pyo3(signature = (path, format=None))]
pub fn read(py: Python<'_>, path: PathBuf, format: Option<&str>) -> PyResult<Problem> {
    let format = self::format(format)?;
    let read = py
        .detach(|| io::read_detected(&path, format))
        .map_err(error)?;
    if let Some(note) = &read.note {
        convert::warn(py, note)?;
    }
    Ok(Problem {
        inner: read.problem,
    })
}
