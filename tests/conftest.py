"""Shared fixtures: run the CLI, compile the exact-I/O C programs, profile a command."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent


def datapath(*parts: str) -> Path:
    """A file under tests/data, found relative to this file, not the working directory."""
    return HERE.joinpath("data", *parts)


def _absolute_pythonpath(env: dict) -> dict:
    """Relative PYTHONPATH entries would resolve against the subprocess's cwd, not ours."""
    if env.get("PYTHONPATH"):
        env["PYTHONPATH"] = os.pathsep.join(os.path.abspath(p) for p in env["PYTHONPATH"].split(os.pathsep) if p)
    return env


def iolens(*args: str, check: bool = False, **kw) -> subprocess.CompletedProcess:
    kw["env"] = _absolute_pythonpath(dict(kw.get("env") or os.environ))
    kw.setdefault("capture_output", True)
    kw.setdefault("text", True)
    kw.setdefault("timeout", 600)
    return subprocess.run([sys.executable, "-m", "iolens", *map(str, args)], check=check, **kw)


@pytest.fixture(scope="session")
def cprog(tmp_path_factory):
    """Compile tests/native/NAME.c once per session; returns its path."""
    cc = shutil.which("cc") or shutil.which("gcc")
    if cc is None:
        pytest.skip("no C compiler (cc/gcc) on PATH; install gcc")
    out = tmp_path_factory.mktemp("cprog")
    built: dict[str, Path] = {}

    def build(name: str) -> Path:
        if name not in built:
            exe = out / name
            subprocess.run([cc, "-O0", "-fno-builtin", "-pthread", "-o", str(exe), str(HERE / "native" / f"{name}.c")],
                           check=True)
            built[name] = exe
        return built[name]

    return build


@pytest.fixture
def profiled(tmp_path):
    """Run argv under `iolens profile`; returns (completed process, Capture)."""
    from iolens.capture.reader import read_capture

    def run(argv, *extra: str, cwd: Path | None = None, **kw):
        cap = tmp_path / f"run{len(list(tmp_path.glob('run*.iolens')))}.iolens"
        res = iolens("profile", "-q", "-o", cap, *extra, "--", *map(str, argv), cwd=cwd or tmp_path, **kw)
        return res, (read_capture(cap) if cap.exists() else None)

    return run


def tool(name: str) -> str:
    path = shutil.which(name)
    if path is None:
        pytest.skip(f"{name} is not installed (Debian package {name}); dev/setup installs it as root")
    return path


def unavailable(why: str):
    """Skip where a real component genuinely cannot run; in CI (as root) that is a failure, not a skip."""
    if os.environ.get("CI") and os.geteuid() == 0:
        pytest.fail(f"component unavailable in CI: {why}")
    pytest.skip(why)


@pytest.fixture(autouse=True)
def _no_inherited_profiler(monkeypatch):
    if os.environ.get("PYTHONPATH"):
        monkeypatch.setenv("PYTHONPATH", _absolute_pythonpath(dict(os.environ))["PYTHONPATH"])
    # tests that profile must not be profiled themselves
    monkeypatch.delenv("IOLENS_DIR", raising=False)
    if "iolens_preload" in os.environ.get("LD_PRELOAD", ""):
        monkeypatch.delenv("LD_PRELOAD")
