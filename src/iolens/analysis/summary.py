"""The end-of-run summary as plain data: time by category, bytes, coverage, files, process tree.

Time accounting per process image ("own time" = wall time minus time blocked
waiting for children, so a shell that waits for its pipeline is not counted
twice).  I/O wall time is the time during which at least one thread of the
process was inside an I/O call, so it never exceeds the process's wall time;
the summed call time (which can, with threads) is kept beside it.
"""

from __future__ import annotations

import os
from dataclasses import asdict, dataclass, field
from typing import Any

from iolens import _format as F
from iolens.analysis.mounts import MountResolver
from iolens.capture.reader import Capture, Process

CATS = [c.lower() for c in F.CATEGORIES]
FF = {name: bit for name, (bit, _doc) in F.FILE_FLAGS.items()}
PF = {name: bit for name, (bit, _doc) in F.PROC_FLAGS.items()}
NS = 1e-9
EVENT_SIZE = F.LAYOUTS["EVENT"][2]


@dataclass
class ProcSummary:
    pid: int
    ppid: int
    name: str
    argv: list[str]
    start_s: float
    wall_s: float
    own_s: float
    cpu_s: float
    io_wall_s: float
    cat_wall_s: dict[str, float]
    cat_time_s: dict[str, float]
    bytes_read: int
    bytes_written: int
    kernel_read: int
    kernel_written: int
    exit_status: int | None
    ended: str
    depth: int = 0
    files: int = 0


@dataclass
class FileSummary:
    path: str
    mount: str
    fstype: str
    bytes_read: int
    bytes_written: int
    reads: int
    writes: int
    opens: int
    time_s: float
    cat_time_s: dict[str, float]
    created: bool
    deleted: bool
    lifetime_s: float | None
    processes: int
    kind: str


@dataclass
class RunSummary:
    command: list[str]
    wall_s: float
    exit_status: int | None
    processes: int
    own_s: float
    io_wall_s: float
    cat_wall_s: dict[str, float]
    stream_s: float
    compute_s: float
    bytes_read: int
    bytes_written: int
    kernel_read: int
    kernel_written: int
    coverage: float | None
    files: int
    top_files: list[FileSummary] = field(default_factory=list)
    temp_files: list[FileSummary] = field(default_factory=list)
    tree: list[ProcSummary] = field(default_factory=list)
    mounts: list[dict[str, Any]] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def file_kind(f: dict[str, Any]) -> str:
    if f["flags"] & FF["AGGREGATE"]:
        return "aggregate"
    if f["flags"] & FF["NOT_A_FILE"]:
        return "stream"
    if f["flags"] & FF["DIRECTORY"]:
        return "dir"
    return "file"


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


def summarize(cap: Capture, top: int = 10, *, files: bool = True) -> RunSummary:
    """files=False skips merging file records (the report merges them itself, vectorised)."""
    meta = cap.meta
    mounts_of = MountResolver(meta.get("mounts", []))

    def resolve(dev: int, path: str) -> tuple[str, str]:
        m = mounts_of(dev, path)
        if m is None:
            return "", ("" if path.startswith("/") else "pipe/socket")
        return m["mountpoint"], m["fstype"]

    procs = cap.processes
    t0 = min((p.start_mono for p in procs), default=0)
    run_end_mono = meta.get("end_mono") or max((p.end_mono for p in procs), default=t0)

    # children's end times as their parents saw them, for processes that never finalized
    reaped = {c["pid"]: c for p in procs for c in p.children}

    # /proc/self/io of a process includes the totals of the children it reaped;
    # subtract each reaped child's final total to get the image's own I/O.
    final_image: dict[int, Process] = {}
    for p in procs:
        if p.finalized and not (p.fields["flags"] & PF["EXECED"]):
            final_image[p.pid] = p
    reaped_io: dict[int, tuple[int, int]] = {}
    for p in procs:
        r = w = 0
        for c in p.children:
            img = final_image.get(c["pid"])
            if img is not None:
                r += img.k_rchar
                w += img.k_wchar
        reaped_io[id(p)] = (r, w)

    summaries: list[ProcSummary] = []
    for p in procs:
        end = p.end_mono or reaped.get(p.pid, {}).get("end_mono") or run_end_mono
        wall = max(0, end - p.start_mono) * NS
        wait = p.wait_ns * NS
        own = max(0.0, wall - wait)
        cat_wall = {c: p.cat_wall_ns[i] * NS for i, c in enumerate(CATS)}
        io_wall = min(p.io_wall_ns * NS, wall) if wall else p.io_wall_ns * NS
        cr, cw = reaped_io[id(p)]
        k_r = max(0, p.k_rchar - p.k_rchar_start - cr) if p.finalized else 0
        k_w = max(0, p.k_wchar - p.k_wchar_start - cw) if p.finalized else 0
        k_w = max(0, k_w - (p.trace_events - p.trace_lost) * EVENT_SIZE)  # our own trace writes
        status = p.exit_status if p.finalized and not (p.fields["flags"] & PF["EXECED"]) else None
        if status is None and p.pid in reaped and not (p.fields["flags"] & PF["EXECED"]):
            status = reaped[p.pid]["status"]
        summaries.append(
            ProcSummary(
                pid=p.pid,
                ppid=p.ppid,
                name=proc_name(p),
                argv=p.argv,
                start_s=(p.start_mono - t0) * NS,
                wall_s=wall,
                own_s=own,
                cpu_s=max(0, p.utime_ns + p.stime_ns - p.utime_start_ns - p.stime_start_ns) * NS,
                io_wall_s=io_wall,
                cat_wall_s=cat_wall,
                cat_time_s={c: p.cat_time_ns[i] * NS for i, c in enumerate(CATS)},
                bytes_read=p.bytes_read,
                bytes_written=p.bytes_written,
                kernel_read=k_r,
                kernel_written=k_w,
                exit_status=status,
                ended=_ended(p),
                files=len(p.files),
            )
        )

    # files: merge records of the same path across processes
    merged: dict[str, dict[str, Any]] = {}
    for p in procs if files else []:
        for f in p.files:
            m = merged.get(f["path"])
            if m is None:
                mp, fst = resolve(f["dev"], f["path"])
                m = merged[f["path"]] = {
                    "path": f["path"],
                    "mount": mp,
                    "fstype": fst,
                    "bytes_read": 0,
                    "bytes_written": 0,
                    "reads": 0,
                    "writes": 0,
                    "opens": 0,
                    "cat": [0] * len(CATS),
                    "flags": 0,
                    "created": None,
                    "deleted": None,
                    "pids": set(),
                    "kind": file_kind(f),
                }
            for k in ("bytes_read", "bytes_written", "reads", "writes", "opens"):
                m[k] += f[k]
            for i in range(len(CATS)):
                m["cat"][i] += f["cat_time_ns"][i]
            m["flags"] |= f["flags"]
            if f["created_mono"] and f["flags"] & FF["CREATED"]:
                m["created"] = min(m["created"] or f["created_mono"], f["created_mono"])
            if f["deleted_mono"]:
                m["deleted"] = max(m["deleted"] or 0, f["deleted_mono"])
            m["pids"].add(p.pid)

    files: list[FileSummary] = []
    for m in merged.values():
        created = m["created"] is not None
        deleted = bool(m["flags"] & FF["DELETED"])
        life = (m["deleted"] - m["created"]) * NS if created and deleted and m["deleted"] else None
        files.append(
            FileSummary(
                path=m["path"],
                mount=m["mount"],
                fstype=m["fstype"],
                bytes_read=m["bytes_read"],
                bytes_written=m["bytes_written"],
                reads=m["reads"],
                writes=m["writes"],
                opens=m["opens"],
                time_s=sum(m["cat"]) * NS,
                cat_time_s={c: m["cat"][i] * NS for i, c in enumerate(CATS)},
                created=created,
                deleted=deleted,
                lifetime_s=life,
                processes=len(m["pids"]),
                kind=m["kind"],
            )
        )
    real_files = [f for f in files if f.kind in ("file", "aggregate")]
    top_files = sorted(real_files, key=lambda f: (f.time_s, f.bytes_read + f.bytes_written), reverse=True)[:top]
    temp_files = sorted((f for f in real_files if f.created and f.deleted), key=lambda f: -f.bytes_written)

    # per mount: which storage carried how much
    per_mount: dict[str, dict[str, Any]] = {}
    for f in real_files:
        key = f.mount or "?"
        pm = per_mount.setdefault(key, {"mount": key, "fstype": f.fstype, "bytes_read": 0, "bytes_written": 0,
                                          "time_s": 0.0, "files": 0})
        pm["bytes_read"] += f.bytes_read
        pm["bytes_written"] += f.bytes_written
        pm["time_s"] += f.time_s
        pm["files"] += 1
    mounts = sorted(per_mount.values(), key=lambda m: -m["time_s"])

    tree = _tree(summaries, meta.get("parent_pid"))
    own = sum(s.own_s for s in summaries)
    io_wall = sum(min(s.io_wall_s, s.own_s) for s in summaries)
    cat_wall = {c: sum(s.cat_wall_s[c] for s in summaries) for c in CATS if c != "stream"}
    stream = sum(min(s.cat_wall_s["stream"], max(0.0, s.own_s - min(s.io_wall_s, s.own_s))) for s in summaries)
    k_r = sum(s.kernel_read for s in summaries)
    k_w = sum(s.kernel_written for s in summaries)
    a_r = sum(s.bytes_read for s in summaries if s.kernel_read or s.kernel_written)
    a_w = sum(s.bytes_written for s in summaries if s.kernel_read or s.kernel_written)
    coverage = (min(a_r, k_r) + min(a_w, k_w)) / (k_r + k_w) if k_r + k_w else None
    wall = meta.get("wall_s")
    if wall is None:
        wall = (run_end_mono - t0) * NS if procs else 0.0
    return RunSummary(
        command=meta.get("command", procs[0].argv if procs else []),
        wall_s=wall,
        exit_status=meta.get("exit_status"),
        processes=len(procs),
        own_s=own,
        io_wall_s=io_wall,
        cat_wall_s=cat_wall,
        stream_s=stream,
        compute_s=max(0.0, own - io_wall - stream),
        bytes_read=sum(s.bytes_read for s in summaries),
        bytes_written=sum(s.bytes_written for s in summaries),
        kernel_read=k_r,
        kernel_written=k_w,
        coverage=coverage,
        files=len(real_files),
        top_files=top_files,
        temp_files=temp_files,
        tree=tree,
        mounts=mounts,
        problems=list(cap.problems) + ([] if procs else [
            "no process was recorded: the command is statically linked or setuid, or cleared LD_PRELOAD; "
            "the interposer sees only dynamically linked programs (its I/O is in the kernel's counters only)"]),
    )


def _tree(procs: list[ProcSummary], root_ppid: int | None) -> list[ProcSummary]:
    """Depth-first order with depths: the images of one pid (exec chain) in order, then its children."""
    images: dict[int, list[ProcSummary]] = {}
    for p in sorted(procs, key=lambda p: p.start_s):
        images.setdefault(p.pid, []).append(p)
    children: dict[int, list[int]] = {}
    for pid, imgs in images.items():
        children.setdefault(imgs[0].ppid, []).append(pid)
    out: list[ProcSummary] = []
    seen: set[int] = set()

    def visit(pid: int, depth: int) -> None:
        if pid in seen:
            return
        seen.add(pid)
        for img in images[pid]:
            img.depth = depth
            out.append(img)
        for c in sorted(children.get(pid, []), key=lambda c: images[c][0].start_s):
            visit(c, depth + 1)

    roots = [pid for pid, imgs in images.items() if imgs[0].ppid == root_ppid or imgs[0].ppid not in images]
    for pid in sorted(roots, key=lambda pid: images[pid][0].start_s):
        visit(pid, 0)
    for pid in images:  # anything unreachable still shows
        visit(pid, 0)
    return out
