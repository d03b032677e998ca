"""Replay a plan on targets: a fresh iolens-bench-* directory per target (bench's safety rails), the native
replayer, and the result per target: replayed wall time, I/O time by class, and fidelity."""

from __future__ import annotations

import json
import os
import tempfile
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any


from iolens import workdirs
from iolens.workspace.rails import WorkDirs, check_space, reap_targets, signals_as_exceptions
from iolens.workspace.target import Target
from iolens.capture.reader import Capture
from iolens.errors import TargetError
from iolens.pagecache import make_cold
from iolens.whatif.engine import ReplayError, run
from iolens.whatif.plan import Plan
from iolens.whatif.schedule import peak_bytes

CLASSES = ("READ", "WRITE", "META", "SYNC", "STREAM")


@dataclass
class TargetReplay:
    target: str
    wall_s: float
    class_s: dict[str, float]
    ops: int
    errors: int
    dependency_timeouts: int
    first_error: str = ""          # the first failed op and why ("WRITE: No space left on device"), "" when none
    same_storage: bool = False
    fidelity: float | None = None  # replayed / original - 1, on the storage the capture was taken on
    layout_s: float = 0.0          # laying out the input files (not part of wall_s)
    setup_s: float = 0.0           # the replayer reading its job (not part of wall_s)
    # per replayed thread: begin/end (since the replay started), waited compute gaps, behind schedule,
    # waited for other threads, inside file operations (seconds)
    threads: list[dict[str, float]] = field(default_factory=list)
    thread_cpu: list[float] = field(default_factory=list)  # per thread: CPU burnt for the gaps' on-CPU share (s)
    # the CPU's cost of the compute burn's work here against while the capture was taken (1.1: 10% slower); None
    # when the compute was not burnt as work (no CPU probe in the capture, --speed max, nothing burnt)
    cpu_ratio: float | None = None
    # how a cold replay was made cold (pagecache.make_cold's method: "drop-caches", the whole page cache with its
    # dentries and inodes; "fadvise", the laid-out files' pages only); None warm
    cold: str | None = None
    raw: dict[str, Any] = field(default_factory=dict)


def capture_devices(cap: Capture, plan: Plan) -> set[int]:
    """The devices the step's replayed files were on when it was captured."""
    paths = {f.path for f in plan.files}
    devs: Counter[int] = Counter()
    for p in cap.processes:
        for f in p.files:
            if f["path"] in paths and f["dev"]:
                devs[int(f["dev"])] += 1
    return set(devs)


def preflight(plan: Plan, t: Target) -> None:
    """TargetError (one line) when t has not the room for the plan's layout and writes."""
    room = "free space on it, or replay on a larger target"
    check_space(t, peak_bytes(plan), len(plan.files) + 16, "the replay",
                (room, room.replace("space", "inodes")))


JOB_PREFIX = "iolens-replay-"  # its job file and op list, in the temp directory


def reap_leftovers(targets: list[Target]) -> workdirs.Reaped:
    """What killed replays and predictions left: their iolens-bench-* directories on the targets, their job
    directories (an op list is 48 bytes an op), the profiler-cost probe's directory and its recordings' staging."""
    from iolens.capture.record import reap_staging
    from iolens.whatif.overhead import COST_PREFIX, cost_base
    from iolens.whatif.calibration import CAL_PREFIX

    reaped = reap_targets(targets)
    reaped += workdirs.reap_each([(tempfile.gettempdir(), JOB_PREFIX), (tempfile.gettempdir(), CAL_PREFIX),
                                  (cost_base(), COST_PREFIX)], shared=True)
    reaped += reap_staging()
    return reaped


def replay_on(plan: Plan, t: Target, *, speed: str = "recorded", cache: str = "warm", log: str | None = None,
              home_devs: set[int] | None = None, dependency_timeout_s: float | None = None,
              evict: str = "auto") -> TargetReplay:
    """Lays out and replays the plan in a new directory on t, removed afterwards (also on Ctrl-C).
    `dependency_timeout_s`: how long every live replay thread may wait before the waits are given up (default
    the replayer's, 10 s).

    Cold, the replayer flushes each laid-out file and drops its pages; `evict` "auto" then also drops the whole page
    cache between the layout and the timed part where allowed (root; pagecache.make_cold), so that the replay
    starts as a cold real run does (the benchmarks' drop the whole cache): the laid-out tree's inodes, directory
    entries and directory blocks are read back from the storage too.  Without it a cold `find | xargs md5sum` over
    12,000 files replayed 33-44% faster than its cold real runs.  "fadvise": the files' pages only (the
    calibration's classes, whose first touch of existing metadata whatif/coldtree.py prices apart)."""
    preflight(plan, t)
    cold: list[str] = []

    def drop() -> None:  # the replayer already dropped the files' pages: the fallback has nothing left to evict
        cold.append(make_cold([], evict))

    hold = cache == "cold" and evict != "fadvise"
    with signals_as_exceptions(), WorkDirs() as wd, workdirs.temporary(None, JOB_PREFIX) as tmp:
        d = wd.create(t)
        ops_path = Path(tmp) / "ops.bin"
        ops_path.write_bytes(plan.ops.tobytes())
        job_path = Path(tmp) / "job.json"
        job = plan.job(str(d), str(ops_path), speed=speed, cache=cache, log=log,
                       dependency_timeout_s=dependency_timeout_s)
        job_path.write_text(json.dumps(job | {"hold_after_layout": True} if hold else job))
        res = run(str(job_path), preexec=t.preexec, after_layout=drop if hold else None)
    if res.get("status") == "interrupted":
        raise KeyboardInterrupt
    if res.get("status") != "ok":
        msg = res.get("message") or "failed"
        if any(w in msg for w in ("No space", "Read-only", "Permission denied", "Disk quota")):
            raise TargetError(f"{t.spec}: the replay failed: {msg}")
        raise ReplayError(f"the replay on {t.spec} failed: {msg}")
    same = bool(home_devs) and t.path is not None and os.stat(t.path).st_dev in (home_devs or set())
    wall = res["wall_ns"] / 1e9
    out = TargetReplay(t.spec, wall, {k: res["class_ns"].get(k, 0) / 1e9 for k in CLASSES}, res["ops"],
                       res["errors"], res["dependency_timeouts"], first_error=res.get("first_error", ""),
                       same_storage=same,
                       layout_s=res.get("layout_ns", 0) / 1e9, setup_s=res.get("setup_ns", 0) / 1e9,
                       threads=[{k.removesuffix("_ns"): v / 1e9 for k, v in th.items()}
                                for th in res.get("thread_times", [])],
                       thread_cpu=[v / 1e9 for v in res.get("thread_cpu_ns", [])],
                       cold=(cold[0] if cold else "fadvise") if cache == "cold" else None, raw=res)
    if same and plan.wall_s > 0:
        out.fidelity = wall / plan.wall_s - 1.0
    if plan.cpu_ns_per_block > 0 and res.get("burn_blocks"):
        out.cpu_ratio = res["burn_block_cpu_ns"] / res["burn_blocks"] / plan.cpu_ns_per_block
    return out
