//! `Simulation`: a scene (a TOML file or a dict of its tables) stepped from Python, the
//! interpreter released while it steps; its state as numpy arrays.

use std::path::PathBuf;
use std::sync::{Mutex, MutexGuard};

use pyo3::exceptions::PyRuntimeError;
use pyo3::prelude::*;
use pyo3::types::PyDict;
use signorini::registry;
use signorini::sim::StepStats;
use signorini::sim::scene::{self, Scene};
use signorini::solver::Runner;

use crate::convert::{self, error, invalid};
use crate::problem::Problem;

/// What a simulation holds: the scene, the solver's session, the last step's statistics.
struct State {
    scene: Scene,
    runner: Runner,
    last: Option<StepStats>,
}

/// A scene being simulated: `Simulation(scene, set=None, solver=None)` with `scene` a scene
/// file (TOML) or a dict of its tables; `step(n)`, the bodies' `positions`, `velocities`,
/// `angular_velocities`, `orientations`, the last step's `contacts` and `stats`, and the
/// next step's `problem()`.
#[pyclass(frozen, module = "signorini")]
pub struct Simulation {
    /// Locked by a step (run without the interpreter) and by the accessors.
    state: Mutex<State>,
}

impl Simulation {
    fn lock(&self) -> PyResult<MutexGuard<'_, State>> {
        self.state
            .lock()
            .map_err(|_| PyRuntimeError::new_err("a step of this simulation panicked"))
    }

    /// One row of 3 (or 4) numbers per body, `f` of each.
    fn per_body<'py, const N: usize>(
        &self,
        py: Python<'py>,
        f: impl Fn(&signorini::sim::RigidBody) -> [f64; N],
    ) -> PyResult<Bound<'py, numpy::PyArray2<f64>>> {
        let data = self.lock()?.scene.world.bodies.iter().flat_map(f).collect();
        convert::array2(py, data, N)
    }
}

/// `json.dumps(obj)`.
fn json(obj: &Bound<'_, PyAny>) -> PyResult<String> {
    obj.py()
        .import("json")?
        .call_method1("dumps", (obj,))?
        .extract()
}

#[pymethods]
impl Simulation {
    /// Loads `scene` (a path, or a dict of the scene file's tables), applies the `set`
    /// overrides (`{"lattice.0.count": 2000}`) and prepares `solver` (default: the scene's).
    #[new]
    #[pyo3(signature = (scene, set=None, solver=None))]
    fn new(
        py: Python<'_>,
        scene: &Bound<'_, PyAny>,
        set: Option<&Bound<'_, PyDict>>,
        solver: Option<&str>,
    ) -> PyResult<Self> {
        let mut sets = Vec::new();
        for (key, value) in set.into_iter().flatten() {
            // A string is taken as the CLI takes `--set`'s; other values as their JSON, which
            // TOML reads alike (numbers, booleans, lists).
            let value = match value.extract::<String>() {
                Ok(s) => s,
                Err(_) => json(&value)?,
            };
            sets.push((key.extract::<String>()?, value));
        }
        let loaded = if let Ok(tables) = scene.cast::<PyDict>() {
            let table: toml::Table =
                serde_json::from_str(&json(tables)?).map_err(|e| invalid("scene", e))?;
            let text = toml::to_string(&table).map_err(|e| invalid("scene", e))?;
            py.detach(|| scene::parse(&text, "<dict>", "scene", &sets))
        } else {
            let path: PathBuf = scene.extract()?;
            py.detach(|| scene::load(&path, &sets))
        };
        let scene = loaded.map_err(error)?;
        for warning in &scene.warnings {
            convert::warn(py, warning)?;
        }
        let solver = registry::solver(solver.unwrap_or(&scene.run.solver)).map_err(error)?;
        Ok(Simulation {
            state: Mutex::new(State {
                scene,
                runner: Runner::new(solver),
                last: None,
            }),
        })
    }

    /// Advances `n` steps; returns the statistics of the last one (as `stats`).
    #[pyo3(signature = (n=1))]
    fn step<'py>(&self, py: Python<'py>, n: usize) -> PyResult<Bound<'py, PyAny>> {
        let last = py
            .detach(|| {
                let mut guard = self.state.lock().ok()?;
                let state = &mut *guard;
                for _ in 0..n {
                    match state.scene.world.step(&mut state.runner) {
                        Ok(stats) => state.last = Some(stats),
                        Err(e) => return Some(Err(e)),
                    }
                }
                Some(Ok(state.last))
            })
            .ok_or_else(|| PyRuntimeError::new_err("a step of this simulation panicked"))?
            .map_err(error)?;
        convert::serde(py, &last)
    }

    /// The statistics of the last step, the row of `simulate`'s `steps.csv` (None before
    /// the first step).
    #[getter]
    fn stats<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let last = self.lock()?.last;
        convert::serde(py, &last)
    }

    /// The problem the next step will solve (runs collision detection).
    fn problem(&self, py: Python<'_>) -> PyResult<Problem> {
        let mut state = self.lock()?;
        let world = &mut state.scene.world;
        Ok(Problem {
            inner: py.detach(|| world.problem().problem),
        })
    }

    /// Positions of the bodies' centers of mass, `(bodies, 3)`, world frame.
    #[getter]
    fn positions<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, numpy::PyArray2<f64>>> {
        self.per_body(py, |b| b.pose.position.into())
    }

    /// Linear velocities, `(bodies, 3)`, world frame.
    #[getter]
    fn velocities<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, numpy::PyArray2<f64>>> {
        self.per_body(py, |b| b.velocity.into())
    }

    /// Angular velocities, `(bodies, 3)`, body frame.
    #[getter]
    fn angular_velocities<'py>(
        &self,
        py: Python<'py>,
    ) -> PyResult<Bound<'py, numpy::PyArray2<f64>>> {
        self.per_body(py, |b| b.angular_velocity.into())
    }

    /// Orientations as unit quaternions `(x, y, z, w)` (scalar last, as
    /// `scipy.spatial.transform.Rotation.from_quat`), `(bodies, 4)`.
    #[getter]
    fn orientations<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, numpy::PyArray2<f64>>> {
        self.per_body(py, |b| b.pose.orientation.coords.into())
    }

    /// The contacts of the last step: `pairs` `(k, 2)`, `points` (midway between the two
    /// surface points) and `normals` (from the first body to the second) `(k, 3)`,
    /// `distances` `(k,)` (negative: penetration) and `impulses` `(k, 3)` (normal, then
    /// tangential).
    #[getter]
    fn contacts<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let state = self.lock()?;
        let (mut pairs, mut distances) = (Vec::<i64>::new(), Vec::<f64>::new());
        let (mut points, mut normals, mut impulses) = (Vec::new(), Vec::new(), Vec::new());
        for (c, impulse) in state.scene.world.contacts() {
            pairs.extend([c.body_a as i64, c.body_b as i64]);
            points.extend(<[f64; 3]>::from((c.point_a + c.point_b) / 2.0));
            normals.extend(<[f64; 3]>::from(c.normal));
            distances.push(c.distance);
            impulses.extend(impulse);
        }
        let d = PyDict::new(py);
        d.set_item("pairs", convert::array2(py, pairs, 2)?)?;
        d.set_item("points", convert::array2(py, points, 3)?)?;
        d.set_item("normals", convert::array2(py, normals, 3)?)?;
        d.set_item("distances", numpy::PyArray1::from_vec(py, distances))?;
        d.set_item("impulses", convert::array2(py, impulses, 3)?)?;
        Ok(d)
    }

    /// Simulated time, s.
    #[getter]
    fn time(&self) -> PyResult<f64> {
        Ok(self.lock()?.scene.world.time)
    }

    /// Steps taken.
    #[getter]
    fn steps(&self) -> PyResult<usize> {
        Ok(self.lock()?.scene.world.steps)
    }

    /// The scene's name.
    #[getter]
    fn name(&self) -> PyResult<String> {
        Ok(self.lock()?.scene.name.clone())
    }

    /// The solver's registry name.
    #[getter]
    fn solver(&self) -> PyResult<&'static str> {
        Ok(self.lock()?.runner.name())
    }

    fn __repr__(&self) -> PyResult<String> {
        let state = self.lock()?;
        Ok(format!(
            "Simulation({:?}, {} bodies, step {}, solver {})",
            state.scene.name,
            state.scene.world.bodies.len(),
            state.scene.world.steps,
            state.runner.name()
        ))
    }
}
