#!/usr/bin/env python3
"""Where the profiler's cost in the small-file step goes, phase by phase, and how much of it a replay takes out.

    python benchmarks/small_file_phases.py [--rounds 9] [--dir /dev/shm] [--event-ns 40] [--path-ns 450]

The small-file step of benchmarks/whatif_accuracy.py (a shell writing 2,000 files, `ls`, `cat` of them all,
`rm -r`) is cut into its four phases; each runs plain and profiled with `--trace` (interleaved pairs, order
shuffled, wall time; page cache warm, in a directory under --dir, tmpfs by default).  Per phase it prints the
medians, the profiled run's events and those that name a path, the recorder's own time it timed after its
calls (EVENT own_ns), what the replay takes out of the gaps for them (per event the figure for its kind,
--event-ns and --path-ns, the defaults being the replay's, or its own time where more, and each image's time
before its first event: timeline.recording_cost),
and what is left per file: the profiler's cost the replay keeps, so that a replay of the capture runs longer than
the plain step.
"""

from __future__ import annotations

import argparse
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from iolens import _format as F
from iolens.capture.record import Recording
from iolens.whatif.plan import TRACE_EVENT_OVERHEAD_NS, TRACE_PATH_OVERHEAD_NS
from iolens.whatif.timeline import PATH_NAMING_OPS, event_costs, recording_cost

sys.path.insert(0, str(Path(__file__).resolve().parent))
from whatif_accuracy import OUTPUTS, STEPS, median_index  # noqa: E402

# the step's script: the shell's creating loop, then `ls`, `cat` and `rm -r`, each after the loop (untimed)
CREATE, _, REST = STEPS["small-files"][-1].rpartition("; ")
FILES = int(CREATE.split("-lt ")[1].split()[0])
PHASES = {"create": ("", CREATE), **{cmd.split()[0]: (CREATE, cmd) for cmd in REST.split(" && ")}}


def once(work: Path, before: str, cmd: str, profiled: bool, costs: np.ndarray) -> tuple[float, int, int, float, float]:
    """One run of a phase (after its set-up, untimed): wall seconds, events, events that name a path, and the
    seconds of the recorder's own time and of what the replay takes out at `costs` (event_costs)."""
    for name in OUTPUTS:
        if (work / name).is_dir():
            shutil.rmtree(work / name)
        else:
            (work / name).unlink(missing_ok=True)
    if before:
        subprocess.run(["sh", "-c", before], cwd=work, check=True)
    argv = ["sh", "-c", cmd]
    if not profiled:
        t = time.perf_counter()
        subprocess.run(argv, cwd=work, check=True)
        return time.perf_counter() - t, 0, 0, 0.0, 0.0
    cap = Recording(argv, trace=True, cwd=str(work)).run().capture
    evs = [p.events for p in cap.processes if p.events is not None]
    ops = np.concatenate([ev["op"] for ev in evs])
    named = int(np.isin(ops, [i for i, (n, _c) in enumerate(F.OPS) if n in PATH_NAMING_OPS]).sum())
    own = sum(int(ev["own_ns"].astype(np.int64).sum()) for ev in evs) / 1e9
    out = sum(int(recording_cost(ev, costs).sum()) for ev in evs) / 1e9
    return float(cap.meta["wall_s"]), len(ops), named, own, out


def parse_args(doc: str, extra=None) -> argparse.Namespace:
    """The arguments of this benchmark and of process_starts.py: --rounds, --dir (tmpfs by default; exits 2 with
    one line when it is not a directory), --event-ns and --path-ns (the replay's costs by default); `extra` adds
    a script's own to the parser."""
    ap = argparse.ArgumentParser(description=doc, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rounds", type=int, default=9)
    ap.add_argument("--dir", type=Path, default=Path("/dev/shm"))
    ap.add_argument("--event-ns", type=int, default=TRACE_EVENT_OVERHEAD_NS)
    ap.add_argument("--path-ns", type=int, default=TRACE_PATH_OVERHEAD_NS)
    if extra:
        extra(ap)
    a = ap.parse_args()
    if not a.dir.is_dir():
        print(f"iolens: error: --dir {a.dir}: no such directory", file=sys.stderr)
        raise SystemExit(2)
    return a


def main() -> int:
    a = parse_args(__doc__)
    work = Path(tempfile.mkdtemp(prefix="iolens-phases-", dir=a.dir))
    costs = event_costs(a.event_ns, a.path_ns)
    try:
        res: dict[str, dict[str, list]] = {k: {"plain": [], "prof": [], "ev": []} for k in PHASES}
        for _ in range(a.rounds):
            for phase, (before, cmd) in PHASES.items():
                for profiled in random.sample([False, True], 2):
                    wall, ev, named, own, out = once(work, before, cmd, profiled, costs)
                    res[phase]["prof" if profiled else "plain"].append(wall)
                    if profiled:
                        res[phase]["ev"].append((ev, named, own, out))
        print(f"# {a.rounds} interleaved pairs per phase, wall time, in {a.dir} ({FILES} files); taken out per event "
              f"the figure for its kind, {a.event_ns} ns an event, {a.path_ns} ns one that names a path, or the "
              "recorder's own time after it where more; own and taken out: the median profiled run's")
        print(f"{'phase':<7} {'plain':>9} {'--trace':>9} {'extra':>8} {'events':>7} {'paths':>6} {'own':>8} "
              f"{'taken out':>9} {'left':>8} {'left/file':>10}")
        for phase, v in res.items():
            plain, prof = statistics.median(v["plain"]), statistics.median(v["prof"])
            ev, named, own, out = v["ev"][median_index(v["prof"])]
            left = prof - plain - out
            print(f"{phase:<7} {plain * 1e3:7.1f}ms {prof * 1e3:7.1f}ms {(prof - plain) * 1e3:6.1f}ms {ev:>7} "
                  f"{named:>6} {own * 1e3:6.1f}ms {out * 1e3:7.1f}ms {left * 1e3:+6.1f}ms {left / FILES * 1e6:+8.2f}µs")
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
