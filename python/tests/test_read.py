"""`read` on every reader (Siconos .dat of each kind, JSON, binary, FCLIB HDF5), `write`,
and the errors of bad files."""

import warnings

import numpy as np
import pytest

import signorini
from conftest import DATA, SICONOS

# folder -> (problem class, operator form) of the Siconos files in it
KINDS = {
    "lcp": ("lcp", "assembled"),
    "mlcp": ("mlcp", "assembled"),
    "fc3d": ("fc3d", "assembled"),
    "gfc3d": ("gfc3d", "global"),
    "gmp": ("generic_mechanical", "assembled"),
}


@pytest.mark.parametrize("kind", sorted(KINDS))
def test_every_siconos_file_reads_as_its_kind(kind):
    files = sorted((SICONOS / kind).glob("*.dat"))
    assert files
    for path in files:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # a kind taken from the content is a note
            p = signorini.read(path)
        assert p.rows > 0 and p.blocks > 0, path
        if p.problem_class == KINDS[kind][0]:
            assert p.form == KINDS[kind][1], path


def test_format_overrides_the_name_and_a_note_is_a_warning(tmp_path):
    src = SICONOS / "fc3d" / "FrictionContact3D_1c.dat"
    odd = tmp_path / "problem.dat"  # a name that tells no kind
    odd.write_bytes(src.read_bytes())
    with pytest.raises(ValueError, match="--format"):
        signorini.read(odd)
    p = signorini.read(odd, format="siconos-fc3d")
    assert (p.problem_class, p.rows, p.blocks) == ("fc3d", 3, 1)
    with pytest.raises(ValueError, match="format: unknown format `xml`"):
        signorini.read(src, format="xml")
    # An LCP file in a folder named mlcp: read as its name says, with a note.
    mlcp = tmp_path / "mlcp"
    mlcp.mkdir()
    (mlcp / "lcp_CPS_1.dat").write_bytes((SICONOS / "lcp" / "lcp_CPS_1.dat").read_bytes())
    with pytest.warns(UserWarning, match="read as siconos-lcp"):
        assert signorini.read(mlcp / "lcp_CPS_1.dat").problem_class == "lcp"


@pytest.mark.parametrize("ext", ["json", "bin"])
def test_native_formats_round_trip(tmp_path, ext):
    for src in [SICONOS / "fc3d" / "FC3D_Example1.dat", SICONOS / "gfc3d" / "GFC3D_Example0.dat"]:
        p = signorini.read(src)
        out = tmp_path / f"{src.stem}.{ext}"
        p.write(out)
        back = signorini.read(out)
        assert (back.rows, back.blocks, back.form, back.problem_class) == (
            p.rows, p.blocks, p.form, p.problem_class)
        a, b = signorini.solve(p, tol=1e-10), signorini.solve(back, tol=1e-10)
        assert a.iterations == b.iterations
        assert np.array_equal(a.gamma, b.gamma)


def test_fclib_files():
    files = [DATA / "fclib" / "local_problem_test.hdf5", *sorted((SICONOS / "fclib-hdf5").glob("*.hdf5"))]
    for path in files:
        if "fclib" in signorini.FEATURES:
            p = signorini.read(path)
            assert p.problem_class in ("fc3d", "gfc3d") and p.rows > 0, path
        else:
            with pytest.raises(ValueError, match="fclib"):
                signorini.read(path)


def test_bad_files_raise_with_the_file_named(tmp_path):
    with pytest.raises(FileNotFoundError, match="missing.json"):
        signorini.read(tmp_path / "missing.json")
    bad = tmp_path / "bad.json"
    bad.write_text('{"cones": [], "operator": 3}')
    with pytest.raises(ValueError, match="bad.json"):
        signorini.read(bad)
    with pytest.raises(ValueError, match="unknown problem format"):
        signorini.read(tmp_path / "problem.txt")
