"""Which threads of a process waited for which: a worker thread created for one job and joined when it ended.

The trace does not record pthread_create or pthread_join.  What it shows of that pattern is timing: a thread that
appears after its process started (a late thread) does its operations while the process's first thread makes
none, and the first thread goes on within moments of the late thread's last operation.  samtools sort spills each
in-memory block that way: a thread sorts it, writes it to a temporary file, fdatasyncs it and ends, and the main
thread reads on only after joining it.  Replayed without the join, the main thread ran ahead by the recorded gap and
the spills of a slow disk overlapped: 0.75 s replayed against 2.5 s real on an emulated magnetic disk.

For each such thread the plan gets two AFTER ops: the late thread starts after the first thread's last op before
it (its creation), and the first thread's next op waits for the late thread's last (the join).  A thread the
first thread worked alongside (a pool, a pipeline stage) gets neither, and is timed from its process's start.
"""

from __future__ import annotations

import numpy as np

from iolens.whatif.rows import DUR, OBJ, OFFSET, OP, SEQ, THREAD, T

# the first thread goes on this soon after the late thread's last op (a thread's exit and the wake of its joiner
# take 0.1-0.2 ms while profiling on a 2-core VM; a thread that merely happened to be quiet resumes at any time)
JOIN_WINDOW_NS = 2_000_000


def joins(rows: np.ndarray, code: dict[str, int], proc_threads: list[list[tuple[int, float, float]]],
          window_ns: int = JOIN_WINDOW_NS) -> np.ndarray:
    """AFTER rows for the threads that were created and joined by their process's first thread (see above).

    `rows`: the plan's rows (any order); `proc_threads`: per process, (thread, first op start, last op end).  Each
    new row's OFFSET is the index in `rows` of the op it waits for (the caller turns it into the op's index in the
    sorted op list); its time is that op's end, so it sorts after it in its own thread."""
    out: list[tuple[int, int, int, int]] = []  # (t, thread, obj, target row)
    thread = rows[:, THREAD]
    pseudo = np.isin(rows[:, OP], [code["START"], code["EXIT"]])
    for pts in proc_threads:
        if len(pts) < 2:
            continue
        first, *late = sorted(pts, key=lambda x: x[1])
        main = np.nonzero((thread == first[0]) & ~pseudo)[0]
        main = main[np.lexsort((rows[main, SEQ], rows[main, T]))]
        ms = rows[main, T]
        me = ms + rows[main, DUR]
        for th, f, x in late:
            if ((ms <= x) & (me >= f)).any():  # the first thread worked while this one did
                continue
            nxt = np.searchsorted(ms, x, side="left")
            if nxt == len(ms) or ms[nxt] - x > window_ns:
                continue
            mine = np.nonzero((thread == th) & ~pseudo)[0]
            last = mine[np.argmax(rows[mine, T] + rows[mine, DUR])]
            out.append((int(x), first[0], th, int(last)))
            before = np.nonzero(me <= f)[0]
            if len(before):
                b = main[before[-1]]
                out.append((int(rows[b, T] + rows[b, DUR]), th, first[0], int(b)))
    new = np.zeros((len(out), rows.shape[1]), dtype=np.int64)
    for r, (t, th, obj, target) in enumerate(out):
        new[r, T], new[r, OP], new[r, THREAD], new[r, OBJ], new[r, OFFSET] = t, code["AFTER"], th, obj, target
    new[:, SEQ] = -1  # before an op that starts at the same time
    return new


def target_positions(a: np.ndarray, order: np.ndarray, after_code: int) -> None:
    """In place: each AFTER row's OFFSET, the index in `rows` of the op it waits for, becomes that op's index in
    `a` = rows[order]."""
    pos = np.empty(len(order), dtype=np.int64)
    pos[order] = np.arange(len(order))
    sel = a[:, OP] == after_code
    a[sel, OFFSET] = pos[a[sel, OFFSET]]
