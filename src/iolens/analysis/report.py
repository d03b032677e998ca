"""The report as plain data: breakdown per process, file, mount and run; timeline; files; advice.

build_report(capture) is the one entry point; every renderer (terminal, JSON, CSV, HTML, MultiQC)
lays out the Report it returns and computes nothing of its own.  It runs one fold per concern, each
in its own module: records (the time split), processes, files, storage (mounts), timeline; then the
advice rules read the finished model.
"""

from __future__ import annotations

import os
from typing import Any

import numpy as np

from iolens import _format as F
from iolens.analysis import breakdown as B
from iolens.analysis import processes as P
from iolens.analysis.advice import advise as run_rules
from iolens.analysis.classify import tool_name
from iolens.analysis.advice_kit import attach_columns
from iolens.analysis.files import fold_files, rank_order
from iolens.analysis.integrity import Integrity, check
from iolens.analysis.model import NO_FILE, OP_NAMES, FileRow, MountRow, ProcRow, Report  # noqa: F401 (re-exported)
from iolens.analysis.mounts import MountResolver
from iolens.analysis.records import fold_records, per_proc_sum
from iolens.analysis.storage import available_mounts, fold_mounts
from iolens.analysis.thresholds import with_overrides
from iolens.analysis.timeline import report_timeline
from iolens.capture.reader import Capture
from iolens.sysinfo import steal_share


def build_report(cap: Capture, thresholds: dict[str, float] | None = None, *, advise: bool = True) -> Report:
    """The whole report of a capture: each fold in turn, then (unless advise=False) the advice rules."""
    th = thresholds or with_overrides()
    meta, procs = cap.meta, cap.processes
    t0 = P.start_mono(cap)
    span = (t0, max([meta.get("end_mono") or 0] + [p.end_mono for p in procs] + [t0 + 1]))
    imgs = P.images(cap)
    names = [tool_name(p.argv, p.exe) for p in procs]
    recs = fold_records(procs, imgs, th)
    mmap = per_proc_sum(recs, recs.extra["mmap_bytes"], len(procs))
    whole = check(cap)
    proc_rows = P.process_rows(cap, imgs, P.process_tree(imgs, meta.get("parent_pid")), names, recs.proc_break,
                               mmap, set(whole.overflow))
    paths, files = fold_files(cap, recs, names, th, MountResolver(meta.get("mounts", [])), span)
    mounts, placement = fold_mounts(files, paths, recs.unattributed)
    timeline = report_timeline(procs, recs, paths.of_record, placement, mounts, span, int(th["timeline_bins"]))
    order = rank_order(paths)
    files = [files[i] for i in order.tolist()]
    run_break = {c: sum(r.breakdown[c] for r in proc_rows) for c in B.BREAKDOWN}
    not_stream = np.asarray([k != "stream" for k in paths.kinds], dtype=bool)
    report = Report(
        capture=_capture_info(cap, whole),
        totals=_totals(cap, P.run_times(imgs), proc_rows, paths.rows, run_break, recs.extra["mmap_bytes"]),
        breakdown=run_break, processes=proc_rows, files=files, mounts=mounts,
        histograms=_histograms(paths.sums, not_stream), timeline=timeline,
        ops=P.ops_total(cap, OP_NAMES), thresholds=dict(th), available_mounts=available_mounts(meta.get("mounts", [])),
    )
    attach_columns(report, {k: v[order] for k, v in paths.rows.items()})
    if advise:
        report.advice = run_rules(report)
    return report


def top_advice(capture: Capture | Report, n: int = 1, thresholds: dict[str, float] | None = None) -> list[str]:
    """The first n advice lines for a capture (or a built Report), for the end-of-run summary."""
    report = capture if isinstance(capture, Report) else build_report(capture, thresholds)
    return [a.short() for a in report.advice[:n]]


def _totals(cap: Capture, run: P.RunTimes, proc_rows: list[ProcRow], files: dict[str, np.ndarray],
            run_break: dict[str, float], mmap_bytes: np.ndarray) -> dict[str, Any]:
    """files: the file rows' columns (files.Paths.rows)."""
    temp = files["temporary"]
    io_s = sum(v for k, v in run_break.items() if k not in ("compute", "pipe_wait"))
    return {
        "wall_s": P.wall_s(cap),
        "own_s": run.own_s,
        "cpu_s": sum(r.cpu_s for r in proc_rows),
        "io_s": io_s,
        "io_share": io_s / run.own_s if run.own_s else None,
        "pipe_wait_s": run_break["pipe_wait"],
        "compute_s": run_break["compute"],
        "bytes_read": run.bytes_read,
        "bytes_written": run.bytes_written,
        "kernel_read": run.kernel_read,
        "kernel_written": run.kernel_written,
        "coverage": run.coverage,
        "processes": len(cap.processes),
        "files": int(files["real"].sum()),  # files and aggregates
        "temp_files": int(temp.sum()),
        "temp_bytes": sum(files["bytes_written"][temp].tolist()),
        "mmap_bytes": int(mmap_bytes.sum()),
        "untracked_ops": int(sum(p.untracked_ops for p in cap.processes)),
    }


def _capture_info(cap: Capture, whole: Integrity) -> dict[str, Any]:
    meta, procs = cap.meta, cap.processes
    return {
        "path": os.path.basename(cap.path),
        "command": list(meta.get("command") or (procs[0].argv if procs else [])),
        "cwd": meta.get("cwd"),
        "exit_status": meta.get("exit_status"),
        "exit_signal": meta.get("exit_signal"),
        "host": meta.get("host"),
        "kernel": meta.get("kernel"),
        "cpus": meta.get("cpus"),
        "mem_bytes": meta.get("mem_bytes"),
        "start_real_ns": meta.get("start_real_ns"),
        "iolens_version": meta.get("iolens_version"),
        "format_version": list(cap.version),
        "traced": bool(meta.get("trace")),
        "complete": not whole.partial,
        "problems": list(cap.problems),
        "partial": whole.partial,
        "partial_at_byte": whole.at_byte,
        "partial_reason": whole.reason,
        "overflow_processes": len(whole.overflow),
        "running_at_save": [int(p) for p in meta.get("running_at_save") or [] if isinstance(p, int)],
        "steal_share": steal_share(meta) if isinstance(meta.get("machine_cpu_s"), dict) else None,
    }


def _histograms(sums: dict[str, np.ndarray], not_stream: np.ndarray) -> dict[str, Any]:
    """Calls per size bin over every path that is not a pipe or socket."""
    rh = sums["read_hist"][not_stream].sum(axis=0) if len(not_stream) else np.zeros(F.HIST_BINS)
    wh = sums["write_hist"][not_stream].sum(axis=0) if len(not_stream) else np.zeros(F.HIST_BINS)
    return {"bins": list(B.BIN_LABELS), "read": [int(v) for v in rh], "write": [int(v) for v in wh]}
