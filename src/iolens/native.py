"""Where the compiled parts live inside the installed package."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

from iolens.errors import IolensError, NativeMissing

NATIVE_DIR = Path(__file__).resolve().parent / "_native"


def native_path(name: str) -> Path:
    """Path of a built native file; a clear error if the build did not install it."""
    path = NATIVE_DIR / name
    if not path.exists():
        raise NativeMissing(
            f"{name} is not installed in {NATIVE_DIR}; reinstall iolens with `pip install .` "
            "(it needs a C compiler)"
        )
    return path


def preload_library() -> Path:
    return native_path("libiolens_preload.so")


def describe_program(path: str, what: str) -> dict[str, Any]:
    """A native program's own description of its vocabulary (`PROGRAM --describe`, JSON); NativeMissing, naming
    `what`, when it does not run."""
    try:
        out = subprocess.run([path, "--describe"], capture_output=True, check=True, timeout=30).stdout
        d = json.loads(out)
    except (OSError, subprocess.SubprocessError, json.JSONDecodeError) as err:
        raise NativeMissing(f"{what} does not run ({err}); reinstall iolens with `pip install .`") from None
    if not isinstance(d, dict):
        raise NativeMissing(f"{what} describes itself in a form this iolens does not read; reinstall iolens")
    return d


def replay_path() -> str:
    return os.environ.get("IOLENS_REPLAY_ENGINE") or str(native_path("iolens-replay"))


def probe_cpu() -> tuple[int, float] | None:
    """What one block of the replayer's compute burn costs this CPU now: (the burn loop's version, ns), from
    `iolens-replay --probe` (about 20 ms of CPU); None where the replayer does not run or gives nothing usable.  A
    traced capture keeps it from before and after the step (META cpu_probe, sysinfo.cpu_probe_ns), so that its
    replay burns the step's compute as that much work."""
    try:
        out = subprocess.run([replay_path(), "--probe"], capture_output=True, timeout=30).stdout
        d = json.loads(out)
        loop, ns = d["loop"], float(d["ns_per_block"])
    except (OSError, IolensError, subprocess.SubprocessError, ValueError, KeyError, TypeError):
        return None
    return (loop, ns) if isinstance(loop, int) and 0 < ns < 1e6 else None
