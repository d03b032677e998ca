#!/usr/bin/env python3
"""How close a replay of a step that starts many short processes comes to the step's plain runs.

    python benchmarks/process_starts.py [--rounds 9] [--children 40] [--dir /dev/shm] [--event-ns N --path-ns N]

The step is a shell loop of --children `cat`s of a 100-byte file (a pipeline's glue: each child lives well under
a millisecond).  Each round, in a directory under --dir (tmpfs by default; warm page cache, nothing emulated):
a plain run, a profiled run with `--trace`, and replays of that capture with two plans in alternating order: as
built (the profiler's time before each image's first event taken out: timeline.before_first) and without that
(the gaps as they were before it).  It prints the medians and the median of the per-round ratios replay / plain.
The per-event costs default to the plan's (small_file_phases.parse_args).
"""

from __future__ import annotations

import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from iolens.workspace.target import resolve
from iolens.capture.record import Recording
from iolens.whatif import plan as plan_mod
from iolens.whatif import timeline
from iolens.whatif.plan import build_plan
from iolens.whatif.replay import replay_on

sys.path.insert(0, str(Path(__file__).resolve().parent))
from small_file_phases import parse_args  # noqa: E402


def _plan(cap, with_images: bool, ev_ns: int, path_ns: int):
    """The capture's plan, with or without the profiler's time before each image's first event taken out."""
    keep = timeline.before_first
    if not with_images:
        plan_mod.before_first = timeline.before_first = lambda ev: np.zeros(len(ev), dtype=np.int64)
    try:
        return build_plan(cap, event_overhead_ns=ev_ns, path_overhead_ns=path_ns)
    finally:
        plan_mod.before_first = timeline.before_first = keep


def main() -> int:
    a = parse_args(__doc__, lambda ap: ap.add_argument("--children", type=int, default=40))
    top = Path(tempfile.mkdtemp(prefix="iolens-starts-", dir=a.dir))
    work, target = top / "step", top / "target"
    work.mkdir()
    target.mkdir()
    (work / "small").write_bytes(b"x" * 100)
    argv = ["sh", "-c", f"i=0; while [ $i -lt {a.children} ]; do cat small >/dev/null; i=$((i+1)); done"]
    rows = []
    try:
        for r in range(a.rounds):
            t = time.perf_counter()
            subprocess.run(argv, cwd=work, check=True)
            plain = time.perf_counter() - t
            cap = Recording(argv, trace=True, cwd=str(work)).run().capture
            walls = {}
            for with_images in ((True, False) if r % 2 else (False, True)):
                walls[with_images] = replay_on(_plan(cap, with_images, a.event_ns, a.path_ns),
                                               resolve(str(target))).wall_s
            rows.append((plain, float(cap.meta["wall_s"]), walls[True], walls[False]))
    finally:
        shutil.rmtree(top, ignore_errors=True)

    def med(k: int) -> float:
        return statistics.median(x[k] for x in rows) * 1e3

    def ratio(k: int) -> float:
        return statistics.median(x[k] / x[0] for x in rows)

    print(f"# {a.rounds} rounds, a shell loop of {a.children} cats of a 100-byte file in {a.dir} (warm cache, "
          f"not emulated); costs taken out per event {a.event_ns} ns, {a.path_ns} ns one that names a path")
    print(f"{'':<32} {'median':>9} {'/ plain':>8}")
    print(f"{'plain':<32} {med(0):7.1f}ms {1:8.3f}")
    print(f"{'profiled (--trace)':<32} {med(1):7.1f}ms {ratio(1):8.3f}")
    print(f"{'replay':<32} {med(2):7.1f}ms {ratio(2):8.3f}")
    print(f"{'replay, images not taken out':<32} {med(3):7.1f}ms {ratio(3):8.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
