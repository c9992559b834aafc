//! Problem files: the native JSON format, the native binary format, the Siconos `.dat` files
//! and (cargo feature `fclib`) the FCLIB HDF5 files.
//!
//! | extension | format | read | write |
//! |---|---|:-:|:-:|
//! | `.json` | [`json`]: small, hand-written problems | ✓ | ✓ |
//! | `.bin` | [`binary`]: large problems, exact, checksummed | ✓ | ✓ |
//! | `.dat` | [`siconos`]: the Siconos test problems | ✓ | |
//! | `.hdf5`, `.h5` | `fclib`: FCLIB frictional contact problems | ✓ | ✓ |
//!
//! Every writer goes through a temporary file in the destination folder, renamed into place
//! once complete: a failed write never leaves a half-written file under the final name.

pub mod binary;
#[cfg(feature = "fclib")]
pub mod fclib;
pub mod json;
pub mod siconos;

use std::path::Path;

pub use siconos::SiconosKind;

use crate::error::{Error, Result};
use crate::problem::Problem;

/// The formats a problem file can be in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Format {
    /// The native JSON format ([`json`]).
    #[default]
    Json,
    /// The native binary format ([`binary`]).
    Binary,
    /// A Siconos `.dat` file of the given kind ([`siconos`]).
    Siconos(SiconosKind),
    /// An FCLIB HDF5 file (module `fclib`, cargo feature `fclib`).
    Fclib,
}

impl std::str::FromStr for Format {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "json" => Ok(Format::Json),
            "bin" => Ok(Format::Binary),
            "fclib" => Ok(Format::Fclib),
            _ => s
                .strip_prefix("siconos-")
                .ok_or(())
                .and_then(|k| k.parse().map_err(|_| ()))
                .map(Format::Siconos)
                .map_err(|()| {
                    format!(
                        "unknown format `{s}`; valid: json, bin, fclib, siconos-lcp, \
                         siconos-mlcp, siconos-fc3d, siconos-gfc3d, siconos-gmp"
                    )
                }),
        }
    }
}

impl Format {
    /// The file extension of the format.
    pub fn extension(&self) -> &'static str {
        match self {
            Format::Json => "json",
            Format::Binary => "bin",
            Format::Siconos(_) => "dat",
            Format::Fclib => "hdf5",
        }
    }

    /// The format of `path` from its extension (and, for `.dat`, its name and folder).
    pub fn detect(path: &Path) -> Result<Self> {
        let file = path.display().to_string();
        match path.extension().and_then(|e| e.to_str()) {
            Some("json") => Ok(Format::Json),
            Some("bin") => Ok(Format::Binary),
            Some("hdf5" | "h5") => Ok(Format::Fclib),
            Some("dat") => SiconosKind::detect(path)
                .map(Format::Siconos)
                .ok_or_else(|| Error::UnknownFormat {
                    file,
                    message: "a Siconos .dat file whose name or folder does not tell its \
                              kind (lcp, mlcp, fc3d, gfc3d, gmp); give it with --format"
                        .into(),
                }),
            _ => Err(Error::UnknownFormat {
                file,
                message: "expected a .json, .bin, .hdf5 (FCLIB) or Siconos .dat file".into(),
            }),
        }
    }
}

/// Reads a problem file; `format` overrides the detection from the file name. The problem is
/// validated; an inconsistent content is an error naming the file.
pub fn read(path: &Path, format: Option<Format>) -> Result<Problem> {
    read_detected(path, format).map(|r| r.problem)
}

/// A problem read from a file, with the format it was read as.
#[derive(Debug, Clone)]
pub struct ReadProblem {
    /// The problem, validated.
    pub problem: Problem,
    /// The format it was read as.
    pub format: Format,
    /// Why a Siconos kind other than the one the name (or folder) says was taken, if one was.
    pub note: Option<String>,
}

/// [`read`], saying which format was taken. A Siconos `.dat` file that does not parse as
/// the kind its name (or folder) says is tried as the other kinds (the folder's first); the
/// first reading that parses and validates is taken, with a note saying why. A file whose
/// name and folder disagree is read as its name says, with a note. `format` is taken as
/// given.
pub fn read_detected(path: &Path, format: Option<Format>) -> Result<ReadProblem> {
    let guessed = format.is_none();
    let format = match format {
        Some(f) => f,
        None => Format::detect(path)?,
    };
    let first_err = match read_as(path, format) {
        Ok(problem) => {
            let note = match (
                format,
                SiconosKind::from_name(path),
                SiconosKind::from_folder(path),
            ) {
                (Format::Siconos(kind), Some(n), Some(f)) if guessed && n != f => Some(format!(
                    "{}: read as siconos-{kind}, as its name says (its folder says {f})",
                    path.display()
                )),
                _ => None,
            };
            return Ok(ReadProblem {
                problem,
                format,
                note,
            });
        }
        Err(e) => e,
    };
    // Only a kind guessed from the name or folder is second-guessed, never `--format`.
    let (Format::Siconos(first), true) = (format, guessed) else {
        return Err(first_err);
    };
    let folder = SiconosKind::from_folder(path);
    let others = folder
        .into_iter()
        .chain(SiconosKind::ALL)
        .filter(|k| *k != first);
    for kind in others {
        if let Ok(problem) = read_as(path, Format::Siconos(kind)) {
            return Ok(ReadProblem {
                problem,
                format: Format::Siconos(kind),
                note: Some(format!(
                    "{}: read as siconos-{kind}: its name or folder says {first}, but as {first} \
                     it does not read ({first_err})",
                    path.display()
                )),
            });
        }
    }
    Err(first_err)
}

/// Reads and validates a problem file in the given format.
fn read_as(path: &Path, format: Format) -> Result<Problem> {
    let file = path.display().to_string();
    let problem = match format {
        Format::Binary => binary::read(path)?,
        Format::Fclib => read_fclib(path)?,
        Format::Json | Format::Siconos(_) => {
            let bytes = std::fs::read(path).map_err(|source| Error::Io {
                path: path.to_path_buf(),
                source,
            })?;
            return from_text(&bytes, format, &file);
        }
    };
    problem.validate().map_err(|e| in_file(&file, e))?;
    Ok(problem)
}

/// Parses and validates the bytes of a text problem file (JSON or Siconos `.dat`); `file`
/// names it in errors. Bytes that are not UTF-8 are an error at their offset; a binary or
/// FCLIB format is an error (they are read with [`read`]).
pub fn from_text(bytes: &[u8], format: Format, file: &str) -> Result<Problem> {
    let text = std::str::from_utf8(bytes).map_err(|e| {
        Error::bad_file(
            file,
            crate::error::FileFault::Malformed {
                what: format!("byte {}", e.valid_up_to()),
                message: "not UTF-8 text".into(),
            },
        )
    })?;
    let problem = match format {
        Format::Json => json::from_str(text, file)?,
        Format::Siconos(kind) => siconos::parse(text, kind, file)?,
        Format::Binary | Format::Fclib => {
            return Err(Error::UnknownFormat {
                file: file.to_string(),
                message: format!("{format:?} is not a text format"),
            });
        }
    };
    problem.validate().map_err(|e| in_file(file, e))?;
    Ok(problem)
}

/// `e` with the file it is about, unless it names it already.
pub(crate) fn in_file(file: &str, e: Error) -> Error {
    match e {
        Error::InvalidProblem { .. } | Error::TooLarge { .. } | Error::Factorization(_) => {
            Error::InFile {
                file: file.to_string(),
                source: Box::new(e),
            }
        }
        other => other,
    }
}

/// What [`convert`] wrote.
#[derive(Debug, Clone)]
pub struct Converted {
    /// The problem, as read.
    pub problem: Problem,
    /// The format it was read as (see [`read_detected`]), and the note of the detection.
    pub from: Format,
    /// Why another Siconos kind than the name's was taken, if one was.
    pub note: Option<String>,
    /// The format written.
    pub to: Format,
}

/// Reads `input` and writes it to `output`; `from` and `to` override the detection from the
/// file names. An output that is the input (the same file under any name) is refused before
/// anything is read. FCLIB to FCLIB keeps the info, solution and guesses.
pub fn convert(
    input: &Path,
    output: &Path,
    from: Option<Format>,
    to: Option<Format>,
) -> Result<Converted> {
    if same_file(input, output) {
        return Err(Error::Io {
            path: output.to_path_buf(),
            source: std::io::Error::new(
                std::io::ErrorKind::AlreadyExists,
                format!(
                    "is the input file {}: writing it would destroy it; choose another output",
                    input.display()
                ),
            ),
        });
    }
    let to = to.map_or_else(|| Format::detect(output), Ok)?;
    if let Some(problem) = convert_fclib_extras(input, output, from, to)? {
        return Ok(Converted {
            problem,
            from: Format::Fclib,
            note: None,
            to,
        });
    }
    let read = read_detected(input, from)?;
    write(&read.problem, output, Some(to))?;
    Ok(Converted {
        problem: read.problem,
        from: read.format,
        note: read.note,
        to,
    })
}

/// Whether `a` and `b` name the same existing file.
fn same_file(a: &Path, b: &Path) -> bool {
    match (a.canonicalize(), b.canonicalize()) {
        (Ok(a), Ok(b)) => a == b,
        _ => false,
    }
}

/// FCLIB to FCLIB, keeping the info, solution and guesses; `None` for other pairs.
#[cfg(feature = "fclib")]
fn convert_fclib_extras(
    input: &Path,
    output: &Path,
    from: Option<Format>,
    to: Format,
) -> Result<Option<Problem>> {
    let from = from.map_or_else(|| Format::detect(input), Ok)?;
    if (from, to) != (Format::Fclib, Format::Fclib) {
        return Ok(None);
    }
    let fp = fclib::read(input)?;
    fp.problem
        .validate()
        .map_err(|e| in_file(&input.display().to_string(), e))?;
    fclib::write(&fp, output)?;
    Ok(Some(fp.problem))
}

/// Without the `fclib` feature, FCLIB files are refused by the readers.
#[cfg(not(feature = "fclib"))]
fn convert_fclib_extras(
    _: &Path,
    _: &Path,
    _: Option<Format>,
    _: Format,
) -> Result<Option<Problem>> {
    Ok(None)
}

/// Writes a validated problem; `format` overrides the detection from the file name. Siconos
/// `.dat` files are read only.
pub fn write(problem: &Problem, path: &Path, format: Option<Format>) -> Result<()> {
    let format = match format {
        Some(f) => f,
        None => Format::detect(path)?,
    };
    match format {
        Format::Json => {
            problem.validate()?;
            json::write(problem, path)
        }
        Format::Binary => binary::write(problem, path),
        Format::Fclib => write_fclib(problem, path),
        Format::Siconos(_) => Err(Error::UnknownFormat {
            file: path.display().to_string(),
            message: "Siconos .dat files are read, not written; write .json, .bin or .hdf5".into(),
        }),
    }
}

#[cfg(feature = "fclib")]
fn read_fclib(path: &Path) -> Result<Problem> {
    Ok(fclib::read(path)?.problem)
}

#[cfg(feature = "fclib")]
fn write_fclib(problem: &Problem, path: &Path) -> Result<()> {
    fclib::write(&fclib::FclibProblem::new(problem.clone()), path)
}

#[cfg(not(feature = "fclib"))]
fn read_fclib(path: &Path) -> Result<Problem> {
    Err(fclib_disabled(path))
}

#[cfg(not(feature = "fclib"))]
fn write_fclib(_: &Problem, path: &Path) -> Result<()> {
    Err(fclib_disabled(path))
}

/// The error of a build without the `fclib` feature.
#[cfg(not(feature = "fclib"))]
fn fclib_disabled(path: &Path) -> Error {
    Error::bad_file(
        path.display().to_string(),
        crate::error::FileFault::FeatureDisabled {
            format: "FCLIB HDF5",
            feature: "fclib",
            hint: " (it links the system HDF5 library: Debian/Ubuntu package libhdf5-dev)",
        },
    )
}

/// The hidden temporary file a write to `path` goes through.
fn temporary(path: &Path) -> Result<std::path::PathBuf> {
    let Some(name) = path.file_name() else {
        return Err(Error::Io {
            path: path.to_path_buf(),
            source: std::io::Error::new(std::io::ErrorKind::InvalidInput, "not a file name"),
        });
    };
    Ok(path.with_file_name(format!(".{}.partial", name.to_string_lossy())))
}

/// Runs `write` on a temporary path in the folder of `path` and renames the result into
/// place: a stale temporary file of an earlier (killed) write is removed first, the new one
/// is removed on every error, and the file and its folder are synced to disk (`fsync`)
/// before and after the rename, so that a crash leaves either the old file or the new one.
pub(crate) fn write_atomically(path: &Path, write: impl FnOnce(&Path) -> Result<()>) -> Result<()> {
    let tmp = temporary(path)?;
    let io = |source| Error::Io {
        path: path.to_path_buf(),
        source,
    };
    match std::fs::remove_file(&tmp) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => return Err(io(e)),
        _ => {}
    }
    let folder = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    };
    let result = write(&tmp).and_then(|()| {
        std::fs::File::open(&tmp)
            .and_then(|f| f.sync_all())
            .and_then(|()| std::fs::rename(&tmp, path))
            .and_then(|()| sync_folder(folder))
            .map_err(io)
    });
    if result.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    result
}

/// `fsync` of a folder, so that a rename in it is durable (a no-op where folders cannot be
/// opened as files).
fn sync_folder(folder: &Path) -> std::io::Result<()> {
    if cfg!(unix) {
        std::fs::File::open(folder)?.sync_all()
    } else {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scratch(name: &str) -> std::path::PathBuf {
        let dir = std::env::temp_dir().join(format!("signorini-io-{name}-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }

    #[test]
    fn a_failed_write_leaves_nothing_and_a_stale_temporary_goes() {
        let dir = scratch("atomic");
        let target = dir.join("p.json");
        let tmp = temporary(&target).unwrap();
        // A killed earlier write left its temporary file: the next write removes it.
        std::fs::write(&tmp, "half").unwrap();
        let err = write_atomically(&target, |t| {
            assert!(!t.exists(), "the stale temporary file is still there");
            std::fs::write(t, "partial").unwrap();
            Err(Error::Report("failed".into()))
        });
        assert!(err.is_err());
        assert!(!tmp.exists() && !target.exists());
        write_atomically(&target, |t| {
            std::fs::write(t, "{}").map_err(|e| Error::Io {
                path: t.to_path_buf(),
                source: e,
            })
        })
        .unwrap();
        assert_eq!(std::fs::read_to_string(&target).unwrap(), "{}");
        assert!(!tmp.exists());
        std::fs::remove_dir_all(dir).unwrap();
    }
}
