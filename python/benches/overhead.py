"""The overhead of the binding on a 1000-contact solve (issue 17): numpy in, report out.

    python python/benches/overhead.py [--contacts 1000] [--repeat 7] [--solver pgs]

Times, per repeat: building the `Problem` from a `scipy.sparse` CSR `W` and numpy `q`, `mu`
(conversion and validation), and the `solve` call (preparation of the system, the solve, the
merit set, `u`, the report's arrays), and a call with `max_iter=0` (the fixed cost of a call).
The solver's own time is `report.time_s`; everything else is the overhead, which bounds the
binding's from above (it also holds the library's preparation and merit evaluation, which
the CLI pays too). Medians are printed.
"""

import argparse
import statistics
import sys
import time
from pathlib import Path

import scipy.sparse as sps

import signorini

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
from random_contacts import contact_problem  # noqa: E402  (the tests' random problem)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--contacts", type=int, default=1000)
    ap.add_argument("--repeat", type=int, default=7)
    ap.add_argument("--solver", default="pgs")
    args = ap.parse_args()
    (W, q, mu), _ = contact_problem(args.contacts, seed=11)
    W = sps.csr_matrix(W)
    build, call, solver, fixed = [], [], [], []
    for _ in range(args.repeat):
        t0 = time.perf_counter()
        p = signorini.Problem.assembled(W, q, mu)
        t1 = time.perf_counter()
        r = signorini.solve(p, args.solver)
        t2 = time.perf_counter()
        build.append(t1 - t0)
        call.append(t2 - t1)
        solver.append(r.time_s)
        t3 = time.perf_counter()
        signorini.solve(p, args.solver, max_iter=0)
        fixed.append(time.perf_counter() - t3)
    b, c, s, z = (statistics.median(x) for x in (build, call, solver, fixed))
    print(f"problem: {args.contacts} contacts, {p.rows} rows, nnz(W) = {W.nnz}; "
          f"{args.solver}: {r.status} after {r.iterations} iterations")
    print(f"Problem.assembled (numpy/scipy in): {b * 1e3:.2f} ms")
    print(f"solve call: {c * 1e3:.2f} ms, of which the solver (report.time_s): {s * 1e3:.2f} ms")
    print(f"overhead: {(b + c - s) * 1e3:.2f} ms = {100 * (b + c - s) / s:.2f} % of the solve")
    print(f"a call without iterations (max_iter=0: preparation, merit set, report): {z * 1e3:.2f} ms")


if __name__ == "__main__":
    main()
