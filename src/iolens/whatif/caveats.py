"""What a replay or a prediction cannot see in a capture, said in its notes rather than only in the docs."""

from __future__ import annotations

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
