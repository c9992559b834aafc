//! The native module `signorini._native` of the Python package `signorini` (issue 17): a
//! thin layer over the library's public API.
//!
//! - [`problem`]: `Problem` (files, numpy and `scipy.sparse` arrays) and `read`;
//! - [`solve`]: `solve`, `check`, `Report`, `solvers`, `adapters`;
//! - [`simulation`]: `Simulation`, a scene stepped from Python;
//! - [`convert`]: numpy arrays in (checked, each error naming its argument) and out, serde
//!   values as Python objects, library errors as Python exceptions.
//!
//! Every solve and every step runs with the interpreter released (`Python::detach`), so
//! other Python threads run meanwhile.

mod convert;
mod problem;
mod simulation;
mod solve;

use pyo3::prelude::*;

/// The module: its functions and classes (documented in `signorini/_native.pyi`).
#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<problem::Problem>()?;
    m.add_class::<solve::Report>()?;
    m.add_class::<simulation::Simulation>()?;
    m.add_function(wrap_pyfunction!(problem::read, m)?)?;
    m.add_function(wrap_pyfunction!(solve::solve, m)?)?;
    m.add_function(wrap_pyfunction!(solve::check, m)?)?;
    m.add_function(wrap_pyfunction!(solve::solvers, m)?)?;
    m.add_function(wrap_pyfunction!(solve::adapters, m)?)?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    let features: &[&str] = if cfg!(feature = "fclib") {
        &["fclib"]
    } else {
        &[]
    };
    m.add("FEATURES", features.to_vec())?;
    Ok(())
}
