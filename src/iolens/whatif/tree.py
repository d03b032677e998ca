"""The replay plan's process tree: who started whom and who waited for whom, as ops of the threads involved."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from iolens import _format as F
from iolens.capture.reader import Process
from iolens.whatif.rows import DUR, OBJ, OP, SEQ, SIZE, THREAD, T
from iolens.whatif.timeline import startup_cpu_ns

if TYPE_CHECKING:
    from iolens.whatif.plan import _Ops


# an op the plan adds for the process tree: (t, op, thread, obj, seq); t is a float when it comes from an op's end
_Pseudo = tuple[float, int, int, int, int]


class Tree:
    """The processes: who started whom and who waited for whom, as ops of the threads involved."""

    def __init__(self, procs: list[Process], ops: _Ops) -> None:
        self.procs, self.ops = procs, ops
        self.starts = [int(p.start_mono) for p in procs]
        self.ends = [int(p.end_mono) or max((e for _t, _s, e in ops.proc_threads[i]), default=self.starts[i])
                     for i, p in enumerate(procs)]
        self.roots: list[int] = []
        # the last image of each pid: the one a parent's wait for that pid ends
        self.last_image: dict[int, int] = {}
        for i, p in enumerate(procs):
            if p.pid not in self.last_image or self.starts[i] >= self.starts[self.last_image[p.pid]]:
                self.last_image[p.pid] = i

    def parent(self, i: int) -> int | None:
        """The image that started image i: the image it exec'ed from, else its parent process's image then."""
        p, starts = self.procs[i], self.starts
        execed = F.PROC_FLAGS["EXECED"][0]
        prev = [j for j, q in enumerate(self.procs) if q.pid == p.pid and j != i and q.flags & execed
                and starts[j] <= starts[i]]
        if prev:
            return max(prev, key=lambda j: starts[j])
        cands = [j for j, q in enumerate(self.procs) if q.pid == p.ppid and starts[j] <= starts[i]
                 and (not q.end_mono or self.ends[j] >= starts[i])]
        return max(cands, key=lambda j: starts[j]) if cands else None

    def startup_cpu(self, i: int) -> int:
        """The CPU image i took to start (see whatif/timeline.py)."""
        j = self.parent(i)
        before = self.procs[j] if j is not None and self.procs[j].pid == self.procs[i].pid else None
        return startup_cpu_ns(self.procs[i], before)

    def events(self, code: dict[str, int]) -> list[_Pseudo]:
        """Each image's spawn (or its place among the roots), its waits for children, thread starts and its exit."""
        pseudo: list[_Pseudo] = []
        starts, ops = self.starts, self.ops
        for i, p in enumerate(self.procs):
            parent = self.parent(i)
            if parent is None:
                self.roots.append(i)
            else:
                th = ops.thread_at(parent, starts[i])
                pseudo.append((self._spawned_at(parent, th, starts[i]), code["SPAWN"], th, i, 0))
            for c in p.children:
                child = self.last_image.get(int(c["pid"]))
                if child is not None and child != i:
                    t = int(c["end_mono"])
                    pseudo.append((t, code["WAIT"], ops.thread_at(i, t, after=True), child, 0))
            # thread starts and the process's end
            for th in [th for th, _first, _last in ops.proc_threads[i]] or [ops.thread_of[(i, 0)]]:
                pseudo.append((starts[i], code["START"], th, i, -1))
            if self.ends[i]:  # a process with no events too: its life (a `sleep`) is a gap its parent waits for
                pseudo.append((self.ends[i], code["EXIT"], self._last_thread(i), 0, 2))
        return pseudo + self._eof_waits(code)

    def _eof_waits(self, code: dict[str, int]) -> list[_Pseudo]:
        """A read that met a pipe's end of file waited for its last writer to let go of the pipe, at its end (a
        `sleep 5 | cat`, or a sort reading its aligner's output before merging); the replay, which moves no data,
        would return it at once.  After each such read, its thread waits for the image whose end came last while
        the read was blocked, not one of the reader's ancestors: one that used the pipe where any did.  That image
        ended before the read did in the recording (within the clocks' error) and started before it ended, so the
        wait can close no cycle, but for one: the slack lets in an image that ended just after the read, and one
        downstream of the reader (fed by it through pipes) may have needed what the reader wrote after the read.
        In `gzip -dc | awk | cut | sort`, awk's end-of-file read returned at once (gzip had long ended) and cut
        ended 0.7 ms later: awk waited for cut and cut for awk's last writes, a replay stuck for 10 s.  Such an
        image is never waited for: it reads the reader's output, it does not hold the reader's input open."""
        if not self.ops.pipe_rows:
            return []
        pr = np.concatenate(self.ops.pipe_rows)
        owner = np.asarray(self.ops.threads, dtype=np.int64)
        users: dict[int, set[int]] = {}
        for pipe, th in zip(pr[:, OBJ].tolist(), pr[:, THREAD].tolist()):
            users.setdefault(pipe, set()).add(int(owner[th]))
        feeds = _feeds(pr, owner, code["PIPE_READ"])
        ends = np.asarray(self.ends, dtype=np.int64)
        starts = np.asarray(self.starts, dtype=np.int64)
        out: list[_Pseudo] = []
        lines: dict[int, set[int]] = {}
        for row in pr[(pr[:, OP] == code["PIPE_READ"]) & (pr[:, SIZE] == 0)]:
            start, end, th = int(row[T]), int(row[T] + row[DUR]), int(row[THREAD])
            # a duration that did not fit is in whole ms (dur_ms), and each image scales its own clock (its error
            # grows over a long blocked call: cat's 3 s read ended 0.4 ms before the exit that ended it)
            slack = 1_000_000 + int(row[DUR]) // 1000
            if int(owner[th]) not in lines:  # the reader's own image and those that wait for it
                lines[int(owner[th])] = self._ancestry(int(owner[th]))
            mine = lines[int(owner[th])] | _downstream(int(owner[th]), feeds)
            # an image started after the read had ended held no end of the pipe: a shell's next child, ending
            # within the slack, was waited for before the shell spawned it (a replay stuck for 10 s)
            during = [j for j in np.nonzero((ends > start) & (ends <= end + slack) & (starts < end))[0].tolist()
                      if j not in mine]
            near = [j for j in during if j in users[int(row[OBJ])]] or during
            if near:
                out.append((end, code["WAIT"], th, max(near, key=lambda j: ends[j]), 1))
        return out

    def _ancestry(self, i: int) -> set[int]:
        """Image i and the images that started it, up to its root."""
        out: set[int] = set()
        j: int | None = i
        while j is not None and j not in out:
            out.add(j)
            j = self.parent(j)
        return out

    def _spawned_at(self, parent: int, th: int, t: int) -> int:
        """When a child whose record starts at t was spawned by thread th of its parent: at t, or before the op
        that thread was inside at t.  A shell running `$(...)` forks and at once blocks reading the child's
        pipe; the read begins before the child's record does, and a spawn placed after its start would leave the
        replayed read waiting for a writer not yet started."""
        ev = self.procs[parent].events
        tids = [tid for (q, tid), x in self.ops.thread_of.items() if q == parent and x == th]
        if ev is None or not len(ev) or not tids:
            return t
        mine = ev[ev["tid"] == tids[0]]
        st = mine["start_mono"].astype(np.int64)
        inside = (st < t) & (st + mine["dur_ns"].astype(np.int64) > t)
        return int(st[inside].min()) - 1 if inside.any() else t

    def _last_thread(self, i: int) -> int:
        if not self.ops.proc_threads[i]:
            return self.ops.thread_of[(i, 0)]
        return max(self.ops.proc_threads[i], key=lambda x: x[2])[0]

    def wall_start(self, meta: dict[str, Any], pseudo: list[_Pseudo], code: dict[str, int]) -> int:
        """When the run began (the roots' gaps count from it); adds the root's exit at the run's recorded end.

        The wall time the user saw starts before the first image's record (exec, dynamic loading) and ends after
        the last one: both are kept as compute in the root's first and last gaps."""
        roots, starts = self.roots, self.starts
        t0 = min(starts[r] for r in roots) if roots else min(starts)
        meta_t0, meta_t1 = int(meta.get("start_mono") or 0), int(meta.get("end_mono") or 0)
        if 0 < meta_t0 <= t0:
            t0 = meta_t0
        if roots and meta_t1 > self.ends[roots[0]] and self.ops.proc_threads[roots[0]]:
            pseudo.append((meta_t1, code["EXIT"], self._last_thread(roots[0]), 0, 3))
        return t0


def _feeds(pr: np.ndarray, owner: np.ndarray, read_code: int) -> dict[int, set[int]]:
    """Image -> the images that read a pipe it writes, from the pipe rows `pr`."""
    img = owner[pr[:, THREAD]]
    is_r = pr[:, OP] == read_code
    readers: dict[int, set[int]] = {}
    for pipe, i in zip(pr[is_r, OBJ].tolist(), img[is_r].tolist()):
        readers.setdefault(pipe, set()).add(i)
    out: dict[int, set[int]] = {}
    for pipe, i in set(zip(pr[~is_r, OBJ].tolist(), img[~is_r].tolist())):
        out.setdefault(i, set()).update(readers.get(pipe, set()) - {i})
    return out


def _downstream(i: int, feeds: dict[int, set[int]]) -> set[int]:
    """The images that read what image i writes to pipes, directly or through other images."""
    out: set[int] = set()
    todo = list(feeds.get(i, ()))
    while todo:
        j = todo.pop()
        if j not in out and j != i:
            out.add(j)
            todo.extend(feeds.get(j, ()))
    return out


def with_pseudo(rows: list[np.ndarray], pseudo: list[_Pseudo]) -> np.ndarray:
    """The op rows with the tree's ops added."""
    ps = np.zeros((len(pseudo), SEQ + 1), dtype=np.int64)
    for r, (t, op, th, obj, seq) in enumerate(pseudo):
        ps[r, T], ps[r, OP], ps[r, THREAD], ps[r, OBJ], ps[r, SEQ] = t, op, th, obj, seq
    return np.concatenate(rows + [ps]) if rows else ps
