"""One task analysed into a small summary (runs in a worker process; only the summary travels back).

The task's parts (or its merged capture) are read, given a META record, analysed with the same
`build_report` as a single capture, and folded into what the pipeline report needs: time by I/O class,
bytes and time per mount, temporary files, the files touched, and the advice that fired.
"""

from __future__ import annotations

import io
import os
import socket
from typing import TYPE_CHECKING, Any

from iolens.pipeline.naming import has_rule, left_behind_names, nextflow_exit, rule_of
from iolens.pipeline.scan import Task

if TYPE_CHECKING:
    from iolens.analysis.model import Report
    from iolens.capture.reader import Capture, Process

_LOCAL_MOUNTS: list[dict[str, Any]] | None = None


def _local_mounts() -> list[dict[str, Any]]:
    global _LOCAL_MOUNTS
    if _LOCAL_MOUNTS is None:
        from iolens.sysinfo import mounts

        _LOCAL_MOUNTS = mounts()
    return _LOCAL_MOUNTS


def load_task(task: Task) -> Capture:
    """The task as one Capture (parts merged in memory, in start order)."""
    from iolens.capture.merge import part_records
    from iolens.capture.reader import decode, read_capture
    from iolens.capture.writer import Sealer, meta_record

    if task.kind == "capture":
        return read_capture(task.paths[0])
    problems: list[str] = []
    bodies = []
    for path in task.paths:
        try:
            with open(path, "rb") as fh:
                bodies.append(part_records(fh.read(), os.path.basename(path), problems))
        except OSError as err:
            problems.append(f"{path}: {err.strerror}")
    info = task.info
    host = info.get("host") or ""
    mounts = info.get("mounts")
    if mounts is None:  # the entry did not record them: this host's, when the task ran here
        mounts = _local_mounts() if host in ("", socket.gethostname(), socket.gethostname().split(".")[0]) else []
    meta = {"tool": "iolens", "command": info.get("command") or [], "cwd": info.get("cwd"), "host": host,
            "mounts": mounts, "workflow": task.names}
    meta = {k: v for k, v in meta.items() if v is not None}  # absent, not null: the reader checks types
    buf = io.BytesIO()  # sealed as the merge seals a capture file, so the reader checks it the same way
    sealer = Sealer(buf)
    sealer.add(meta_record(meta))
    sealer.close_block()
    for body in bodies:
        sealer.add(body, part=True)
        sealer.close_block()
    sealer.finish()
    cap = decode(buf.getvalue(), task.id)
    cap.problems.extend(problems)
    return cap


def _mount_rows(rep: Report) -> list[dict[str, Any]]:
    out = []
    for m in rep.mounts:
        stream = m.fstype in ("", "proc", "sysfs", "devtmpfs", "pipe", "socket", "-") or m.mount.startswith("(")
        if stream or not (m.bytes_read or m.bytes_written or m.time_s):
            continue
        out.append({"mount": m.mount, "fstype": m.fstype, "storage": m.storage, "bytes_read": m.bytes_read,
                    "bytes_written": m.bytes_written, "time_s": m.time_s, "breakdown": dict(m.breakdown),
                    "temp_files": m.temp_files, "temp_bytes": m.temp_bytes})
    return out


def unprofiled_programs(procs: list[Process]) -> tuple[list[str], bool]:
    """Programs of this task that ran without the interposer: an exec with no image after it (a stripped
    environment, or a static binary), and reaped children that left no image.  Also: did the task's own
    command (its first process's last exec) go unprofiled?"""
    from iolens import _format as F

    execed = F.PROC_FLAGS["EXECED"][0]
    by_pid: dict[int, list] = {}
    for p in procs:
        by_pid.setdefault(p.pid, []).append(p)
    lost = []
    for chain in by_pid.values():
        chain.sort(key=lambda p: p.start_mono)
        if chain[-1].fields["flags"] & execed:
            lost.append(f"{os.path.basename(chain[-1].argv[0]) if chain[-1].argv else '?'} [{chain[-1].pid}] exec'd a "
                        "program that left no records")
    for p in procs:
        for c in p.children:
            if c["pid"] not in by_pid:
                lost.append(f"child [{c['pid']}] of {os.path.basename(p.argv[0]) if p.argv else '?'} left no records")
    first = min(procs, key=lambda p: p.start_mono)
    return lost, bool(by_pid[first.pid][-1].fields["flags"] & execed)


def summarize_task(task: Task, thresholds: dict[str, float] | None = None,
                   outputs: dict[str, dict[str, Any]] | None = None) -> dict[str, Any]:
    """Everything the pipeline report keeps of one task; `outputs` names the job of a task that wrote its output."""
    from iolens.analysis.report import build_report

    cap = load_task(task)
    names = task.names or dict(cap.meta.get("workflow") or {})
    procs = cap.processes
    # what `iolens report` reads to show this task (a loose or parts task: its first part, the first process)
    base: dict[str, Any] = {"id": task.id, "kind": task.kind, "names": names, "paths": len(task.paths),
                            "report": task.paths[0] if task.paths else None}
    if not procs:
        return dict(base, rule=rule_of(names, "?"), profiled=False, problems=list(cap.problems))
    lost, command_lost = unprofiled_programs(procs)
    if command_lost:
        return dict(base, rule=rule_of(names, "?"), profiled=False, problems=lost)
    rep = build_report(cap, thresholds)
    first = min(procs, key=lambda p: p.start_mono)
    root = max((p for p in procs if p.pid == first.pid), key=lambda p: p.start_mono)  # what the task exec'd
    fallback = os.path.basename(root.argv[0]) if root.argv else "?"
    if outputs and "snakemake" not in names:
        job = next((outputs[f.path] for f in rep.files if f.bytes_written and f.path in outputs), None)
        names = dict(names, snakemake=job) if job is not None else dict(names, engine="snakemake")
        base["names"] = names
    elif not has_rule(names):  # no log and no names: what the engine left on disk
        found = left_behind_names(root.cwd, [f.path for f in rep.files if f.bytes_written and f.kind == "file"])
        if found:
            names = {**names, **found}
            base["names"] = names
    status = cap.meta.get("exit_status")
    if status is None and "nextflow" in names:  # a loose task's capture has none; Nextflow wrote `.exitcode`
        status = names["nextflow"].get("exitcode", nextflow_exit(root.cwd))
    if status is None and root.finalized:  # a task given only the environment: its command's own exit
        status = root.exit_status
    unfinished = any(not p.finalized for p in procs)  # killed (SIGKILL) or still running: counted until then
    start_real = cap.meta.get("start_real_ns") or first.start_real
    files = [(f.path, f.mount, f.fstype, f.bytes_read, f.bytes_written, f.time_s, f.temporary)
             for f in rep.files if f.kind in ("file", "aggregate")]
    return dict(
        base, rule=rule_of(names, fallback), profiled=True, host=cap.meta.get("host") or root.host,
        start_real_ns=start_real, wall_s=rep.totals["wall_s"], exit_status=status,
        partial=bool(rep.capture["partial"]) or bool(task.info.get("unfinished")) or unfinished,
        problems=list(cap.problems), breakdown=dict(rep.breakdown), io_s=rep.totals["io_s"],
        cpu_s=rep.totals["cpu_s"], bytes_read=rep.totals["bytes_read"], bytes_written=rep.totals["bytes_written"],
        temp_files=rep.totals["temp_files"], temp_bytes=rep.totals["temp_bytes"], processes=len(procs),
        mounts=_mount_rows(rep), files=files, unprofiled=lost,
        advice=[{"rule": a.rule, "title": a.title, "time_at_stake_s": a.time_at_stake_s, "share": a.share,
                 "fix": a.fix, "short": a.short()} for a in rep.advice],
    )


def summarize_safe(args: tuple[Task, dict[str, float] | None, dict[str, Any] | None]) -> dict[str, Any]:
    """summarize_task for a worker: a task that cannot be read is reported, never ends the report."""
    task, th, outputs = args
    try:
        return summarize_task(task, th, outputs)
    except Exception as err:  # noqa: BLE001 - one damaged task must not hide the others
        return {"id": task.id, "kind": task.kind, "names": task.names, "rule": rule_of(task.names, "?"),
                "profiled": False, "problems": [f"{task.id}: cannot be read ({err})"], "paths": len(task.paths)}
