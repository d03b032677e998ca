"""Running the native replayer: its vocabulary from `iolens-replay --describe`, a job in, a result dict out."""

from __future__ import annotations

import contextlib
import json
import subprocess
from functools import lru_cache
from collections.abc import Callable
from typing import Any

import numpy as np

from iolens.errors import IolensError
from iolens.native import describe_program, replay_path
from iolens.sysinfo import cpu_probe_ns

SCHEMA_MAJOR = 1
_NP = {"uint64_t": "<u8", "uint32_t": "<u4"}


class ReplayError(IolensError):
    """The replayer failed in a way that is not the target's fault."""

    exit_code = 4


@lru_cache(maxsize=1)
def describe() -> dict[str, Any]:
    d = describe_program(replay_path(), "the replayer")
    if d.get("schema_version", [0])[0] != SCHEMA_MAJOR:
        raise ReplayError("the installed replayer speaks another schema; reinstall iolens")
    return d


def _dtype(key: str) -> np.dtype:
    fields = [f.split(":") for f in describe()[key]]
    return np.dtype([(name, _NP[typ]) for name, typ in fields])


def op_dtype() -> np.dtype:
    dt = _dtype("op_fields")
    if dt.itemsize != describe()["op_size"]:
        raise ReplayError("the replayer's op layout does not match its description; reinstall iolens")
    return dt


def log_dtype() -> np.dtype:
    return _dtype("log_fields")


def op_codes() -> dict[str, int]:
    return {name: v["code"] for name, v in describe()["ops"].items()}


def recorded_block_ns(meta: dict[str, Any]) -> float | None:
    """What a block of this replayer's burn loop cost the CPU while a capture was taken (its META cpu_probe,
    sysinfo.cpu_probe_ns); None when it has none, or one of another loop."""
    return cpu_probe_ns(meta, describe().get("burn_loop", 0))


def run(job_path: str, *, preexec: Callable[[], None] | None = None,
        after_layout: Callable[[], None] | None = None) -> dict[str, Any]:
    """Runs the replayer on a job file; the engine is stopped (then re-raised) on Ctrl-C or any error.

    `after_layout`: called once the files are laid out and before the timed part, for a job that holds there
    (`hold_after_layout`: the replayer writes a newline on stdout and waits for a byte on stdin)."""
    proc = subprocess.Popen([replay_path(), job_path], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            stdin=subprocess.PIPE if after_layout else None, preexec_fn=preexec)
    try:
        first = b""
        if after_layout is not None:
            assert proc.stdout is not None and proc.stdin is not None
            first = proc.stdout.read(1)  # the hold's newline, or the result's start when the layout failed
            if first == b"\n":
                after_layout()
                with contextlib.suppress(BrokenPipeError):  # it ended meanwhile (a signal): its result says why
                    proc.stdin.write(b"\n")
                    proc.stdin.flush()
        out, err = proc.communicate()
        out = first + out
    except BaseException:
        if proc.poll() is None:
            proc.terminate()
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        raise
    try:
        res = json.loads(out.decode(errors="replace"))
    except json.JSONDecodeError:
        tail = err.decode(errors="replace").strip().splitlines()[-1:] or [f"exit status {proc.returncode}"]
        raise ReplayError(f"the replayer died without a result ({tail[0]})") from None
    if res.get("tag") != "iolens-replay-result":
        raise ReplayError("the replayer returned an unknown result; reinstall iolens")
    return res
