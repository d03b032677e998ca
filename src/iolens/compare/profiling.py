"""--profile: run each compared command under the iolens profiler and keep a small per-run summary.

Per run we keep, per process image name (a "phase": the child processes of the tool), the summed wall,
own (wall minus waiting for children), CPU and I/O-wall time, and the run's I/O time breakdown by category.
The capture itself is discarded.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import Any

from iolens import __version__
from iolens.analysis.summary import summarize
from iolens.capture.merge import merge_parts
from iolens.capture.reader import decode
from iolens.commands.profile import staging_dir
from iolens.native import preload_library
from iolens.sysinfo import mounts


class Profiler:
    def __init__(self) -> None:
        self.lib = preload_library()  # raises a clear error when iolens was installed without its native part
        self.mounts = mounts()

    def start(self) -> tuple[dict[str, str], Path]:
        stage = staging_dir()
        env = dict(os.environ)
        # the launcher moves this into LD_PRELOAD for the command only (see runner.LAUNCHER)
        env["IOLENS_COMPARE_PRELOAD"] = f"{self.lib} {env['LD_PRELOAD']}" if env.get("LD_PRELOAD") else str(self.lib)
        env["IOLENS_DIR"] = str(stage)
        env["IOLENS_PARENT_PID"] = str(os.getpid())
        env["IOLENS_TRACE"] = "0"
        return env, stage

    def finish(self, stage: Path, command: str, measured) -> dict[str, Any] | None:
        meta = {
            "tool": "iolens",
            "iolens_version": __version__,
            "command": ["/bin/sh", "-c", command],
            "parent_pid": os.getpid(),
            "wall_s": measured.wall_s,
            "exit_status": measured.exit_status,
            "mounts": self.mounts,
        }
        try:
            target = stage / "capture.iolens"
            merge_parts(stage, target, meta)
            cap = decode(target.read_bytes(), str(target))
            return phase_summary(summarize(cap))
        except OSError:
            return None
        finally:
            shutil.rmtree(stage, ignore_errors=True)


def phase_summary(s) -> dict[str, Any]:
    """RunSummary -> {"phases": {name: {...}}, "io": {...}} (plain data).

    A phase's own time is the image's wall time minus the time its child processes ran (a shell that
    waits for its pipeline does not count twice), capped by the summary's own time; images that ended
    by exec() continue in the next image of the same pid and are left out.
    """
    images = [p for p in s.tree if p.ended != "execed"]
    kids: dict[int, float] = {}
    for p in images:
        if p.ppid != p.pid:
            kids[p.ppid] = kids.get(p.ppid, 0.0) + p.wall_s
    phases: dict[str, dict[str, float]] = {}
    excl_total = 0.0
    for p in images:
        excl = min(p.own_s, max(0.0, p.wall_s - kids.get(p.pid, 0.0)))
        excl_total += excl
        ph = phases.setdefault(p.name, {"count": 0, "wall_s": 0.0, "own_s": 0.0, "cpu_s": 0.0, "io_wall_s": 0.0})
        ph["count"] += 1
        ph["wall_s"] += p.wall_s
        ph["own_s"] += excl
        ph["cpu_s"] += p.cpu_s
        ph["io_wall_s"] += min(p.io_wall_s, excl)
    io = {f"{c}_s": v for c, v in s.cat_wall_s.items()}
    io_total = sum(io.values())
    io.update(stream_s=s.stream_s, compute_s=max(0.0, excl_total - io_total - s.stream_s), process_s=excl_total,
              bytes_read=s.bytes_read, bytes_written=s.bytes_written, coverage=s.coverage)
    return {"phases": phases, "io": io, "processes": s.processes}
