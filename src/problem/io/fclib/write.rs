//! The FCLIB writer: local problems with `W` in CSR, global ones with `M` in CSR and `H`,
//! `G` in CSC, through a temporary file renamed into place.

use std::path::Path;

use hdf5::types::{FixedAscii, TypeDescriptor, VarLenUnicode};
use hdf5::{File, Group};

use super::{FclibProblem, MAX_INFO, SPACEDIM, Solution, hdf5_error, malformed};
use crate::error::{Error, Result};
use crate::problem::{Cone, CsrMatrix, Operator, Problem, System};

/// Writes an FCLIB file through a temporary file renamed into place. A problem that FCLIB
/// cannot hold is an error naming the reason: a unilateral row, a bilateral row in a local
/// problem, bilateral rows after contacts or a compliance in a global one.
pub fn write(fp: &FclibProblem, path: &Path) -> Result<()> {
    let p = &fp.problem;
    p.validate()?;
    let file = path.display().to_string();
    let not_fclib = |message: String| malformed(&file, "problem", message);
    let nbil = p
        .cones
        .iter()
        .take_while(|c| matches!(c, Cone::Bilateral { .. }))
        .count();
    if let Some(k) = p.cones.iter().skip(nbil).position(|c| c.mu().is_none()) {
        let k = k + nbil;
        return Err(not_fclib(format!(
            "block {k} is a {:?} block; FCLIB holds 3-D frictional contacts (Coulomb \
             blocks), after the equality rows of a global problem; write .bin or .json",
            p.cones[k]
        )));
    }
    let mu: Vec<f64> = p.cones[nbil..].iter().filter_map(Cone::mu).collect();
    crate::problem::io::write_atomically(path, |tmp| {
        let h5 = File::create(tmp).map_err(|e| hdf5_error(&file, e))?;
        let w = Writer { file: &file };
        let group = match &p.operator {
            Operator::Global(g) => {
                if p.compliance.iter().any(|&e| e != 0.0) {
                    return Err(not_fclib(
                        "FCLIB's global problem has no compliance; write .bin or .json".into(),
                    ));
                }
                let root = w.group(&h5, "fclib_global")?;
                w.ints(&root, "spacedim", &[SPACEDIM])?;
                w.matrix(&root, "M", &g.h, Storage::Csr)?;
                let rows = p.cones[..nbil].iter().map(Cone::dim).sum::<usize>();
                let vectors = w.group(&root, "vectors")?;
                if rows > 0 {
                    w.matrix(
                        &root,
                        "G",
                        &row_range(&g.j, 0..rows),
                        Storage::CscOfTranspose,
                    )?;
                    w.floats(&vectors, "b", &g.b[..rows])?;
                }
                let m = g.j.nrows;
                w.matrix(
                    &root,
                    "H",
                    &row_range(&g.j, rows..m),
                    Storage::CscOfTranspose,
                )?;
                w.floats(&vectors, "f", &g.f)?;
                w.floats(&vectors, "w", &g.b[rows..])?;
                w.floats(&vectors, "mu", &mu)?;
                root
            }
            _ => {
                if nbil > 0 {
                    return Err(not_fclib(
                        "bilateral rows in a local problem (FCLIB's mixed form is not \
                         written); write .bin or .json"
                            .into(),
                    ));
                }
                let (n, q) = local_form(p, &file)?;
                let root = w.group(&h5, "fclib_local")?;
                w.ints(&root, "spacedim", &[SPACEDIM])?;
                w.matrix(&root, "W", &n, Storage::Csr)?;
                let vectors = w.group(&root, "vectors")?;
                w.floats(&vectors, "q", &q)?;
                w.floats(&vectors, "mu", &mu)?;
                root
            }
        };
        let info = &fp.info;
        if info.title.is_some() || info.description.is_some() || info.math_info.is_some() {
            let ig = w.group(&group, "info")?;
            for (name, value) in [
                ("title", &info.title),
                ("description", &info.description),
                ("math_info", &info.math_info),
            ] {
                if let Some(v) = value {
                    w.string(&ig, name, v)?;
                }
            }
        }
        if let Some(s) = &fp.solution {
            w.solution(&w.group(&h5, "solution")?, s)?;
        }
        if !fp.guesses.is_empty() {
            let gg = w.group(&h5, "guesses")?;
            w.ints(
                &gg,
                "number_of_guesses",
                &[w.i32(fp.guesses.len(), "guesses")?],
            )?;
            for (k, s) in fp.guesses.iter().enumerate() {
                w.solution(&w.group(&gg, &(k + 1).to_string())?, s)?;
            }
        }
        h5.close().map_err(|e| hdf5_error(&file, e))
    })
}

/// `W = N + E` and `q = r` of an assembled or factored problem (a factored `N` is assembled
/// as `J M⁻¹ Jᵀ`, and `q = J v_free + b` as [`System`] computes it).
fn local_form(p: &Problem, file: &str) -> Result<(CsrMatrix, Vec<f64>)> {
    let (mut n, q) = match &p.operator {
        Operator::Assembled(a) => (a.n.clone(), a.r.clone()),
        Operator::Factored(_) => {
            let sys = System::new(p)?;
            let op = sys
                .factored()
                .expect("a factored problem has a factored operator");
            (op.assemble(), sys.r().to_vec())
        }
        Operator::Global(_) => {
            return Err(malformed(
                file,
                "problem",
                "a global problem has no local form",
            ));
        }
    };
    if p.compliance.iter().any(|&e| e != 0.0) {
        let mut triplets = Vec::with_capacity(n.nnz() + n.nrows);
        for i in 0..n.nrows {
            let (cols, vals) = n.row(i);
            triplets.extend(cols.iter().zip(vals).map(|(&j, &v)| (i, j, v)));
        }
        triplets.extend(p.compliance.iter().enumerate().map(|(i, &e)| (i, i, e)));
        n = CsrMatrix::from_triplets(n.nrows, n.ncols, &triplets)?;
    }
    Ok((n, q))
}

/// Rows `range` of `a` as a matrix of their own.
fn row_range(a: &CsrMatrix, range: std::ops::Range<usize>) -> CsrMatrix {
    let (lo, hi) = (a.indptr[range.start], a.indptr[range.end]);
    CsrMatrix {
        nrows: range.len(),
        ncols: a.ncols,
        indptr: a.indptr[range.start..=range.end]
            .iter()
            .map(|p| p - lo)
            .collect(),
        indices: a.indices[lo..hi].to_vec(),
        values: a.values[lo..hi].to_vec(),
    }
}

/// How a matrix is stored.
#[derive(Clone, Copy)]
enum Storage {
    /// The matrix itself in CSR (`nz = −2`).
    Csr,
    /// The transpose of the given CSR matrix, in CSC (`nz = −1`): the same arrays.
    CscOfTranspose,
}

/// Creates the groups and datasets of one file.
struct Writer<'a> {
    file: &'a str,
}

impl Writer<'_> {
    fn err(&self, e: hdf5::Error) -> Error {
        hdf5_error(self.file, e)
    }

    fn i32(&self, v: usize, what: &str) -> Result<i32> {
        i32::try_from(v)
            .map_err(|_| malformed(self.file, what, format!("{v} exceeds FCLIB's 32-bit sizes")))
    }

    fn group(&self, parent: &Group, name: &str) -> Result<Group> {
        parent.create_group(name).map_err(|e| self.err(e))
    }

    fn ints(&self, g: &Group, name: &str, v: &[i32]) -> Result<()> {
        self.array(g, name, v)
    }

    fn floats(&self, g: &Group, name: &str, v: &[f64]) -> Result<()> {
        self.array(g, name, v)
    }

    /// A 1-D dataset, contiguous as FCLIB's C library writes it.
    fn array<T: hdf5::H5Type>(&self, g: &Group, name: &str, v: &[T]) -> Result<()> {
        g.new_dataset_builder()
            .with_data(v)
            .create(name)
            .map(drop)
            .map_err(|e| self.err(e))
    }

    /// A scalar string: fixed-length ASCII as FCLIB's C library writes and reads it, or
    /// variable-length UTF-8 when the text is not ASCII or longer than [`MAX_INFO`].
    fn string(&self, g: &Group, name: &str, v: &str) -> Result<()> {
        let created = match FixedAscii::<MAX_INFO>::from_ascii(v.as_bytes()) {
            Ok(fixed) => g
                .new_dataset_builder()
                .empty_as(TypeDescriptor::FixedAscii(v.len() + 1))
                .create(name)
                .and_then(|ds| {
                    ds.as_writer()
                        .conversion(hdf5::Conversion::Soft)
                        .write_scalar(&fixed)
                }),
            Err(_) => {
                let text: VarLenUnicode = v
                    .parse()
                    .map_err(|e| malformed(self.file, name, format!("{e}")))?;
                g.new_dataset::<VarLenUnicode>()
                    .create(name)
                    .and_then(|ds| ds.write_scalar(&text))
            }
        };
        created.map_err(|e| self.err(e))
    }

    fn matrix(&self, g: &Group, name: &str, a: &CsrMatrix, storage: Storage) -> Result<()> {
        let mg = self.group(g, name)?;
        let (m, n, nz) = match storage {
            Storage::Csr => (a.nrows, a.ncols, -2),
            Storage::CscOfTranspose => (a.ncols, a.nrows, -1),
        };
        let nnz = self.i32(a.nnz(), name)?;
        self.ints(&mg, "m", &[self.i32(m, name)?])?;
        self.ints(&mg, "n", &[self.i32(n, name)?])?;
        self.ints(&mg, "nz", &[nz])?;
        self.ints(&mg, "nzmax", &[nnz])?;
        // Every entry fits in i32: each is at most nnz, m or n, checked above.
        let p: Vec<i32> = a.indptr.iter().map(|&v| v as i32).collect();
        let i: Vec<i32> = a.indices.iter().map(|&v| v as i32).collect();
        self.ints(&mg, "p", &p)?;
        self.ints(&mg, "i", &i)?;
        self.floats(&mg, "x", &a.values)
    }

    fn solution(&self, g: &Group, s: &Solution) -> Result<()> {
        for (name, v) in [("v", &s.v), ("u", &s.u), ("r", &s.r), ("l", &s.l)] {
            if !v.is_empty() {
                self.floats(g, name, v)?;
            }
        }
        Ok(())
    }
}
