"""What a replay or a prediction cannot see in a capture, said in its notes rather than only in the docs."""

from __future__ import annotations

import numpy as np

from iolens import _format as F
from iolens.analysis.processes import images, proc_name, run_times
from iolens.capture.reader import Capture
from iolens.sysinfo import steal_notes


def unsaved(cap: Capture) -> str | None:
    """The process images that made calls but never saved their end: killed by SIGKILL, or still running when the
    capture ended.  Their records after their last save (their trace, the end of their counters) are missing."""
    cut = [p for p in cap.processes if not p.finalized and sum(p.op_count)]
    if not cut:
        return None
    names = ", ".join(f"{proc_name(p)} [{p.pid}]" for p in cut[:3]) + (f" and {len(cut) - 3} more"
                                                                         if len(cut) > 3 else "")
    return (f"{len(cut)} process image(s) never saved their end ({names}: killed by SIGKILL, or still running when "
            "the capture ended): what they did after their last save is missing")


def plan_notes(cap: Capture, burnt: bool) -> list[str]:
    """The replay plan's notes on its capture; `burnt`: the compute gaps are burnt on the CPU (--speed recorded)."""
    notes = []
    if any(p.fields.get("trace_lost") for p in cap.processes):
        notes.append("some trace events were lost while recording; the replay misses them")
    cut = unsaved(cap)
    if cut:
        notes.append(f"{cut}, and the replay is short by it")
    return notes + (steal_notes(cap.meta, "the replay does not wait it out") if burnt else [])


def model_notes(cap: Capture) -> list[str]:
    """What a prediction from this capture cannot see: a cut capture, images that never saved their end, and bytes
    the kernel moved that no traced call accounts for (as `iolens report`'s coverage counts them: a shell's
    counters include the children it reaped, which are not counted twice)."""
    out = []
    if cap.problems:
        out.append("the capture is partial (damaged or cut short): what came after the damage is not in the model, "
                   "and the prediction is short by it")
    cut = unsaved(cap)
    if cut:
        out.append(f"{cut}, and the prediction is short by it")
    rt = run_times(images(cap))
    if rt.coverage is not None:
        missing = (rt.kernel_read + rt.kernel_written) * (1.0 - rt.coverage)
        if rt.coverage < 0.95 and missing > 1 << 20:
            out.append(f"{missing / 1e6:.1f} MB moved by the kernel were not attributed to traced calls (coverage "
                       f"{100 * rt.coverage:.0f}%): their cost is not modelled")
    return out


# A step is of a shape the held-out corpus (benchmarks/whatif_corpus.toml) covered poorly when this share of its wall
# time or more had threads of one process side by side (a thread computing while another waits on storage), or its
# processes burnt this much CPU in threads that made no file operation (workers the trace does not see): the
# replay holds those threads' dependencies only as recorded times, and the prediction takes their overlap as fixed.
SIDE_BY_SIDE_SHARE = 0.2
# The shape that the tuning half's largest replay errors had in common: the profiler's own cost (per traced event and
# per process, which the replay and the prediction estimate and take out) this share of the capture's wall time or
# more.  The steps at 5% or more (find | xargs over 12,000 files: 7.7%; 40 tabix processes: 9.0%; tar's creates:
# 7.0%) were replayed with a median absolute error of 45% on the tuning half, the other eight with 20% (load 4-8,
# home storage, warm and cold); those SIDE_BY_SIDE_SHARE marks (bgzip, pigz) replayed within 4.6-30%.
RECORDING_SHARE = 0.05
# Two more shapes the tuning half's worst cells had (home storage, warm and cold, load 4-11, 2026-11-29, before the
# cold-metadata class): a step this short (its capture's wall time) is mostly fixed costs (starting processes, the
# profiler's per-process cost, the replayer's set-up) and the machine's noise: faidx (0.12 s), the Python random reads
# (0.15 s) and 40 tabix queries (0.19 s) were replayed 22-71% off and predicted 37-80% off; the other steps but the
# two below, 0-48% and 1-49%.
SHORT_STEP_S = 0.3
# and a step that creates this many files: on a disk filesystem a create's cost depends on what was deleted just
# before (ext4 without a journal walks past every inode deleted in the last 30 s: docs/whatif.md, "What the machine
# does by itself"), which the capture, the replay and the real runs meet in different measure: tar extracting 3,000
# files, captured back to back at 2.66 s, ran for real in 0.34 s (+659% to +763%); by hand, the same extract right
# after the previous one's removal took 2.0-7.6 s, and 40 s after it 0.47-0.86 s (load 6-11).
MANY_CREATES = 1000


def created_files(cap: Capture) -> int:
    """The files and directories the step's processes created (each path once)."""
    made = F.FILE_FLAGS["CREATED"][0]
    return len({f["path"] for p in cap.processes for f in p.files if f["flags"] & made})


def side_by_side_s(cap: Capture) -> float:
    """Seconds during which two or more traced threads of one process were alive (between their first and last
    operation) at once, summed over the processes."""
    total = 0.0
    for p in cap.processes:
        ev = p.events
        if ev is None or not len(ev) or "tid" not in (ev.dtype.names or ()):
            continue
        starts, ends = [], []
        for th in np.unique(ev["tid"]):
            e = ev[ev["tid"] == th]
            starts.append(int(e["start_mono"].min()))
            ends.append(int((e["start_mono"].astype(np.int64) + e["dur_ns"].astype(np.int64)).max()))
        if len(starts) < 2:
            continue
        edges = sorted([(s, 1) for s in starts] + [(e, -1) for e in ends])
        alive, last = 0, 0
        for t, d in edges:
            if alive >= 2:
                total += (t - last) / 1e9
            alive, last = alive + d, t
    return total


def shape_cautions(cap: Capture, unreplayed_cpu_s: float = 0.0, recording_s: float = 0.0) -> list[str]:
    """What makes this step one of a shape the held-out corpus covered poorly, said so that a replay's or a
    prediction's figure is read with that in mind (docs/whatif.md, "Held-out corpus").  `recording_s`: the
    profiler's estimated cost in the capture's wall time."""
    wall = float(cap.meta.get("wall_s") or 0.0)
    if wall <= 0:
        return []
    out = []
    if wall < SHORT_STEP_S:
        out.append(f"the step took {wall:.2f} s while recorded: at under {SHORT_STEP_S} s its time is mostly "
                   "starting processes and the machine's noise, and such steps were replayed and predicted with "
                   "larger errors on the held-out corpus (docs/whatif.md, \"Held-out corpus\"); read the figure as "
                   "a rough one")
    made = created_files(cap)
    if made >= MANY_CREATES:
        out.append(f"the step created {made:,} files: on a disk a create's cost depends on what was deleted there "
                   "just before (ext4 without a journal walks past every inode deleted in the last 30 s), which a "
                   "capture, a replay and a real run meet in different measure; steps of that shape were off by "
                   "several times on the held-out corpus; read the figure as a rough one")
    if recording_s >= RECORDING_SHARE * wall:
        out.append(f"the profiler's own cost was about {recording_s / wall:.0%} of the recorded time (many short "
                   "calls or many processes): it is estimated and taken out, and steps of that shape were replayed "
                   "with larger errors on the held-out corpus (docs/whatif.md, \"Held-out corpus\"); read the figure "
                   "as a rough one")
    side = side_by_side_s(cap)
    if side >= SIDE_BY_SIDE_SHARE * wall:
        out.append(f"threads of one process ran side by side for {side / wall:.0%} of the step (one computing while "
                   "another waited on storage): the trace has no record of how they waited for each other, and "
                   "steps of that shape were replayed and predicted with larger errors (docs/whatif.md, "
                   "\"Held-out corpus\"); read the figure as a rough one")
    if unreplayed_cpu_s >= SIDE_BY_SIDE_SHARE * wall:
        out.append(f"{unreplayed_cpu_s:.2f} s of CPU ({unreplayed_cpu_s / wall:.0%} of the wall time) was spent in "
                   "threads that made no file operation (workers the trace does not see): the replay burns it "
                   "evenly over the process's life, not when and alongside what it ran; read the figure as a "
                   "rough one")
    return out
