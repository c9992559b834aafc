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
//!
//! The reader is in `read.rs`, the writer in `write.rs`; this module holds the types and the
//! errors they share.
//!
//! [`Operator::Assembled`]: crate::problem::Operator::Assembled
//! [`Operator::Global`]: crate::problem::Operator::Global
//! [`ProblemClass::Fc3d`]: crate::problem::ProblemClass::Fc3d
//! [`ProblemClass::Gfc3d`]: crate::problem::ProblemClass::Gfc3d

mod read;
mod write;

pub use read::read;
pub use write::write;

use crate::error::{Error, FileFault};
use crate::problem::Problem;

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

/// A malformed part `what` of `file`.
fn malformed(file: &str, what: &str, message: impl Into<String>) -> Error {
    Error::bad_file(
        file,
        FileFault::Malformed {
            what: what.to_string(),
            message: message.into(),
        },
    )
}
