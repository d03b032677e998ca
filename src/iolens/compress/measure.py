"""Timing one codec the way lzbench does: the data in memory, each direction repeated until its figure is stable.

For each direction a *pass* is one call over the whole buffer (calls are looped when one is shorter than 10 ms, so
the clock's resolution does not matter).  Passes repeat until MIN_TIME has elapsed and at least MIN_PASSES were
made, and then until the best pass is within STABLE of the median of the last three, or MAX_TIME is up.  The
figure is the best pass (as lzbench reports); the spread is the median's distance from it, in percent.

CPU seconds are the process's own (all threads) for library codecs and the child's rusage for tools.  Peak memory
is what one call adds to the resident set: for a library, the kernel's high-water mark (VmHWM) reset through
/proc/self/clear_refs before the call; for a tool, the child's maximum resident set size.

Tools read their input from, and write to, files in a RAM-backed directory (/dev/shm when writable), so no
storage is timed.
"""

from __future__ import annotations

import os
import statistics
import subprocess
import tempfile
import time
from contextlib import AbstractContextManager
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterable

from iolens import workdirs

MIN_TIME = 0.5
MIN_PASSES = 3
STABLE = 0.02


@dataclass
class Timing:
    best_s: float
    median_s: float
    passes: int
    cpu_s: float          # per pass
    peak_bytes: int | None

    @property
    def spread_pct(self) -> float:
        return 100.0 * (self.median_s - self.best_s) / self.best_s if self.best_s > 0 else 0.0


def _status_kib(field: str) -> int | None:
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith(field + ":"):
                    return int(line.split()[1]) * 1024
    except OSError:
        return None
    return None


def peak_of(fn: Callable[[], object]) -> tuple[object, int | None]:
    """fn()'s result and how far it raised this process's resident set above where it started."""
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
        base = _status_kib("VmRSS")
    except OSError:
        base = None
    out = fn()
    hwm = _status_kib("VmHWM")
    return out, (max(0, hwm - base) if base is not None and hwm is not None else None)


def repeat(one_pass: Callable[[], float], *, min_time: float = MIN_TIME, max_time: float | None = None,
           cpu: Callable[[], float] | None = None) -> tuple[list[float], float]:
    """Wall seconds of each pass, and CPU seconds per pass (from `cpu`, a cumulative clock, when given)."""
    max_time = max_time if max_time is not None else max(10 * min_time, 1.0)
    times: list[float] = []
    c0 = cpu() if cpu else 0.0
    start = time.perf_counter()
    while True:
        times.append(one_pass())
        elapsed = time.perf_counter() - start
        if elapsed >= max_time and times:
            break
        if elapsed < min_time or len(times) < MIN_PASSES:
            continue
        recent = statistics.median(times[-3:])
        if (recent - min(times)) / min(times) <= STABLE:
            break
    cpu_per = ((cpu() - c0) / len(times)) if cpu else 0.0
    return times, cpu_per


def time_call(fn: Callable[[], object], *, min_time: float = MIN_TIME) -> Timing:
    """Time a library call (already verified by the caller); peak memory from one extra call."""
    t0 = time.perf_counter()
    fn()
    first = time.perf_counter() - t0
    inner = max(1, int(0.01 / first)) if first < 0.01 else 1

    def one_pass() -> float:
        t = time.perf_counter()
        for _ in range(inner):
            fn()
        return (time.perf_counter() - t) / inner

    times, cpu = repeat(one_pass, min_time=min_time, cpu=time.process_time)
    _out, peak = peak_of(fn)
    return Timing(min(times), statistics.median(times), len(times) * inner, cpu / inner, peak)


def ram_dir() -> str | None:
    for d in (os.environ.get("IOLENS_STAGING"), "/dev/shm", os.environ.get("XDG_RUNTIME_DIR")):
        if d and os.path.isdir(d) and os.access(d, os.W_OK):
            return d
    return None


@dataclass
class ToolRun:
    wall_s: float
    cpu_s: float
    maxrss: int
    status: int
    stderr: str


def run_tool(argv: list[str], src: str, dst: str) -> ToolRun:
    with open(src, "rb") as fi, open(dst, "wb") as fo:
        t = time.perf_counter()
        p = subprocess.Popen(argv, stdin=fi, stdout=fo, stderr=subprocess.PIPE)
        _pid, status, ru = os.wait4(p.pid, 0)
        wall = time.perf_counter() - t
        p.returncode = os.waitstatus_to_exitcode(status)
        err = p.stderr.read().decode(errors="replace") if p.stderr else ""
        if p.stderr:
            p.stderr.close()
    return ToolRun(wall, ru.ru_utime + ru.ru_stime, ru.ru_maxrss * 1024, p.returncode, err.strip())


def time_tool(argv: list[str], src: str, dst: str, *, min_time: float = MIN_TIME) -> Timing:
    """Time `argv < src > dst` as a process, repeated like a library call."""
    runs: list[ToolRun] = []

    def one_pass() -> float:
        r = run_tool(argv, src, dst)
        if r.status != 0:
            raise ToolFailed(f"{' '.join(argv)} exited {r.status}: {r.stderr.splitlines()[-1] if r.stderr else ''}")
        runs.append(r)
        return r.wall_s

    times, _ = repeat(one_pass, min_time=min_time)
    return Timing(min(times), statistics.median(times), len(times), statistics.median(r.cpu_s for r in runs),
                  max(r.maxrss for r in runs))


class ToolFailed(RuntimeError):
    pass


PREFIX = "iolens-compress-"  # the staging directory in RAM, and the directory on each filesystem of --fs


def staging() -> AbstractContextManager[Path]:
    return workdirs.temporary(ram_dir(), PREFIX)


def reap_leftovers(roots: Iterable[str | os.PathLike[str]] = ()) -> workdirs.Reaped:
    """What killed compress runs left: their staging in RAM and their directories on the filesystems in roots."""
    reaped = workdirs.reap(ram_dir() or tempfile.gettempdir(), PREFIX, shared=True)
    reaped += workdirs.reap_each((r, PREFIX) for r in roots)
    return reaped
