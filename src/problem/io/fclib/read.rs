//! The FCLIB reader: a local or global problem with its info, solution and guesses, every
//! dataset checked against the file before it is read.

use std::path::Path;

use hdf5::types::{FixedAscii, VarLenAscii, VarLenUnicode};
use hdf5::{Dataset, File};

use super::{FclibProblem, Info, MAX_INFO, SPACEDIM, Solution, hdf5_error, malformed};
use crate::error::{Error, Result};
use crate::problem::{Assembled, Cone, CsrMatrix, Global, Operator, Problem, ProblemClass};

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
        if let Some(offset) = ds.offset()
            && offset.saturating_add(need) > self.size
        {
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
        if !rows.is_multiple_of(3) || mu.len() != rows / 3 {
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
