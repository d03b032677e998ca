"""The end-of-run summary as plain data: time by category, bytes, coverage, files, process tree.

The per-image time accounting is analysis/processes.py's, shared with the report; this module adds a
quick per-path merge of the file records (top files, temp files, bytes per mount).
"""

from __future__ import annotations

from typing import Any, Callable

from iolens import _format as F
from iolens.analysis import processes as P
from iolens.analysis.classify import file_kind
from iolens.analysis.files import is_program
from iolens.analysis.model import FileSummary, ProcSummary, RunSummary
from iolens.analysis.mounts import MountResolver
from iolens.capture.reader import Capture, Process
from iolens.sysinfo import steal_notes

__all__ = ["FileSummary", "ProcSummary", "RunSummary", "file_kind", "summarize"]

CATS = P.CATS
FF = {name: bit for name, (bit, _doc) in F.FILE_FLAGS.items()}
NS = 1e-9
NO_PROCESS = ("no process was recorded: the command is statically linked or setuid, or cleared LD_PRELOAD; "
              "the interposer sees only dynamically linked programs (its I/O is in the kernel's counters only)")


def summarize(cap: Capture, top: int = 10, *, files: bool = True) -> RunSummary:
    """files=False skips merging file records (quicker when only the process tree and totals are wanted)."""
    procs = cap.processes
    imgs = P.images(cap)
    tree = []
    pt = P.process_tree(imgs, cap.meta.get("parent_pid"))
    for i, depth in pt.order:
        s = imgs[i]
        s.depth, s.index, s.exec_from = depth, i, pt.exec_from[i]
        s.chain = [imgs[k].name for k in pt.chain[i]]
        tree.append(s)
    real_files = [f for f in _file_summaries(procs, _resolver(cap)) if f.kind in ("file", "aggregate")] if files else []
    exes = {p.exe for p in procs if p.exe}
    shown = [f for f in real_files if f.reads or f.writes or f.created or not is_program(f.path, f.mode, exes)]
    run = P.run_times(imgs)
    return RunSummary(
        command=cap.meta.get("command", procs[0].argv if procs else []),
        wall_s=P.wall_s(cap),
        exit_status=cap.meta.get("exit_status"),
        exit_signal=cap.meta.get("exit_signal"),
        processes=len(procs),
        own_s=run.own_s,
        io_wall_s=run.io_wall_s,
        cat_wall_s=run.cat_wall_s,
        stream_s=run.stream_s,
        compute_s=max(0.0, run.own_s - run.io_wall_s - run.stream_s),
        bytes_read=run.bytes_read,
        bytes_written=run.bytes_written,
        kernel_read=run.kernel_read,
        kernel_written=run.kernel_written,
        coverage=run.coverage,
        files=len(real_files),
        top_files=sorted(shown, key=lambda f: (f.time_s, f.bytes_read + f.bytes_written), reverse=True)[:top],
        temp_files=sorted((f for f in real_files if f.created and f.deleted), key=lambda f: -f.bytes_written),
        tree=tree,
        mounts=_mount_sums(real_files),
        problems=list(cap.problems) + ([] if procs else [NO_PROCESS]) + _detached(cap.meta)
        + steal_notes(cap.meta, "the compute time here includes it; profile again when the machine is quieter, or "
                                "use replay or predict, which take it out"),
    )


def _resolver(cap: Capture) -> Callable[[int, str], tuple[str, str]]:
    mounts_of = MountResolver(cap.meta.get("mounts", []))

    def resolve(dev: int, path: str) -> tuple[str, str]:
        m = mounts_of(dev, path)
        if m is None:
            return "", ("" if path.startswith("/") else "pipe/socket")
        return m["mountpoint"], m["fstype"]

    return resolve


def _merged(procs: list[Process], resolve: Callable[[int, str], tuple[str, str]]) -> list[dict[str, Any]]:
    """The records of each path summed across processes, in the order paths first appear."""
    merged: dict[str, dict[str, Any]] = {}
    for p in procs:
        for f in p.files:
            m = merged.get(f["path"])
            if m is None:
                mp, fst = resolve(f["dev"], f["path"])
                m = merged[f["path"]] = {
                    "path": f["path"], "mount": mp, "fstype": fst, "bytes_read": 0, "bytes_written": 0, "reads": 0,
                    "writes": 0, "opens": 0, "cat": [0] * len(CATS), "flags": 0, "created": None, "deleted": None,
                    "pids": set(), "kind": file_kind(f), "mode": 0,
                }
            for k in ("bytes_read", "bytes_written", "reads", "writes", "opens"):
                m[k] += f[k]
            for i in range(len(CATS)):
                m["cat"][i] += f["cat_time_ns"][i]
            m["flags"] |= f["flags"]
            m["mode"] |= f["mode"]
            if f["created_mono"] and f["flags"] & FF["CREATED"]:
                m["created"] = min(m["created"] or f["created_mono"], f["created_mono"])
            if f["deleted_mono"]:
                m["deleted"] = max(m["deleted"] or 0, f["deleted_mono"])
            m["pids"].add(p.pid)
    return list(merged.values())


def _file_summaries(procs: list[Process], resolve: Callable[[int, str], tuple[str, str]]) -> list[FileSummary]:
    out = []
    for m in _merged(procs, resolve):
        created = m["created"] is not None
        deleted = bool(m["flags"] & FF["DELETED"])
        out.append(FileSummary(
            path=m["path"], mount=m["mount"], fstype=m["fstype"], bytes_read=m["bytes_read"],
            bytes_written=m["bytes_written"], reads=m["reads"], writes=m["writes"], opens=m["opens"],
            time_s=sum(m["cat"]) * NS, cat_time_s={c: m["cat"][i] * NS for i, c in enumerate(CATS)},
            created=created, deleted=deleted,
            lifetime_s=(m["deleted"] - m["created"]) * NS if created and deleted and m["deleted"] else None,
            processes=len(m["pids"]), kind=m["kind"], mode=m["mode"],
        ))
    return out


def _mount_sums(real_files: list[FileSummary]) -> list[dict[str, Any]]:
    """Per mount: which storage carried how much, most time first."""
    per_mount: dict[str, dict[str, Any]] = {}
    for f in real_files:
        key = f.mount or "?"
        pm = per_mount.setdefault(key, {"mount": key, "fstype": f.fstype, "bytes_read": 0, "bytes_written": 0,
                                        "time_s": 0.0, "files": 0})
        pm["bytes_read"] += f.bytes_read
        pm["bytes_written"] += f.bytes_written
        pm["time_s"] += f.time_s
        pm["files"] += 1
    return sorted(per_mount.values(), key=lambda m: -m["time_s"])


def _detached(meta: dict) -> list[str]:
    running = [p for p in meta.get("running_at_save") or [] if isinstance(p, int)]
    if not running:
        return []
    return [f"{len(running)} process(es) still running when the capture was saved (detached: pid "
            f"{', '.join(map(str, running[:5]))}); their later I/O is not captured"]
