"""Turn a `--trace` capture into a replay plan: files, handles, threads, processes, pipes and the op list.

The op list is the engine's `struct rp_op` array (native/replay/replay.h); its codes, classes and field layout come
from `iolens-replay --describe`, so nothing here is copied from the C side by hand.

What the trace gives and how each part is used (see docs/whatif.md, "What the trace carries"):
- each event: start, duration, op, thread (numbered per process), the process's file record, offset, size;
- each process image: pid, ppid, start and end, EXECED/FORKED flags, and the children it reaped (CHILD: pid, time);
- pipes are FILE records flagged NOT_A_FILE and matched across processes by their inode.
Not in the trace: descriptors (an op names a file, not an fd), the destination of a rename, the moment a thread
or a child was created (taken as the process start, and the parent's last op before the child started; a thread
created and joined by its process's first thread is told from the timing, see threads.py), and
open flags (a handle is opened read-only where its process only read through it and did not create the file,
else read-write and created when missing: handles.read_only), and some closes (a descriptor dup2-ed over; see
handles.py).
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from iolens import _format as F
from iolens.capture.reader import Capture, Process
from iolens.errors import UsageError
from iolens.sysinfo import steal_share
from iolens.whatif.caveats import plan_notes, shape_cautions
from iolens.whatif.engine import describe, op_dtype, recorded_block_ns
from iolens.whatif.handles import closes_after_use, read_only
from iolens.whatif.pipes import _pipe_needs
from iolens.whatif.rows import DUR as _DUR, OBJ as _OBJ, OP as _OP, SEQ as _SEQ, T as _T, THREAD as _THREAD
from iolens.whatif.threads import follows_start, joins, late_thread_starts, target_positions
from iolens.whatif.timeline import (PREEMPT_S, before_first, burners, cpu_shares, event_costs,
                                   less_recording_cost, own_after, recorded_threads)
from iolens.whatif.tree import Tree, with_pseudo

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
    "COPY_FILE_RANGE": "WRITE", "COPY_SOURCE": "READ",
    "FREAD": "SREAD", "FGETS": "SREAD", "FGETC": "SREAD", "GETDELIM": "SREAD", "FSCANF": "SREAD",
    "STDIO_FILL": "SREAD",
    "FWRITE": "SWRITE", "FPUTS": "SWRITE", "FPUTC": "SWRITE", "FPRINTF": "SWRITE", "STDIO_DRAIN": "SWRITE",
    "FFLUSH": "SFLUSH",
    "FSYNC": "FSYNC", "MSYNC": "FSYNC", "FDATASYNC": "FDATASYNC", "SYNC_FILE_RANGE": "FDATASYNC",
    "SYNCFS": "SYNCFS", "SYNC": "SYNCFS",
    "STAT": "STAT", "ACCESS": "STAT", "FSTAT": "FSTAT", "UNLINK": "UNLINK", "RMDIR": "UNLINK", "RENAME": "RENAME",
    "MKDIR": "MKDIR",
    "READDIR": "READDIR", "GETDENTS": "READDIR",
    "DUP": "DUP",
}
PATH_OPS = ("STAT", "UNLINK", "RENAME", "MKDIR", "SYNCFS")
# buffered stdio calls: a traced one with no time was served by its stream's buffer and reached no storage
STDIO_OPS = tuple(n for n, rp in _FILE_OPS.items() if rp in ("SREAD", "SWRITE"))
# A copy's two sides when both are the step's files: the source (recorded right before the call, on its thread)
# and the call on the destination are replayed as one copy_file_range; otherwise each side as _FILE_OPS says.
_COPY_SOURCE = "COPY_SOURCE"
_COPY_CALLS = ("COPY_FILE_RANGE", "SENDFILE")
# the replay ops that act on a handle (a process's descriptor of a file): the file ops that name no path
HANDLE_OPS = tuple(sorted((set(_FILE_OPS.values()) | {"COPY_FROM", "COPY"}) - set(PATH_OPS)))
# not replayed (their time stays in the compute gap): LSEEK, FSEEK, FTELL, TRUNCATE, FALLOCATE, MMAP, MUNMAP

# The profiler's own cost per traced event that falls outside the recorded call (the hook's entry, the clock
# reads, writing the event): it lands in the recorded compute gaps, and the replay would pay it again as compute.
# Measured as the slope of a profiled `dd bs=1` (one event per read and per write) over an unprofiled one:
# 34-43 ns per event on a 2-core x86-64 VM (benchmarks/whatif_accuracy.py measures it again and prints it).
TRACE_EVENT_OVERHEAD_NS = 40
# An event that names a path (timeline.PATH_NAMING_OPS) costs more: the name made absolute, a file record looked up
# or made, a created file stat'ed.  Measured as the slope of a profiled loop of creating opens, stats and unlinks
# over an unprofiled one (whatif_accuracy.path_overhead_ns): 0.43 us per event on the same VM.
TRACE_PATH_OVERHEAD_NS = 450

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
    cpu_share: list[float] = field(default_factory=list)  # thread -> on-CPU share of its gaps (burnt, not slept)
    wait_share: list[float] = field(default_factory=list)  # thread -> share of the rest waited out (see timeline)
    unreplayed_cpu_s: float = 0.0      # CPU of threads that made no file operation (burnt by burner threads)
    recorded: list[dict[str, float]] = field(default_factory=list)  # thread -> the recording's own timeline
    cwd: str = ""                      # the step's working directory below the replay directory (names from there)
    read_only: list[bool] = field(default_factory=list)  # handle -> only read through (opened O_RDONLY, no create)
    cpu_ns_per_block: float = 0.0      # the capture's cost of a burn block: compute burnt as work (0: as CPU time)
    cautions: list[str] = field(default_factory=list)  # a shape the held-out corpus covered poorly (caveats)

    def job(self, root: str, ops_path: str, *, speed: str, cache: str, log: str | None = None,
            dependency_timeout_s: float | None = None) -> dict[str, Any]:
        extra: dict[str, Any] = {} if dependency_timeout_s is None else {"dependency_timeout_s": dependency_timeout_s}
        if self.cpu_ns_per_block > 0:
            extra["cpu_ns_per_block"] = self.cpu_ns_per_block
        return {**extra, "root": root, "ops": ops_path, "speed": speed, "cache": cache, "log": log, "cwd": self.cwd,
                "files": [{"path": f.rel, "dir": f.dir, "layout": -1 if f.created else f.layout,
                           "content": f.content} for f in self.files],
                "handles": [{"file": h, "read_only": i < len(self.read_only) and self.read_only[i]}
                            for i, h in enumerate(self.handles)],
                "threads": [{"process": p, "cpu_share": self.cpu_share[i] if i < len(self.cpu_share) else 0.0,
                             "wait_share": self.wait_share[i] if i < len(self.wait_share) else 1.0}
                            for i, p in enumerate(self.threads)],
                "processes": self.processes, "roots": self.roots, "pipes": self.pipes}

    @property
    def layout_bytes(self) -> int:
        return sum(f.layout for f in self.files if not f.created and not f.dir)


def has_trace(cap: Capture) -> bool:
    return any(p.events is not None and len(p.events) for p in cap.processes)


# below a system prefix but the step's own: shared-memory tmpfs is where users put fast scratch
DATA_PREFIXES = ("/dev/shm/",)


def _is_data(path: str) -> bool:
    return path.startswith("/") and path.strip("/") != "" and (path.startswith(DATA_PREFIXES)
                                                                or not path.startswith(SYSTEM_PREFIXES))


def build_plan(cap: Capture, *, event_overhead_ns: int = TRACE_EVENT_OVERHEAD_NS, gaps: str = "cpu",
               preempt_s: float = PREEMPT_S, path_overhead_ns: int | None = TRACE_PATH_OVERHEAD_NS) -> Plan:
    """The replay plan of a capture; UsageError with one line when it has no trace.

    `event_overhead_ns`: the profiler's cost per traced event outside the recorded call, taken out of the compute
    gap that holds it (0 keeps the gaps as recorded); `path_overhead_ns` that of the events that name a path
    (opens, stats, unlinks: timeline.PATH_NAMING_OPS), which cost the profiler more (None: the same as the others).
    `gaps`: "cpu" burns each gap's on-CPU share (from the processes' CPU times, see whatif/timeline.py) and waits
    out the rest; "sleep" waits out all of it.
    `preempt_s`: the time one involuntary context switch is taken to have cost while recording."""
    if not has_trace(cap):
        raise UsageError(f"{cap.path} has no operation trace; profile the step again with `iolens profile --trace` "
                         "to replay it (`iolens predict` works without one)")
    d = describe()
    code = {name: v["code"] for name, v in d["ops"].items()}
    procs = cap.processes
    files, local, n_pipes = _lay_out(procs)
    ops = _Ops(code)
    for pi, p in enumerate(procs):
        ops.add_process(pi, p.events, local[pi])
    tree = Tree(procs, ops)
    pseudo = tree.events(code)
    t0 = tree.wall_start(cap.meta, pseudo, code)
    allrows = closes_after_use(with_pseudo(ops.rows, pseudo), code, HANDLE_OPS)
    if ops.pipe_rows:
        allrows = _with_pipe_needs(allrows, np.concatenate(ops.pipe_rows), code, int(d["pipe_buffer"]))
    allrows = np.concatenate([allrows, joins(allrows, code, ops.proc_threads)])
    order = np.lexsort((allrows[:, _SEQ], allrows[:, _T], allrows[:, _THREAD]))  # per thread, in time order
    a = allrows[order]
    target_positions(a, order, code["AFTER"])
    costs = event_costs(event_overhead_ns, path_overhead_ns)
    gap, overhead_ns = _gaps(a, code["START"], tree.roots, t0, ops, costs)
    # A parent is taken to call wait right after its previous op: the time until the child ended is the child's,
    # which the child's replay takes (recorded as a gap it would be waited out even when the child ran faster);
    # so is a thread that joins another (whatif/threads.py), the time until the other's last op
    # (a creation's AFTER comes right after its thread's START; a join's never does: its thread, the first, had an
    # op before the joined thread's first)
    joined = (a[:, _OP] == code["WAIT"]) | ((a[:, _OP] == code["AFTER"]) & ~follows_start(a, code["START"]))
    waited = np.where(joined, gap, 0)  # the recording's wait for a child or a thread, for the breakdown
    gap[joined] = 0
    late_start = late_thread_starts(a, gap, code["START"], code["AFTER"], ops.proc_threads)
    # a root's START gap runs from the run's start to its image's first record: its own start-up (exec, dynamic
    # loading), whose CPU the image's counters of its life do not hold; its first thread's START carries it, not
    # the threads it created later (each of samtools sort's 15 threads burnt the 1.5 ms start-up again)
    root_start = np.nonzero((a[:, _OP] == code["START"]) & np.isin(a[:, _OBJ], tree.roots) & (gap > 0)
                            & ~late_start)[0]
    if gaps == "cpu":  # a SPAWN carries its child's start-up CPU, a root's START its own, burnt in their gap
        spawn = np.nonzero(a[:, _OP] == code["SPAWN"])[0]
        a[spawn, 3] = np.minimum([tree.startup_cpu(int(i)) for i in a[spawn, _OBJ]], gap[spawn])
        a[root_start, 3] = np.minimum([tree.startup_cpu(int(i)) for i in a[root_start, _OBJ]], gap[root_start])
    notes = plan_notes(cap, gaps == "cpu")
    per_block = (recorded_block_ns(cap.meta) or 0.0) if gaps == "cpu" else 0.0
    if gaps == "cpu" and not per_block:
        notes.append("the capture has no CPU probe (an earlier iolens took it): its compute is replayed as CPU "
                     "time, which does not follow a CPU that runs slower or faster now than then")
    # a late thread's START gap (its wait to be created) is no compute: out of the gaps its CPU is shared over
    cpu = cpu_shares(procs, ops.threads, a[:, _THREAD], np.where(late_start, 0, gap), costs, preempt_s,
                     steal_share(cap.meta))
    shares = [cpu.share[p] if gaps == "cpu" else 0.0 for p in ops.threads]
    waits = [cpu.wait[p] if gaps == "cpu" else 1.0 for p in ops.threads]
    if gaps == "cpu":  # the CPU of threads with no file operation, burnt by threads of their own
        rows, bgap, bprocs, bshares = burners(cpu.extra, tree.starts, tree.ends, len(ops.threads), code["START"],
                                              code["EXIT"])
        a, gap = np.concatenate([a, rows]), np.concatenate([gap, bgap])
        waited = np.concatenate([waited, np.zeros(len(bgap), dtype=np.int64)])
        ops.threads.extend(bprocs)
        shares += bshares
        waits += [0.0] * len(bprocs)
    recorded = recorded_threads(a, gap, waited, len(ops.threads), t0, {code["START"], code["EXIT"], code["SPAWN"]},
                                {code["WAIT"], code["AFTER"], code["PIPE_READ"], code["PIPE_WRITE"]})
    cwd = str(cap.meta.get("cwd") or "")
    made = {(pi, local[pi][f["index"]][1]) for pi, p in enumerate(procs) for f in p.files
            if f["flags"] & F.FILE_FLAGS["CREATED"][0] and local[pi].get(f["index"], (0,))[0] == _DATA}
    return Plan(files, ops.handles, ops.threads, len(procs), tree.roots, n_pipes, _op_array(a, gap),
                float(cap.meta.get("wall_s") or 0.0), skipped_ops=ops.skipped, notes=notes,
                overhead_s=overhead_ns / 1e9,
                cpu_share=shares, wait_share=waits, unreplayed_cpu_s=cpu.unreplayed_s, recorded=recorded,
                cwd=cwd.strip("/") if _is_data(cwd + "/") else "",
                read_only=read_only(a, ops.handle_of, made, code, HANDLE_OPS),
                cpu_ns_per_block=per_block, cautions=shape_cautions(cap, cpu.unreplayed_s, overhead_ns / 1e9))


# what a process's file index stands for in the replay: a data file (by its index in the plan's files) or a pipe
_DATA, _PIPE = 1, 2


def _lay_out(procs: list[Process]) -> tuple[list[ReplayFile], list[dict[int, tuple[int, int]]], int]:
    """The step's data files (one per path across processes) and its pipes (one per inode across processes): the
    files, each process's map from its file index to (_DATA, file) or (_PIPE, pipe), and the number of pipes."""
    files: list[ReplayFile] = []
    by_path: dict[str, int] = {}
    pipes: dict[tuple[int, int], int] = {}
    pipe_flag = F.FILE_FLAGS["NOT_A_FILE"][0]
    local: list[dict[int, tuple[int, int]]] = []
    for p in procs:
        m: dict[int, tuple[int, int]] = {}
        for f in p.files:
            path = f["path"]
            if f["flags"] & pipe_flag:
                if "pipe:" in path or path.startswith("pipe"):
                    m[f["index"]] = (_PIPE, pipes.setdefault((f["dev"], f["ino"]), len(pipes)))
            elif _is_data(path):
                m[f["index"]] = (_DATA, _merge_file(files, by_path, f))
        local.append(m)
    return files, local, len(pipes)


def _merge_file(files: list[ReplayFile], by_path: dict[str, int], f: dict[str, Any]) -> int:
    """Add one process's record of a data file to the plan's file of that path; its index."""
    path = f["path"]
    i = by_path.get(path)
    if i is None:
        i = by_path[path] = len(files)
        files.append(ReplayFile(path, path.lstrip("/"), content=content_of(path)))
    rf = files[i]
    rf.dir = rf.dir or bool(f["flags"] & F.FILE_FLAGS["DIRECTORY"][0])
    rf.created = rf.created or bool(f["flags"] & F.FILE_FLAGS["CREATED"][0])
    rf.layout = max(rf.layout, int(f["max_read_end"]))
    return i


_PIPE_READS = ("READ", "READV", "FREAD", "FGETS", "FGETC", "GETDELIM", "FSCANF", "STDIO_FILL")
_PIPE_WRITES = ("WRITE", "WRITEV", "FWRITE", "FPUTS", "FPUTC", "FPRINTF", "STDIO_DRAIN", "SENDFILE")


@dataclass
class _Ops:
    """The replayed ops of every process and the threads and handles they name, taken one process at a time."""

    code: dict[str, int]
    threads: list[int] = field(default_factory=list)                 # thread -> process
    thread_of: dict[tuple[int, int], int] = field(default_factory=dict)  # (process, tid) -> thread
    handles: list[int] = field(default_factory=list)                 # handle -> file
    handle_of: dict[tuple[int, int], int] = field(default_factory=dict)  # (process, file) -> handle
    rows: list[np.ndarray] = field(default_factory=list)
    pipe_rows: list[np.ndarray] = field(default_factory=list)
    skipped: int = 0
    proc_threads: list[list[tuple[int, float, float]]] = field(default_factory=list)  # (thread, first start, last end)
    event_times: dict[int, np.ndarray] = field(default_factory=dict)  # thread -> sorted start of every event
    event_ops: dict[int, np.ndarray] = field(default_factory=dict)  # thread -> the op code of each, in that order
    event_own: dict[int, np.ndarray] = field(default_factory=dict)  # thread -> own_after of each, in that order
    event_before: dict[int, np.ndarray] = field(default_factory=dict)  # thread -> before_first of each, same

    def __post_init__(self) -> None:
        self.op_names = [name for name, _cat in F.OPS]
        n = len(self.op_names)
        # capture op -> replay op, on a data file and on a pipe (-1: not replayed); index n: an unknown op
        self.file_rp = np.full(n + 1, -1, dtype=np.int64)
        self.pipe_rp = np.full(n + 1, -1, dtype=np.int64)
        for i, name in enumerate(self.op_names):
            if name in _FILE_OPS:
                self.file_rp[i] = self.code[_FILE_OPS[name]]
            if name in _PIPE_READS:
                self.pipe_rp[i] = self.code["PIPE_READ"]
            elif name in _PIPE_WRITES:
                self.pipe_rp[i] = self.code["PIPE_WRITE"]
        self.path_codes = {self.code[n] for n in PATH_OPS}

    def thread_id(self, pi: int, tid: int) -> int:
        t = self.thread_of.get((pi, tid))
        if t is None:
            t = self.thread_of[(pi, tid)] = len(self.threads)
            self.threads.append(pi)
        return t

    def add_process(self, pi: int, ev: np.ndarray | None, local: dict[int, tuple[int, int]]) -> None:
        """Number the threads of process `pi` and keep its events on data files and pipes as rows."""
        if ev is None or not len(ev):
            self.thread_id(pi, 0)
            self.proc_threads.append([])
            return
        kind, gid = _file_kinds(ev["file"].astype(np.int64), local)
        rp = self._paired_copies(ev, self._replay_ops(ev["op"].astype(np.int64), kind), kind)
        keep = rp >= 0
        self.skipped += int((~keep).sum())
        tids = ev["tid"].astype(np.int64)
        self.proc_threads.append(self._number_threads(pi, ev, tids))
        ev, rp, kind, gid, tids = ev[keep], rp[keep], kind[keep], gid[keep], tids[keep]
        if not len(ev):
            return
        uniq, inv = np.unique(tids, return_inverse=True)
        thr = np.array([self.thread_of[(pi, int(t))] for t in uniq], dtype=np.int64)[inv]
        block = np.stack([ev["start_mono"].astype(np.int64), ev["dur_ns"].astype(np.int64),
                          ev["offset"].astype(np.int64), ev["size"].astype(np.int64), rp, thr,
                          self._objects(pi, rp, kind, gid),
                          np.zeros(len(ev), dtype=np.int64), np.ones(len(ev), dtype=np.int64)], axis=1)
        self.rows.append(block)
        if (kind == _PIPE).any():
            self.pipe_rows.append(block[kind == _PIPE])

    def _replay_ops(self, opc: np.ndarray, kind: np.ndarray) -> np.ndarray:
        """The replay op of each event (-1: left as compute)."""
        n = len(self.op_names)
        rp = np.where(kind == _DATA, self.file_rp[np.minimum(opc, n)],
                      np.where(kind == _PIPE, self.pipe_rp[np.minimum(opc, n)], -1))
        # a sync of the whole system needs no file
        for name in ("SYNC", "SYNCFS"):
            if name in self.op_names:
                rp = np.where((opc == self.op_names.index(name)) & (kind == 0), self.code["SYNCFS"], rp)
        return rp

    def _paired_copies(self, ev: np.ndarray, rp: np.ndarray, kind: np.ndarray) -> np.ndarray:
        """COPY_FROM and COPY for each copy whose source and destination are both data files."""
        if _COPY_SOURCE not in self.op_names or len(ev) < 2:
            return rp
        op, tid = ev["op"].astype(np.int64), ev["tid"]
        calls = [self.op_names.index(n) for n in _COPY_CALLS]
        i = np.nonzero((op[:-1] == self.op_names.index(_COPY_SOURCE)) & np.isin(op[1:], calls)
                       & (tid[:-1] == tid[1:]) & (kind[:-1] == _DATA) & (kind[1:] == _DATA))[0]
        if len(i):
            rp = rp.copy()
            rp[i], rp[i + 1] = self.code["COPY_FROM"], self.code["COPY"]
        return rp

    def _number_threads(self, pi: int, ev: np.ndarray, tids: np.ndarray) -> list[tuple[int, float, float]]:
        """Each thread of the process with the span of its events; notes every event's start per thread."""
        pts: list[tuple[int, float, float]] = []
        own, before = own_after(ev), before_first(ev)
        for tid in np.unique(tids):
            sel = tids == tid
            t = self.thread_id(pi, int(tid))
            starts = ev["start_mono"][sel]
            ends = starts + ev["dur_ns"][sel]
            pts.append((t, float(starts.min()), float(ends.max())))
            order = np.argsort(starts, kind="stable")
            self.event_times[t] = starts.astype(np.int64)[order]
            self.event_ops[t] = ev["op"][sel].astype(np.int64)[order]
            self.event_own[t] = own[sel][order]
            self.event_before[t] = before[sel][order]
        return pts

    def _objects(self, pi: int, rp: np.ndarray, kind: np.ndarray, gid: np.ndarray) -> np.ndarray:
        """What each op acts on: the file for a path op, a handle per (process, file) for the others, the pipe."""
        obj = np.zeros(len(rp), dtype=np.int64)
        data = kind == _DATA
        on_path = data & np.isin(rp, list(self.path_codes))
        obj[on_path] = gid[on_path]
        on_handle = data & ~on_path
        if on_handle.any():
            # one handle per (process, file), numbered in the order the files are first used
            uniq, first, inv = np.unique(gid[on_handle], return_index=True, return_inverse=True)
            hmap = np.zeros(len(uniq), dtype=np.int64)
            for u in np.argsort(first, kind="stable"):
                key = (pi, int(uniq[u]))
                h = self.handle_of.get(key)
                if h is None:
                    h = self.handle_of[key] = len(self.handles)
                    self.handles.append(int(uniq[u]))
                hmap[u] = h
            obj[on_handle] = hmap[inv]
        obj[kind == _PIPE] = gid[kind == _PIPE]
        return obj

    def thread_at(self, pi: int, t: float, after: bool = False) -> int:
        """The thread of process pi whose last op before t is latest (or whose first op after t is earliest)."""
        best, key = None, None
        for th, first, last in self.proc_threads[pi]:
            if after:
                k = first if first >= t else None
                if k is not None and (key is None or k < key):
                    best, key = th, k
            elif first <= t and (key is None or min(last, t) > key):
                best, key = th, min(last, t)
        return best if best is not None else self.thread_of[(pi, min(tid for (q, tid) in self.thread_of if q == pi))]


def _file_kinds(fidx: np.ndarray, local: dict[int, tuple[int, int]]) -> tuple[np.ndarray, np.ndarray]:
    """Per event: 0 (not the step's), _DATA or _PIPE, and the data file's or the pipe's number."""
    kind = np.zeros(len(fidx), dtype=np.int64)
    gid = np.zeros(len(fidx), dtype=np.int64)
    for li, (k, g) in local.items():
        sel = fidx == li
        kind[sel] = k
        gid[sel] = g
    return kind, gid


def _with_pipe_needs(allrows: np.ndarray, pr: np.ndarray, code: dict[str, int], pipe_buf: int) -> np.ndarray:
    """The rows with each pipe op's offset set to the bytes the other side must have moved first."""
    need = _pipe_needs(pr, code["PIPE_READ"], pipe_buf)
    return np.concatenate([allrows[~np.isin(allrows[:, _OP], [code["PIPE_READ"], code["PIPE_WRITE"]])],
                           np.column_stack([pr[:, :2], need, pr[:, 3:]])])


def _gaps(a: np.ndarray, start_code: int, roots: list[int], t0: int, ops: _Ops, costs: np.ndarray
          ) -> tuple[np.ndarray, int]:
    """The compute time before each op of the rows `a` (sorted per thread, in time order), and the profiler's
    recording cost taken out of them.  A thread's first op follows its start; a root starts at t0."""
    if not len(a):
        return np.zeros(0, dtype=np.int64), 0
    prev_end = np.empty(len(a), dtype=np.int64)
    prev_end[1:] = a[:-1, _T] + a[:-1, _DUR]
    first = np.ones(len(a), dtype=bool)
    first[1:] = a[1:, _THREAD] != a[:-1, _THREAD]
    prev_end[first] = a[first, _T]
    gap = np.maximum(a[:, _T] - prev_end, 0)
    is_start = a[:, _OP] == start_code
    root_set = np.isin(a[:, _OBJ], roots) & is_start
    gap[is_start] = 0
    gap[root_set] = a[root_set, _T] - t0
    return less_recording_cost(a, gap, ops.event_times, ops.event_ops, costs, ops.event_own, ops.event_before)


def _op_array(a: np.ndarray, gap: np.ndarray) -> np.ndarray:
    """The rows as the engine's rp_op array."""
    out = np.zeros(len(a), dtype=op_dtype())
    out["gap"], out["dur"], out["offset"], out["size"] = gap, a[:, 1], a[:, 2], a[:, 3]
    out["op"], out["thread"], out["obj"], out["flags"] = a[:, 4], a[:, 5], a[:, 6], a[:, 7]
    return out
