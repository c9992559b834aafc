//! The one error type of the crate.
//!
//! Errors are for bad input and bad settings only: a solver that does not converge returns a
//! [`crate::solver::Status`] inside its report, never an `Err`.

use std::path::PathBuf;

/// Everything that can go wrong before a solver starts, or while reading and writing files.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A file could not be opened, read or written.
    #[error("{path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// What the operating system said.
        source: std::io::Error,
    },
    /// A text file does not follow its format.
    #[error("{file}: line {line}, token {token}: expected {expected}, found {found}")]
    Parse {
        /// The file (or `<input>` for in-memory text).
        file: String,
        /// 1-based line of the offending token (of the end of the file when it is missing).
        line: usize,
        /// 1-based index of the offending token in the whitespace-separated stream.
        token: usize,
        /// What the format requires at this place.
        expected: String,
        /// What was there instead.
        found: String,
    },
    /// A JSON problem file is not valid JSON or does not match the schema.
    #[error("{file}: line {line}, column {column}: {message}")]
    Json {
        /// The file.
        file: String,
        /// 1-based line.
        line: usize,
        /// 1-based column.
        column: usize,
        /// What serde said.
        message: String,
    },
    /// A problem is well-formed but inconsistent: the field (with its index) says where.
    #[error("invalid problem: {field}: {message}")]
    InvalidProblem {
        /// The offending field with its index, e.g. `blocks[3].bodies[1]`.
        field: String,
        /// What is wrong with it.
        message: String,
    },
    /// A solver setting is out of range.
    #[error("invalid setting {name} = {value}: {message}")]
    InvalidSetting {
        /// The setting.
        name: &'static str,
        /// Its value, as given.
        value: String,
        /// The admissible range.
        message: String,
    },
    /// A solver name that the registry does not know.
    #[error("unknown solver `{name}`; valid solvers: {}", valid.join(", "))]
    UnknownSolver {
        /// The name asked for.
        name: String,
        /// The names the registry knows.
        valid: Vec<String>,
    },
    /// A scene file is malformed or inconsistent.
    #[error("{file}: {}{key}: {message}", line.map_or(String::new(), |l| format!("line {l}: ")))]
    Scene {
        /// The scene file.
        file: String,
        /// 1-based line of the offending key, when it is in the file (not from `--set`).
        line: Option<usize>,
        /// The key, as a dotted path (e.g. `lattice[0].shape.radius`).
        key: String,
        /// What is wrong.
        message: String,
    },
    /// A problem or a scene would need more memory than [`crate::limits::Limits`] allows:
    /// refused before the allocation.
    #[error(
        "{what} would need {}, more than the memory limit of {} (set it with --max-memory)",
        bytes.map_or("more than 2⁶⁴ bytes (its size overflows)".to_string(), crate::limits::human),
        crate::limits::human(*limit)
    )]
    TooLarge {
        /// What was being prepared, with its sizes.
        what: String,
        /// The estimate, bytes; `None` when the size computation overflowed.
        bytes: Option<u64>,
        /// The limit, bytes.
        limit: u64,
    },
    /// A problem file's content is inconsistent (the error inside names the field).
    #[error("{file}: {source}")]
    InFile {
        /// The file.
        file: String,
        /// What is wrong with its content.
        source: Box<Error>,
    },
    /// A factorization needed to prepare the problem failed.
    #[error("factorization failed: {0}")]
    Factorization(String),
    /// The GPU path cannot run: no adapter, a device error, or a problem form it does not
    /// support.
    #[error("GPU: {0}")]
    Gpu(String),
    /// A binary or FCLIB problem file is damaged, of another version, or not of its format.
    #[error("{file}: {fault}")]
    BadFile {
        /// The file.
        file: String,
        /// What is wrong with it.
        fault: FileFault,
    },
    /// The window of `signorini view` cannot be opened: no display, or the window system
    /// did not start.
    #[error("no window: {0}")]
    NoDisplay(String),
    /// A benchmark report or chart cannot be made: nothing was measured, or a table or chart
    /// would be empty.
    #[error("report: {0}")]
    Report(String),
    /// The file extension or content does not name a format we read.
    #[error("{file}: unknown problem format ({message})")]
    UnknownFormat {
        /// The file.
        file: String,
        /// What was looked at.
        message: String,
    },
}

/// What is wrong with a damaged problem file ([`Error::BadFile`]).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FileFault {
    /// The file does not start with the signature of its format.
    #[error("not a {format} file (its first bytes are not the signature of the format)")]
    NotThisFormat {
        /// The format expected.
        format: &'static str,
    },
    /// The file was written by another version of the format.
    #[error("format version {found}, but this build reads version {supported}")]
    Version {
        /// The version in the file.
        found: u32,
        /// The version this build reads and writes.
        supported: u32,
    },
    /// The file is shorter (or longer) than its header says: cut off or appended to.
    #[error("truncated: the header announces {expected} bytes, the file holds {found}")]
    Truncated {
        /// Bytes the header announces.
        expected: u64,
        /// Bytes the file holds.
        found: u64,
    },
    /// The data does not match its checksum: the file was altered or damaged.
    #[error("corrupted: checksum {computed:#010x} of the data, {stored:#010x} stored")]
    Checksum {
        /// The checksum stored in the file.
        stored: u32,
        /// The checksum of the data read.
        computed: u32,
    },
    /// The content is inconsistent: a size, tag or value that the format does not allow.
    #[error("{what}: {message}")]
    Malformed {
        /// Where: a byte offset or a dataset path.
        what: String,
        /// What is wrong.
        message: String,
    },
    /// The HDF5 library could not read or write the file.
    #[error("HDF5: {0}")]
    Hdf5(String),
    /// The file needs a cargo feature this build was compiled without.
    #[error(
        "{format} files need the cargo feature `{feature}`: rebuild with `cargo build --features {feature}`{hint}"
    )]
    FeatureDisabled {
        /// The format.
        format: &'static str,
        /// The cargo feature.
        feature: &'static str,
        /// What else is needed (a system library).
        hint: &'static str,
    },
}

/// The crate's result type.
pub type Result<T, E = Error> = std::result::Result<T, E>;

impl Error {
    /// Shorthand for [`Error::BadFile`].
    pub fn bad_file(file: impl Into<String>, fault: FileFault) -> Self {
        Error::BadFile {
            file: file.into(),
            fault,
        }
    }

    /// Shorthand for [`Error::InvalidProblem`].
    pub fn invalid(field: impl Into<String>, message: impl Into<String>) -> Self {
        Error::InvalidProblem {
            field: field.into(),
            message: message.into(),
        }
    }
}
