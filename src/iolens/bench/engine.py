"""Running the native engine: a job dict in, a result dict out, progress through a callback.

The engine's vocabulary (ops, contents, schema versions) comes from `iolens-bench --describe`, generated from the
X-macro lists in native/bench/bench.h, so Python never hard-codes what the C side accepts.
"""

from __future__ import annotations

import errno
import json
import os
import subprocess
import threading
from functools import lru_cache
from typing import Any, Callable

from iolens.errors import IolensError, TargetError
from iolens.native import describe_program, native_path

JOB_SCHEMA = (1, 1)
RESULT_MAJOR = 1

# errno values that mean "this target cannot take the run", as opposed to an engine bug
TARGET_ERRNOS = {errno.ENOSPC: "is full", errno.EDQUOT: "is over its quota", errno.EROFS: "became read-only",
                 errno.EACCES: "refused access", errno.EPERM: "refused the operation",
                 errno.ELOOP: "has a symlink inside the benchmark directory (refused, not followed)",
                 errno.EIO: "reported an I/O error", errno.ENOTCONN: "is disconnected (stale mount?)",
                 errno.ESTALE: "has a stale file handle", errno.EOPNOTSUPP: "does not support an operation",
                 errno.ETIMEDOUT: "timed out"}


class EngineError(IolensError):
    """The engine failed in a way that is not the target's fault."""

    exit_code = 4


def engine_path() -> str:
    """The installed engine, or IOLENS_BENCH_ENGINE (e.g. a sanitizer build) when set."""
    return os.environ.get("IOLENS_BENCH_ENGINE") or str(native_path("iolens-bench"))


@lru_cache(maxsize=1)
def describe() -> dict[str, Any]:
    """The engine's vocabulary; NativeMissing/EngineError when it is absent or incompatible."""
    d = describe_program(engine_path(), "the benchmark engine")
    if d.get("job_schema", [0])[0] != JOB_SCHEMA[0] or d.get("result_schema", [0])[0] != RESULT_MAJOR:
        raise EngineError(f"the installed benchmark engine speaks job schema {d.get('job_schema')}, this iolens "
                          f"needs {list(JOB_SCHEMA)}; reinstall iolens")
    return d


@lru_cache(maxsize=None)
def op_names(*, kind: str | None = None, io: str | None = None) -> frozenset[str]:
    """The op names the engine accepts, optionally only those of one kind or io, as `--describe` lists them.

    kind is seq, rand, small or util (which loop runs the op); io is read, write, mixed or none (which data it
    moves).  For example op_names(io="read") are the ops whose bytes are reads.  Asked of the engine on first use
    (never at import) and cached.
    """
    ops = describe()["ops"]
    return frozenset(n for n, o in ops.items() if kind in (None, o["kind"]) and io in (None, o["io"]))


def names(what: str) -> tuple[str, ...]:
    """The names the engine accepts for one job field, in its order: contents, syncs, layouts, engines or ops."""
    d = describe()
    if what not in ("contents", "syncs", "layouts", "engines", "ops"):
        raise ValueError(f"the engine describes no list {what!r}")
    return tuple(d[what])


ProgressFn = Callable[[dict[str, Any]], None]


def run_job(job: dict[str, Any], *, on_progress: ProgressFn | None = None,
            preexec: Callable[[], None] | None = None, timeout: float | None = None) -> dict[str, Any]:
    """Runs one job to completion and returns the engine's result dict (status ok, error or interrupted).

    On KeyboardInterrupt or any exception the engine is stopped (SIGTERM, then SIGKILL) before re-raising, so the
    caller can remove the work directories safely afterwards.
    """
    describe()
    job = dict(job)
    job.setdefault("schema_version", list(JOB_SCHEMA))
    job["progress"] = on_progress is not None
    proc = subprocess.Popen([engine_path(), "-"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, preexec_fn=preexec)
    other_err: list[str] = []

    def pump_stderr() -> None:
        assert proc.stderr is not None
        for raw in proc.stderr:
            line = raw.decode(errors="replace").rstrip("\n")
            if line.startswith("@progress ") and on_progress is not None:
                try:
                    on_progress(json.loads(line[10:]))
                except (ValueError, TypeError):
                    pass
                except Exception:  # a broken renderer must not kill the run
                    pass
            elif line:
                other_err.append(line)

    reader = threading.Thread(target=pump_stderr, daemon=True)
    reader.start()
    try:
        out, _ = proc.communicate(json.dumps(job).encode(), timeout=timeout)
    except BaseException:
        _stop(proc)
        raise
    finally:
        reader.join(timeout=5)
    text = out.decode(errors="replace").strip()
    try:
        result = json.loads(text)
    except json.JSONDecodeError:
        tail = other_err[-1] if other_err else f"exit status {proc.returncode}"
        if proc.returncode and proc.returncode < 0:
            tail = f"killed by signal {-proc.returncode}"
        raise EngineError(f"the benchmark engine died without a result ({tail})") from None
    if result.get("tag") != "iolens-bench-engine" or result.get("schema_version", [0])[0] != RESULT_MAJOR:
        raise EngineError("the benchmark engine returned an unknown result format; reinstall iolens")
    return result


def _stop(proc: subprocess.Popen) -> None:
    if proc.poll() is None:
        try:
            proc.terminate()
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        except OSError:
            pass


def raise_for_error(result: dict[str, Any], dir_targets: list[str]) -> None:
    """Turns an engine error into a one-line TargetError (the target's fault) or EngineError.

    dir_targets names the target of each job dir, in the job's order.
    """
    if result.get("status") != "error":
        return
    e = result.get("error") or {}
    code = e.get("errno")
    d = e.get("dir")
    where = dir_targets[d] if isinstance(d, int) and 0 <= d < len(dir_targets) else (
        dir_targets[0] if len(dir_targets) == 1 else "a target")
    phase = f" during {e['phase']}" if e.get("phase") else ""
    if code in TARGET_ERRNOS:
        raise TargetError(f"{where} {TARGET_ERRNOS[code]}{phase} ({e.get('op')} {e.get('path')}: "
                          f"{e.get('strerror')})")
    raise EngineError(f"benchmark failed{phase} on {where}: {e.get('message')}")
