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


def follows_start(a: np.ndarray, start_code: int) -> np.ndarray:
    """Per row: whether it comes right after its thread's START (rows grouped per thread, START first)."""
    out = np.zeros(len(a), dtype=bool)
    out[1:] = (a[:-1, OP] == start_code) & (a[:-1, THREAD] == a[1:, THREAD])
    return out


def late_thread_starts(a: np.ndarray, gap: np.ndarray, start_code: int, after_code: int,
                        proc_threads: list[list[tuple[int, float, float]]]) -> np.ndarray:
    """Moves the gap before the first op of each thread a process created after its start (all but the thread
    whose first op came first) to what starts it, in place, and marks it and those threads' STARTs.  Every
    thread's START is at its process's start; a thread created later did not exist until then, so that gap was no
    compute of its own: the engine waits it out rather than burning the process's CPU share of it (samtools sort's
    14 spill threads, each created a few ms after the last, were burnt from the process's start at once: +33%).
    Where the thread's creation is known (whatif/threads.py: START, AFTER, first op), the gap goes to the AFTER,
    from the creator's op: its creator's compute until the creation and the thread's own until its first op, not
    told apart, so waited out as well."""
    late = np.zeros(len(a), dtype=bool)
    later = {th for threads in proc_threads for th, _f, _l in sorted(threads, key=lambda x: x[1])[1:]}
    if not later or not len(a):
        return late
    starts = np.nonzero((a[:, OP] == start_code) & np.isin(a[:, THREAD], list(later)))[0]
    ok = starts + 1 < len(a)
    starts = starts[ok]
    ok = a[starts + 1, THREAD] == a[starts, THREAD]  # rows are grouped per thread, START first
    starts = starts[ok]
    created = a[starts + 1, OP] == after_code  # START, AFTER (the creation), first op
    host = np.where(created, starts + 1, starts)
    nxt = host + 1
    ok = (nxt < len(a)) & (a[np.minimum(nxt, len(a) - 1), THREAD] == a[host, THREAD])
    host, nxt, starts = host[ok], nxt[ok], starts[ok]
    gap[host] = np.where(host == starts, gap[host], 0) + gap[nxt]  # a known creation: from the creator's op
    gap[nxt] = 0
    late[host] = True
    late[starts] = True
    return late
