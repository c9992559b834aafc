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
/// validated.
pub fn read(path: &Path, format: Option<Format>) -> Result<Problem> {
    let format = match format {
        Some(f) => f,
        None => Format::detect(path)?,
    };
    let file = path.display().to_string();
    let text = || {
        std::fs::read_to_string(path).map_err(|source| Error::Io {
            path: path.to_path_buf(),
            source,
        })
    };
    let problem = match format {
        Format::Json => json::from_str(&text()?, &file)?,
        Format::Siconos(kind) => siconos::parse(&text()?, kind, &file)?,
        Format::Binary => binary::read(path)?,
        Format::Fclib => read_fclib(path)?,
    };
    problem.validate()?;
    Ok(problem)
}

/// Converts the problem file `input` into `output`, the formats detected from the names
/// unless given, and returns the problem. FCLIB to FCLIB (feature `fclib`) keeps the
/// file's info, solution and guesses.
pub fn convert(
    input: &Path,
    output: &Path,
    from: Option<Format>,
    to: Option<Format>,
) -> Result<Problem> {
    let from = from.map_or_else(|| Format::detect(input), Ok)?;
    let to = to.map_or_else(|| Format::detect(output), Ok)?;
    #[cfg(feature = "fclib")]
    if (from, to) == (Format::Fclib, Format::Fclib) {
        let fp = fclib::read(input)?;
        fp.problem.validate()?;
        fclib::write(&fp, output)?;
        return Ok(fp.problem);
    }
    let problem = read(input, Some(from))?;
    write(&problem, output, Some(to))?;
    Ok(problem)
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

/// Runs `write` on a temporary path in the folder of `path` and renames the result into
/// place; on failure the temporary file is removed.
pub(crate) fn write_atomically(path: &Path, write: impl FnOnce(&Path) -> Result<()>) -> Result<()> {
    let Some(name) = path.file_name() else {
        return Err(Error::Io {
            path: path.to_path_buf(),
            source: std::io::Error::new(std::io::ErrorKind::InvalidInput, "not a file name"),
        });
    };
    let tmp = path.with_file_name(format!(".{}.partial", name.to_string_lossy()));
    let result = write(&tmp).and_then(|()| {
        std::fs::rename(&tmp, path).map_err(|source| Error::Io {
            path: path.to_path_buf(),
            source,
        })
    });
    if result.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    result
}
