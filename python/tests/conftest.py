"""Shared helpers of the Python tests: the repository's paths and the command line."""

import json
import os
import subprocess
from pathlib import Path

import pytest

from random_contacts import contact_problem

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT / "tests" / "data"
SICONOS = DATA / "siconos"
SCENES = ROOT / "scenes"


def cli(*args: str) -> subprocess.CompletedProcess:
    """Runs the `signorini` command line: `$SIGNORINI_CLI`, else `cargo run` of this checkout
    (built by then in CI; the same library sources as the extension)."""
    exe = os.environ.get("SIGNORINI_CLI")
    argv = [exe] if exe else ["cargo", "run", "--quiet", "--bin", "signorini", "--"]
    done = subprocess.run(argv + list(args), cwd=ROOT, capture_output=True, text=True)
    assert done.returncode in (0, 3), f"{args}: exit {done.returncode}\n{done.stderr}"
    return done


def cli_json(*args: str) -> dict:
    """The JSON object a `--json` command prints."""
    return json.loads(cli(*args).stdout)


@pytest.fixture
def small():
    """A random 20-contact problem: `(W, q, mu), factored arrays`."""
    return contact_problem(20)
