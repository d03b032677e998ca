"""Turn a `--trace` capture into a replay plan: files, handles, threads, processes, pipes and the op list.

The op list is the engine's `struct rp_op` array (native/replay/replay.h); its codes, classes and field layout come
from `iolens-replay --describe`, so nothing here is copied from the C side by hand.

What the trace gives and how each part is used (see docs/whatif.md, "What the trace carries"):
- each event: start, duration, op, thread (numbered per process), the process's file record, offset, size;
- each process image: pid, ppid, start and end, EXECED/FORKED flags, and the children it reaped (CHILD: pid, time);
- pipes are FILE records flagged NOT_A_FILE and matched across processes by their inode.
Not in the trace: descriptors (an op names a file, not an fd), the destination of a rename, the moment a thread
or a child was created (taken as the process start, and the parent's last op before the child started), and
open flags (files are opened read-write, created when missing).
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from iolens import _format as F
from iolens.capture.reader import Capture
from iolens.errors import UsageError
from iolens.whatif.engine import describe, op_dtype

NO_FILE = 0xFFFFFFFF
# files the step does not own: the replay leaves them where they are and keeps their ops as compute time
SYSTEM_PREFIXES = ("/proc/", "/sys/", "/dev/", "/usr/", "/lib/", "/lib32/", "/lib64/", "/bin/", "/sbin/", "/etc/",
                   "/run/", "/var/lib/", "/var/cache/", "/snap/", "/nix/")

# capture op -> replay op, for operations on the step's files
_FILE_OPS = {
    "OPEN": "OPEN", "FOPEN": "OPEN", "MKSTEMP": "OPEN", "OPENDIR": "OPEN",
    "CLOSE": "CLOSE", "FCLOSE": "CLOSE", "CLOSEDIR": "CLOSE",
    "READ": "READ", "PREAD": "READ", "READV": "READ", "PREADV": "READ",
    "WRITE": "WRITE", "PWRITE": "WRITE", "WRITEV": "WRITE", "PWRITEV": "WRITE", "SENDFILE": "WRITE",
    "COPY_FILE_RANGE": "WRITE",
    "FREAD": "SREAD", "FGETS": "SREAD", "FGETC": "SREAD", "GETDELIM": "SREAD", "FSCANF": "SREAD",
    "STDIO_FILL": "SREAD",
    "FWRITE": "SWRITE", "FPUTS": "SWRITE", "FPUTC": "SWRITE", "FPRINTF": "SWRITE", "STDIO_DRAIN": "SWRITE",
    "FFLUSH": "SFLUSH",
    "FSYNC": "FSYNC", "MSYNC": "FSYNC", "FDATASYNC": "FDATASYNC", "SYNC_FILE_RANGE": "FDATASYNC",
    "SYNCFS": "SYNCFS", "SYNC": "SYNCFS",
    "STAT": "STAT", "ACCESS": "STAT", "UNLINK": "UNLINK", "RMDIR": "UNLINK", "RENAME": "RENAME", "MKDIR": "MKDIR",
    "READDIR": "READDIR", "GETDENTS": "READDIR",
}
PATH_OPS = ("STAT", "UNLINK", "RENAME", "MKDIR", "SYNCFS")
# not replayed (their time stays in the compute gap): LSEEK, DUP, FSEEK, FTELL, TRUNCATE, FALLOCATE, MMAP, MUNMAP

# The profiler's own cost per traced event that falls outside the recorded call (the hook's entry, the clock
# reads, writing the event): it lands in the recorded compute gaps, and the replay would pay it again as compute.
# Measured as the slope of a profiled `dd bs=1` (one event per read and per write) over an unprofiled one:
# 0.1-0.4 us per event on a 2-core x86-64 VM (benchmarks/whatif_accuracy.py measures it again and prints it).
TRACE_EVENT_OVERHEAD_NS = 400

_CONTENT_BY_EXT = {".fq": "fastq", ".fastq": "fastq", ".fa": "fastq", ".fasta": "fastq", ".fna": "fastq",
                   ".sam": "sam", ".txt": "sam", ".tsv": "sam", ".bed": "sam", ".vcf": "sam"}


def content_of(path: str) -> str:
    """The kind of synthetic content that stands in for a file: text-like for genomic text, else incompressible."""
    name = path.lower()
    for suffix in (".gz", ".bgz", ".zst", ".bz2", ".xz"):
        if name.endswith(suffix):
            return "random"
    return _CONTENT_BY_EXT.get(os.path.splitext(name)[1], "random")


@dataclass
class ReplayFile:
    path: str          # absolute path in the capture
    rel: str           # path below the replay directory
    dir: bool = False
    created: bool = False
    layout: int = 0    # bytes read from it: its size when laid out
    content: str = "random"


@dataclass
class Plan:
    files: list[ReplayFile]
    handles: list[int]                 # handle -> file
    threads: list[int]                 # thread -> process
    processes: int
    roots: list[int]
    pipes: int
    ops: np.ndarray                    # the rp_op array
    wall_s: float                      # the original run's wall time
    skipped_ops: int = 0               # events left as compute (system files, untracked descriptors, seeks, mmap)
    notes: list[str] = field(default_factory=list)
    overhead_s: float = 0.0            # the profiler's recording cost taken out of the compute gaps

    def job(self, root: str, ops_path: str, *, speed: str, cache: str, log: str | None = None) -> dict[str, Any]:
        return {"root": root, "ops": ops_path, "speed": speed, "cache": cache, "log": log,
                "files": [{"path": f.rel, "dir": f.dir, "layout": -1 if f.created else f.layout,
                           "content": f.content} for f in self.files],
                "handles": [{"file": h} for h in self.handles],
                "threads": [{"process": p} for p in self.threads],
                "processes": self.processes, "roots": self.roots, "pipes": self.pipes}

    @property
    def layout_bytes(self) -> int:
        return sum(f.layout for f in self.files if not f.created and not f.dir)


def has_trace(cap: Capture) -> bool:
    return any(p.events is not None and len(p.events) for p in cap.processes)


def _is_data(path: str) -> bool:
    return path.startswith("/") and path.strip("/") != "" and not path.startswith(SYSTEM_PREFIXES)


def build_plan(cap: Capture, *, event_overhead_ns: int = TRACE_EVENT_OVERHEAD_NS) -> Plan:
    """The replay plan of a capture; UsageError with one line when it has no trace.

    `event_overhead_ns`: the profiler's cost per traced event outside the recorded call, taken out of the compute
    gap that holds it (0 keeps the gaps as recorded)."""
    if not has_trace(cap):
        raise UsageError(f"{cap.path} has no operation trace; profile the step again with `iolens profile --trace` "
                         "to replay it (`iolens predict` works without one)")
    d = describe()
    code = {name: v["code"] for name, v in d["ops"].items()}
    op_names = [name for name, _cat in F.OPS]
    procs = cap.processes
    # ---- files and pipes, across processes --------------------------------------------------------------
    files: list[ReplayFile] = []
    by_path: dict[str, int] = {}
    pipes: dict[tuple[int, int], int] = {}
    pipe_flag = F.FILE_FLAGS["NOT_A_FILE"][0]
    created_flag, dir_flag = F.FILE_FLAGS["CREATED"][0], F.FILE_FLAGS["DIRECTORY"][0]
    local: list[dict[int, tuple[int, int]]] = []  # per process: file index -> (1 data file | 2 pipe, id)
    for p in procs:
        m: dict[int, tuple[int, int]] = {}
        for f in p.files:
            path = f["path"]
            if f["flags"] & pipe_flag:
                if "pipe:" in path or path.startswith("pipe"):
                    m[f["index"]] = (2, pipes.setdefault((f["dev"], f["ino"]), len(pipes)))
                continue
            if not _is_data(path):
                continue
            i = by_path.get(path)
            if i is None:
                i = by_path[path] = len(files)
                files.append(ReplayFile(path, path.lstrip("/"), content=content_of(path)))
            rf = files[i]
            rf.dir = rf.dir or bool(f["flags"] & dir_flag)
            rf.created = rf.created or bool(f["flags"] & created_flag)
            rf.layout = max(rf.layout, int(f["max_read_end"]))
            m[f["index"]] = (1, i)
        local.append(m)

    # ---- op translation, per process ----------------------------------------------------------------------
    cap_to_rp = np.full(len(op_names) + 1, -1, dtype=np.int64)
    pipe_rp = np.full(len(op_names) + 1, -1, dtype=np.int64)
    for i, name in enumerate(op_names):
        if name in _FILE_OPS:
            cap_to_rp[i] = code[_FILE_OPS[name]]
        if name in ("READ", "READV", "FREAD", "FGETS", "FGETC", "GETDELIM", "FSCANF", "STDIO_FILL"):
            pipe_rp[i] = code["PIPE_READ"]
        elif name in ("WRITE", "WRITEV", "FWRITE", "FPUTS", "FPUTC", "FPRINTF", "STDIO_DRAIN", "SENDFILE"):
            pipe_rp[i] = code["PIPE_WRITE"]
    path_codes = {code[n] for n in PATH_OPS}
    handle_of: dict[tuple[int, int], int] = {}
    handles: list[int] = []
    threads: list[int] = []
    thread_of: dict[tuple[int, int], int] = {}
    rows: list[np.ndarray] = []   # columns: t, dur, offset, size, op, thread, obj, flags, seq
    pipe_rows: list[np.ndarray] = []
    skipped = 0
    proc_threads: list[list[tuple[int, float, float]]] = []  # per process: (thread, first start, last end)
    event_times: dict[int, np.ndarray] = {}  # thread -> start of every recorded event, replayed or not (sorted)

    def thread_id(pi: int, tid: int) -> int:
        t = thread_of.get((pi, tid))
        if t is None:
            t = thread_of[(pi, tid)] = len(threads)
            threads.append(pi)
        return t

    for pi, p in enumerate(procs):
        ev = p.events
        pts: list[tuple[int, float, float]] = []
        if ev is None or not len(ev):
            thread_id(pi, 0)
            proc_threads.append(pts)
            continue
        m = local[pi]
        fidx = ev["file"].astype(np.int64)
        kind = np.zeros(len(ev), dtype=np.int64)
        gid = np.zeros(len(ev), dtype=np.int64)
        for li, (k, g) in m.items():
            sel = fidx == li
            kind[sel] = k
            gid[sel] = g
        opc = ev["op"].astype(np.int64)
        rp = np.where(kind == 1, cap_to_rp[np.minimum(opc, len(op_names))],
                      np.where(kind == 2, pipe_rp[np.minimum(opc, len(op_names))], -1))
        # a sync of the whole system needs no file
        for name in ("SYNC", "SYNCFS"):
            if name in op_names:
                rp = np.where((opc == op_names.index(name)) & (kind == 0), code["SYNCFS"], rp)
        keep = rp >= 0
        skipped += int((~keep).sum())
        tids = ev["tid"].astype(np.int64)
        for tid in np.unique(tids):
            sel = tids == tid
            t = thread_id(pi, int(tid))
            starts = ev["start_mono"][sel]
            ends = starts + ev["dur_ns"][sel]
            pts.append((t, float(starts.min()), float(ends.max())))
            event_times[t] = np.sort(starts.astype(np.int64))
        proc_threads.append(pts)
        ev, rp, kind, gid, tids = ev[keep], rp[keep], kind[keep], gid[keep], tids[keep]
        if not len(ev):
            continue
        obj = np.zeros(len(ev), dtype=np.int64)
        for j in np.nonzero(kind == 1)[0]:
            if rp[j] in path_codes:
                obj[j] = gid[j]
            else:
                key = (pi, int(gid[j]))
                h = handle_of.get(key)
                if h is None:
                    h = handle_of[key] = len(handles)
                    handles.append(int(gid[j]))
                obj[j] = h
        obj[kind == 2] = gid[kind == 2]
        thr = np.array([thread_of[(pi, int(t))] for t in tids], dtype=np.int64)
        block = np.stack([ev["start_mono"].astype(np.int64), ev["dur_ns"].astype(np.int64),
                          ev["offset"].astype(np.int64), ev["size"].astype(np.int64), rp, thr, obj,
                          np.zeros(len(ev), dtype=np.int64), np.ones(len(ev), dtype=np.int64)], axis=1)
        rows.append(block)
        if (kind == 2).any():
            pipe_rows.append(block[kind == 2])

    # ---- processes: who started whom, who waited for whom --------------------------------------------------
    execed = F.PROC_FLAGS["EXECED"][0]
    starts = [int(p.start_mono) for p in procs]
    ends = [int(p.end_mono) or max((e for _t, _s, e in proc_threads[i]), default=starts[i])
            for i, p in enumerate(procs)]
    roots: list[int] = []
    pseudo: list[tuple[int, int, int, int, int]] = []  # (t, op, thread, obj, seq)

    def thread_at(pi: int, t: float, after: bool = False) -> int:
        """The thread of process pi whose last op before t is latest (or whose first op after t is earliest)."""
        best, key = None, None
        for th, first, last in proc_threads[pi]:
            if after:
                k = first if first >= t else None
                if k is not None and (key is None or k < key):
                    best, key = th, k
            elif first <= t and (key is None or min(last, t) > key):
                best, key = th, min(last, t)
        return best if best is not None else thread_of[(pi, min(tid for (q, tid) in thread_of if q == pi))]

    last_image: dict[int, int] = {}
    for i, p in enumerate(procs):
        if p.pid not in last_image or starts[i] >= starts[last_image[p.pid]]:
            last_image[p.pid] = i
    for i, p in enumerate(procs):
        parent = None
        prev = [j for j, q in enumerate(procs) if q.pid == p.pid and j != i and q.flags & execed
                and starts[j] <= starts[i]]
        if prev:
            parent = max(prev, key=lambda j: starts[j])
        else:
            cands = [j for j, q in enumerate(procs) if q.pid == p.ppid and starts[j] <= starts[i]
                     and (not q.end_mono or ends[j] >= starts[i])]
            if cands:
                parent = max(cands, key=lambda j: starts[j])
        if parent is None:
            roots.append(i)
        else:
            pseudo.append((starts[i], code["SPAWN"], thread_at(parent, starts[i]), i, 0))
        for c in p.children:
            child = last_image.get(int(c["pid"]))
            if child is not None and child != i:
                t = int(c["end_mono"])
                pseudo.append((t, code["WAIT"], thread_at(i, t, after=True), child, 0))
        # thread starts and the process's end
        for th, _first, last in proc_threads[i] or [(thread_of[(i, 0)], starts[i], starts[i])]:
            pseudo.append((starts[i], code["START"], th, i, -1))
        if proc_threads[i] and ends[i]:
            th = max(proc_threads[i], key=lambda x: x[2])[0]
            pseudo.append((ends[i], code["EXIT"], th, 0, 2))
    t0 = min(starts[r] for r in roots) if roots else min(starts)
    # the wall time the user saw starts before the first image's record (exec, dynamic loading) and ends after
    # the last one: both are kept as compute in the root's first and last gaps
    meta_t0, meta_t1 = int(cap.meta.get("start_mono") or 0), int(cap.meta.get("end_mono") or 0)
    if 0 < meta_t0 <= t0:
        t0 = meta_t0
    if roots and meta_t1 > ends[roots[0]] and proc_threads[roots[0]]:
        th = max(proc_threads[roots[0]], key=lambda x: x[2])[0]
        pseudo.append((meta_t1, code["EXIT"], th, 0, 3))
    ps = np.array([[t, 0, 0, 0, op, th, obj, 0, seq] for t, op, th, obj, seq in pseudo], dtype=np.int64)
    allrows = np.concatenate(rows + [ps]) if rows else ps

    # ---- pipes: how far each reader and writer may run ahead ------------------------------------------------
    if pipe_rows:
        pr = np.concatenate(pipe_rows)
        need = _pipe_needs(pr, code["PIPE_READ"], int(d["pipe_buffer"]))
        # write the needs back (rows are matched by identity of (t, thread, op, obj))
        allrows = np.concatenate([allrows[~np.isin(allrows[:, 4], [code["PIPE_READ"], code["PIPE_WRITE"]])],
                                  np.column_stack([pr[:, :2], need, pr[:, 3:]])])

    # ---- order per thread, then gaps ------------------------------------------------------------------------
    order = np.lexsort((allrows[:, 8], allrows[:, 0], allrows[:, 5]))
    a = allrows[order]
    gap = np.zeros(len(a), dtype=np.int64)
    if len(a):
        prev_end = np.empty(len(a), dtype=np.int64)
        prev_end[1:] = a[:-1, 0] + a[:-1, 1]
        first = np.ones(len(a), dtype=bool)
        first[1:] = a[1:, 5] != a[:-1, 5]
        prev_end[first] = a[first, 0]
        gap = np.maximum(a[:, 0] - prev_end, 0)
        is_start = a[:, 4] == code["START"]
        root_set = np.isin(a[:, 6], roots) & is_start
        gap[is_start] = 0
        gap[root_set] = a[root_set, 0] - t0
        gap, overhead_ns = _less_overhead(a, gap, event_times, event_overhead_ns)
    else:
        overhead_ns = 0
    out = np.zeros(len(a), dtype=op_dtype())
    out["gap"], out["dur"], out["offset"], out["size"] = gap, a[:, 1], a[:, 2], a[:, 3]
    out["op"], out["thread"], out["obj"], out["flags"] = a[:, 4], a[:, 5], a[:, 6], a[:, 7]
    notes = []
    if any(p.fields.get("trace_lost") for p in procs):
        notes.append("some trace events were lost while recording; the replay misses them")
    return Plan(files, handles, threads, len(procs), roots, len(pipes), out, float(cap.meta.get("wall_s") or 0.0),
                skipped_ops=skipped, notes=notes, overhead_s=overhead_ns / 1e9)


def _less_overhead(a: np.ndarray, gap: np.ndarray, event_times: dict[int, np.ndarray],
                   per_event_ns: int) -> tuple[np.ndarray, int]:
    """The gaps without the profiler's recording cost: each gap held the recording of the thread's events since
    its previous op (that op's own, and those of the events not replayed), at `per_event_ns` each."""
    if per_event_ns <= 0 or not len(a):
        return gap, 0
    out = gap.copy()
    for th, times in event_times.items():
        sel = np.nonzero(a[:, 5] == th)[0]
        if not len(sel):
            continue
        cum = np.searchsorted(times, a[sel, 0], side="left")
        events = np.diff(cum, prepend=0)
        out[sel] = np.maximum(gap[sel] - events * per_event_ns, 0)
    return out, int((gap - out).sum())


def _pipe_needs(pr: np.ndarray, read_code: int, pipe_buf: int) -> np.ndarray:
    """For each pipe op, the bytes the other side must have moved first.

    A read needs the writes that ended before it ended, up to what the readers have read with it; a write needs
    the readers within a pipe's capacity of it, counting only reads that ended before it ended.  Only ops that
    ended earlier in the recording are counted, so the dependencies can never wait on each other in a cycle.
    """
    need = np.zeros(len(pr), dtype=np.int64)
    for pipe in np.unique(pr[:, 6]):
        sel = np.nonzero(pr[:, 6] == pipe)[0]
        end = pr[sel, 0] + pr[sel, 1]
        size = pr[sel, 3]
        is_r = pr[sel, 4] == read_code
        for mine, other in ((is_r, ~is_r), (~is_r, is_r)):
            o_idx = np.argsort(end[other], kind="stable")
            o_end = end[other][o_idx]
            o_cum = np.concatenate([[0], np.cumsum(size[other][o_idx])])
            m_idx = np.argsort(end[mine], kind="stable")
            m_cum = np.cumsum(size[mine][m_idx])
            done_other = o_cum[np.searchsorted(o_end, end[mine][m_idx], side="left")]
            want = m_cum if mine is is_r else np.maximum(m_cum - pipe_buf, 0)
            got = np.minimum(want, done_other)
            tgt = sel[np.nonzero(mine)[0][m_idx]]
            need[tgt] = got
    return need
