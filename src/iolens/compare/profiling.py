"""--profile: run each compared command under the iolens profiler and keep a small per-run summary.

Per run we keep, per phase (one invocation of a program: minimap2 index and minimap2 map are two), the summed wall,
own (wall minus waiting for children), CPU and I/O-wall time, and the run's I/O time breakdown by category.
The capture itself is discarded.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any

from iolens.analysis.summary import summarize
from iolens.capture.record import Recording, Warn, staging_base
from iolens.native import preload_library

if TYPE_CHECKING:
    from iolens.analysis.model import RunSummary
    from iolens.capture.reader import Capture
    from iolens.compare.runner import Measured


class Profiler:
    """One `Recording` per run; the runner starts the command itself (through its launcher), so the interposer
    travels in IOLENS_COMPARE_PRELOAD, which the launcher moves into LD_PRELOAD for the command only."""

    def __init__(self, warn: Warn | None = None) -> None:
        preload_library()  # a clear error, before any run, when iolens was installed without its native part
        _base, note = staging_base()
        if note and warn:
            warn(f"iolens: note: {note}")  # said once, not once per run

    def start(self, command: str) -> tuple[dict[str, str], Recording]:
        rec = Recording(["/bin/sh", "-c", command], preload_var="IOLENS_COMPARE_PRELOAD")
        return rec.environment(), rec

    def finish(self, rec: Recording, measured: Measured, dirs: dict[str, Any] | None = None) -> dict[str, Any] | None:
        """The run's phase summary; with dirs (key -> directory), also the bytes written under each."""
        result = rec.finish(measured.exit_status, measured.wall_s)
        if result.capture is None:
            return None
        out = phase_summary(summarize(result.capture))
        if dirs:
            out["place_bytes"] = bytes_written_under(result.capture, dirs)
        return out


def bytes_written_under(cap: Capture, dirs: dict[str, Any]) -> dict[str, int]:
    """Bytes the profiled processes wrote to files under each directory (files deleted since included)."""
    prefixes = {key: os.path.join(str(d), "") for key, d in dirs.items()}
    out = dict.fromkeys(dirs, 0)
    for p in cap.processes:
        for f in p.files:
            for key, pre in prefixes.items():
                if f["path"].startswith(pre):
                    out[key] += f["bytes_written"]
    return out


MAX_INVOCATIONS = 20  # invocations of one program beyond this are summed into one phase "NAME #20+"


def _phase_names(images: list, every: list) -> list[str]:
    """The phase of each image: its program, and which invocation of it ("minimap2 #2") when it ran more than once.

    An invocation is an image that exec() started.  A process forked without exec (a subshell) is a copy of
    its parent (same program, same arguments) and belongs to its parent's phase.
    """
    order = sorted(range(len(images)), key=lambda i: images[i].start_s)
    execed_pids = {p.pid for p in every if p.ended == "execed"}
    by_pid: dict[int, list[int]] = {}
    for i in order:
        by_pid.setdefault(images[i].pid, []).append(i)
    parent: dict[int, int] = {}  # fork copy -> the image it copies
    for i in order:
        p = images[i]
        if p.pid in execed_pids or by_pid[p.pid][0] != i:
            continue  # exec started it
        same = [j for j in by_pid.get(p.ppid, []) if images[j].name == p.name and images[j].argv == p.argv
                and images[j].start_s <= p.start_s]
        if same:
            parent[i] = same[-1]
    ordinal: dict[int, int] = {}
    seen: dict[str, int] = {}
    for i in order:
        if i not in parent:
            seen[images[i].name] = ordinal[i] = seen.get(images[i].name, 0) + 1
    names: list[str] = [""] * len(images)
    for i in order:
        root = i
        while root in parent:
            root = parent[root]
        name = images[root].name
        k = ordinal[root]
        if seen[name] == 1:
            names[i] = name
        else:
            names[i] = f"{name} #{k}" if k < MAX_INVOCATIONS else f"{name} #{MAX_INVOCATIONS}+"
    return names


def phase_summary(s: RunSummary) -> dict[str, Any]:
    """RunSummary -> {"phases": {name: {...}}, "io": {...}} (plain data).

    A phase is one invocation of a program (see _phase_names): two runs of minimap2 in one command (index,
    then map) are two phases, "minimap2 #1" and "minimap2 #2".  A phase's own time is the image's wall time
    minus the time its child processes ran (a shell that waits for its pipeline does not count twice), capped
    by the summary's own time; images that ended by exec() continue in the next image of the same pid and are
    left out.
    """
    images = [p for p in s.tree if p.ended != "execed"]
    kids: dict[int, float] = {}
    for p in images:
        if p.ppid != p.pid:
            kids[p.ppid] = kids.get(p.ppid, 0.0) + p.wall_s
    phases: dict[str, dict[str, float]] = {}
    excl_total = 0.0
    names = _phase_names(images, s.tree)
    for p, name in sorted(zip(images, names), key=lambda pn: pn[0].start_s):
        excl = min(p.own_s, max(0.0, p.wall_s - kids.get(p.pid, 0.0)))
        excl_total += excl
        ph = phases.setdefault(name, {"count": 0, "wall_s": 0.0, "own_s": 0.0, "cpu_s": 0.0, "io_wall_s": 0.0})
        ph["count"] += 1
        ph["wall_s"] += p.wall_s
        ph["own_s"] += excl
        ph["cpu_s"] += p.cpu_s
        ph["io_wall_s"] += min(p.io_wall_s, excl)
    io: dict[str, float | None] = {f"{c}_s": v for c, v in s.cat_wall_s.items()}
    io_total = sum(s.cat_wall_s.values())
    io.update(stream_s=s.stream_s, compute_s=max(0.0, excl_total - io_total - s.stream_s), process_s=excl_total,
              bytes_read=s.bytes_read, bytes_written=s.bytes_written, coverage=s.coverage)
    return {"phases": phases, "io": io, "processes": s.processes}
