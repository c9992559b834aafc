//! `solve` and `check` (the interpreter released while the solvers run), their `Report`,
//! and the lists of solvers and GPU adapters.

use numpy::PyArray1;
use pyo3::exceptions::PyTypeError;
use pyo3::prelude::*;
use pyo3::types::PyDict;
use signorini::app::check::Check;
use signorini::limits::Limits;
use signorini::problem::System;
use signorini::registry;
use signorini::solver::{self as sv, Settings};

use crate::convert::{self, error, invalid};
use crate::problem::Problem;

/// What a solve returns: `solver`, `status`, `iterations`, `time_s`, the arrays `gamma`
/// and `u`, the `merit` set (the CLI's JSON keys), the `residual` and the `trace`.
#[pyclass(frozen, get_all, module = "signorini")]
pub struct Report {
    /// The solver's registry name.
    solver: String,
    /// How it ended: `converged`, `max_iterations`, `stalled`, `numerical_error`,
    /// `no_solution`, `infeasible`.
    status: String,
    /// Iterations performed.
    iterations: usize,
    /// Wall time of the solve, seconds (preparation and merit evaluation excluded).
    time_s: f64,
    /// The impulses `γ`.
    gamma: Py<PyArray1<f64>>,
    /// The velocities `u = (N + E)γ + r`.
    u: Py<PyArray1<f64>>,
    /// The merit set of `γ`, with the keys of the CLI's JSON.
    merit: Py<PyAny>,
    /// The residual of `γ` as the solver measured it (`inf`, `two`, `relative`, `velocity`).
    residual: Py<PyAny>,
    /// The trace, one array per column: `iteration`, `residual`, `natural_map_inf`,
    /// `time_s`, `products`.
    trace: Py<PyDict>,
}

impl Report {
    /// The Python report of `r`, whose velocities are `u`.
    fn new(py: Python<'_>, r: sv::Report, u: Vec<f64>) -> PyResult<Self> {
        let trace = PyDict::new(py);
        let column = |f: fn(&sv::TraceEntry) -> f64| r.trace.iter().map(f).collect::<Vec<_>>();
        let count = |f: fn(&sv::TraceEntry) -> usize| {
            r.trace.iter().map(|t| f(t) as i64).collect::<Vec<_>>()
        };
        trace.set_item("iteration", PyArray1::from_vec(py, count(|t| t.iteration)))?;
        trace.set_item("residual", PyArray1::from_vec(py, column(|t| t.residual)))?;
        trace.set_item(
            "natural_map_inf",
            PyArray1::from_vec(py, column(|t| t.natural_map_inf)),
        )?;
        trace.set_item("time_s", PyArray1::from_vec(py, column(|t| t.time_s)))?;
        trace.set_item("products", PyArray1::from_vec(py, count(|t| t.products)))?;
        Ok(Report {
            solver: r.solver,
            status: r.status.to_string(),
            iterations: r.iterations,
            time_s: r.time_s,
            merit: convert::serde(py, &r.merit)?.unbind(),
            residual: convert::serde(py, &r.residual)?.unbind(),
            gamma: PyArray1::from_vec(py, r.gamma).unbind(),
            u: PyArray1::from_vec(py, u).unbind(),
            trace: trace.unbind(),
        })
    }
}

#[pymethods]
impl Report {
    fn __repr__(&self) -> String {
        format!(
            "Report(solver={:?}, status={:?}, iterations={}, time_s={:.3e})",
            self.solver, self.status, self.iterations, self.time_s
        )
    }
}

/// The settings of a solve and the memory limit of its preparation, from the arguments of
/// `solve`/`check`; `options` may hold `criterion`, `omega`, `stall_iterations`,
/// `precision`, `check_every` and `max_memory`.
fn settings(
    friction: &str,
    tol: f64,
    max_iter: usize,
    warm: Option<&Bound<'_, PyAny>>,
    options: Option<&Bound<'_, PyDict>>,
) -> PyResult<(Settings, Limits)> {
    let mut settings = Settings {
        friction: friction.parse().map_err(|e| invalid("friction", e))?,
        tol,
        max_iter,
        warm_start: warm.map(|w| convert::vector(w, "warm")).transpose()?,
        ..Settings::default()
    };
    let mut limits = Limits::default();
    for (key, value) in options.into_iter().flatten() {
        let key: String = key.extract()?;
        match key.as_str() {
            "criterion" => {
                let c: String = value.extract()?;
                settings.criterion = c.parse().map_err(|e| invalid("criterion", e))?;
            }
            "omega" => settings.omega = value.extract()?,
            "stall_iterations" => settings.stall_iterations = value.extract()?,
            "precision" => {
                let p: String = value.extract()?;
                settings.precision = p.parse().map_err(|e| invalid("precision", e))?;
            }
            "check_every" => settings.check_every = value.extract()?,
            "max_memory" => limits.max_memory = value.extract()?,
            _ => {
                return Err(PyTypeError::new_err(format!(
                    "unknown option `{key}`; valid: criterion, omega, stall_iterations, \
                     precision, check_every, max_memory"
                )));
            }
        }
    }
    Ok((settings, limits))
}

/// Prepares `problem` within `limits` and runs `run` on it with the interpreter released;
/// returns the reports with their velocities, as Python reports.
fn solve_released(
    py: Python<'_>,
    problem: &Bound<'_, Problem>,
    settings: &Settings,
    limits: &Limits,
    run: impl FnOnce(&System) -> signorini::Result<Vec<sv::Report>> + Send,
) -> PyResult<Vec<Report>> {
    let problem = &problem.get().inner;
    let solved = py
        .detach(|| {
            let sys = System::with_limits(problem, limits)?;
            settings.validate(sys.rows())?;
            let reports = run(&sys)?;
            Ok(reports
                .into_iter()
                .map(|r| {
                    let u = sys.velocity(&r.gamma);
                    (r, u)
                })
                .collect::<Vec<_>>())
        })
        .map_err(error)?;
    solved
        .into_iter()
        .map(|(r, u)| Report::new(py, r, u))
        .collect()
}

/// Solves `problem` with the registered solver `solver` (see `solvers()`), the interpreter
/// released meanwhile. `friction`: ccp or coulomb; `warm`: initial impulses `(rows,)`;
/// `options`: `criterion` (relative, velocity), `omega` (relaxation in (0, 2)),
/// `stall_iterations`, `max_memory` (bytes). Non-convergence is a `status`; bad settings
/// are a ValueError, a GPU solver without a usable adapter a RuntimeError.
#[pyfunction]
#[pyo3(signature = (problem, solver="pgs", friction="ccp", tol=1e-6, max_iter=1000, warm=None, **options))]
#[allow(clippy::too_many_arguments)]
pub fn solve(
    py: Python<'_>,
    problem: &Bound<'_, Problem>,
    solver: &str,
    friction: &str,
    tol: f64,
    max_iter: usize,
    warm: Option<&Bound<'_, PyAny>>,
    options: Option<&Bound<'_, PyDict>>,
) -> PyResult<Report> {
    let (settings, limits) = settings(friction, tol, max_iter, warm, options)?;
    let solver = registry::solver(solver).map_err(error)?;
    let mut reports = solve_released(py, problem, &settings, &limits, |sys| {
        Ok(vec![solver.solve(sys, &settings)?])
    })?;
    Ok(reports.remove(0))
}

/// Solves `problem` with each of `solvers`, side by side, under the settings of `solve`;
/// one report per solver, in order.
#[pyfunction]
#[pyo3(signature = (problem, solvers, friction="ccp", tol=1e-6, max_iter=1000, warm=None, **options))]
#[allow(clippy::too_many_arguments)]
pub fn check(
    py: Python<'_>,
    problem: &Bound<'_, Problem>,
    solvers: Vec<String>,
    friction: &str,
    tol: f64,
    max_iter: usize,
    warm: Option<&Bound<'_, PyAny>>,
    options: Option<&Bound<'_, PyDict>>,
) -> PyResult<Vec<Report>> {
    let (settings, limits) = settings(friction, tol, max_iter, warm, options)?;
    let solvers = solvers
        .iter()
        .map(|name| registry::solver(name))
        .collect::<signorini::Result<Vec<_>>>()
        .map_err(error)?;
    solve_released(py, problem, &settings, &limits, |sys| {
        Ok(Check::run(sys, &settings, &solvers)?.reports)
    })
}

/// The registered solvers, GPU variants included: `name`, `base` (the CPU solver it is a
/// variant of) and `device` of each.
#[pyfunction]
pub fn solvers(py: Python<'_>) -> PyResult<Vec<Bound<'_, PyDict>>> {
    registry::entries()
        .iter()
        .map(|e| {
            let d = PyDict::new(py);
            d.set_item("name", e.name)?;
            d.set_item("base", e.base)?;
            d.set_item("device", e.device.as_str())?;
            Ok(d)
        })
        .collect()
}

/// The GPU adapters wgpu finds (`signorini info`), each as a dict.
#[pyfunction]
pub fn adapters(py: Python<'_>) -> PyResult<Vec<Bound<'_, PyAny>>> {
    py.detach(signorini::gpu::adapters)
        .iter()
        .map(|a| convert::serde(py, a))
        .collect()
}
