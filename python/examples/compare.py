"""Solve one problem with every registered solver (and Clarabel when installed) and plot
residual vs time (when matplotlib is installed).

    python python/examples/compare.py                       # a random 200-contact problem
    python python/examples/compare.py --contacts 1000 --plot compare.png
    python python/examples/compare.py --file tests/data/siconos/fc3d/Capsules-i100-889.dat

The random problem is built from numpy arrays (`W = J M⁻¹ Jᵀ`, `q`, `μ`), so that Clarabel
solves the very same QP over second-order cones; a problem file is solved by signorini's
solvers only. GPU solvers run when `signorini.adapters()` finds an adapter.
"""

import argparse
import sys
import time
from pathlib import Path

import numpy as np

import signorini

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
from random_contacts import contact_problem  # noqa: E402  (the tests' random problem)


def clarabel_solve(W, q, mu, tol):
    """The CCP problem `min ½γᵀWγ + qᵀγ, (μ γn, γt) ∈ SOC` per contact with Clarabel, or None
    when it is not installed. Returns (γ, seconds)."""
    try:
        import clarabel
    except ImportError:
        print("note: clarabel is not installed (pip install clarabel): its row is left out")
        return None
    import scipy.sparse as sps

    n = len(q)
    # Clarabel: A x + s = b, s ∈ K. s_k = (μ_k γn, γt1, γt2) ∈ SOC(3), i.e. A = -diag(μ, 1, 1).
    scale = np.ones(n)
    scale[0::3] = mu
    A = sps.diags(-scale, format="csc")
    settings = clarabel.DefaultSettings()
    settings.verbose = False
    settings.tol_gap_abs = settings.tol_gap_rel = settings.tol_feas = tol
    cones = [clarabel.SecondOrderConeT(3)] * (n // 3)
    start = time.perf_counter()
    solver = clarabel.DefaultSolver(sps.triu(sps.csc_matrix(W), format="csc"), q, A,
                                    np.zeros(n), cones, settings)
    solution = solver.solve()
    return np.array(solution.x), time.perf_counter() - start


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--contacts", type=int, default=200)
    ap.add_argument("--file", type=Path, help="a problem file instead of the random problem")
    ap.add_argument("--tol", type=float, default=1e-8)
    ap.add_argument("--max-iter", type=int, default=2000)
    ap.add_argument("--plot", type=Path, default=Path("compare.png"))
    args = ap.parse_args()

    arrays = None
    if args.file:
        problem = signorini.read(args.file)
    else:
        arrays, _ = contact_problem(args.contacts, seed=2)
        problem = signorini.Problem.assembled(*arrays, name=f"random, {args.contacts} contacts")
    gpu = bool(signorini.adapters())
    names = [s["name"] for s in signorini.solvers() if gpu or s["device"] == "cpu"]
    if not gpu:
        print("note: no GPU adapter: the GPU solvers are left out")
    reports = signorini.check(problem, names, tol=args.tol, max_iter=args.max_iter)

    print(f"{problem!r}, tol {args.tol:g}")
    print(f"{'solver':<16} {'status':<15} {'iter':>6} {'time (s)':>10} {'natural map':>12} {'objective':>14}")
    for r in reports:
        m = r.merit
        print(f"{r.solver:<16} {r.status:<15} {r.iterations:>6} {r.time_s:>10.4f} "
              f"{m['natural_map_inf']:>12.3e} {m['objective']:>14.8g}")
    if arrays is not None:
        solved = clarabel_solve(*arrays, tol=args.tol)
        if solved is not None:
            gamma, seconds = solved
            # The merit set of Clarabel's answer: signorini's, for a warm start and no iteration.
            m = signorini.solve(problem, warm=gamma, max_iter=0).merit
            print(f"{'clarabel':<16} {'':<15} {'':>6} {seconds:>10.4f} "
                  f"{m['natural_map_inf']:>12.3e} {m['objective']:>14.8g}")

    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("note: matplotlib is not installed (pip install matplotlib): no plot")
        return
    fig, ax = plt.subplots(figsize=(8, 5))
    for r in reports:
        t = r.trace
        ax.loglog(np.maximum(t["time_s"], 1e-6), t["residual"], label=r.solver)
    ax.set_xlabel("time (s)")
    ax.set_ylabel("relative residual")
    ax.set_title(problem.name or "problem")
    ax.legend()
    fig.savefig(args.plot, dpi=120)
    print(f"plot: {args.plot}")


if __name__ == "__main__":
    main()
