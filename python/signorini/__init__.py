"""signorini: cone complementarity solvers for non-smooth multibody dynamics, from Python.

Solve a problem read from a file or built from numpy / scipy.sparse arrays with any
registered solver (CPU, and GPU through wgpu), compare solvers side by side, and step the
simulator's scenes, getting numpy arrays back. See ``help(signorini.solve)`` and the type
stubs (``signorini/_native.pyi``) for every call.
"""

from ._native import (
    Problem,
    Report,
    Simulation,
    FEATURES,
    __version__,
    adapters,
    check,
    read,
    solve,
    solvers,
)

__all__ = [
    "Problem",
    "Report",
    "Simulation",
    "FEATURES",
    "__version__",
    "adapters",
    "check",
    "read",
    "solve",
    "solvers",
]
