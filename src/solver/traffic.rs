//! Bytes moved per iteration by the CPU solvers' loops, the model the throughput benchmark
//! holds against the copy bandwidth it measures (issue 16).
//!
//! Every array element a loop reads or writes is counted once per use, at its size in
//! memory, whether or not a cache would keep it: that is the traffic of the code as written
//! (an upper bound of what reaches DRAM), summed term by term so that a report can show
//! where the bytes go.

use super::Settings;
use super::colored::Tiling;
use super::kernel::{self, Sweep};
use crate::problem::System;

/// One term of the model: what is moved and how many bytes per iteration.
#[derive(Debug, Clone, PartialEq)]
pub struct Term {
    /// The loop and the arrays it touches.
    pub what: &'static str,
    /// Bytes per iteration.
    pub bytes: u64,
}

/// The bytes one iteration of a solver moves, term by term.
#[derive(Debug, Clone, PartialEq)]
pub struct Traffic {
    /// The encoding of the Jacobian rows in the CPU kernel (`sphere`, `compact` or `full`), `None`
    /// for a solver on the operator.
    pub encoding: Option<&'static str>,
    /// The solver's loops.
    pub terms: Vec<Term>,
}

impl Traffic {
    /// Total bytes per iteration.
    pub fn bytes(&self) -> u64 {
        self.terms.iter().map(|t| t.bytes).sum()
    }

    /// The model in one line, bytes per contact (block) of `blocks`: the total, then each
    /// term.
    pub fn describe(&self, blocks: usize) -> String {
        let per = |b: u64| b as f64 / blocks.max(1) as f64;
        let terms: Vec<String> = self
            .terms
            .iter()
            .map(|t| format!("{} {:.0}", t.what, per(t.bytes)))
            .collect();
        let rows = self
            .encoding
            .map_or(String::new(), |e| format!(", {e} rows"));
        format!(
            "{:.0} B/contact{rows} ({})",
            per(self.bytes()),
            terms.join(", ")
        )
    }
}

/// The sizes the model multiplies: counted from a factored system.
#[derive(Debug, Clone, Copy)]
struct Counts {
    blocks: u64,
    rows: u64,
    bodies: u64,
    /// (block, body) pairs.
    links: u64,
    /// Jacobian rows of 6, `Σ_k d_k · bodies_k`.
    jac_rows: u64,
}

impl Counts {
    fn of(sys: &System) -> Option<Counts> {
        let f = sys.factored()?;
        Some(Counts {
            blocks: sys.blocks() as u64,
            rows: sys.rows() as u64,
            bodies: f.bodies() as u64,
            links: f.links().len() as u64,
            jac_rows: f.jac().len() as u64,
        })
    }
}

/// Bytes of an `f64`, an index (`usize`), a [`crate::problem::Cone`], a `Vec` header and a
/// Jacobian row `[f64; 6]`.
const F64: u64 = 8;
const IDX: u64 = 8;
const CONE: u64 = 16;
const VEC: u64 = 24;
const ROW6: u64 = 48;

/// `u = (N + E) γ + r` of the factored operator ([`crate::problem::operator`]): the gather
/// `w = M⁻¹ Jᵀ γ` per body (links, block offsets, rows of `M⁻¹ Jᵀ`, `γ`; `w` written), the
/// rows `J w` (block of the row, offsets, the block's body list, rows of `J`, `w` gathered),
/// then the compliance and `r` loops.
fn product(c: Counts) -> Vec<Term> {
    vec![
        Term {
            what: "M⁻¹Jᵀγ",
            bytes: c.bodies * (IDX + 6 * F64)
                + c.links * (2 * IDX + 2 * IDX)
                + c.jac_rows * (ROW6 + F64),
        },
        Term {
            what: "Jw",
            bytes: c.rows * (F64 + 2 * IDX + VEC) + c.jac_rows * (2 * IDX + 2 * IDX + 2 * ROW6),
        },
        Term {
            what: "+Eγ+r",
            bytes: c.rows * (4 * F64 + 3 * F64),
        },
    ]
}

/// The residual the driver measures after each iteration ([`crate::problem::merit`]): per
/// block its offsets, cone and step, per row `u` and `γ`, then the norms of `r`, `γ`, `u`.
fn residual(c: Counts) -> Term {
    Term {
        what: "residual",
        bytes: c.blocks * (2 * IDX + CONE + F64) + c.rows * (2 * F64 + 3 * F64),
    }
}

/// Projected Gauss–Seidel ([`super::GaussSeidel`]) on a factored system: the sweep (per
/// block its cone, offsets, body list and step; per row the rows of `J` and `w` as in the
/// product, `r`, compliance and `γ`; the scatter of `M⁻¹ Jᵀ Δγ` into `w`), then the product
/// of the new velocity, the residual and the copy of the best iterate. `None` for an
/// assembled or global system.
fn gauss_seidel(sys: &System) -> Option<Traffic> {
    let c = Counts::of(sys)?;
    let mut terms = vec![Term {
        what: "sweep",
        bytes: c.blocks * (CONE + 2 * IDX + 2 * VEC + F64)
            + c.rows * (2 * IDX + VEC + 4 * F64)
            + c.jac_rows * (2 * IDX + 2 * IDX + 2 * ROW6 + ROW6 + 2 * 6 * F64),
    }];
    terms.extend(product(c));
    terms.push(residual(c));
    terms.push(Term {
        what: "best copy",
        bytes: c.rows * 2 * F64,
    });
    Some(Traffic {
        encoding: None,
        terms,
    })
}

/// The CPU solvers that iterate on the CPU kernel (the `kernel` module) on a factored
/// problem, in the precision of their settings.
pub const KERNEL_SOLVERS: &[&str] = &["jacobi", "pgs-colored"];

/// The model of the CPU solver `solver` on `sys` under `settings`: `jacobi` and
/// `pgs-colored` on the CPU kernel (the `kernel` module) in the settings' precision and
/// residual frequency, `pgs` on the operator; `None` for another solver or a system that is
/// not factored.
pub fn of(solver: &str, sys: &System, settings: &Settings) -> Option<Traffic> {
    match solver {
        "jacobi" => {
            let all: Vec<usize> = (0..sys.blocks()).collect();
            kernel::traffic(sys, Sweep::Jacobi, &[&all], settings)
        }
        "pgs-colored" => {
            let tiling = Tiling::of(sys, sys.factored()?);
            let colours: Vec<&[usize]> = tiling.colouring().colours().collect();
            kernel::traffic(sys, Sweep::Colored, &colours, settings)
        }
        "pgs" => gauss_seidel(sys),
        _ => None,
    }
}
