//! Problem files: the native JSON format and the Siconos `.dat` files.

pub mod json;
pub mod siconos;

use std::path::Path;

pub use siconos::SiconosKind;

use crate::error::{Error, Result};
use crate::problem::Problem;

/// The formats a problem file can be in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// The native JSON format ([`json`]).
    Json,
    /// A Siconos `.dat` file of the given kind ([`siconos`]).
    Siconos(SiconosKind),
}

impl std::str::FromStr for Format {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "json" => Ok(Format::Json),
            _ => s
                .strip_prefix("siconos-")
                .ok_or(())
                .and_then(|k| k.parse().map_err(|_| ()))
                .map(Format::Siconos)
                .map_err(|()| {
                    format!(
                        "unknown format `{s}`; valid: json, siconos-lcp, siconos-mlcp, \
                         siconos-fc3d, siconos-gfc3d, siconos-gmp"
                    )
                }),
        }
    }
}

impl Format {
    /// The format of `path` from its extension (and, for `.dat`, its name and folder).
    pub fn detect(path: &Path) -> Result<Self> {
        let file = path.display().to_string();
        match path.extension().and_then(|e| e.to_str()) {
            Some("json") => Ok(Format::Json),
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
                message: "expected a .json or Siconos .dat file".into(),
            }),
        }
    }
}

/// Reads a problem file; `format` overrides the detection from the file name.
pub fn read(path: &Path, format: Option<Format>) -> Result<Problem> {
    let format = match format {
        Some(f) => f,
        None => Format::detect(path)?,
    };
    let text = std::fs::read_to_string(path).map_err(|source| Error::Io {
        path: path.to_path_buf(),
        source,
    })?;
    let file = path.display().to_string();
    let problem = match format {
        Format::Json => json::from_str(&text, &file)?,
        Format::Siconos(kind) => siconos::parse(&text, kind, &file)?,
    };
    problem.validate()?;
    Ok(problem)
}
