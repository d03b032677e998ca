"""The profiler's own cost per traced event on this machine, measured now.

A `--trace` capture's compute gaps hold the interposer's cost of recording the events around them; a replay takes
it out (plan.TRACE_EVENT_OVERHEAD_NS and TRACE_PATH_OVERHEAD_NS are this measurement on a quiet 2-core VM).  The
figures move with the machine and its load (84-163 ns and 0.73-1.28 us on the same VM on a busy day), so
`iolens replay` and `predict` measure them once per host and iolens version (for_capture, stored in the results
store) and benchmarks/whatif_accuracy.py again before it builds its replays.

Each probe times its own loop inside the process (no interpreter start-up in the figure, which swamped the
signal when whole-process walls were compared), profiled and plain in interleaved pairs, and takes medians:
- an event: 1-byte writes to a file on tmpfs (one event each);
- an event that names a path (timeline.PATH_NAMING_OPS): creating opens, stats and unlinks of new files, their
  closes taken out at the per-event figure.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from iolens import __version__, workdirs
from iolens.capture.record import Recording
from iolens.whatif.engine import ReplayError
from iolens.whatif.plan import TRACE_EVENT_OVERHEAD_NS, TRACE_PATH_OVERHEAD_NS

if TYPE_CHECKING:
    from iolens.store import ResultsStore

# One program, two timed loops; it writes each loop's seconds to ./result.  Run from a fresh directory.
_PROBE = """
import os, sys, time
n_ev, n_path = int(sys.argv[1]), int(sys.argv[2])
fd = os.open("ev", os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
b = b"x"
t = time.perf_counter()
for _ in range(n_ev):
    os.write(fd, b)
ev = time.perf_counter() - t
os.close(fd)
os.mkdir("d")
names = [f"d/f{i}" for i in range(n_path)]
t = time.perf_counter()
for p in names:
    os.close(os.open(p, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644))
    os.stat(p)
for p in names:
    os.unlink(p)
path = time.perf_counter() - t
with open("result", "w") as f:
    f.write(f"{ev} {path}")
"""


@dataclass
class ProfilerCost:
    event_ns: float          # an event, outside the recorded call
    path_ns: float           # an event that names a path
    pairs: int               # interleaved plain/profiled pairs behind the medians
    spread: float            # the path figure's relative spread (interquartile range over median) across pairs


def _run(d: Path, n_ev: int, n_path: int, profiled: bool) -> tuple[float, float]:
    """One probe run in a fresh directory below d: (event loop s, path loop s)."""
    w = Path(tempfile.mkdtemp(dir=d))
    try:
        argv = [sys.executable, "-c", _PROBE, str(n_ev), str(n_path)]
        if profiled:
            status = Recording(argv, trace=True, cwd=str(w)).run().status
        else:
            status = subprocess.run(argv, cwd=w, capture_output=True).returncode
            status = 128 - status if status < 0 else status  # killed by signal N: -N
        if status in (128 + signal.SIGINT, 128 + signal.SIGTERM, 128 + signal.SIGHUP):
            raise KeyboardInterrupt  # the probe got the user's Ctrl-C (or was stopped) with this process
        try:
            ev, path = (float(x) for x in (w / "result").read_text().split())
        except (OSError, ValueError):
            raise ReplayError(f"the profiler-cost probe failed (exit status {status}); run the command again "
                              "once the machine has room in /dev/shm and /tmp") from None
        return ev, path
    finally:
        shutil.rmtree(w, ignore_errors=True)


def measure(pairs: int = 9, n_ev: int = 100_000, n_path: int = 4000) -> ProfilerCost:
    """The profiler's cost per event and per path-naming event here, now (medians of `pairs` interleaved pairs;
    the probe's files on tmpfs where there is one)."""
    d = workdirs.make(cost_base(), COST_PREFIX)
    try:
        ev_d: list[float] = []
        path_d: list[float] = []
        for profiled in (False, True):  # untimed: the first runs pay for cold caches
            _run(d, n_ev // 10, n_path // 10, profiled)
        # Recording an event costs something: a median at or below 0 is the machine's noise swamping the
        # difference, so more pairs are taken (up to four times as many) rather than storing 0.
        while len(ev_d) < 4 * pairs and (len(ev_d) < pairs or statistics.median(ev_d) <= 0):
            order = (False, True) if len(ev_d) % 2 == 0 else (True, False)
            res = {p: _run(d, n_ev, n_path, p) for p in order}
            plain, prof = res[False], res[True]
            ev_d.append((prof[0] - plain[0]) / n_ev * 1e9)
            path_d.append(prof[1] - plain[1])
        event_ns = max(0.0, statistics.median(ev_d))
        # the path loop's events: per file a creating open, a close, a stat and an unlink; all but the close
        # name a path
        per_path = [(dt * 1e9 - n_path * event_ns) / (3 * n_path) for dt in path_d]
        path_ns = max(event_ns, statistics.median(per_path))
        q = np.percentile(per_path, [25, 75])
        return ProfilerCost(event_ns, path_ns, len(ev_d), float((q[1] - q[0]) / path_ns) if path_ns else 0.0)
    finally:
        workdirs.discard(d)


COST_PREFIX = "iolens-cost-"  # the probe's directory, in cost_base()


def cost_base() -> str:
    return "/dev/shm" if os.path.isdir("/dev/shm") else tempfile.gettempdir()


COST_KIND = "profiler-cost"


def _said(ev: int, path: int, why: str) -> tuple[int, int, str]:
    return ev, path, f"the profiler's cost taken out of the gaps: {ev} ns an event, {path} ns one that names a " \
                     f"path ({why})"


def defaults(why: str) -> tuple[int, int, str]:
    """The plan's default costs (measured on a quiet VM), and a line saying why they were taken."""
    return _said(TRACE_EVENT_OVERHEAD_NS, TRACE_PATH_OVERHEAD_NS, why)


def for_capture(host: str | None, store: ResultsStore, *, refresh: bool = False) -> tuple[int, int, str]:
    """The profiler's cost per event and per path-naming event to take out of a capture's gaps, and a line saying
    where it comes from: measured on this host (stored in the results store and reused for this iolens version)
    when the capture was taken here (`host`: its meta's), else the defaults."""
    here = socket.gethostname()
    if host != here:
        return defaults("the capture was taken on another host")
    found = None if refresh else store.reusable(COST_KIND, here, {"iolens": __version__}, limit=50)
    if found is None:
        cost = measure(pairs=5)
        if cost.event_ns <= 0:  # not stored: the next use measures again
            return defaults(f"its measurement here was lost in the machine's noise over {cost.pairs} pairs")
        found = {"event_ns": cost.event_ns, "path_ns": cost.path_ns, "spread": cost.spread}
        rid = store.add_run(COST_KIND, {"iolens": __version__}, {"iolens_version": __version__, "host": here,
                                                                 "time": time.time()})
        store.add_result(rid, "per_event_ns", found)
    return _said(int(round(found["event_ns"])), int(round(found["path_ns"])), "measured on this host")
