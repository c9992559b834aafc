//! Reader for the Siconos text `.dat` problem files (FORMATS.md §1).
//!
//! A file is one stream of whitespace-separated tokens; line breaks carry no meaning, dense
//! matrices are column-major, and everything after the last required number is ignored.

use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};
use crate::problem::{Assembled, Cone, CsrMatrix, Global, Operator, Problem, ProblemClass};

/// The problem type a Siconos `.dat` file holds: the format does not say it, the folder or
/// the file name does.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SiconosKind {
    /// Linear complementarity problem (`lcp/`).
    Lcp,
    /// Mixed linear complementarity problem (`mlcp/`).
    Mlcp,
    /// Local 3-D frictional contact problem (`fc3d/`).
    Fc3d,
    /// Global 3-D frictional contact problem (`gfc3d/`).
    Gfc3d,
    /// Generic mechanical problem (`gmp/`).
    GenericMechanical,
}

impl SiconosKind {
    /// Every kind, in the order the content is tried when the name and the folder do not
    /// settle it.
    pub const ALL: [SiconosKind; 5] = [
        SiconosKind::Fc3d,
        SiconosKind::Gfc3d,
        SiconosKind::Lcp,
        SiconosKind::Mlcp,
        SiconosKind::GenericMechanical,
    ];

    /// Guesses the kind from the file name, then from the name of its folder.
    pub fn detect(path: &std::path::Path) -> Option<Self> {
        Self::from_name(path).or_else(|| Self::from_folder(path))
    }

    /// The kind the file name says: `*_mlcp.dat`, `lcp_*`, `gfc3d*`, `gmp*`.
    pub fn from_name(path: &std::path::Path) -> Option<Self> {
        let name = path.file_name()?.to_str()?.to_ascii_lowercase();
        if name.ends_with("_mlcp.dat") {
            Some(SiconosKind::Mlcp)
        } else if name.starts_with("lcp_") {
            Some(SiconosKind::Lcp)
        } else if name.starts_with("gfc3d") {
            Some(SiconosKind::Gfc3d)
        } else if name.starts_with("gmp") {
            Some(SiconosKind::GenericMechanical)
        } else {
            None
        }
    }

    /// The kind the name of the file's folder says (`lcp`, `mlcp`, `fc3d`, `gfc3d`, `gmp`).
    pub fn from_folder(path: &std::path::Path) -> Option<Self> {
        path.parent()?
            .file_name()?
            .to_str()?
            .to_ascii_lowercase()
            .parse()
            .ok()
    }
}

impl std::fmt::Display for SiconosKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            SiconosKind::Lcp => "lcp",
            SiconosKind::Mlcp => "mlcp",
            SiconosKind::Fc3d => "fc3d",
            SiconosKind::Gfc3d => "gfc3d",
            SiconosKind::GenericMechanical => "gmp",
        })
    }
}

impl std::str::FromStr for SiconosKind {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "lcp" => Ok(SiconosKind::Lcp),
            "mlcp" => Ok(SiconosKind::Mlcp),
            "fc3d" => Ok(SiconosKind::Fc3d),
            "gfc3d" => Ok(SiconosKind::Gfc3d),
            "gmp" => Ok(SiconosKind::GenericMechanical),
            _ => Err(format!(
                "unknown Siconos problem kind `{s}`; valid: lcp, mlcp, fc3d, gfc3d, gmp"
            )),
        }
    }
}

/// Parses the text of a Siconos file of the given kind; `file` names it in errors and
/// becomes the problem's name.
pub fn parse(text: &str, kind: SiconosKind, file: &str) -> Result<Problem> {
    let mut t = Tokens::new(text, file);
    let name = std::path::Path::new(file)
        .file_stem()
        .and_then(|s| s.to_str())
        .unwrap_or(file)
        .to_string();
    let (cones, operator, class) = match kind {
        SiconosKind::Lcp => lcp(&mut t)?,
        SiconosKind::Mlcp => mlcp(&mut t)?,
        SiconosKind::Fc3d => fc3d(&mut t)?,
        SiconosKind::Gfc3d => gfc3d(&mut t)?,
        SiconosKind::GenericMechanical => gmp(&mut t)?,
    };
    Ok(Problem {
        name,
        class,
        cones,
        operator,
        compliance: Vec::new(),
    })
}

type Parsed = (Vec<Cone>, Operator, ProblemClass);

fn lcp(t: &mut Tokens) -> Result<Parsed> {
    let n = t.size("the problem size n")?;
    let m = t.matrix("M")?;
    t.check_shape(&m, n, n, "M")?;
    let q = t.vector(n, "q")?;
    let op = Operator::Assembled(Assembled { n: m.csr, r: q });
    Ok((vec![Cone::Unilateral; n], op, ProblemClass::Lcp))
}

fn mlcp(t: &mut Tokens) -> Result<Parsed> {
    let type1 = t.flag("isStorageType1 (0 or 1)")?;
    let type2 = t.flag("isStorageType2 (0 or 1)")?;
    let n = t.size("n, the number of equality rows")?;
    let m = t.size("m, the number of complementarity rows")?;
    let size = n + m;
    let (matrix, q, cones) = if type1 {
        // Block row offsets, increasing, ending with n + m; then one flag per block.
        let mut rows = vec![t.size("the first block row offset (0)")?];
        while *rows.last().expect("not empty") < size {
            let next = t.size("a block row offset")?;
            if next <= *rows.last().expect("not empty") || next > size {
                return Err(t.error_at_previous(&format!(
                    "block row offsets increasing up to n + m = {size}"
                )));
            }
            rows.push(next);
        }
        let mut cones = Vec::with_capacity(size);
        for w in rows.windows(2) {
            let comp = t.flag("blocksIsComp (0 = equality, 1 = complementarity)")?;
            let cone = if comp {
                Cone::Unilateral
            } else {
                Cone::Bilateral { dim: 1 }
            };
            cones.extend(std::iter::repeat_n(cone, w[1] - w[0]));
        }
        let mat = t.matrix("M")?;
        t.check_shape(&mat, size, size, "M")?;
        (mat.csr, t.vector(size, "q")?, cones)
    } else if type2 {
        let a = t.row_major(n, n, "A")?;
        let b = t.row_major(m, m, "B")?;
        let c = t.row_major(n, m, "C")?;
        let d = t.row_major(m, n, "D")?;
        let mut q = t.vector(n, "a")?;
        q.extend(t.vector(m, "b")?);
        let mut triplets = Vec::new();
        let mut put = |r0: usize, c0: usize, rows: usize, cols: usize, v: &[f64]| {
            for i in 0..rows {
                for j in 0..cols {
                    if v[i * cols + j] != 0.0 {
                        triplets.push((r0 + i, c0 + j, v[i * cols + j]));
                    }
                }
            }
        };
        put(0, 0, n, n, &a);
        put(0, n, n, m, &c);
        put(n, 0, m, n, &d);
        put(n, n, m, m, &b);
        let mut cones = vec![Cone::Bilateral { dim: 1 }; n];
        cones.extend(std::iter::repeat_n(Cone::Unilateral, m));
        (CsrMatrix::from_triplets(size, size, &triplets)?, q, cones)
    } else {
        return Err(t.error_at_previous("at least one of the two storage flags set to 1"));
    };
    let op = Operator::Assembled(Assembled { n: matrix, r: q });
    Ok((cones, op, ProblemClass::Mlcp))
}

fn contact_dim(t: &mut Tokens) -> Result<()> {
    let d = t.size("the contact dimension d")?;
    if d != 3 {
        return Err(t.error_at_previous("contact dimension 3 (2-D problems are not supported)"));
    }
    Ok(())
}

fn coulomb_cones(t: &mut Tokens, nc: usize) -> Result<Vec<Cone>> {
    let mut cones = Vec::with_capacity(nc);
    for c in 0..nc {
        let mu = t.number(&format!("mu[{c}]"))?;
        if mu < 0.0 {
            return Err(t.error_at_previous(&format!("mu[{c}] ≥ 0")));
        }
        cones.push(Cone::Coulomb { mu });
    }
    Ok(cones)
}

fn fc3d(t: &mut Tokens) -> Result<Parsed> {
    contact_dim(t)?;
    let nc = t.size("the number of contacts nc")?;
    let w = t.matrix("W")?;
    t.check_shape(&w, 3 * nc, 3 * nc, "W")?;
    let q = t.vector(3 * nc, "q")?;
    let cones = coulomb_cones(t, nc)?;
    let op = Operator::Assembled(Assembled { n: w.csr, r: q });
    Ok((cones, op, ProblemClass::Fc3d))
}

fn gfc3d(t: &mut Tokens) -> Result<Parsed> {
    contact_dim(t)?;
    let nc = t.size("the number of contacts nc")?;
    let m = t.matrix("M")?;
    let ndof = m.csr.nrows;
    t.check_shape(&m, ndof, ndof, "M")?;
    let h = t.matrix("H")?;
    t.check_shape(&h, ndof, 3 * nc, "H")?;
    let f = t.vector(ndof, "f")?;
    let w = t.vector(3 * nc, "w")?;
    let cones = coulomb_cones(t, nc)?;
    let op = Operator::Global(Global {
        h: m.csr,
        j: h.csr.transpose(),
        f,
        b: w,
    });
    Ok((cones, op, ProblemClass::Gfc3d))
}

fn gmp(t: &mut Tokens) -> Result<Parsed> {
    let m = t.matrix("M")?;
    let size = m.csr.nrows;
    t.check_shape(&m, size, size, "M")?;
    let Some(block_ends) = m.block_row_ends else {
        return Err(t.error_at_previous("M in sparse-block storage (1)"));
    };
    let q = t.vector(size, "q")?;
    let mut cones = Vec::with_capacity(size);
    let mut start = 0;
    for (b, &end) in block_ends.iter().enumerate() {
        let rows = end - start;
        let kind = t.size(&format!(
            "the type of block {b} (0 LCP, 2 equality, 4 FC3D)"
        ))?;
        match kind {
            0 => cones.extend(std::iter::repeat_n(Cone::Unilateral, rows)),
            2 => cones.extend(std::iter::repeat_n(Cone::Bilateral { dim: 1 }, rows)),
            4 if rows == 3 => {
                let mu = t.number(&format!("mu of block {b}"))?;
                if mu < 0.0 {
                    return Err(t.error_at_previous(&format!("mu of block {b} ≥ 0")));
                }
                cones.push(Cone::Coulomb { mu });
            }
            4 => {
                return Err(t.error_at_previous(&format!(
                    "an FC3D block of 3 rows (block {b} has {rows})"
                )));
            }
            _ => {
                return Err(t.error_at_previous(&format!(
                    "a supported block type for block {b}: 0 (LCP), 2 (equality) or 4 (FC3D)"
                )));
            }
        }
        start = end;
    }
    let op = Operator::Assembled(Assembled { n: m.csr, r: q });
    Ok((cones, op, ProblemClass::GenericMechanical))
}

/// A matrix as read, with its block-row structure when it was stored by blocks.
struct NumericsMatrix {
    csr: CsrMatrix,
    block_row_ends: Option<Vec<usize>>,
}

/// The token stream of a file, with positions for errors.
struct Tokens<'a> {
    file: &'a str,
    tokens: Vec<(&'a str, usize)>,
    pos: usize,
    last_line: usize,
}

/// Largest dimension accepted from a file: a size field cannot make the reader allocate more
/// than the file could hold (each number takes at least two bytes with its separator).
fn max_count(text_len: usize) -> usize {
    text_len / 2 + 1
}

impl<'a> Tokens<'a> {
    fn new(text: &'a str, file: &'a str) -> Self {
        let tokens: Vec<(&str, usize)> = text
            .lines()
            .enumerate()
            .flat_map(|(i, l)| l.split_whitespace().map(move |w| (w, i + 1)))
            .collect();
        let last_line = text.lines().count().max(1);
        Tokens {
            file,
            tokens,
            pos: 0,
            last_line,
        }
    }

    fn error(&self, index: usize, expected: &str) -> Error {
        let (found, line) = match self.tokens.get(index) {
            Some(&(tok, line)) => (format!("`{tok}`"), line),
            None => ("the end of the file".to_string(), self.last_line),
        };
        Error::Parse {
            file: self.file.to_string(),
            line,
            token: index + 1,
            expected: expected.to_string(),
            found,
        }
    }

    fn error_at_previous(&self, expected: &str) -> Error {
        self.error(self.pos.saturating_sub(1), expected)
    }

    fn next(&mut self, expected: &str) -> Result<&'a str> {
        let tok = self
            .tokens
            .get(self.pos)
            .map(|t| t.0)
            .ok_or_else(|| self.error(self.pos, expected))?;
        self.pos += 1;
        Ok(tok)
    }

    fn number(&mut self, what: &str) -> Result<f64> {
        let tok = self.next(&format!("a number ({what})"))?;
        match tok.parse::<f64>() {
            Ok(v) if v.is_finite() => Ok(v),
            _ => Err(self.error_at_previous(&format!("a finite number ({what})"))),
        }
    }

    fn size(&mut self, what: &str) -> Result<usize> {
        let tok = self.next(&format!("a non-negative integer ({what})"))?;
        let limit = max_count(self.tokens.len() * 2 + 2);
        match tok.parse::<usize>() {
            Ok(v) if v <= limit => Ok(v),
            Ok(_) => Err(self.error_at_previous(&format!(
                "{what} no larger than the file could hold ({limit})"
            ))),
            Err(_) => Err(self.error_at_previous(&format!("a non-negative integer ({what})"))),
        }
    }

    fn flag(&mut self, what: &str) -> Result<bool> {
        match self.size(what)? {
            0 => Ok(false),
            1 => Ok(true),
            _ => Err(self.error_at_previous(what)),
        }
    }

    /// `count` numbers, refusing counts the rest of the file cannot hold.
    fn vector(&mut self, count: usize, what: &str) -> Result<Vec<f64>> {
        if count > self.tokens.len().saturating_sub(self.pos) {
            return Err(self.error(
                self.tokens.len(),
                &format!("{count} numbers for {what} (the file is too short)"),
            ));
        }
        (0..count)
            .map(|i| self.number(&format!("{what}[{i}]")))
            .collect()
    }

    fn row_major(&mut self, rows: usize, cols: usize, what: &str) -> Result<Vec<f64>> {
        self.vector(rows.saturating_mul(cols), what)
    }

    fn check_shape(&self, m: &NumericsMatrix, rows: usize, cols: usize, what: &str) -> Result<()> {
        if m.csr.nrows == rows && m.csr.ncols == cols {
            Ok(())
        } else {
            Err(Error::Parse {
                file: self.file.to_string(),
                line: self
                    .tokens
                    .get(self.pos.saturating_sub(1))
                    .map_or(1, |t| t.1),
                token: self.pos,
                expected: format!("{what} of size {rows}×{cols}"),
                found: format!("a {}×{} matrix", m.csr.nrows, m.csr.ncols),
            })
        }
    }

    /// A NumericsMatrix block: storage, sizes, payload (FORMATS.md §1.1).
    fn matrix(&mut self, what: &str) -> Result<NumericsMatrix> {
        let storage = self.size(&format!("the storage type of {what} (0 dense, 1 SBM)"))?;
        if storage > 1 {
            return Err(self.error_at_previous(&format!(
                "storage type 0 (dense) or 1 (sparse block) for {what}"
            )));
        }
        let rows = self.size(&format!("the number of rows of {what}"))?;
        let cols = self.size(&format!("the number of columns of {what}"))?;
        match storage {
            0 => {
                for (again, want) in [("rows", rows), ("columns", cols)] {
                    if self.size(&format!("the number of {again} of {what} again"))? != want {
                        return Err(self.error_at_previous(&format!(
                            "the number of {again} of {what} repeated ({want})"
                        )));
                    }
                }
                let data = self.vector(rows.saturating_mul(cols), what)?;
                Ok(NumericsMatrix {
                    csr: CsrMatrix::from_dense_col_major(rows, cols, &data),
                    block_row_ends: None,
                })
            }
            _ => self.sparse_block(rows, cols, what),
        }
    }

    fn increasing_ends(&mut self, count: usize, total: usize, what: &str) -> Result<Vec<usize>> {
        let mut ends = Vec::with_capacity(count.min(total + 1));
        for i in 0..count {
            let e = self.size(&format!("{what}[{i}]"))?;
            let prev = ends.last().copied().unwrap_or(0);
            if e <= prev || e > total || (i + 1 == count && e != total) {
                return Err(self
                    .error_at_previous(&format!("{what}: increasing offsets ending at {total}")));
            }
            ends.push(e);
        }
        Ok(ends)
    }

    fn sparse_block(&mut self, rows: usize, cols: usize, what: &str) -> Result<NumericsMatrix> {
        let nblocks = self.size(&format!("the number of stored blocks of {what}"))?;
        if nblocks == 0 {
            return Ok(NumericsMatrix {
                csr: CsrMatrix::from_triplets(rows, cols, &[])?,
                block_row_ends: Some(Vec::new()),
            });
        }
        let nbr = self.size(&format!("the number of block rows of {what}"))?;
        let nbc = self.size(&format!("the number of block columns of {what}"))?;
        let row_ends = self.increasing_ends(nbr, rows, &format!("{what} row offsets"))?;
        let col_ends = self.increasing_ends(nbc, cols, &format!("{what} column offsets"))?;
        if self.size("filled1")? != nbr + 1 {
            return Err(self
                .error_at_previous(&format!("filled1 = number of block rows + 1 = {}", nbr + 1)));
        }
        if self.size("filled2")? != nblocks {
            return Err(
                self.error_at_previous(&format!("filled2 = number of stored blocks = {nblocks}"))
            );
        }
        let mut rowptr = Vec::with_capacity(nbr + 1);
        for i in 0..=nbr {
            let p = self.size(&format!("{what} block row pointer[{i}]"))?;
            let prev = rowptr.last().copied().unwrap_or(0);
            if p < prev || p > nblocks || (i == 0 && p != 0) || (i == nbr && p != nblocks) {
                return Err(self.error_at_previous(&format!(
                    "a non-decreasing block row pointer from 0 to {nblocks}"
                )));
            }
            rowptr.push(p);
        }
        let mut colidx = Vec::with_capacity(nblocks);
        for b in 0..nblocks {
            let c = self.size(&format!("{what} block column index[{b}]"))?;
            if c >= nbc {
                return Err(self.error_at_previous(&format!("a block column index < {nbc}")));
            }
            colidx.push(c);
        }
        let start = |ends: &[usize], i: usize| if i == 0 { 0 } else { ends[i - 1] };
        let mut triplets = Vec::new();
        for br in 0..nbr {
            let (r0, nr) = (start(&row_ends, br), row_ends[br] - start(&row_ends, br));
            for (b, &bc) in colidx
                .iter()
                .enumerate()
                .take(rowptr[br + 1])
                .skip(rowptr[br])
            {
                if self.size(&format!("the number of block {b}"))? != b {
                    return Err(self.error_at_previous(&format!("block number {b}")));
                }
                let (c0, nc) = (start(&col_ends, bc), col_ends[bc] - start(&col_ends, bc));
                let data = self.vector(nr * nc, &format!("{what} block {b}"))?;
                for j in 0..nc {
                    for i in 0..nr {
                        let v = data[j * nr + i];
                        if v != 0.0 {
                            triplets.push((r0 + i, c0 + j, v));
                        }
                    }
                }
            }
        }
        Ok(NumericsMatrix {
            csr: CsrMatrix::from_triplets(rows, cols, &triplets)?,
            block_row_ends: Some(row_ends),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn single_contact_file() {
        let p = parse(
            "3\n1\n\n0\n3\n3\n\n3\n3\n\n15\n-1\n-2\n-1 14 1\n-2 1 16\n-1 2 3\n0.1\n",
            SiconosKind::Fc3d,
            "one.dat",
        )
        .unwrap();
        assert_eq!(p.cones, vec![Cone::Coulomb { mu: 0.1 }]);
        let Operator::Assembled(a) = &p.operator else {
            panic!("assembled expected")
        };
        assert_eq!(a.n.get(0, 1), -1.0);
        assert_eq!(a.n.get(2, 0), -2.0);
        assert_eq!(a.r, vec![-1.0, 2.0, 3.0]);
    }

    #[test]
    fn errors_give_line_token_and_expectation() {
        let err = parse("2\n0\n2 2\n2 2\n1 0\n0 x\n", SiconosKind::Lcp, "bad.dat").unwrap_err();
        let msg = err.to_string();
        assert!(msg.contains("bad.dat: line 6, token 10"), "{msg}");
        assert!(msg.contains("M[3]") && msg.contains("`x`"), "{msg}");
        let err = parse("2\n0\n2 2\n2 2\n1 0\n0 1\n", SiconosKind::Lcp, "short.dat").unwrap_err();
        assert!(err.to_string().contains("the end of the file"), "{err}");
        // An unknown storage type is reported at its own token (the 2nd), not a later one.
        let err = parse("2\n7\n2 2\n", SiconosKind::Lcp, "st.dat").unwrap_err();
        let msg = err.to_string();
        assert!(msg.contains("token 2") && msg.contains("`7`"), "{msg}");
        let err = parse("999999999\n", SiconosKind::Lcp, "huge.dat").unwrap_err();
        assert!(err.to_string().contains("no larger than the file"), "{err}");
    }
}
