"""Shared fixtures: the shipped data sets, and the `mil` program when it is built."""

import json
import os
import subprocess
from pathlib import Path

import pytest

import miltk

REPO = Path(__file__).resolve().parents[2]


def mil_binary():
    """The `mil` program: $MIL_BIN, else the repository's release build, else None."""
    path = os.environ.get("MIL_BIN")
    if path:
        if not Path(path).is_file():
            raise RuntimeError(f"MIL_BIN={path} does not exist")
        return path
    built = REPO / "target" / "release" / "mil"
    return str(built) if built.is_file() else None


def run_mil(*args):
    """Runs `mil ARGS --json` and returns its JSON, or None when `mil` is not built."""
    binary = mil_binary()
    if binary is None:
        return None
    out = subprocess.run(
        [binary, *args, "--json"], capture_output=True, text=True, check=False, timeout=300
    )
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)


@pytest.fixture(scope="session")
def musk1():
    return miltk.load_musk1(return_ids=True)


@pytest.fixture(scope="session")
def corel3():
    return miltk.load_corel3(return_X_y=True)
