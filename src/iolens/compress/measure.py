"""Timing one codec the way lzbench does: the data in memory, each direction repeated until its figure is stable.

For each direction a *pass* is one call over the whole buffer (calls are looped when one is shorter than 10 ms, so
the clock's resolution does not matter).  Passes repeat until MIN_TIME has elapsed and at least MIN_PASSES were
made, and then until the best pass is within STABLE of the median of the last three; they stop at MAX_TIME
whatever the spread (the budget: one pass that takes longer than it is the only pass).  The figure is the best
pass (as lzbench reports); the spread is the median's distance from it, in percent, when there were 3 passes.

CPU seconds are the process's own (all threads) for library codecs and the child's rusage for tools.

Peak memory is what one call adds to the resident set, measured apart from the timing:
- a library codec in a fresh interpreter (`python -m iolens.compress.peak`) that loads the input and forks one
  child per direction; the child resets the kernel's high-water mark (/proc/self/clear_refs), makes the call and
  reports VmHWM - VmRSS.  Measured in this long-lived process instead, the call would reuse memory earlier rows
  freed without touching new pages, and show as 0 B.
- a tool through GNU time (`time -f %M`): the child's own maximum resident set.  The rusage that wait4 returns for
  a child started from this interpreter is at least the interpreter's own size (the kernel carries the pre-exec
  high-water mark across exec), so it is not used.

Tools read their input from, and write to, files in a RAM-backed directory (/dev/shm when writable), so no
storage is timed.
"""

from __future__ import annotations

import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from contextlib import AbstractContextManager
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any, Callable, Iterable

from iolens import workdirs

MIN_TIME = 0.5
MIN_PASSES = 3
STABLE = 0.02
Clock = Callable[[], float]


def max_time_for(min_time: float) -> float:
    """The budget of one figure: 10 x min_time, at least 1 s."""
    return max(10 * min_time, 1.0)


@dataclass
class Timing:
    best_s: float
    median_s: float
    passes: int
    cpu_s: float          # per pass
    peak_bytes: int | None

    @property
    def spread_pct(self) -> float | None:
        """None with fewer than MIN_PASSES passes: one or two passes say nothing about the spread."""
        if self.passes < MIN_PASSES or self.best_s <= 0:
            return None
        return 100.0 * (self.median_s - self.best_s) / self.best_s


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
    """fn()'s result and how far it raised this process's resident set above where it started.

    Right only in a process whose allocator holds no freed memory (see iolens.compress.peak)."""
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
           cpu: Clock | None = None, clock: Clock = time.perf_counter,
           first: float | None = None) -> tuple[list[float], float]:
    """Wall seconds of each pass, and CPU seconds per pass (from `cpu`, a cumulative clock, when given).

    `first` is a pass already made (the verifying call): it counts, and its time counts toward the budget.
    """
    max_time = max_time if max_time is not None else max_time_for(min_time)
    times: list[float] = []
    c0 = cpu() if cpu else 0.0
    start = clock() - (first or 0.0)
    while True:
        if first is not None and not times:
            times.append(first)
        else:
            times.append(one_pass())
        elapsed = clock() - start
        if elapsed >= max_time and times:
            break
        if elapsed < min_time or len(times) < MIN_PASSES:
            continue
        recent = statistics.median(times[-3:])
        if (recent - min(times)) / min(times) <= STABLE:
            break
    made = len(times) - (1 if first is not None else 0)
    cpu_per = ((cpu() - c0) / made) if cpu and made else 0.0
    return times, cpu_per


def time_call(fn: Callable[[], object], *, min_time: float = MIN_TIME, first: float | None = None,
              first_cpu: float | None = None, max_time: float | None = None) -> Timing:
    """Time a library call (already verified by the caller).  `first`: that call's wall seconds, which count as a
    pass when it took 10 ms or more, so a slow codec is not called again just to be timed."""
    if first is None:
        t0 = time.perf_counter()
        fn()
        first = time.perf_counter() - t0
    inner = max(1, int(0.01 / first)) if first < 0.01 else 1

    def one_pass() -> float:
        t = time.perf_counter()
        for _ in range(inner):
            fn()
        return (time.perf_counter() - t) / inner

    reuse = first if inner == 1 else None
    times, cpu = repeat(one_pass, min_time=min_time, max_time=max_time, cpu=time.process_time, first=reuse)
    if reuse is not None and len(times) == 1:
        cpu = first_cpu if first_cpu is not None else first
    n = (len(times) - (1 if reuse is not None else 0)) * inner + (1 if reuse is not None else 0)
    return Timing(min(times), statistics.median(times), n, cpu / inner, None)


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


def time_tool(argv: list[str], src: str, dst: str, *, min_time: float = MIN_TIME,
              max_time: float | None = None) -> Timing:
    """Time `argv < src > dst` as a process, repeated like a library call; no peak (see tool_peak)."""
    runs: list[ToolRun] = []

    def one_pass() -> float:
        r = run_tool(argv, src, dst)
        if r.status != 0:
            raise ToolFailed(f"{' '.join(argv)} exited {r.status}: {r.stderr.splitlines()[-1] if r.stderr else ''}")
        runs.append(r)
        return r.wall_s

    times, _ = repeat(one_pass, min_time=min_time, max_time=max_time)
    return Timing(min(times), statistics.median(times), len(times), statistics.median(r.cpu_s for r in runs), None)


@lru_cache(maxsize=None)
def gnu_time() -> str | None:
    """The GNU time executable, or None."""
    exe = shutil.which("time")
    if exe is None:
        return None
    try:
        p = subprocess.run([exe, "--version"], capture_output=True, text=True, timeout=10, stdin=subprocess.DEVNULL)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return exe if "GNU" in (p.stdout + p.stderr) else None


def tool_peak(argv: list[str], src: str, dst: str, tmp: str) -> tuple[int | None, str | None]:
    """The tool's own peak resident set (bytes), through GNU time; or None and why not."""
    exe = gnu_time()
    if exe is None:
        return None, "not measured: needs GNU time (/usr/bin/time), which is not installed"
    out = os.path.join(tmp, "maxrss")
    r = run_tool([exe, "-f", "%M", "-o", out, *argv], src, dst)
    try:
        with open(out) as f:
            kib = int(f.read().split()[-1])
    except (OSError, ValueError, IndexError):
        return None, f"not measured: GNU time gave no figure (exit {r.status})"
    return kib * 1024, None


def library_first(codec: str, level: str, threads: int, src: str, out: str) -> dict[str, Any]:
    """One compress call of a library codec in a fresh interpreter, writing `out`: its wall and CPU seconds, and
    the peaks of that call and of one decompress call (see iolens.compress.peak).  Raises ToolFailed."""
    argv = [sys.executable, "-m", "iolens.compress.peak", codec, level, str(threads), src, out]
    try:
        p = subprocess.run(argv, capture_output=True, text=True, timeout=3600, stdin=subprocess.DEVNULL)
        got = dict(json.loads(p.stdout.strip().splitlines()[-1]))
    except (OSError, subprocess.TimeoutExpired, ValueError, IndexError):
        raise ToolFailed("the measuring interpreter failed") from None
    if got.get("wall_s") is None or not os.path.exists(out):
        raise ToolFailed(str(got.get("why") or "the measuring child failed"))
    return got


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
