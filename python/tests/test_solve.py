"""`solve` and `check`: agreement with the command line, every matrix storage, the factored
and global forms, bad arrays, the released interpreter and the GPU path."""

import os
import subprocess
import sys
import threading
import time

import numpy as np
import pytest
import scipy.sparse as sps

import signorini
from conftest import SICONOS, cli_json
from random_contacts import contact_problem

# Siconos problems of every kind, and solvers whose answers are deterministic.
CLI_CASES = [
    ("fc3d/FC3D_Example1.dat", "pgs"),
    ("fc3d/Rover1039.dat", "pgs"),
    ("fc3d/FrictionContact3D_1c.dat", "apgd"),
    ("fc3d/Confeti-ex13-4contact-Fc3D-SBM.dat", "jacobi"),
    ("lcp/lcp_CPS_1.dat", "pgs"),
    ("mlcp/m2n1_mlcp.dat", "pgs"),
    ("gfc3d/GFC3D_Example0.dat", "spg"),
    ("gmp/GMP0.dat", "pgs"),
    ("fc3d/FC3D_Example1.dat", "ip"),
]


@pytest.mark.parametrize("file,solver", CLI_CASES)
def test_solve_agrees_with_the_cli_json_to_the_last_digit(file, solver):
    path = SICONOS / file
    for friction in ("ccp", "coulomb"):
        args = ["--solver", solver, "--friction", friction, "--tol", "1e-9", "--max-iter", "300"]
        expected = cli_json("solve", str(path), "--json", *args)
        r = signorini.solve(signorini.read(path), solver, friction=friction, tol=1e-9, max_iter=300)
        assert r.solver == expected["solver"]
        assert r.status == expected["status"]
        assert r.iterations == expected["iterations"]
        assert r.merit == expected["merit"]  # every float equal, not close


def test_check_gives_one_report_per_solver_as_the_cli():
    path = SICONOS / "fc3d" / "FC3D_Example1.dat"
    expected = cli_json("check", str(path), "--solvers", "jacobi,pgs,apgd", "--json", "--tol", "1e-8")
    reports = signorini.check(signorini.read(path), ["jacobi", "pgs", "apgd"], tol=1e-8)
    assert [r.solver for r in reports] == ["jacobi", "pgs", "apgd"]
    for r, e in zip(reports, expected["results"]):
        assert (r.status, r.iterations, r.merit) == (e["status"], e["iterations"], e["merit"])


def test_dense_csr_csc_coo_give_the_same_answer(small):
    (W, q, mu), _ = small
    answers = []
    for matrix in [W, sps.csr_matrix(W), sps.csc_matrix(W), sps.coo_matrix(W), sps.csr_array(W)]:
        r = signorini.solve(signorini.Problem.assembled(matrix, q, mu), "pgs", tol=1e-10)
        answers.append(r)
    for r in answers[1:]:
        assert r.iterations == answers[0].iterations
        assert np.array_equal(r.gamma, answers[0].gamma)
        assert r.merit == answers[0].merit


def test_report_arrays(small):
    (W, q, mu), _ = small
    r = signorini.solve(signorini.Problem.assembled(W, q, mu, name="small"), "apgd", tol=1e-9)
    assert r.status == "converged" and r.merit["natural_map_inf"] < 1e-6
    assert r.gamma.dtype == np.float64 and r.gamma.shape == q.shape
    np.testing.assert_allclose(r.u, W @ r.gamma + q, rtol=0, atol=1e-12)
    t = r.trace
    assert len(t["iteration"]) == len(t["residual"]) == len(t["time_s"]) == r.iterations + 1
    assert t["iteration"].dtype == np.int64 and np.all(np.diff(t["time_s"]) >= 0)
    assert t["residual"][-1] <= 1e-9 < t["residual"][0]
    assert set(r.residual) == {"inf", "two", "relative", "velocity"}
    # warm start from the answer: converged at once
    again = signorini.solve(signorini.Problem.assembled(W, q, mu), "apgd", tol=1e-9, warm=r.gamma)
    assert again.iterations <= 1
    # options
    slow = signorini.solve(signorini.Problem.assembled(W, q, mu), "pgs", tol=1e-9, omega=0.5,
                           criterion="velocity", stall_iterations=5000)
    assert slow.status == "converged"


def test_factored_and_global_forms_agree_with_the_assembled_one(small):
    (W, q, mu), f = small
    exact = signorini.solve(signorini.Problem.assembled(W, q, mu), "ip", tol=1e-12)
    fact = signorini.Problem.factored(**f)
    assert (fact.form, fact.rows, fact.blocks) == ("factored", 60, 20)
    rf = signorini.solve(fact, "ip", tol=1e-12)
    np.testing.assert_allclose(rf.gamma, exact.gamma, atol=1e-7)
    # global: M v = f + H γ, u = Hᵀ v + w; assembled W = Hᵀ M⁻¹ H, q = Hᵀ M⁻¹ f + w
    rng = np.random.default_rng(3)
    ndof, nc = 12, 3
    A = rng.normal(size=(ndof, ndof))
    M = A @ A.T + ndof * np.eye(ndof)
    H = rng.normal(size=(ndof, 3 * nc))
    fv, w = rng.normal(size=ndof), rng.normal(size=3 * nc)
    g = signorini.Problem.global_(sps.csr_matrix(M), H, fv, w, 0.4)
    assert (g.form, g.rows) == ("global", 9)
    Minv = np.linalg.inv(M)
    a = signorini.Problem.assembled(H.T @ Minv @ H, H.T @ Minv @ fv + w, 0.4)
    rg, ra = signorini.solve(g, "ip", tol=1e-12), signorini.solve(a, "ip", tol=1e-12)
    np.testing.assert_allclose(rg.gamma, ra.gamma, atol=1e-7)


def test_the_kernel_options_precision_and_check_every(small):
    _, f = small
    fact = signorini.Problem.factored(**f)
    run = dict(tol=0.0, max_iter=30, precision="f32")
    every = signorini.solve(fact, "jacobi", check_every=7, **run)
    assert list(every.trace["iteration"]) == [0, 7, 14, 21, 28, 30]
    # the same iterates, measured less often
    each = signorini.solve(fact, "jacobi", **run)
    assert np.array_equal(each.trace["residual"][[0, 7, 14, 21, 28, 30]], every.trace["residual"])
    f64 = signorini.solve(fact, "jacobi", tol=0.0, max_iter=30)
    assert not np.array_equal(f64.trace["residual"], each.trace["residual"])


def test_mixed_cones_and_scalar_mu():
    W = np.diag([1.0, 2.0, 3.0, 4.0, 5.0])
    q = np.array([-1.0, -1.0, -1.0, 0.5, 0.5])
    p = signorini.Problem.assembled(W, q, [0.5], bilateral=1, unilateral=1)
    assert p.blocks == 3
    r = signorini.solve(p, "pgs", tol=1e-12)
    np.testing.assert_allclose(r.gamma[:2], [1.0, 0.5])  # bilateral, unilateral: W γ + q = 0
    with pytest.raises(ValueError, match="mu: 4 contact rows"):
        signorini.Problem.assembled(np.eye(5), np.zeros(5), 0.5, unilateral=1)


def test_bad_arrays_raise_value_errors_naming_the_argument(small):
    (W, q, mu), f = small
    Wc = W.copy()
    Wc[3, 4] = np.nan
    bad_assembled = [
        (dict(W=np.ascontiguousarray(W[:, :-3]), q=q, mu=mu), r"^W: shape \(60, 57\)"),
        (dict(W=W, q=q[:-1], mu=mu), "^q: 59 entries, expected 60"),
        (dict(W=Wc, q=q, mu=mu), r"^W\[3, 4\]: NaN"),
        (dict(W=sps.csr_matrix(Wc), q=q, mu=mu), r"^W.data\[\d+\]: NaN"),
        (dict(W=W, q=np.where(np.arange(60) == 7, np.inf, q), mu=mu), r"^q\[7\]: inf"),
        (dict(W=W, q=q, mu=-mu), r"^mu\[0\]: -0\.\d+ \(a friction coefficient"),
        (dict(W=W, q=q, mu=mu[:-1]), "^mu: 19 contacts"),
        (dict(W=np.asfortranarray(W), q=q, mu=mu), "^W: not C-contiguous"),
        (dict(W=np.hstack([W, W])[:, ::2], q=q, mu=mu), "^W: not C-contiguous"),
        (dict(W=W.astype(np.float32), q=q, mu=mu), "^W: dtype float32, expected float64"),
        (dict(W=W, q=q.astype(np.int64), mu=mu), "^q: dtype int64, expected float64"),
        (dict(W=W, q=q.reshape(-1, 1), mu=mu), r"^q: expected a 1-D array, got shape \[60, 1\]"),
        (dict(W=W, q=["a"] * 60, mu=mu), "^q: not an array of float64"),
    ]
    for kwargs, message in bad_assembled:
        with pytest.raises(ValueError, match=message):
            signorini.Problem.assembled(**kwargs)
    bad_factored = [
        (dict(inertia=np.ascontiguousarray(f["inertia"][:, :2])), r"^inertia: shape \[11, 2\], expected \[11, 3\]"),
        (dict(J=np.ascontiguousarray(f["J"][:, :1])), r"^J: shape \[60, 1, 6\], expected \[rows, 2, 6\]"),
        (dict(bodies=f["bodies"].astype(np.int32)), "^bodies: dtype int32, expected int64"),
        (dict(bodies=f["bodies"] - 5), r"^bodies\[\d+, 0\]: -\d is not a body index"),
        (dict(mass=-f["mass"]), "mass"),
        (dict(b=np.zeros(3)), "^b: 3 entries, expected 60"),
    ]
    for change, message in bad_factored:
        with pytest.raises(ValueError, match=message):
            signorini.Problem.factored(**{**f, **change})
    p = signorini.Problem.assembled(W, q, mu)
    with pytest.raises(ValueError, match=r"^warm\[2\]: NaN"):
        signorini.solve(p, warm=np.where(np.arange(60) == 2, np.nan, 0.0))
    with pytest.raises(ValueError, match="warm_start = 3 entries"):
        signorini.solve(p, warm=np.zeros(3))
    with pytest.raises(ValueError, match="^friction: unknown friction model"):
        signorini.solve(p, friction="viscous")
    with pytest.raises(ValueError, match="omega"):
        signorini.solve(p, omega=2.5)
    with pytest.raises(ValueError, match="check_every"):
        signorini.solve(p, check_every=0)
    with pytest.raises(ValueError, match="^precision: "):
        signorini.solve(p, precision="f16")
    with pytest.raises(ValueError, match="unknown solver `nope`"):
        signorini.solve(p, "nope")
    with pytest.raises(TypeError, match="unknown option `tolerance`"):
        signorini.solve(p, tolerance=1e-3)
    with pytest.raises(ValueError, match="memory limit"):
        signorini.solve(p, max_memory=1000)


def test_solvers_lists_the_registry_gpu_variants_included():
    entries = {e["name"]: e for e in signorini.solvers()}
    assert {"jacobi", "pgs", "spg", "apgd", "ip", "simplex"} <= set(entries)
    assert entries["jacobi-gpu"] == {"name": "jacobi-gpu", "base": "jacobi", "device": "gpu"}
    assert entries["pgs"]["device"] == "cpu"


def test_the_interpreter_runs_during_a_long_solve():
    (W, q, mu), _ = contact_problem(300, seed=5)
    p = signorini.Problem.assembled(W, q, mu)
    done = {}

    def work():
        start = time.perf_counter()
        done["report"] = signorini.solve(p, "pgs", tol=0.0, max_iter=10000, stall_iterations=10**6)
        done["seconds"] = time.perf_counter() - start

    worker = threading.Thread(target=work)
    ticks = 0
    worker.start()
    while worker.is_alive():
        ticks += 1
        time.sleep(0.001)
    worker.join()
    assert done["report"].iterations == 10000
    # Held, the interpreter would run this loop about once; released, once a millisecond.
    assert done["seconds"] > 0.2, done["seconds"]
    assert ticks > 0.3 * done["seconds"] / 0.001 * 0.2, (ticks, done["seconds"])


def test_a_missing_gpu_adapter_is_a_runtime_error():
    code = (
        "import numpy as np, signorini\n"
        "p = signorini.Problem.assembled(np.eye(3), np.array([-1.0, 0, 0]), 0.5)\n"
        "try:\n"
        "    signorini.solve(p, 'jacobi-gpu')\n"
        "except RuntimeError as e:\n"
        "    print('RuntimeError:', e)\n"
    )
    env = {**os.environ, "SIGNORINI_ADAPTER": "no-such-adapter-anywhere"}
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert "RuntimeError: GPU: jacobi-gpu: no adapter matches SIGNORINI_ADAPTER=no-such-adapter-anywhere" in out.stdout


def test_gpu_solver_with_an_adapter(small):
    if not signorini.adapters():
        assert os.environ.get("SIGNORINI_SKIP_GPU") == "1", "no GPU adapter (set SIGNORINI_SKIP_GPU=1 to skip)"
        pytest.skip("no GPU adapter")
    a = signorini.adapters()[0]
    assert {"name", "backend", "driver", "device_type", "max_storage_binding_size"} <= set(a)
    (W, q, mu), _ = small
    p = signorini.Problem.assembled(W, q, mu)
    gpu = signorini.solve(p, "jacobi-gpu", tol=1e-4, max_iter=5000)
    cpu = signorini.solve(p, "jacobi", tol=1e-4, max_iter=5000)
    assert gpu.solver == "jacobi-gpu" and gpu.status == cpu.status == "converged"
    np.testing.assert_allclose(gpu.gamma, cpu.gamma, atol=1e-3 * np.abs(cpu.gamma).max())
