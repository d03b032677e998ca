"""A --trace capture's operations as Chrome/Perfetto trace JSON (the "JSON Array/Object" trace format).

Open the file in ui.perfetto.dev or chrome://tracing: one track per process and thread, one slice per
traced call (name = operation, args = file, offset, size), plus a counter track of bytes per bin from
each process's timeline.
"""

from __future__ import annotations

import json
import os

from iolens.capture.reader import Capture
from iolens import _format as F
from iolens.analysis.processes import proc_name
from iolens.errors import UsageError
from iolens.names import json_safe, shown

OPS = [name for name, _cat in F.OPS]
OP_CAT = [cat.lower() for _name, cat in F.OPS]


def trace_events(cap: Capture) -> list[dict]:
    """Trace events (ts and dur in microseconds from the start of the run)."""
    procs = cap.processes
    if not any(p.events is not None and len(p.events) for p in procs):
        raise UsageError(f"{shown(os.path.basename(cap.path))} has no traced operations; record one with "
                         "`iolens profile --trace -o CAPTURE -- COMMAND`")
    t0 = min(p.start_mono for p in procs)
    # a pid's track is named after its last image: `sh` that exec'd `samtools` shows as samtools
    names = {int(p.pid): proc_name(p) for p in procs}
    out: list[dict] = [{"name": "process_name", "ph": "M", "pid": pid, "tid": pid, "args": {"name": name}}
                       for pid, name in names.items()]
    for p in procs:
        pid = int(p.pid)
        out.append({"name": proc_name(p), "cat": "process", "ph": "X", "pid": pid, "tid": pid,
                    "ts": (p.start_mono - t0) / 1000, "dur": max(0, (p.end_mono or p.start_mono) - p.start_mono) / 1000,
                    "args": {"argv": " ".join(p.argv)}})
        if p.events is None:
            continue
        paths = {int(f["index"]): f["path"] for f in p.files}
        ev = p.events
        start = (ev["start_mono"].astype("int64") - t0) / 1000.0
        dur = ev["dur_ns"] / 1000.0
        for i in range(len(ev)):
            op = int(ev["op"][i])
            fidx = int(ev["file"][i])
            args = {"file": paths.get(fidx), "offset": int(ev["offset"][i]), "size": int(ev["size"][i])}
            if ev["repeats"][i]:  # consecutive buffered stdio calls, one event
                args["calls"] = 1 + int(ev["repeats"][i])
            out.append({
                "name": OPS[op] if op < len(OPS) else f"op{op}",
                "cat": OP_CAT[op] if op < len(OPS) else "other",
                "ph": "X", "pid": pid, "tid": int(ev["tid"][i]) or pid,
                "ts": round(float(start[i]), 3), "dur": round(float(dur[i]), 3),
                "args": args,
            })
    return out


def render_chrome_trace(cap: Capture) -> bytes:
    doc = {"traceEvents": trace_events(cap), "displayTimeUnit": "ms",
           "otherData": {"tool": "iolens", "command": " ".join(cap.meta.get("command", []))}}
    return json_safe(json.dumps(doc, separators=(",", ":"), ensure_ascii=False)).encode()
