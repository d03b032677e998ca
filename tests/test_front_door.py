"""The front door keeps its promises: the demo writes only inside its output directory."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from conftest import HERE, unavailable

REPO = HERE.parent


def _files(root: Path) -> list[str]:
    return sorted(str(p.relative_to(root)) for p in root.rglob("*"))


def _git_status() -> str | None:
    if shutil.which("git") is None or not (REPO / ".git").exists():
        return None
    return subprocess.run(["git", "-C", str(REPO), "status", "--porcelain", "--untracked-files=all"],
                          capture_output=True, text=True, check=True).stdout


@pytest.mark.slow
@pytest.mark.timeout(900)
def test_demo_writes_only_in_its_output_directory(tmp_path):
    for t in ("minimap2", "samtools"):
        if shutil.which(t) is None:
            unavailable(f"{t} is not installed (the demo's real step); dev/setup installs it as root")
    if not (REPO / ".venv" / "bin" / "iolens").exists():
        unavailable("no .venv in the checkout: the demo runs from the checkout's own environment (dev/setup)")
    home, tmp, out = tmp_path / "home", tmp_path / "tmp", tmp_path / "out"
    home.mkdir()
    tmp.mkdir()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("XDG_", "IOLENS_"))}
    env.update(HOME=str(home), TMPDIR=str(tmp), DEMO_SETUP="0", DEMO_OUT=str(out), DEMO_RUNS="2",
               DEMO_PAIRS="20000")  # where the demo writes does not depend on its input's size
    before = _git_status()
    res = subprocess.run([str(REPO / "dev" / "demo")], cwd=REPO, env=env, capture_output=True, text=True,
                         timeout=880)
    assert res.returncode == 0, res.stderr[-3000:]
    assert _files(home) == [] and _files(tmp) == []
    assert (out / "results.sqlite").is_file()
    made = _files(out)
    assert any(n.endswith(".html") for n in made) and any(n.endswith(".iolens") for n in made)
    assert any(n.endswith("output-placement.json") for n in made)
    assert _git_status() == before
