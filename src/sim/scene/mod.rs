//! Scene files (TOML): bodies, containers, generators (lattices, stacks, chains, walls,
//! nets, tracks), joints and springs, turned into a [`World`].
//!
//! A scene is a TOML document; every table rejects unknown keys, and every error names the
//! file, the line and the key. `--set key.path=value` overrides any value before the scene
//! is built (array entries by index: `lattice.0.count=20000`).

mod build;
mod checks;
mod spec;

use std::path::Path;

pub use spec::{
    BodySpec, ChainSpec, ContainerSpec, FeBoxSpec, FeMeshSpec, JointSpec, LatticeSpec,
    MaterialSpec, MotionSpec, NetSpec, NodeRegion, RunSettings, SceneFile, SpringSpec, StackSpec,
    TensionerSpec, TrackSpec, WallSpec,
};

use super::world::World;
use crate::error::{Error, Result};
use crate::limits::Limits;

/// A scene ready to run.
pub struct Scene {
    /// The scene's name (the file stem).
    pub name: String,
    /// Bodies, joints and stepper settings at `t = 0`.
    pub world: World,
    /// How to run it.
    pub run: RunSettings,
    /// What the checks of the scene found worth saying without refusing it (an envelope
    /// shorter than the distance a body moves in one step).
    pub warnings: Vec<String>,
}

/// Reads the scene file at `path`, applies the `(key, value)` overrides and builds it, within
/// the default [`Limits`].
pub fn load(path: &Path, sets: &[(String, String)]) -> Result<Scene> {
    load_within(path, sets, &Limits::default())
}

/// [`load`] within `limits`: a scene whose bodies and contacts would need more memory is
/// refused before it is built.
pub fn load_within(path: &Path, sets: &[(String, String)], limits: &Limits) -> Result<Scene> {
    let text = std::fs::read_to_string(path).map_err(|source| Error::Io {
        path: path.to_path_buf(),
        source,
    })?;
    let file = path.display().to_string();
    let name = path
        .file_stem()
        .and_then(|s| s.to_str())
        .unwrap_or("scene")
        .to_string();
    parse_within(&text, &file, &name, sets, limits)
}

/// Parses and builds a scene from its text, within the default [`Limits`]; `file` names it
/// in errors.
pub fn parse(text: &str, file: &str, name: &str, sets: &[(String, String)]) -> Result<Scene> {
    parse_within(text, file, name, sets, &Limits::default())
}

/// [`parse`] within `limits`. Before anything is built, every number must be finite, every
/// body of a positive mass, the time step and the envelope in proportion to the bodies and
/// their speeds, and the memory within the limit; each refusal names the file, the line and
/// the key.
pub fn parse_within(
    text: &str,
    file: &str,
    name: &str,
    sets: &[(String, String)],
    limits: &Limits,
) -> Result<Scene> {
    let located = Located { text, file };
    // First from the text itself, so that errors carry their line; then with overrides.
    let mut spec: SceneFile = toml::from_str(text).map_err(|e| located.toml_error(&e))?;
    let mut table: toml::Table = toml::from_str(text).map_err(|e| located.toml_error(&e))?;
    if !sets.is_empty() {
        for (key, value) in sets {
            set_path(&mut table, key, value).map_err(|message| Error::Scene {
                file: file.to_string(),
                line: None,
                key: format!("--set {key}"),
                message,
            })?;
        }
        spec = table
            .clone()
            .try_into()
            .map_err(|e: toml::de::Error| Error::Scene {
                file: file.to_string(),
                line: None,
                // The table after the overrides has no lines: their keys instead.
                key: format!(
                    "--set {}",
                    sets.iter()
                        .map(|(k, _)| k.as_str())
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
                message: e.message().to_string(),
            })?;
    }
    let spec_error = |(section, key, message): SpecError| located.error(section, &key, message);
    checks::finite(&table).map_err(spec_error)?;
    spec.validate().map_err(spec_error)?;
    checks::masses(&spec).map_err(spec_error)?;
    let warnings = checks::scales(&spec).map_err(spec_error)?;
    checks::memory(&spec, limits).map_err(|e| crate::problem::io::in_file(file, e))?;
    let base = Path::new(file).parent().unwrap_or(Path::new(""));
    let world = build::world(&spec, base).map_err(spec_error)?;
    Ok(Scene {
        name: name.to_string(),
        world,
        run: spec.run,
        warnings,
    })
}

/// Sets the value at a dotted path (`lattice.0.count`) of a TOML table, numbers indexing
/// lists; the value is parsed as TOML, or taken as a string when it does not parse.
fn set_path(table: &mut toml::Table, key: &str, value: &str) -> Result<(), String> {
    let value = toml::from_str::<toml::Table>(&format!("v = {value}"))
        .ok()
        .and_then(|mut t| t.remove("v"))
        .unwrap_or_else(|| toml::Value::String(value.to_string()));
    let mut root = toml::Value::Table(std::mem::take(table));
    let parts: Vec<&str> = key.split('.').collect();
    let result = set_in(&mut root, &parts, value);
    if let toml::Value::Table(t) = root {
        *table = t;
    }
    result
}

fn set_in(node: &mut toml::Value, parts: &[&str], value: toml::Value) -> Result<(), String> {
    use toml::Value;
    let (part, rest) = parts.split_first().ok_or("empty key")?;
    let child = match node {
        Value::Table(t) if rest.is_empty() => {
            t.insert(part.to_string(), value);
            return Ok(());
        }
        Value::Table(t) => t
            .entry(part.to_string())
            .or_insert_with(|| Value::Table(toml::Table::new())),
        Value::Array(items) => {
            let len = items.len();
            let k = part
                .parse::<usize>()
                .ok()
                .filter(|k| *k < len)
                .ok_or_else(|| format!("`{part}`: expected an index below {len} into the list"))?;
            &mut items[k]
        }
        _ => {
            return Err(format!(
                "`{part}`: its parent is neither a table nor a list"
            ));
        }
    };
    if rest.is_empty() {
        *child = value;
        Ok(())
    } else {
        set_in(child, rest, value)
    }
}

/// The scene text, to turn byte spans and key paths into line numbers.
struct Located<'a> {
    text: &'a str,
    file: &'a str,
}

/// A validation error: the section (`("lattice", 0)`, or `None` for top-level keys), the
/// key path and the message.
pub(crate) type SpecError = (Option<(&'static str, usize)>, String, String);

impl Located<'_> {
    fn line_of(&self, offset: usize) -> usize {
        self.text[..offset.min(self.text.len())]
            .lines()
            .count()
            .max(1)
            + usize::from(self.text[..offset.min(self.text.len())].ends_with('\n'))
    }

    fn toml_error(&self, e: &toml::de::Error) -> Error {
        let line = e.span().map(|s| self.line_of(s.start));
        let key = line
            .and_then(|l| self.text.lines().nth(l - 1))
            .and_then(|l| l.split_once('=').map(|(k, _)| k.trim().to_string()))
            .unwrap_or_default();
        Error::Scene {
            file: self.file.to_string(),
            line,
            key: if key.is_empty() { "scene".into() } else { key },
            message: e.message().to_string(),
        }
    }

    /// The line of `key` (its last dotted part) inside `section`, if the file has it.
    fn find(&self, section: Option<(&str, usize)>, key: &str) -> Option<usize> {
        let leaf = key
            .rsplit(['.', ']'])
            .find(|s| !s.is_empty() && !s.starts_with('['))?;
        let leaf = leaf.split('[').next()?;
        let mut current: Option<(String, usize)> = None;
        let mut counts = std::collections::HashMap::<String, usize>::new();
        for (i, raw) in self.text.lines().enumerate() {
            let line = raw.split('#').next().unwrap_or("").trim();
            if let Some(name) = line.strip_prefix("[[").and_then(|l| l.strip_suffix("]]")) {
                let n = counts.entry(name.trim().to_string()).or_insert(0);
                current = Some((name.trim().to_string(), *n));
                *n += 1;
                continue;
            }
            if let Some(name) = line.strip_prefix('[').and_then(|l| l.strip_suffix(']')) {
                current = Some((name.trim().to_string(), 0));
                continue;
            }
            let here = match (&current, section) {
                (None, None) => true,
                (Some((n, k)), Some((s, j))) => n == s && *k == j,
                _ => false,
            };
            let mentions = line
                .split(['{', ','])
                .any(|part| part.split_once('=').is_some_and(|(k, _)| k.trim() == leaf));
            if here && mentions {
                return Some(i + 1);
            }
        }
        None
    }

    fn error(&self, section: Option<(&str, usize)>, key: &str, message: String) -> Error {
        Error::Scene {
            file: self.file.to_string(),
            line: self.find(section, key),
            key: key.to_string(),
            message,
        }
    }
}
