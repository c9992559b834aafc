//! Validation of a [`Problem`]: every error names the field and index at fault.

use super::{Assembled, Cone, Factored, Global, Operator, Problem};
use crate::error::{Error, Result};

pub(super) fn problem(p: &Problem) -> Result<()> {
    for (k, cone) in p.cones.iter().enumerate() {
        match *cone {
            Cone::Bilateral { dim } if !(1..=3).contains(&dim) => {
                return Err(Error::invalid(
                    format!("cones[{k}].dim"),
                    format!("is {dim}; a bilateral block has 1 to 3 rows"),
                ));
            }
            Cone::Coulomb { mu } if !mu.is_finite() || mu < 0.0 => {
                return Err(Error::invalid(
                    format!("cones[{k}].mu"),
                    format!("is {mu}; the friction coefficient must be finite and ≥ 0"),
                ));
            }
            _ => {}
        }
    }
    let m = p.rows();
    if !p.compliance.is_empty() {
        same_len(|| "compliance".into(), p.compliance.len(), m, "rows")?;
        for (i, &c) in p.compliance.iter().enumerate() {
            if !c.is_finite() || c < 0.0 {
                return Err(Error::invalid(
                    format!("compliance[{i}]"),
                    format!("is {c}; a compliance must be finite and ≥ 0"),
                ));
            }
        }
    }
    match &p.operator {
        Operator::Factored(f) => factored(f, &p.cones, m),
        Operator::Assembled(a) => assembled(a, m),
        Operator::Global(g) => global(g, m),
    }
}

/// `field` names the checked value; a closure, so that a valid problem (the simulator
/// validates one per step) formats no names.
fn same_len(field: impl FnOnce() -> String, got: usize, want: usize, what: &str) -> Result<()> {
    if got == want {
        Ok(())
    } else {
        Err(Error::invalid(
            field(),
            format!("has {got} entries, expected {want} (the number of {what})"),
        ))
    }
}

/// Every entry of `values` is finite (`field` as in [`same_len`]).
fn finite(field: impl FnOnce() -> String, values: &[f64]) -> Result<()> {
    match values.iter().position(|v| !v.is_finite()) {
        None => Ok(()),
        Some(i) => Err(Error::invalid(
            format!("{}[{i}]", field()),
            format!("is {}; values must be finite", values[i]),
        )),
    }
}

fn factored(f: &Factored, cones: &[Cone], m: usize) -> Result<()> {
    let nb = f.bodies.len();
    for (i, body) in f.bodies.iter().enumerate() {
        if !(body.mass.is_finite() && body.mass > 0.0) {
            return Err(Error::invalid(
                format!("bodies[{i}].mass"),
                format!(
                    "is {}; a dynamic body needs a finite mass > 0 (leave fixed bodies out)",
                    body.mass
                ),
            ));
        }
        if let Some(a) = body
            .inertia
            .iter()
            .position(|j| !(j.is_finite() && *j > 0.0))
        {
            return Err(Error::invalid(
                format!("bodies[{i}].inertia[{a}]"),
                format!(
                    "is {}; moments of inertia must be finite and > 0",
                    body.inertia[a]
                ),
            ));
        }
        finite(|| format!("bodies[{i}].v_free"), &body.v_free)?;
    }
    same_len(
        || "jacobians".into(),
        f.jacobians.len(),
        cones.len(),
        "blocks in cones",
    )?;
    for (k, (jac, cone)) in f.jacobians.iter().zip(cones).enumerate() {
        if !(1..=2).contains(&jac.bodies.len()) {
            return Err(Error::invalid(
                format!("jacobians[{k}].bodies"),
                format!("has {} bodies; a block acts on 1 or 2", jac.bodies.len()),
            ));
        }
        for (s, &b) in jac.bodies.iter().enumerate() {
            if b >= nb {
                return Err(Error::invalid(
                    format!("jacobians[{k}].bodies[{s}]"),
                    format!("body {b} out of range (there are {nb} dynamic bodies)"),
                ));
            }
        }
        if jac.bodies.len() == 2 && jac.bodies[0] == jac.bodies[1] {
            return Err(Error::invalid(
                format!("jacobians[{k}].bodies"),
                "the two bodies of a block must differ",
            ));
        }
        same_len(
            || format!("jacobians[{k}].rows"),
            jac.rows.len(),
            cone.dim() * jac.bodies.len(),
            "block rows times bodies",
        )?;
        for (i, row) in jac.rows.iter().enumerate() {
            finite(|| format!("jacobians[{k}].rows[{i}]"), row)?;
        }
    }
    same_len(|| "b".into(), f.b.len(), m, "rows")?;
    finite(|| "b".into(), &f.b)
}

fn assembled(a: &Assembled, m: usize) -> Result<()> {
    if a.n.nrows != a.n.ncols {
        return Err(Error::invalid(
            "n",
            format!("is {}×{}; N must be square", a.n.nrows, a.n.ncols),
        ));
    }
    if a.n.nrows != m {
        return Err(Error::invalid(
            "n",
            format!("is {0}×{0} but the cones have {m} rows", a.n.nrows),
        ));
    }
    a.n.validate("n")?;
    same_len(|| "r".into(), a.r.len(), m, "rows")?;
    finite(|| "r".into(), &a.r)
}

fn global(g: &Global, m: usize) -> Result<()> {
    let ndof = g.h.nrows;
    if g.h.ncols != ndof {
        return Err(Error::invalid(
            "h",
            format!("is {}×{}; H must be square", g.h.nrows, g.h.ncols),
        ));
    }
    g.h.validate("h")?;
    if g.j.nrows != m || g.j.ncols != ndof {
        return Err(Error::invalid(
            "j",
            format!(
                "is {}×{}, expected {m}×{ndof} (rows × degrees of freedom)",
                g.j.nrows, g.j.ncols
            ),
        ));
    }
    g.j.validate("j")?;
    same_len(|| "f".into(), g.f.len(), ndof, "degrees of freedom")?;
    finite(|| "f".into(), &g.f)?;
    same_len(|| "b".into(), g.b.len(), m, "rows")?;
    finite(|| "b".into(), &g.b)
}
