//! The native binary problem format (`.bin`): every field of a [`Problem`], exactly, for
//! problems too large for JSON. Written and read in one streaming pass.
//!
//! Layout, all integers and floats little-endian:
//!
//! | offset | bytes | field |
//! |---:|---:|---|
//! | 0 | 8 | signature [`SIGNATURE`] |
//! | 8 | 4 | format version ([`VERSION`]) |
//! | 12 | 4 | reserved, 0 |
//! | 16 | 8 | length `L` of the data |
//! | 24 | 4 | CRC-32 (IEEE) of the data |
//! | 28 | 4 | reserved, 0 |
//! | 32 | `L` | the data |
//!
//! The data, in order: the name (`u64` byte length, UTF-8), the class (`u8`, the order of
//! [`ProblemClass`]), the cones (`u64` count; per cone a tag `u8`: 0 bilateral followed by
//! its dimension `u8`, 1 unilateral, 2 Coulomb followed by `μ` as `f64`), the operator (tag
//! `u8`: 0 factored, 1 assembled, 2 global, then its fields in declaration order) and the
//! compliance. A vector is a `u64` length and its `f64`s; a matrix is `nrows`, `ncols`,
//! `nnz` (`u64`), then `indptr` and `indices` (`u64`) and `values` (`f64`); a body is its 10
//! numbers (mass, inertia, free velocity); a Jacobian block is its body count (`u8`), body
//! indices (`u64`), row count (`u64`) and rows (6 `f64` each).
//!
//! Reading checks the length before anything else (a cut-off file is [`FileFault::Truncated`])
//! and never allocates more than the rest of the file could hold; a structural error in a
//! file whose checksum does not match is reported as [`FileFault::Checksum`].

use std::fs::File;
use std::io::{BufReader, BufWriter, Read, Seek, SeekFrom, Write};
use std::path::Path;

use crate::error::{Error, FileFault, Result};
use crate::problem::{
    Assembled, Body, Cone, CsrMatrix, Factored, Global, JacobianBlock, Operator, Problem,
    ProblemClass,
};

/// The first 8 bytes of every file.
pub const SIGNATURE: [u8; 8] = *b"SIGNPRB\x1a";
/// The version this build reads and writes.
pub const VERSION: u32 = 1;
/// Bytes before the data.
pub const HEADER_LEN: u64 = 32;
/// Numbers converted per buffer in the array loops.
const CHUNK: usize = 8192;

const CLASSES: [ProblemClass; 6] = [
    ProblemClass::Native,
    ProblemClass::Lcp,
    ProblemClass::Mlcp,
    ProblemClass::Fc3d,
    ProblemClass::Gfc3d,
    ProblemClass::GenericMechanical,
];

/// Validates `problem` and writes it to `path` through a temporary file renamed into place.
pub fn write(problem: &Problem, path: &Path) -> Result<()> {
    problem.validate()?;
    super::write_atomically(path, |tmp| {
        let io = |source| Error::Io {
            path: path.to_path_buf(),
            source,
        };
        let file = File::create(tmp).map_err(io)?;
        let mut w = Encoder {
            out: BufWriter::with_capacity(1 << 20, file),
            crc: crc32fast::Hasher::new(),
            len: 0,
            buf: Vec::with_capacity(8 * CHUNK),
        };
        w.out.write_all(&[0; HEADER_LEN as usize]).map_err(io)?;
        w.problem(problem).map_err(io)?;
        let (len, crc) = (w.len, w.crc.finalize());
        let mut file = w.out.into_inner().map_err(|e| io(e.into_error()))?;
        let mut header = [0u8; HEADER_LEN as usize];
        header[..8].copy_from_slice(&SIGNATURE);
        header[8..12].copy_from_slice(&VERSION.to_le_bytes());
        header[16..24].copy_from_slice(&len.to_le_bytes());
        header[24..28].copy_from_slice(&crc.to_le_bytes());
        file.seek(SeekFrom::Start(0)).map_err(io)?;
        file.write_all(&header).map_err(io)
    })
}

/// Reads a problem from `path` (not validated here).
pub fn read(path: &Path) -> Result<Problem> {
    let io = |source| Error::Io {
        path: path.to_path_buf(),
        source,
    };
    let file = File::open(path).map_err(io)?;
    let size = file.metadata().map_err(io)?.len();
    decode(
        BufReader::with_capacity(1 << 20, file),
        size,
        &path.display().to_string(),
    )
}

/// Decodes a problem from the bytes of a file; `file` names it in errors.
pub fn from_bytes(bytes: &[u8], file: &str) -> Result<Problem> {
    decode(bytes, bytes.len() as u64, file)
}

/// Decodes a problem from a stream of `size` bytes.
fn decode(mut input: impl Read, size: u64, file: &str) -> Result<Problem> {
    let bad = |fault| Error::bad_file(file, fault);
    let io = |source| Error::Io {
        path: file.into(),
        source,
    };
    let mut header = [0u8; HEADER_LEN as usize];
    let have = size.min(HEADER_LEN) as usize;
    input.read_exact(&mut header[..have]).map_err(io)?;
    if have < SIGNATURE.len() || header[..8] != SIGNATURE {
        return Err(bad(FileFault::NotThisFormat {
            format: "signorini binary problem",
        }));
    }
    if size < HEADER_LEN {
        return Err(bad(FileFault::Truncated {
            expected: HEADER_LEN,
            found: size,
        }));
    }
    let word = |at: usize| u32::from_le_bytes(header[at..at + 4].try_into().expect("4 bytes"));
    let version = word(8);
    if version != VERSION {
        return Err(bad(FileFault::Version {
            found: version,
            supported: VERSION,
        }));
    }
    let len = u64::from_le_bytes(header[16..24].try_into().expect("8 bytes"));
    let stored = word(24);
    let expected = HEADER_LEN.saturating_add(len);
    if expected != size {
        return Err(bad(FileFault::Truncated {
            expected,
            found: size,
        }));
    }
    let mut d = Decoder {
        input,
        crc: crc32fast::Hasher::new(),
        remaining: len,
        len,
        buf: vec![0; CHUNK * 8],
    };
    let mut parsed = d.problem();
    if parsed.is_ok() && d.remaining > 0 {
        parsed = Err(d.malformed("the end of the problem", "data left over"));
    }
    // A damaged file is reported as such, whatever its damage made the parser stumble on.
    d.drain().map_err(io)?;
    let computed = d.crc.clone().finalize();
    if computed != stored {
        return Err(bad(FileFault::Checksum { stored, computed }));
    }
    parsed.map_err(|e| match e {
        DecodeError::Io(source) => io(source),
        DecodeError::Malformed { what, message } => bad(FileFault::Malformed { what, message }),
    })
}

/// A write stream that counts and checksums the bytes of the data.
struct Encoder<W: Write> {
    out: W,
    crc: crc32fast::Hasher,
    len: u64,
    /// Little-endian bytes of the array being written, a chunk at a time.
    buf: Vec<u8>,
}

impl<W: Write> Encoder<W> {
    fn bytes(&mut self, b: &[u8]) -> std::io::Result<()> {
        self.crc.update(b);
        self.len += b.len() as u64;
        self.out.write_all(b)
    }

    fn u8(&mut self, v: u8) -> std::io::Result<()> {
        self.bytes(&[v])
    }

    fn u64(&mut self, v: usize) -> std::io::Result<()> {
        self.bytes(&(v as u64).to_le_bytes())
    }

    /// Little-endian words of `values`, a buffer at a time.
    fn words<T: Copy>(&mut self, values: &[T], le: impl Fn(T) -> [u8; 8]) -> std::io::Result<()> {
        let mut buf = std::mem::take(&mut self.buf);
        for chunk in values.chunks(CHUNK) {
            buf.clear();
            chunk.iter().for_each(|&v| buf.extend_from_slice(&le(v)));
            self.bytes(&buf)?;
        }
        self.buf = buf;
        Ok(())
    }

    fn f64s(&mut self, v: &[f64]) -> std::io::Result<()> {
        self.words(v, f64::to_le_bytes)
    }

    fn vector(&mut self, v: &[f64]) -> std::io::Result<()> {
        self.u64(v.len())?;
        self.f64s(v)
    }

    fn matrix(&mut self, m: &CsrMatrix) -> std::io::Result<()> {
        self.u64(m.nrows)?;
        self.u64(m.ncols)?;
        self.u64(m.values.len())?;
        self.words(&m.indptr, |v| (v as u64).to_le_bytes())?;
        self.words(&m.indices, |v| (v as u64).to_le_bytes())?;
        self.f64s(&m.values)
    }

    fn problem(&mut self, p: &Problem) -> std::io::Result<()> {
        self.u64(p.name.len())?;
        self.bytes(p.name.as_bytes())?;
        let class = CLASSES.iter().position(|c| *c == p.class).expect("listed");
        self.u8(class as u8)?;
        self.u64(p.cones.len())?;
        for cone in &p.cones {
            match *cone {
                Cone::Bilateral { dim } => {
                    self.u8(0)?;
                    self.u8(dim as u8)?; // 1 to 3 in a validated problem
                }
                Cone::Unilateral => self.u8(1)?,
                Cone::Coulomb { mu } => {
                    self.u8(2)?;
                    self.f64s(&[mu])?;
                }
            }
        }
        match &p.operator {
            Operator::Factored(f) => {
                self.u8(0)?;
                self.u64(f.bodies.len())?;
                let numbers: Vec<f64> = f
                    .bodies
                    .iter()
                    .flat_map(|b| [b.mass].into_iter().chain(b.inertia).chain(b.v_free))
                    .collect();
                self.f64s(&numbers)?;
                self.u64(f.jacobians.len())?;
                for j in &f.jacobians {
                    self.u8(j.bodies.len() as u8)?; // 1 or 2 in a validated problem
                    self.words(&j.bodies, |v| (v as u64).to_le_bytes())?;
                    self.u64(j.rows.len())?;
                    self.f64s(j.rows.as_flattened())?;
                }
                self.vector(&f.b)?;
            }
            Operator::Assembled(a) => {
                self.u8(1)?;
                self.matrix(&a.n)?;
                self.vector(&a.r)?;
            }
            Operator::Global(g) => {
                self.u8(2)?;
                self.matrix(&g.h)?;
                self.matrix(&g.j)?;
                self.vector(&g.f)?;
                self.vector(&g.b)?;
            }
        }
        self.vector(&p.compliance)
    }
}

/// What can stop the decoder before the checksum is known.
enum DecodeError {
    Io(std::io::Error),
    Malformed { what: String, message: String },
}

impl From<std::io::Error> for DecodeError {
    fn from(e: std::io::Error) -> Self {
        DecodeError::Io(e)
    }
}

type Decoded<T> = std::result::Result<T, DecodeError>;

/// A read stream over the data that checksums what it reads and knows how much is left.
struct Decoder<R: Read> {
    input: R,
    crc: crc32fast::Hasher,
    remaining: u64,
    len: u64,
    buf: Vec<u8>,
}

impl<R: Read> Decoder<R> {
    fn malformed(&self, what: &str, message: impl Into<String>) -> DecodeError {
        DecodeError::Malformed {
            what: format!("{what} (byte {})", HEADER_LEN + self.len - self.remaining),
            message: message.into(),
        }
    }

    /// Reads and checksums the rest of the data.
    fn drain(&mut self) -> std::io::Result<()> {
        while self.remaining > 0 {
            let n = self.remaining.min(self.buf.len() as u64) as usize;
            self.fill(n)?;
        }
        Ok(())
    }

    /// Reads the next `n ≤ remaining` bytes into the front of `buf`.
    fn fill(&mut self, n: usize) -> std::io::Result<()> {
        self.input.read_exact(&mut self.buf[..n])?;
        self.crc.update(&self.buf[..n]);
        self.remaining -= n as u64;
        Ok(())
    }

    fn take(&mut self, n: usize, what: &str) -> Decoded<()> {
        if n as u64 > self.remaining {
            return Err(self.malformed(what, "runs past the end of the data"));
        }
        Ok(self.fill(n)?)
    }

    fn u8(&mut self, what: &str) -> Decoded<u8> {
        self.take(1, what)?;
        Ok(self.buf[0])
    }

    fn word(&mut self, what: &str) -> Decoded<[u8; 8]> {
        self.take(8, what)?;
        Ok(self.buf[..8].try_into().expect("8 bytes"))
    }

    fn f64(&mut self, what: &str) -> Decoded<f64> {
        Ok(f64::from_le_bytes(self.word(what)?))
    }

    /// A `u64` that must fit in `usize`.
    fn index(&mut self, what: &str) -> Decoded<usize> {
        let v = u64::from_le_bytes(self.word(what)?);
        usize::try_from(v).map_err(|_| self.malformed(what, format!("{v} is too large")))
    }

    /// A count of items taking at least `min_bytes` each: no larger than the rest of the
    /// data could hold, so that it bounds every allocation made from it.
    fn count(&mut self, what: &str, min_bytes: u64) -> Decoded<usize> {
        let n = self.index(what)?;
        if n as u64 > self.remaining / min_bytes {
            return Err(self.malformed(
                what,
                format!(
                    "{n} items of at least {min_bytes} bytes do not fit in the {} bytes left",
                    self.remaining
                ),
            ));
        }
        Ok(n)
    }

    /// `n` little-endian words, a buffer at a time (`n` is bounded by the caller's count).
    fn words<T>(&mut self, n: usize, what: &str, conv: impl Fn([u8; 8]) -> T) -> Decoded<Vec<T>> {
        if n as u64 > self.remaining / 8 {
            return Err(self.malformed(what, "runs past the end of the data"));
        }
        let mut out = Vec::with_capacity(n);
        let mut left = n;
        while left > 0 {
            let k = left.min(CHUNK);
            self.fill(8 * k)?;
            out.extend(
                self.buf[..8 * k]
                    .chunks_exact(8)
                    .map(|c| conv(c.try_into().expect("8 bytes"))),
            );
            left -= k;
        }
        Ok(out)
    }

    fn f64s(&mut self, n: usize, what: &str) -> Decoded<Vec<f64>> {
        self.words(n, what, f64::from_le_bytes)
    }

    fn indices(&mut self, n: usize, what: &str) -> Decoded<Vec<usize>> {
        let raw = self.words(n, what, u64::from_le_bytes)?;
        raw.into_iter()
            .map(|v| usize::try_from(v).map_err(|_| self.malformed(what, "index too large")))
            .collect()
    }

    fn vector(&mut self, what: &str) -> Decoded<Vec<f64>> {
        let n = self.count(&format!("the length of {what}"), 8)?;
        self.f64s(n, what)
    }

    fn matrix(&mut self, what: &str) -> Decoded<CsrMatrix> {
        let nrows = self.count(&format!("{what}.nrows"), 8)?;
        let ncols = self.index(&format!("{what}.ncols"))?;
        let nnz = self.count(&format!("{what}.nnz"), 16)?;
        let indptr = self.indices(nrows + 1, &format!("{what}.indptr"))?;
        let indices = self.indices(nnz, &format!("{what}.indices"))?;
        let values = self.f64s(nnz, &format!("{what}.values"))?;
        Ok(CsrMatrix {
            nrows,
            ncols,
            indptr,
            indices,
            values,
        })
    }

    fn problem(&mut self) -> Decoded<Problem> {
        let len = self.count("the length of the name", 1)?;
        let mut name = Vec::with_capacity(len);
        while name.len() < len {
            let k = (len - name.len()).min(self.buf.len());
            self.take(k, "name")?;
            name.extend_from_slice(&self.buf[..k]);
        }
        let name = String::from_utf8(name).map_err(|_| self.malformed("name", "not UTF-8"))?;
        let class = self.u8("class")?;
        let class = *CLASSES
            .get(class as usize)
            .ok_or_else(|| self.malformed("class", format!("unknown class tag {class}")))?;
        let ncones = self.count("the number of cones", 1)?;
        let mut cones = Vec::with_capacity(ncones);
        for _ in 0..ncones {
            // Names are static in the per-item loops (a million blocks, no formatting): the
            // byte offset in the error locates the item.
            cones.push(match self.u8("a cone")? {
                0 => Cone::Bilateral {
                    dim: self.u8("a bilateral cone")? as usize,
                },
                1 => Cone::Unilateral,
                2 => Cone::Coulomb {
                    mu: self.f64("a Coulomb cone")?,
                },
                t => return Err(self.malformed("a cone", format!("unknown cone tag {t}"))),
            });
        }
        let operator = match self.u8("operator")? {
            0 => Operator::Factored(self.factored()?),
            1 => Operator::Assembled(Assembled {
                n: self.matrix("n")?,
                r: self.vector("r")?,
            }),
            2 => Operator::Global(Global {
                h: self.matrix("h")?,
                j: self.matrix("j")?,
                f: self.vector("f")?,
                b: self.vector("b")?,
            }),
            t => return Err(self.malformed("operator", format!("unknown operator tag {t}"))),
        };
        let compliance = self.vector("compliance")?;
        Ok(Problem {
            name,
            class,
            cones,
            operator,
            compliance,
        })
    }

    fn factored(&mut self) -> Decoded<Factored> {
        let nb = self.count("the number of bodies", 80)?;
        let numbers = self.f64s(10 * nb, "bodies")?;
        let bodies = numbers
            .chunks_exact(10)
            .map(|c| Body {
                mass: c[0],
                inertia: c[1..4].try_into().expect("3 numbers"),
                v_free: c[4..10].try_into().expect("6 numbers"),
            })
            .collect();
        // A block takes at least its body count and its row count.
        let nj = self.count("the number of Jacobian blocks", 9)?;
        let mut jacobians = Vec::with_capacity(nj);
        for _ in 0..nj {
            let n = self.u8("a Jacobian block")? as usize;
            let bodies = self.indices(n, "the bodies of a Jacobian block")?;
            let rows = self.count("the rows of a Jacobian block", 48)?;
            let rows = self.words(6 * rows, "the rows of a Jacobian block", f64::from_le_bytes)?;
            let rows = rows
                .chunks_exact(6)
                .map(|c| c.try_into().expect("6 numbers"))
                .collect();
            jacobians.push(JacobianBlock {
                bodies: bodies.into_iter().collect(),
                rows,
            });
        }
        let b = self.vector("b")?;
        Ok(Factored {
            bodies,
            jacobians,
            b,
        })
    }
}
