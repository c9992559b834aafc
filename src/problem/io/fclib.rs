//! FCLIB HDF5 problem files (FORMATS.md §2), read and written with the system HDF5 library
//! (cargo feature `fclib`).
//!
//! - A **local** problem `û = W r + q (+ De Saxcé), K ∋ r ⊥ û ∈ K*` is an
//!   [`Operator::Assembled`] problem of Coulomb cones, class [`ProblemClass::Fc3d`]: `N = W`,
//!   `r = q`. Written from an assembled or factored problem whose blocks are all Coulomb
//!   cones (a factored one is assembled, `W = J M⁻¹ Jᵀ + E`, `q = J v_free + b`).
//! - A **global** problem `M v = H r + G λ + f, Gᵀ v + b = 0, u = Hᵀ v + w` is an
//!   [`Operator::Global`] problem, class [`ProblemClass::Gfc3d`]: `h = M`, `j = [Gᵀ; Hᵀ]`,
//!   `b = [b; w]`, with one bilateral row per column of `G` first, then the Coulomb contacts.
//!
//! Matrices are read from CSR (`nz = −2`), CSC (`nz = −1`) or triplets (`nz ≥ 0`, `i` row and
//! `p` column as in the files, duplicates summed); they are written in CSR (`M`, `W`) and
//! CSC (`H`, `G`, which are the transposes of rows of our CSR `j`), so that every number
//! round-trips exactly. A dataset larger than the file could hold uncompressed is refused
//! before it is read, so a damaged size cannot make the reader allocate without bound.
//!
//! Damaged datasets (sizes, storage codes, pointers, indices, values) are errors naming the
//! dataset. Damaged HDF5 *metadata* is parsed by the C library, and libhdf5 1.10 is not
//! memory-safe there (byte-level fuzzing crashed it in `H5Dread` and `H5Dopen2`): read
//! FCLIB files of unknown origin in a separate process.

use std::path::Path;

use hdf5::types::{FixedAscii, TypeDescriptor, VarLenAscii, VarLenUnicode};
use hdf5::{Dataset, File, Group};

use crate::error::{Error, FileFault, Result};
use crate::problem::{Assembled, Cone, CsrMatrix, Global, Operator, Problem, ProblemClass, System};

/// The space dimension of every problem read and written (2-D problems are not supported).
const SPACEDIM: i32 = 3;
/// Longest info string kept (longer ones are cut).
const MAX_INFO: usize = 4096;

/// The `info` group: free text about the problem.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Info {
    /// Title (our problem name when written from another format).
    pub title: Option<String>,
    /// Short description.
    pub description: Option<String>,
    /// Known mathematical properties.
    pub math_info: Option<String>,
}

/// A solution or a guess: each vector is empty when the file does not hold it.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Solution {
    /// Global velocities `v` (global problems).
    pub v: Vec<f64>,
    /// Local velocities `u`, one entry per contact row.
    pub u: Vec<f64>,
    /// Contact impulses `r`, one entry per contact row.
    pub r: Vec<f64>,
    /// Multipliers `λ` of the equality rows (`G` of a global problem).
    pub l: Vec<f64>,
}

impl Solution {
    /// The impulse vector in our row order: `λ` then `r`.
    pub fn gamma(&self) -> Vec<f64> {
        self.l.iter().chain(&self.r).copied().collect()
    }
}

/// An FCLIB file: the problem and what comes with it.
#[derive(Debug, Clone, PartialEq)]
pub struct FclibProblem {
    /// The problem.
    pub problem: Problem,
    /// The `info` group.
    pub info: Info,
    /// The `/solution` group, when present (in the Siconos files a placeholder).
    pub solution: Option<Solution>,
    /// The `/guesses`, in order.
    pub guesses: Vec<Solution>,
}

impl FclibProblem {
    /// A problem without solution or guesses; its name becomes the title.
    pub fn new(problem: Problem) -> Self {
        let title = (!problem.name.is_empty()).then(|| problem.name.clone());
        FclibProblem {
            problem,
            info: Info {
                title,
                ..Info::default()
            },
            solution: None,
            guesses: Vec::new(),
        }
    }
}

/// Converts an HDF5 error of `file`.
fn hdf5_error(file: &str, e: hdf5::Error) -> Error {
    Error::bad_file(file, FileFault::Hdf5(e.to_string()))
}

fn malformed(file: &str, what: &str, message: impl Into<String>) -> Error {
    Error::bad_file(
        file,
        FileFault::Malformed {
            what: what.to_string(),
            message: message.into(),
        },
    )
}

/// Reads an FCLIB file (local or global problem, info, solution, guesses).
pub fn read(path: &Path) -> Result<FclibProblem> {
    let file = path.display().to_string();
    let size = std::fs::metadata(path)
        .map_err(|source| Error::Io {
            path: path.to_path_buf(),
            source,
        })?
        .len();
    let h5 = File::open(path).map_err(|e| hdf5_error(&file, e))?;
    let r = Reader {
        root: &h5,
        file: &file,
        size,
    };
    let (problem, info, nv) = if h5.link_exists("fclib_local") {
        r.local()?
    } else if h5.link_exists("fclib_global") {
        r.global()?
    } else {
        return Err(malformed(
            &file,
            "/",
            "neither /fclib_local nor /fclib_global: not an FCLIB problem",
        ));
    };
    let mut problem = problem;
    problem.name = match &info.title {
        Some(title) => title.clone(),
        None => path
            .file_stem()
            .map_or(file.clone(), |s| s.to_string_lossy().into()),
    };
    let contact_rows = problem.cones.iter().filter(|c| c.mu().is_some()).count() * 3;
    let sizes = (nv, contact_rows, problem.rows() - contact_rows);
    let solution = if h5.link_exists("solution") {
        Some(r.solution("solution", sizes)?)
    } else {
        None
    };
    let mut guesses = Vec::new();
    if h5.link_exists("guesses") {
        let n = r.int("guesses/number_of_guesses")?;
        // Each guess is a group of at least one vector: no more than the file could hold.
        if n < 0 || n as u64 > size / 8 {
            return Err(malformed(
                &file,
                "guesses/number_of_guesses",
                format!("{n}"),
            ));
        }
        for k in 1..=n {
            guesses.push(r.solution(&format!("guesses/{k}"), sizes)?);
        }
    }
    Ok(FclibProblem {
        problem,
        info,
        solution,
        guesses,
    })
}

/// Reads the datasets of one open file.
struct Reader<'a> {
    root: &'a File,
    file: &'a str,
    size: u64,
}

impl Reader<'_> {
    fn dataset(&self, path: &str) -> Result<Dataset> {
        self.root
            .dataset(path)
            .map_err(|e| malformed(self.file, path, format!("cannot open the dataset: {e}")))
    }

    /// Refuses an unchunked dataset whose stored bytes are fewer than its shape and type
    /// need, or whose contiguous data would lie past the end of the file: HDF5 1.10 trusts
    /// both and copies out of bounds.
    fn check_storage(&self, ds: &Dataset, path: &str) -> Result<()> {
        // Chunked data goes through HDF5's chunk index; data never written (no storage)
        // reads as the fill value without touching the file.
        if ds.is_chunked() || ds.storage_size() == 0 {
            return Ok(());
        }
        let element = ds.dtype().map_or(0, |t| t.size()) as u64;
        let need = (ds.size() as u64).saturating_mul(element);
        let stored = ds.storage_size();
        if stored < need {
            return Err(malformed(
                self.file,
                path,
                format!("{stored} bytes stored for a shape and type of {need} bytes"),
            ));
        }
        // Contiguous data must lie inside the file (HDF5 1.10 copies out of its read buffer
        // at a damaged address without checking).
        if let Some(offset) = ds.offset() {
            if offset.saturating_add(need) > self.size {
                return Err(malformed(
                    self.file,
                    path,
                    format!(
                        "data at bytes {offset}..{} of a file of {} bytes",
                        offset.saturating_add(need),
                        self.size
                    ),
                ));
            }
        }
        Ok(())
    }

    /// A whole dataset of numbers, refused when it is larger than the file.
    fn numbers<T: hdf5::H5Type>(&self, path: &str) -> Result<Vec<T>> {
        let ds = self.dataset(path)?;
        self.check_storage(&ds, path)?;
        let bytes = (ds.size() as u64).saturating_mul(std::mem::size_of::<T>() as u64);
        if bytes > self.size {
            return Err(malformed(
                self.file,
                path,
                format!(
                    "{} entries do not fit in a file of {} bytes",
                    ds.size(),
                    self.size
                ),
            ));
        }
        ds.read_raw::<T>()
            .map_err(|e| malformed(self.file, path, e.to_string()))
    }

    fn floats(&self, path: &str) -> Result<Vec<f64>> {
        self.numbers::<f64>(path)
    }

    fn int(&self, path: &str) -> Result<i32> {
        match self.numbers::<i32>(path)?[..] {
            [v] => Ok(v),
            ref v => Err(malformed(
                self.file,
                path,
                format!("{} values for a scalar", v.len()),
            )),
        }
    }

    /// A non-negative `i32` as an index or size.
    fn size(&self, path: &str) -> Result<usize> {
        let v = self.int(path)?;
        usize::try_from(v).map_err(|_| malformed(self.file, path, format!("{v} is negative")))
    }

    fn string(&self, path: &str) -> Result<Option<String>> {
        if !self.root.link_exists(path) {
            return Ok(None);
        }
        let ds = self.dataset(path)?;
        self.check_storage(&ds, path)?;
        let read = ds
            .read_scalar::<VarLenUnicode>()
            .map(|s| s.to_string())
            .or_else(|_| ds.read_scalar::<VarLenAscii>().map(|s| s.to_string()))
            .or_else(|_| {
                ds.as_reader()
                    .conversion(hdf5::Conversion::Soft)
                    .read_scalar::<FixedAscii<MAX_INFO>>()
                    .map(|s| s.to_string())
            });
        read.map(Some)
            .map_err(|e| malformed(self.file, path, e.to_string()))
    }

    fn info(&self, group: &str) -> Result<Info> {
        Ok(Info {
            title: self.string(&format!("{group}/info/title"))?,
            description: self.string(&format!("{group}/info/description"))?,
            math_info: self.string(&format!("{group}/info/math_info"))?,
        })
    }

    fn spacedim(&self, group: &str) -> Result<()> {
        let path = format!("{group}/spacedim");
        match self.int(&path)? {
            SPACEDIM => Ok(()),
            d => Err(malformed(
                self.file,
                &path,
                format!("space dimension {d}; only 3-D problems are supported"),
            )),
        }
    }

    /// The entries of an FCLIB matrix as `(row, column, value)` triplets, with its size
    /// checked against `(rows, cols)` (sizes taken from vectors already read, so that they
    /// are bounded by the file).
    fn matrix(&self, path: &str, rows: usize, cols: usize) -> Result<Vec<(usize, usize, f64)>> {
        let (m, n) = (
            self.size(&format!("{path}/m"))?,
            self.size(&format!("{path}/n"))?,
        );
        if (m, n) != (rows, cols) {
            return Err(malformed(
                self.file,
                path,
                format!("a {m}×{n} matrix where {rows}×{cols} is expected"),
            ));
        }
        let nz = self.int(&format!("{path}/nz"))?;
        let p = self.numbers::<i32>(&format!("{path}/p"))?;
        let i = self.numbers::<i32>(&format!("{path}/i"))?;
        let x = self.floats(&format!("{path}/x"))?;
        let bad = |message: String| malformed(self.file, path, message);
        let index = |v: i32, what: &str| {
            usize::try_from(v).map_err(|_| bad(format!("negative {what} {v}")))
        };
        let mut triplets = Vec::new();
        match nz {
            // Triplets: i is the row, p the column (FORMATS.md §2).
            nz if nz >= 0 => {
                let nz = nz as usize;
                if p.len() < nz || i.len() < nz || x.len() < nz {
                    return Err(bad(format!(
                        "nz = {nz} but p, i, x have {}, {}, {} entries",
                        p.len(),
                        i.len(),
                        x.len()
                    )));
                }
                triplets.reserve(nz);
                for k in 0..nz {
                    triplets.push((index(i[k], "row")?, index(p[k], "column")?, x[k]));
                }
            }
            -1 | -2 => {
                // Compressed columns (−1) or rows (−2): p points into i and x.
                let outer = if nz == -1 { n } else { m };
                if p.len() != outer + 1 {
                    return Err(bad(format!(
                        "p has {} entries, expected {}",
                        p.len(),
                        outer + 1
                    )));
                }
                let ptr: Vec<usize> = p
                    .iter()
                    .map(|&v| index(v, "pointer"))
                    .collect::<Result<_>>()?;
                let end = ptr[outer];
                if ptr[0] != 0
                    || ptr.windows(2).any(|w| w[0] > w[1])
                    || end > i.len()
                    || end > x.len()
                {
                    return Err(bad(format!(
                        "p is not a pointer from 0 to at most {} non-decreasing",
                        i.len().min(x.len())
                    )));
                }
                triplets.reserve(end);
                for o in 0..outer {
                    for k in ptr[o]..ptr[o + 1] {
                        let inner = index(i[k], "index")?;
                        triplets.push(if nz == -1 {
                            (inner, o, x[k])
                        } else {
                            (o, inner, x[k])
                        });
                    }
                }
            }
            _ => return Err(bad(format!("unknown storage nz = {nz}"))),
        }
        if let Some(&(r, c, _)) = triplets.iter().find(|&&(r, c, _)| r >= m || c >= n) {
            return Err(bad(format!("entry ({r}, {c}) outside the {m}×{n} matrix")));
        }
        Ok(triplets)
    }

    fn csr(&self, path: &str, rows: usize, cols: usize) -> Result<CsrMatrix> {
        CsrMatrix::from_triplets(rows, cols, &self.matrix(path, rows, cols)?)
    }

    fn cones(&self, path: &str, rows: usize) -> Result<Vec<Cone>> {
        let mu = self.floats(path)?;
        if rows % 3 != 0 || mu.len() != rows / 3 {
            return Err(malformed(
                self.file,
                path,
                format!("{} coefficients for {rows} contact rows", mu.len()),
            ));
        }
        Ok(mu.into_iter().map(|mu| Cone::Coulomb { mu }).collect())
    }

    fn local(&self) -> Result<(Problem, Info, usize)> {
        let g = "fclib_local";
        self.spacedim(g)?;
        if self.root.link_exists("fclib_local/V") || self.root.link_exists("fclib_local/R") {
            return Err(malformed(
                self.file,
                g,
                "mixed local problems (V, R, s) are not supported",
            ));
        }
        let q = self.floats("fclib_local/vectors/q")?;
        let cones = self.cones("fclib_local/vectors/mu", q.len())?;
        let w = self.csr("fclib_local/W", q.len(), q.len())?;
        let problem = Problem {
            name: String::new(),
            class: ProblemClass::Fc3d,
            cones,
            operator: Operator::Assembled(Assembled { n: w, r: q }),
            compliance: Vec::new(),
        };
        Ok((problem, self.info(g)?, 0))
    }

    fn global(&self) -> Result<(Problem, Info, usize)> {
        let g = "fclib_global";
        self.spacedim(g)?;
        let f = self.floats("fclib_global/vectors/f")?;
        let w = self.floats("fclib_global/vectors/w")?;
        let ndof = f.len();
        let h = self.csr("fclib_global/M", ndof, ndof)?;
        let mut cones = Vec::new();
        let mut j_triplets = Vec::new();
        let mut b = Vec::new();
        if self.root.link_exists("fclib_global/G") {
            b = self.floats("fclib_global/vectors/b")?;
            let gt = self.matrix("fclib_global/G", ndof, b.len())?;
            j_triplets.extend(gt.into_iter().map(|(r, c, v)| (c, r, v)));
            cones.extend(std::iter::repeat_n(Cone::Bilateral { dim: 1 }, b.len()));
        }
        let p = b.len();
        let ht = self.matrix("fclib_global/H", ndof, w.len())?;
        j_triplets.extend(ht.into_iter().map(|(r, c, v)| (p + c, r, v)));
        cones.extend(self.cones("fclib_global/vectors/mu", w.len())?);
        b.extend(w);
        let j = CsrMatrix::from_triplets(b.len(), ndof, &j_triplets)?;
        let problem = Problem {
            name: String::new(),
            class: ProblemClass::Gfc3d,
            cones,
            operator: Operator::Global(Global { h, j, f, b }),
            compliance: Vec::new(),
        };
        Ok((problem, self.info(g)?, ndof))
    }

    /// A solution group; `(nv, nr, nl)` are the lengths its vectors must have.
    fn solution(&self, group: &str, (nv, nr, nl): (usize, usize, usize)) -> Result<Solution> {
        let vector = |name: &str, len: usize| -> Result<Vec<f64>> {
            let path = format!("{group}/{name}");
            if !self.root.link_exists(&path) {
                return Ok(Vec::new());
            }
            let v = self.floats(&path)?;
            if v.len() != len {
                return Err(malformed(
                    self.file,
                    &path,
                    format!("{} entries, expected {len}", v.len()),
                ));
            }
            Ok(v)
        };
        Ok(Solution {
            v: vector("v", nv)?,
            u: vector("u", nr)?,
            r: vector("r", nr)?,
            l: vector("l", nl)?,
        })
    }
}

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
    super::write_atomically(path, |tmp| {
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
