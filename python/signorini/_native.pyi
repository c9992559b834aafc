"""Type stubs of the native module ``signorini._native`` (re-exported by ``signorini``)."""

from os import PathLike
from typing import Any, Literal, Mapping, Optional, Sequence, TypedDict, Union

from typing_extensions import Unpack

import numpy as np
import numpy.typing as npt

__version__: str
#: Optional features compiled in: "fclib" (FCLIB HDF5 files).
FEATURES: list[str]

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]
#: A dense 2-D float64 ndarray, or any ``scipy.sparse`` matrix or array.
MatrixLike = Any
Path = Union[str, "PathLike[str]"]
Status = Literal[
    "converged", "max_iterations", "stalled", "numerical_error", "no_solution", "infeasible"
]

class Merit(TypedDict):
    """The merit set of an impulse vector (the ``merit`` object of ``signorini solve --json``)."""

    natural_map_inf: float
    natural_map_2: float
    complementarity: float
    primal_violation: float
    dual_violation: float
    objective: float
    siconos_error: Optional[float]
    fclib_merit: Optional[float]

class Trace(TypedDict):
    """The residual and time per iteration of a solve, one array per column."""

    iteration: IntArray
    residual: FloatArray
    natural_map_inf: FloatArray
    time_s: FloatArray
    products: IntArray

class StepStats(TypedDict):
    """One row of ``simulate``'s ``steps.csv``."""

    step: int
    time: float
    bodies: int
    contacts: int
    bilateral_rows: int
    iterations: int
    residual: float
    max_penetration: float
    kinetic_energy: float
    collision_s: float
    assembly_s: float
    solve_s: float
    status: Status

class Contacts(TypedDict):
    """The contacts of the last step of a simulation."""

    pairs: IntArray
    points: FloatArray
    normals: FloatArray
    distances: FloatArray
    impulses: FloatArray

class Problem:
    """A cone complementarity problem ``K ∋ γ ⊥ u = Nγ + r ∈ K*``.

    ``K`` is a product of cones, in this order when built from arrays: ``bilateral`` one-row
    bilateral blocks (``ℝ``), ``unilateral`` frictionless rows (``ℝ₊``), then one Coulomb cone
    ``{‖γt‖ ≤ μ γn}`` of 3 rows (normal first) per entry of ``mu``. Arrays must be numpy
    ndarrays of float64 (int64 for indices), C-contiguous and finite: anything else raises a
    ``ValueError`` naming the argument.
    """

    @staticmethod
    def assembled(
        W: MatrixLike,
        q: FloatArray,
        mu: Union[float, FloatArray],
        *,
        bilateral: int = 0,
        unilateral: int = 0,
        compliance: Optional[FloatArray] = None,
        name: Optional[str] = None,
    ) -> Problem:
        """An explicit Delassus matrix ``W`` (``N``) and vector ``q`` (``r``), as Siconos' FC3D.

        ``W``: dense ndarray or any scipy.sparse matrix (``rows × rows``); ``q``: ``(rows,)``;
        ``mu``: one friction coefficient per contact (``≥ 0``), or one number for every
        contact; ``compliance``: the diagonal ``E`` (``(rows,)``, ``≥ 0``) added to ``W``.
        """

    @staticmethod
    def factored(
        mass: FloatArray,
        inertia: FloatArray,
        v_free: FloatArray,
        bodies: IntArray,
        J: FloatArray,
        mu: Union[float, FloatArray],
        *,
        b: Optional[FloatArray] = None,
        bilateral: int = 0,
        unilateral: int = 0,
        compliance: Optional[FloatArray] = None,
        name: Optional[str] = None,
    ) -> Problem:
        """The form the simulator builds: ``N = J M⁻¹ Jᵀ``, ``r = J v_free + b``.

        ``mass``: ``(n,)``; ``inertia``: principal moments ``(n, 3)``; ``v_free``: free
        velocities ``(n, 6)`` (linear, world frame, then angular, body frame); ``bodies``:
        ``(blocks, 2)`` int64, the one or two bodies of each block (``-1`` second: none);
        ``J``: ``(rows, 2, 6)``, each row's Jacobian for its block's first and second body;
        ``b``: the bias ``(rows,)`` (default zero).
        """

    @staticmethod
    def global_(
        M: MatrixLike,
        H: MatrixLike,
        f: FloatArray,
        w: FloatArray,
        mu: Union[float, FloatArray],
        *,
        bilateral: int = 0,
        unilateral: int = 0,
        name: Optional[str] = None,
    ) -> Problem:
        """A global problem (Siconos' GFC3D): ``M v = f + H γ``, ``u = Hᵀ v + w``.

        ``M``: ``ndof × ndof`` symmetric positive definite; ``H``: ``ndof × rows``; ``f``:
        ``(ndof,)``; ``w``: ``(rows,)``.
        """

    def write(self, path: Path, format: Optional[str] = None) -> None:
        """Writes the problem to ``path``: ``.json``, ``.bin`` (or ``format``: json, bin, fclib)."""

    @property
    def name(self) -> str:
        """The problem's name."""

    @property
    def rows(self) -> int:
        """Number of rows ``Σ d_k``."""

    @property
    def blocks(self) -> int:
        """Number of blocks (cones)."""

    @property
    def form(self) -> Literal["factored", "assembled", "global"]:
        """The form of the operator."""

    @property
    def problem_class(self) -> str:
        """``native``, ``lcp``, ``mlcp``, ``fc3d``, ``gfc3d`` or ``generic_mechanical``."""

class Report:
    """What a solve returns."""

    @property
    def solver(self) -> str:
        """The solver's registry name."""

    @property
    def status(self) -> Status:
        """How the solve ended (non-convergence is a status, never an exception)."""

    @property
    def iterations(self) -> int:
        """Iterations performed."""

    @property
    def time_s(self) -> float:
        """Wall time of the solve, seconds (preparation and merit evaluation excluded)."""

    @property
    def gamma(self) -> FloatArray:
        """The impulses ``γ``: the last iterate if converged, else the best one."""

    @property
    def u(self) -> FloatArray:
        """The velocities ``u = (N + E)γ + r``."""

    @property
    def merit(self) -> Merit:
        """The merit set of ``γ``, with the keys of the CLI's JSON (``None`` for non-finite)."""

    @property
    def residual(self) -> dict[str, float]:
        """The residual of ``γ`` as the solver measured it: ``inf``, ``two``, ``relative``, ``velocity``."""

    @property
    def trace(self) -> Trace:
        """Residual and time per iteration."""

class SolveOptions(TypedDict, total=False):
    """The keyword options of ``solve`` and ``check``."""

    #: The residual ``tol`` applies to (default ``relative``).
    criterion: Literal["relative", "velocity"]
    #: Relaxation in (0, 2) (default: the solver's own).
    omega: float
    #: Stop as ``stalled`` after this many iterations without a better residual (10000).
    stall_iterations: int
    #: Floating-point type of the CPU kernels' iterations (jacobi, pgs-colored on a factored
    #: problem; default ``f64``); the reported residual is ``f64`` either way.
    precision: Literal["f32", "f64"]
    #: The CPU kernels measure the residual of every N-th iterate and of the last (default 1);
    #: the other solvers, of every iterate.
    check_every: int
    #: Bytes the prepared problem may take (default half the machine's memory).
    max_memory: int

def read(path: Path, format: Optional[str] = None) -> Problem:
    """Reads a problem file: ``.json``, ``.bin``, Siconos ``.dat``, FCLIB ``.hdf5``.

    ``format`` overrides the detection from the name: json, bin, fclib, siconos-lcp,
    siconos-mlcp, siconos-fc3d, siconos-gfc3d, siconos-gmp. FCLIB files need the library's
    ``fclib`` feature. A note on the Siconos kind taken comes as a ``UserWarning``. Raises
    ``OSError`` for a file that cannot be read, ``ValueError`` for a bad one.
    """

def solve(
    problem: Problem,
    solver: str = "pgs",
    friction: Literal["ccp", "coulomb"] = "ccp",
    tol: float = 1e-6,
    max_iter: int = 1000,
    warm: Optional[FloatArray] = None,
    **options: Unpack[SolveOptions],
) -> Report:
    """Solves ``problem`` with the registered solver ``solver`` (see ``solvers()``).

    The interpreter is released while it runs. ``warm``: initial impulses ``(rows,)``
    (projected on the cones first); ``options``: see ``SolveOptions``.
    Raises ``ValueError`` for bad settings, ``RuntimeError`` for a GPU solver without a
    usable adapter.
    """

def check(
    problem: Problem,
    solvers: Sequence[str],
    friction: Literal["ccp", "coulomb"] = "ccp",
    tol: float = 1e-6,
    max_iter: int = 1000,
    warm: Optional[FloatArray] = None,
    **options: Unpack[SolveOptions],
) -> list[Report]:
    """Solves ``problem`` with each of ``solvers`` under the same settings (as ``solve``)."""

def solvers() -> list[dict[str, str]]:
    """The registered solvers, GPU variants included: ``name``, ``base``, ``device``."""

def adapters() -> list[dict[str, Any]]:
    """The GPU adapters wgpu finds: ``name``, ``backend``, ``driver``, ``device_type``,
    ``max_storage_binding_size``."""

class Simulation:
    """A scene stepped from Python.

    ``scene``: a scene file (TOML) or a dict of its tables; ``set``: overrides by dotted key,
    as ``simulate --set`` (``{"lattice.0.count": 2000}``); ``solver``: a registered solver
    (default: the scene's ``run.solver``). Warnings of the scene checks come as
    ``UserWarning``.
    """

    def __init__(
        self,
        scene: Union[Path, Mapping[str, Any]],
        set: Optional[Mapping[str, Any]] = None,
        solver: Optional[str] = None,
    ) -> None: ...
    def step(self, n: int = 1) -> StepStats:
        """Advances ``n`` steps (interpreter released); returns the last step's statistics."""

    def problem(self) -> Problem:
        """The problem the next step will solve (runs collision detection)."""

    @property
    def stats(self) -> Optional[StepStats]:
        """The last step's row of ``steps.csv`` (``None`` before the first step)."""

    @property
    def positions(self) -> FloatArray:
        """Centers of mass, ``(bodies, 3)``, world frame."""

    @property
    def velocities(self) -> FloatArray:
        """Linear velocities, ``(bodies, 3)``, world frame."""

    @property
    def angular_velocities(self) -> FloatArray:
        """Angular velocities, ``(bodies, 3)``, body frame."""

    @property
    def orientations(self) -> FloatArray:
        """Unit quaternions ``(x, y, z, w)``, ``(bodies, 4)`` (scipy's ``Rotation.from_quat`` order)."""

    @property
    def contacts(self) -> Contacts:
        """The last step's contacts: pairs, points, normals, distances, impulses."""

    @property
    def time(self) -> float:
        """Simulated time, s."""

    @property
    def steps(self) -> int:
        """Steps taken."""

    @property
    def name(self) -> str:
        """The scene's name."""

    @property
    def solver(self) -> str:
        """The solver's registry name."""
