//! The native JSON problem format: the serde form of [`Problem`], exact in both directions
//! (shortest round-trip float printing, correctly rounded parsing).

use crate::error::{Error, Result};
use crate::problem::Problem;

/// Parses a JSON problem; `file` names it in errors, with the line, the column and the path
/// of the key at fault (an unknown key is an error). The problem is not validated here.
pub fn from_str(text: &str, file: &str) -> Result<Problem> {
    let located = |e: &serde_json::Error, message: String| Error::Json {
        file: file.to_string(),
        line: e.line(),
        column: e.column(),
        message,
    };
    let mut de = serde_json::Deserializer::from_str(text);
    let problem: Problem = serde_path_to_error::deserialize(&mut de).map_err(|e| {
        let path = e.path().to_string();
        let inner = e.inner();
        match path.as_str() {
            "." => located(inner, inner.to_string()),
            _ => located(inner, format!("at `{path}`: {inner}")),
        }
    })?;
    de.end().map_err(|e| located(&e, e.to_string()))?;
    Ok(problem)
}

/// The JSON text of a problem (pretty-printed).
pub fn to_string(problem: &Problem) -> String {
    serde_json::to_string_pretty(problem).expect("a problem always serializes")
}

/// Writes a problem as JSON, through a temporary file renamed into place so that a failed
/// write never leaves a half-written file under the final name.
pub fn write(problem: &Problem, path: &std::path::Path) -> Result<()> {
    super::write_atomically(path, |tmp| {
        std::fs::write(tmp, to_string(problem)).map_err(|source| Error::Io {
            path: path.to_path_buf(),
            source,
        })
    })
}
