"""`Simulation`: steps as `simulate`'s `steps.csv`, scenes from dicts, the state as arrays."""

import csv
import sys

import numpy as np
import pytest

import signorini
from conftest import SCENES, cli

SETS = {"lattice.0.count": 64}
TIMINGS = {"collision_s", "assembly_s", "solve_s"}


def test_steps_match_simulates_steps_csv(tmp_path):
    cli("simulate", str(SCENES / "balls_in_box.toml"), "--steps", "25", "--set",
        "lattice.0.count=64", "--snapshot-every", "0", "--out", str(tmp_path))
    with open(tmp_path / "steps.csv") as f:
        rows = list(csv.DictReader(f))
    assert len(rows) == 25
    sim = signorini.Simulation(SCENES / "balls_in_box.toml", set=SETS)
    assert sim.stats is None and sim.steps == 0
    assert sim.solver in {e["name"] for e in signorini.solvers()}  # the scene's run.solver
    for row in rows:
        stats = sim.step()
        assert stats == sim.stats
        for key, value in row.items():
            if key in TIMINGS:
                continue
            expected = value if key == "status" else type(stats[key])(value)
            assert stats[key] == expected, (row["step"], key)  # exact: CSV floats round-trip
    assert sim.steps == 25 and sim.time == pytest.approx(0.5)
    assert int(rows[-1]["contacts"]) > 0


@pytest.mark.skipif(sys.version_info < (3, 11), reason="tomllib")
def test_a_scene_as_a_dict_steps_as_its_file():
    import tomllib

    with open(SCENES / "balls_in_box.toml", "rb") as f:
        tables = tomllib.load(f)
    tables["lattice"][0]["count"] = 64
    a = signorini.Simulation(tables)
    b = signorini.Simulation(str(SCENES / "balls_in_box.toml"), set=SETS)
    sa, sb = a.step(5), b.step(5)
    assert {k: v for k, v in sa.items() if k not in TIMINGS} == {
        k: v for k, v in sb.items() if k not in TIMINGS}
    assert np.array_equal(a.positions, b.positions)


def test_state_arrays_and_contacts():
    sim = signorini.Simulation(SCENES / "balls_in_box.toml", set=SETS)
    stats = sim.step(20)
    n = stats["bodies"]
    assert sim.positions.shape == sim.velocities.shape == sim.angular_velocities.shape == (n, 3)
    np.testing.assert_allclose(np.linalg.norm(sim.orientations, axis=1), 1.0, atol=1e-12)
    c = sim.contacts
    k = stats["contacts"]
    assert c["pairs"].shape == (k, 2) and c["pairs"].dtype == np.int64
    assert c["points"].shape == c["normals"].shape == c["impulses"].shape == (k, 3)
    assert c["distances"].shape == (k,)
    np.testing.assert_allclose(np.linalg.norm(c["normals"], axis=1), 1.0, atol=1e-12)
    assert np.all(c["impulses"][:, 0] >= 0) and c["impulses"][:, 0].sum() > 0
    # The dynamic spheres (all bodies but the box's planes) and where they are.
    spheres = np.linalg.norm(sim.velocities, axis=1) > 0
    assert np.all(np.abs(sim.positions[spheres, :2]) < 0.5)
    p = sim.problem()
    assert p.form == "factored" and p.rows > 0
    assert signorini.solve(p, "pgs", tol=1e-3).status in ("converged", "max_iterations")


def test_bad_scenes_raise():
    with pytest.raises(FileNotFoundError):
        signorini.Simulation(SCENES / "missing.toml")
    with pytest.raises(ValueError, match="unknown field `cuont`"):
        signorini.Simulation(SCENES / "balls_in_box.toml", set={"lattice.0.cuont": 3})
    assert signorini.Simulation(SCENES / "balls_in_box.toml", set=SETS, solver="pgs").solver == "pgs"
    with pytest.raises(ValueError, match="unknown solver"):
        signorini.Simulation(SCENES / "balls_in_box.toml", set=SETS, solver="nope")
    with pytest.raises(ValueError, match="scene"):
        signorini.Simulation({"settings": {"dt": None}})


def test_a_scene_iterates_in_its_precision():
    # `settings.precision` reaches the CPU kernel: f32 iterations, the f64 residual met.
    runs = []
    for precision in ("f64", "f32"):
        sim = signorini.Simulation(SCENES / "balls_in_box.toml", solver="jacobi", set={
            **SETS, "settings.tol": 1e-4, "settings.max_iter": 5000,
            "settings.precision": precision})
        for _ in range(10):
            stats = sim.step()
            assert stats["status"] == "converged" and stats["residual"] <= 1e-4, precision
        runs.append(sim.positions)
    assert not np.array_equal(runs[0], runs[1])
    np.testing.assert_allclose(runs[0], runs[1], atol=1e-4)
    with pytest.raises(ValueError, match="settings.precision: unknown variant `f16`"):
        signorini.Simulation(SCENES / "balls_in_box.toml", set={"settings.precision": "f16"})
