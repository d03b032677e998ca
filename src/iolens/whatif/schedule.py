"""When each op of a replay plan happened in the recording, and the room on disk the plan needs at its peak."""

from __future__ import annotations

import numpy as np

from iolens.whatif.engine import op_codes
from iolens.whatif.plan import Plan


def op_times(plan: Plan) -> np.ndarray:
    """Each op's start in the recording (ns), rebuilt from its thread's gaps and durations, each thread's timeline
    from when it began (its first op: its START), so that one thread's reads of a file come after another's
    writes of it."""
    ops = plan.ops
    if not len(ops):
        return np.zeros(0, dtype=np.int64)
    thr = ops["thread"].astype(np.int64)
    step = (ops["gap"] + ops["dur"]).astype(np.int64)
    first = np.ones(len(ops), dtype=bool)
    first[1:] = thr[1:] != thr[:-1]
    csum = np.cumsum(step)
    base = np.maximum.accumulate(np.where(first, np.arange(len(ops)), 0))
    t = csum - (csum[base] - step[base]) - ops["dur"].astype(np.int64)
    begin = np.array([round(r["begin"] * 1e9) for r in plan.recorded] or [0], dtype=np.int64)
    return begin[np.minimum(thr, len(begin) - 1)] + t - t[base]


def peak_bytes(plan: Plan) -> int:
    """The most bytes the replay's files hold at once: the laid-out inputs, and each file's extent as the writes
    grow it, given back when a truncating open, an unlink or a rename over it empties it.  A step that rewrites
    one file thirty times needs its size, not thirty times it.  Rounding to blocks is not counted."""
    c = op_codes()
    ops = plan.ops
    init = np.array([0 if f.created or f.dir else f.layout for f in plan.files] + [0], dtype=np.int64)
    if not len(ops):
        return int(init.sum())
    handle_file = np.array(plan.handles + [len(plan.files)], dtype=np.int64)
    op, obj = ops["op"].astype(np.int64), ops["obj"].astype(np.int64)
    write = np.isin(op, [c["WRITE"], c["SWRITE"], c["COPY"]])
    trunc = (op == c["OPEN"]) & (ops["flags"] & 1 == 1)
    unlink, rename = op == c["UNLINK"], (op == c["RENAME"]) & (ops["size"] > 0)
    file = np.full(len(ops), -1, dtype=np.int64)
    on_handle = write | trunc
    file[on_handle] = handle_file[np.minimum(obj[on_handle], len(handle_file) - 1)]
    file[unlink] = obj[unlink]
    file[rename] = ops["size"][rename].astype(np.int64) - 1  # the destination's old content goes
    sel = np.nonzero((file >= 0) & (file < len(plan.files)))[0]
    if not len(sel):
        return int(init.sum())
    t = op_times(plan)
    sel = sel[np.argsort(t[sel], kind="stable")]
    by_file = sel[np.lexsort((np.arange(len(sel)), file[sel]))]  # per file, in time order
    f = file[by_file]
    reset = ~write[by_file]
    end = np.where(reset, 0, (ops["offset"][by_file] + ops["size"][by_file]).astype(np.int64))
    start_of_file = np.r_[True, f[1:] != f[:-1]]
    end = np.where(start_of_file & ~reset, np.maximum(end, init[f]), end)  # a laid-out file starts at its size
    seg = np.cumsum(reset | start_of_file)
    big = int(max(int(end.max()), int(init.max())) + 1)
    extent = np.maximum.accumulate(end + seg * big) - seg * big  # each segment's running extent
    before = np.r_[0, extent[:-1]]
    before = np.where(start_of_file, init[f], before)
    delta = np.zeros(len(ops), dtype=np.int64)
    delta[by_file] = extent - before
    total = int(init.sum()) + np.cumsum(delta[sel])
    return int(max(int(init.sum()), int(total.max())))
