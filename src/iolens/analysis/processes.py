"""Processes: the time accounting of each process image, their tree, and the report's process rows.

Time accounting per process image ("own time" = wall time minus time blocked waiting for children,
so a shell that waits for its pipeline is not counted twice).  I/O wall time is the time during which
at least one thread of the process was inside an I/O call, so it never exceeds the process's wall
time; the summed call time (which can, with threads) is kept beside it.

Every list here is aligned with `Capture.processes`: element i is image i, and i is its identity.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

import numpy as np

from iolens import _format as F
from iolens.analysis import breakdown as B
from iolens.analysis.model import ProcRow, ProcSummary
from iolens.capture.reader import Capture, Process

CATS = [c.lower() for c in F.CATEGORIES]
PF = {name: bit for name, (bit, _doc) in F.PROC_FLAGS.items()}
NS = 1e-9
EVENT_SIZE = F.LAYOUTS["EVENT"][2]


def proc_name(p: Process) -> str:
    base = os.path.basename(p.exe) if p.exe else (p.argv[0] if p.argv else "?")
    if base.startswith(("python", "perl", "Rscript", "java")) and len(p.argv) > 1:
        return f"{base} {os.path.basename(p.argv[1])}"
    return base


def _ended(p: Process) -> str:
    fl = p.fields["flags"]
    for name in ("SIGNALED", "EXECED", "EXITED"):
        if fl & PF[name]:
            return name.lower()
    return "unfinished"


def start_mono(cap: Capture) -> int:
    return min((p.start_mono for p in cap.processes), default=0)


def end_mono(cap: Capture) -> int:
    """When the run ended: as the launcher saw it, else when its last process did."""
    return cap.meta.get("end_mono") or max((p.end_mono for p in cap.processes), default=start_mono(cap))


def _reaped_io(procs: list[Process]) -> list[tuple[int, int]]:
    """Per image, the kernel I/O totals of the children it reaped (/proc/self/io includes them)."""
    final_image: dict[int, Process] = {}
    for p in procs:
        if p.finalized and not (p.fields["flags"] & PF["EXECED"]):
            final_image[p.pid] = p
    out = []
    for p in procs:
        r = w = 0
        for c in p.children:
            img = final_image.get(c["pid"])
            if img is not None:
                r += img.k_rchar
                w += img.k_wchar
        out.append((r, w))
    return out


def images(cap: Capture) -> list[ProcSummary]:
    """The accounting of every process image, in capture order (depth is set by tree_order's caller)."""
    procs = cap.processes
    t0 = start_mono(cap)
    run_end = end_mono(cap)
    # children's end times as their parents saw them, for processes that never finalized
    reaped = {c["pid"]: c for p in procs for c in p.children}
    out: list[ProcSummary] = []
    for p, (cr, cw) in zip(procs, _reaped_io(procs)):
        end = p.end_mono or reaped.get(p.pid, {}).get("end_mono") or run_end
        wall = max(0, end - p.start_mono) * NS
        execed = p.fields["flags"] & PF["EXECED"]
        k_r = max(0, p.k_rchar - p.k_rchar_start - cr) if p.finalized else 0
        k_w = max(0, p.k_wchar - p.k_wchar_start - cw) if p.finalized else 0
        k_w = max(0, k_w - (p.trace_events - p.trace_lost) * EVENT_SIZE)  # our own trace writes
        status = p.exit_status if p.finalized and not execed else None
        if status is None and p.pid in reaped and not execed:
            status = reaped[p.pid]["status"]
        out.append(ProcSummary(
            pid=p.pid, ppid=p.ppid, name=proc_name(p), argv=p.argv, start_s=(p.start_mono - t0) * NS,
            wall_s=wall, own_s=max(0.0, wall - p.wait_ns * NS),
            cpu_s=max(0, p.utime_ns + p.stime_ns - p.utime_start_ns - p.stime_start_ns) * NS,
            io_wall_s=min(p.io_wall_ns * NS, wall) if wall else p.io_wall_ns * NS,
            cat_wall_s={c: p.cat_wall_ns[i] * NS for i, c in enumerate(CATS)},
            cat_time_s={c: p.cat_time_ns[i] * NS for i, c in enumerate(CATS)},
            bytes_read=p.bytes_read, bytes_written=p.bytes_written, kernel_read=k_r, kernel_written=k_w,
            exit_status=status, ended=_ended(p), files=len(p.paths),
        ))
    return out


def stream_s(s: ProcSummary) -> float:
    """Time waiting on pipes and sockets, capped at the image's own time not spent in I/O."""
    return min(s.cat_wall_s["stream"], max(0.0, s.own_s - min(s.io_wall_s, s.own_s)))


@dataclass
class Tree:
    """The process tree over images: exec chains, the image each process was forked from, depth-first order.

    An exec chain is the images of one process (one pid, each but the last ended by exec), shown as
    one process: `bash → samtools sort`.  A child hangs under the image of its parent that was running
    when it started (the last image of the parent's chain that started at or before it), so a process
    forked by bash before bash exec'd samtools is bash's child, not samtools'.
    """

    order: list[tuple[int, int]]  # (index, depth), depth-first: an image, the children it forked, the next image
    parent: list[int | None]  # per image: the parent image running when its process was forked
    exec_from: list[int | None]  # per image: the image it replaced by exec
    chain: list[list[int]]  # per image: every image of its exec chain, in order


def _chains(imgs: list[ProcSummary]) -> list[list[int]]:
    """Images grouped into exec chains, by start; a pid seen again after an exit is a new process."""
    open_chain: dict[int, list[int]] = {}
    chains: list[list[int]] = []
    for i in sorted(range(len(imgs)), key=lambda i: (imgs[i].start_s, i)):
        cur = open_chain.get(imgs[i].pid)
        if cur is not None and imgs[cur[-1]].ended == "execed":
            cur.append(i)
            continue
        open_chain[imgs[i].pid] = cur = [i]
        chains.append(cur)
    return chains


def process_tree(imgs: list[ProcSummary], root_ppid: int | None) -> Tree:
    n = len(imgs)
    chains = _chains(imgs)
    chain_of: list[list[int]] = [[] for _ in range(n)]
    for c in chains:
        for i in c:
            chain_of[i] = c
    by_pid: dict[int, list[list[int]]] = {}
    for c in chains:
        by_pid.setdefault(imgs[c[0]].pid, []).append(c)
    parent: list[int | None] = [None] * n
    forked: dict[int, list[list[int]]] = {}  # parent image -> child chains
    roots: list[list[int]] = []
    for c in chains:
        first = imgs[c[0]]
        par = None
        if first.ppid != root_ppid:
            for pc in by_pid.get(first.ppid, []):
                if pc is c:
                    continue
                before = [i for i in pc if imgs[i].start_s <= first.start_s]
                if before:
                    par = before[-1]  # later chains of a reused pid win: the list is by start
        if par is None:
            roots.append(c)
        else:
            forked.setdefault(par, []).append(c)
        for i in c:
            parent[i] = par
    order: list[tuple[int, int]] = []
    seen: set[int] = set()

    def visit(c: list[int], depth: int) -> None:
        if c[0] in seen:
            return
        seen.add(c[0])
        for i in c:
            order.append((i, depth))
            for child in sorted(forked.get(i, []), key=lambda k: (imgs[k[0]].start_s, k[0])):
                visit(child, depth + 1)

    for c in sorted(roots, key=lambda k: (imgs[k[0]].start_s, k[0])):
        visit(c, 0)
    for c in chains:  # anything unreachable (damaged parent links) still shows
        visit(c, 0)
    exec_from: list[int | None] = [None] * n
    for c in chains:
        for a, b in zip(c, c[1:]):
            exec_from[b] = a
    return Tree(order=order, parent=parent, exec_from=exec_from, chain=chain_of)


def tree_order(imgs: list[ProcSummary], root_ppid: int | None) -> list[tuple[int, int]]:
    """(index, depth) in depth-first order (process_tree's)."""
    return process_tree(imgs, root_ppid).order


@dataclass
class RunTimes:
    """Sums over all images: process time, bytes and how much of the kernel's I/O was attributed."""

    own_s: float
    io_wall_s: float
    cat_wall_s: dict[str, float]
    stream_s: float
    bytes_read: int
    bytes_written: int
    kernel_read: int
    kernel_written: int
    coverage: float | None


def run_times(imgs: list[ProcSummary]) -> RunTimes:
    k_r = sum(s.kernel_read for s in imgs)
    k_w = sum(s.kernel_written for s in imgs)
    a_r = sum(s.bytes_read for s in imgs if s.kernel_read or s.kernel_written)
    a_w = sum(s.bytes_written for s in imgs if s.kernel_read or s.kernel_written)
    return RunTimes(
        own_s=sum(s.own_s for s in imgs),
        io_wall_s=sum(min(s.io_wall_s, s.own_s) for s in imgs),
        cat_wall_s={c: sum(s.cat_wall_s[c] for s in imgs) for c in CATS if c != "stream"},
        stream_s=sum(stream_s(s) for s in imgs),
        bytes_read=sum(s.bytes_read for s in imgs),
        bytes_written=sum(s.bytes_written for s in imgs),
        kernel_read=k_r,
        kernel_written=k_w,
        coverage=(min(a_r, k_r) + min(a_w, k_w)) / (k_r + k_w) if k_r + k_w else None,
    )


def wall_s(cap: Capture) -> float:
    wall = cap.meta.get("wall_s")
    if wall is None:
        wall = (end_mono(cap) - start_mono(cap)) * NS if cap.processes else 0.0
    return wall


def process_rows(cap: Capture, imgs: list[ProcSummary], tree: Tree, names: list[str],
                 proc_break: np.ndarray, mmap_bytes: np.ndarray,
                 overflow: frozenset[int] | set[int] = frozenset()) -> list[ProcRow]:
    """The report's process rows in tree order; proc_break is each image's time per class (ns)."""
    procs = cap.processes
    pb = proc_break.tolist()
    rows = []
    for i, depth in tree.order:
        p, s = procs[i], imgs[i]
        bd = dict(zip(B.CLASSES, (v * NS for v in pb[i])))
        io = sum(v for k, v in bd.items() if k != "pipe_wait")
        bd["compute"] = max(0.0, s.own_s - sum(bd.values()))
        rows.append(ProcRow(
            index=i, pid=s.pid, ppid=s.ppid, name=names[i], argv=list(p.argv), depth=depth,
            start_s=s.start_s, end_s=s.start_s + s.wall_s, wall_s=s.wall_s, own_s=s.own_s, cpu_s=s.cpu_s,
            io_s=io, bytes_read=s.bytes_read, bytes_written=s.bytes_written, files=s.files,
            exit_status=s.exit_status, ended=s.ended, breakdown=bd, kernel_read=s.kernel_read,
            kernel_written=s.kernel_written, mmap_bytes=int(mmap_bytes[i]), untracked_ops=int(p.untracked_ops),
            overflow=i in overflow, parent_index=tree.parent[i], exec_from=tree.exec_from[i],
            chain=[names[k] for k in tree.chain[i]], chain_indices=list(tree.chain[i]),
        ))
    _subtree_totals(rows)
    return rows


def _subtree_totals(rows: list[ProcRow]) -> None:
    """Inclusive totals: rows are in depth-first order with depths, so a row's subtree follows it."""
    for i, r in enumerate(rows):
        r.subtree_io_s, r.subtree_cpu_s = r.io_s, r.cpu_s
        r.subtree_bytes_read, r.subtree_bytes_written, r.subtree_processes = r.bytes_read, r.bytes_written, 1
        for c in rows[i + 1:]:
            if c.depth <= r.depth:
                break
            r.subtree_io_s += c.io_s
            r.subtree_cpu_s += c.cpu_s
            r.subtree_bytes_read += c.bytes_read
            r.subtree_bytes_written += c.bytes_written
            r.subtree_processes += 1


def ops_total(cap: Capture, op_names: list[str]) -> dict[str, int]:
    """Calls per op over all images, the ops never called left out."""
    ops = np.zeros(len(op_names), dtype=np.int64)
    for p in cap.processes:
        ops += np.asarray(p.op_count[: len(op_names)], dtype=np.int64)
    return {n: int(v) for n, v in zip(op_names, ops) if v}


@dataclass
class ChainRow:
    """One process as the trees show it: an exec chain's images summed into one row."""

    label: str  # `bash → samtools sort`
    pid: int
    depth: int
    start_s: float
    end_s: float
    cpu_s: float
    io_s: float
    own_s: float
    bytes_read: int
    bytes_written: int
    exit_status: int | None
    subtree_io_s: float
    subtree_processes: int
    argv: list[str]
    images: list[int]  # the images' indices
    exit_signal: int | None = None  # the signal that killed the last image

    @property
    def wall_s(self) -> float:
        return max(0.0, self.end_s - self.start_s)


def chain_rows(rows: list[ProcRow]) -> list[ChainRow]:
    """Report rows (one per image, in tree order) -> one row per process, its exec chain in its label.

    The continuation images of a chain are folded into the row of the chain's first image; their
    children stay where tree order put them, under that row.
    """
    by_index = {r.index: r for r in rows}
    out = []
    for r in rows:
        if r.exec_from is not None and r.exec_from in by_index:
            continue
        imgs = [by_index[k] for k in r.chain_indices if k in by_index] or [r]
        last = imgs[-1]
        out.append(ChainRow(
            label=" → ".join(x.name for x in imgs), pid=r.pid, depth=r.depth, start_s=r.start_s,
            end_s=max(x.end_s for x in imgs), cpu_s=sum(x.cpu_s for x in imgs), io_s=sum(x.io_s for x in imgs),
            own_s=sum(x.own_s for x in imgs), bytes_read=sum(x.bytes_read for x in imgs),
            bytes_written=sum(x.bytes_written for x in imgs), exit_status=last.exit_status,
            subtree_io_s=sum(x.subtree_io_s for x in imgs),
            subtree_processes=sum(x.subtree_processes for x in imgs),
            argv=last.argv, images=[x.index for x in imgs], exit_signal=last.exit_signal,
        ))
    return out
