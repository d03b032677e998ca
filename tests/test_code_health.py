"""The habits that keep the code in shape, run with the suite: ruff on the package, the tests and the benchmarks
(with a per-function statement and complexity limit), mypy, and a size limit per source file."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import HERE, unavailable

REPO = HERE.parent
SRC = REPO / "src" / "iolens"
MAX_LINES = 500
# Files allowed over MAX_LINES, each with its reason. Keep this list short.
LONGER: dict[str, str] = {}


def _tool(name: str) -> str:
    path = shutil.which(name, path=str(Path(sys.executable).parent))
    if path is None:
        unavailable(f"{name} is not installed in this environment (pip install '.[test]')")
    return path


@pytest.mark.timeout(600)
def test_ruff_passes():
    res = subprocess.run([_tool("ruff"), "check", "--no-cache", str(SRC), str(HERE), str(REPO / "benchmarks")],
                         cwd=REPO, capture_output=True, text=True)
    assert res.returncode == 0, res.stdout + res.stderr


@pytest.mark.timeout(900)
def test_mypy_passes():
    res = subprocess.run([_tool("mypy"), "--no-incremental", "--cache-dir", "/dev/null"], cwd=REPO,
                         capture_output=True, text=True)
    assert res.returncode == 0, res.stdout[-5000:] + res.stderr[-2000:]


def test_no_source_file_is_too_long():
    long = {str(p.relative_to(SRC)): n for p in SRC.rglob("*.py")
            if (n := len(p.read_text().splitlines())) > MAX_LINES and "_format" not in p.name}
    assert set(long) <= set(LONGER), {k: v for k, v in long.items() if k not in LONGER}
