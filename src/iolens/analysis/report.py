"""The report as plain data: breakdown per process, file, mount and run; phases; timeline; files; advice.

build_report(capture) is the one entry point; every renderer (terminal, JSON, CSV, HTML, MultiQC)
lays out the Report it returns and computes nothing of its own.
"""

from __future__ import annotations

import os
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np

from iolens import _format as F
from iolens.analysis import breakdown as B
from iolens.analysis.classify import looks_temporary, storage_kind, text_format, tool_name
from iolens.analysis.summary import file_kind, mount_resolver, summarize
from iolens.analysis.thresholds import with_overrides
from iolens.analysis.timeline import Timeline, build_timeline
from iolens.capture.reader import Capture

NS = 1e-9
FF = {name: bit for name, (bit, _doc) in F.FILE_FLAGS.items()}
OP_NAMES = [name for name, _cat in F.OPS]
META_OPS = {name for name, cat in F.OPS if cat == "META"}
PIPES = "(pipes, sockets, terminals)"
NO_FILE = "(not attributed to a file)"
UNKNOWN = "(unknown mount)"


@dataclass
class ProcRow:
    index: int
    pid: int
    ppid: int
    name: str
    argv: list[str]
    depth: int
    start_s: float
    end_s: float
    wall_s: float
    own_s: float
    cpu_s: float
    io_s: float
    bytes_read: int
    bytes_written: int
    files: int
    exit_status: int | None
    ended: str
    breakdown: dict[str, float]
    kernel_read: int = 0
    kernel_written: int = 0
    mmap_bytes: int = 0
    untracked_ops: int = 0
    subtree_io_s: float = 0.0
    subtree_cpu_s: float = 0.0
    subtree_bytes_read: int = 0
    subtree_bytes_written: int = 0
    subtree_processes: int = 1


@dataclass
class FileRow:
    path: str
    kind: str
    mount: str
    fstype: str
    storage: str
    bytes_read: int
    bytes_written: int
    reads: int
    writes: int
    opens: int
    metadata_ops: int
    syncs: int
    time_s: float
    breakdown: dict[str, float]
    read_hist: list[int]
    write_hist: list[int]
    dominant_size: str
    read_pattern: str
    write_pattern: str
    pattern: str
    size: int
    times_read: float | None
    readers: int
    writers: int
    processes: int
    created: bool
    deleted: bool
    temporary: bool
    lifetime_s: float | None
    first_s: float | None
    last_s: float | None
    flags: list[str]
    text_format: str | None
    random_reads: int = 0
    random_writes: int = 0
    tools: list[str] = field(default_factory=list)


@dataclass
class MountRow:
    mount: str
    fstype: str
    source: str
    device: str
    storage: str
    bytes_read: int
    bytes_written: int
    reads: int
    writes: int
    metadata_ops: int
    time_s: float
    breakdown: dict[str, float]
    files: int
    temp_files: int
    temp_bytes: int
    read_window: list[float] | None = None
    write_window: list[float] | None = None


@dataclass
class Report:
    capture: dict[str, Any]
    totals: dict[str, Any]
    breakdown: dict[str, float]
    processes: list[ProcRow]
    files: list[FileRow]
    mounts: list[MountRow]
    histograms: dict[str, Any]
    timeline: Timeline
    ops: dict[str, int]
    thresholds: dict[str, float]
    available_mounts: list[dict[str, Any]]
    advice: list[Any] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def _breakdown_dict(row: np.ndarray) -> dict[str, float]:
    return {c: float(row[i]) * NS for i, c in enumerate(B.CLASSES)}


def build_report(cap: Capture, thresholds: dict[str, float] | None = None, *, advise: bool = True) -> Report:
    th = thresholds or with_overrides()
    meta = cap.meta
    procs = cap.processes
    summary = summarize(cap, top=0)
    t0 = min((p.start_mono for p in procs), default=0)
    t_end = max([meta.get("end_mono") or 0] + [p.end_mono for p in procs] + [t0 + 1])

    # ---- every (process, file) record, split and scaled to wall-clock time -----------------------
    records: list[dict[str, Any]] = []
    rec_proc: list[int] = []
    for i, p in enumerate(procs):
        records.extend(p.files)
        rec_proc.extend([i] * len(p.files))
    rp = np.asarray(rec_proc, dtype=np.int64)
    arrays = B.record_arrays(records)
    raw = B.split_records(arrays, th)  # summed call time, ns

    by_key = {(s.pid, round(s.start_s, 9)): s for s in summary.tree}
    sums = [by_key[(p.pid, round((p.start_mono - t0) * NS, 9))] for p in procs]
    factors = np.zeros((len(procs), B.NCAT))
    proc_break = np.zeros((len(procs), len(B.CLASSES)))
    for i, (p, s) in enumerate(zip(procs, sums)):
        stream = min(s.cat_wall_s["stream"], max(0.0, s.own_s - min(s.io_wall_s, s.own_s)))
        factors[i] = B.process_factors(p.cat_time_ns, p.cat_wall_ns, s.io_wall_s, s.own_s, stream)
    class_cat = np.asarray(B.CLASS_CAT)
    scaled = raw * factors[rp][:, class_cat] if len(records) else raw
    if len(records):
        np.add.at(proc_break, rp, scaled)
    # calls on descriptors with no file record: shared like the process's attributed time
    unattributed = np.zeros((len(procs), len(B.CLASSES)))
    for i, p in enumerate(procs):
        attributed = np.zeros(B.NCAT)
        mask = rp == i
        if mask.any():
            attributed = np.asarray([arrays["cat_time_ns"][mask, c].sum() for c in range(B.NCAT)])
        for c in range(B.NCAT):
            left = (p.cat_time_ns[c] - attributed[c]) * factors[i, c]
            if left <= 0:
                continue
            cls = np.flatnonzero(class_cat == c)
            part = proc_break[i, cls]
            if part.sum() > 0:
                unattributed[i, cls] = left * part / part.sum()
            else:
                unattributed[i, cls[1] if len(cls) > 1 else cls[0]] = left
    proc_break += unattributed

    # ---- processes and phases ------------------------------------------------------------------
    rows_by_obj = {}
    proc_rows: list[ProcRow] = []
    for i, (p, s) in enumerate(zip(procs, sums)):
        bd = _breakdown_dict(proc_break[i])
        io = sum(v for k, v in bd.items() if k != "pipe_wait")
        bd["compute"] = max(0.0, s.own_s - sum(bd.values()))
        rows_by_obj[id(s)] = ProcRow(
            index=i, pid=s.pid, ppid=s.ppid, name=tool_name(p.argv, p.exe), argv=list(p.argv), depth=0,
            start_s=s.start_s, end_s=s.start_s + s.wall_s, wall_s=s.wall_s, own_s=s.own_s, cpu_s=s.cpu_s,
            io_s=io, bytes_read=s.bytes_read, bytes_written=s.bytes_written, files=s.files,
            exit_status=s.exit_status, ended=s.ended, breakdown=bd, kernel_read=s.kernel_read,
            kernel_written=s.kernel_written, mmap_bytes=int(sum(f["mmap_bytes"] for f in p.files)),
            untracked_ops=int(p.untracked_ops),
        )
    for s in summary.tree:
        r = rows_by_obj[id(s)]
        r.depth = s.depth
        proc_rows.append(r)
    _subtree_totals(proc_rows)

    run_break = {c: sum(r.breakdown[c] for r in proc_rows) for c in B.BREAKDOWN}

    # ---- files: merge records per path ---------------------------------------------------------
    resolve = mount_resolver(meta.get("mounts", []))
    mount_info = {}
    for m in meta.get("mounts", []):
        mount_info.setdefault(m["mountpoint"], m)
    path_id: dict[str, int] = {}
    rec_path = np.empty(len(records), dtype=np.int64)
    for j, f in enumerate(records):
        k = path_id.get(f["path"])
        if k is None:
            k = path_id[f["path"]] = len(path_id)
        rec_path[j] = k
    npath = len(path_id)
    paths = list(path_id)

    def per_path(values: np.ndarray) -> np.ndarray:
        out = np.zeros((npath,) + values.shape[1:])
        np.add.at(out, rec_path, values)
        return out

    p_break = per_path(scaled) if npath else np.zeros((0, len(B.CLASSES)))
    agg = {k: per_path(arrays[k]) for k in B.RECORD_FIELDS}
    agg["read_hist"] = per_path(arrays["read_hist"])
    agg["write_hist"] = per_path(arrays["write_hist"])
    # per-record values that need more than a sum
    first = np.full(npath, np.inf)
    last = np.zeros(npath)
    size = np.zeros(npath)
    created = np.full(npath, np.inf)
    deleted = np.zeros(npath)
    flags = np.zeros(npath, dtype=np.int64)
    opens = np.zeros(npath)
    metas = np.zeros(npath)
    syncs = np.zeros(npath)
    rnd_r = np.zeros(npath)
    rnd_w = np.zeros(npath)
    seq_pairs_r = np.zeros(npath)  # calls after the first of each record, for the pattern
    seq_pairs_w = np.zeros(npath)
    readers: list[set[int]] = [set() for _ in range(npath)]
    writers: list[set[int]] = [set() for _ in range(npath)]
    users: list[set[int]] = [set() for _ in range(npath)]
    kinds = [""] * npath
    devs = [0] * npath
    for j, f in enumerate(records):
        k = rec_path[j]
        i = rp[j]
        if f["first_mono"]:
            first[k] = min(first[k], f["first_mono"])
        last[k] = max(last[k], f["last_mono"])
        size[k] = max(size[k], f["max_read_end"], f["max_write_end"])
        if f["created_mono"] and f["flags"] & FF["CREATED"]:
            created[k] = min(created[k], f["created_mono"])
        if f["deleted_mono"]:
            deleted[k] = max(deleted[k], f["deleted_mono"])
        flags[k] |= f["flags"]
        opens[k] += f["opens"]
        metas[k] += f["stats"] + f["seeks"] + f["metas"] + f["opens"]
        syncs[k] += f["syncs"]
        if f["reads"]:
            readers[k].add(procs[i].pid)
            rnd_r[k] += max(0, f["reads"] - 1 - f["seq_reads"])
            seq_pairs_r[k] += f["reads"] - 1
        if f["writes"]:
            writers[k].add(procs[i].pid)
            rnd_w[k] += max(0, f["writes"] - 1 - f["seq_writes"])
            seq_pairs_w[k] += f["writes"] - 1
        users[k].add(i)
        if not kinds[k] or kinds[k] == "file":
            kinds[k] = file_kind(f) if not kinds[k] else kinds[k]
        if not devs[k]:
            devs[k] = f["dev"]

    files: list[FileRow] = []
    mounts_seen: dict[str, MountRow] = {}
    for k, path in enumerate(paths):
        kind = kinds[k]
        if kind == "stream":
            mp, fst, src, dev, storage = PIPES, "", "", "", "pipe"
        else:
            mp, fst = resolve(devs[k], path)
            m = mount_info.get(mp, {})
            src, dev = m.get("source", ""), m.get("dev", "")
            storage = storage_kind(fst, src) if mp else "unknown"
            mp = mp or UNKNOWN
        bd = _breakdown_dict(p_break[k])
        rh = [int(v) for v in agg["read_hist"][k]]
        wh = [int(v) for v in agg["write_hist"][k]]
        both = np.asarray(rh) + np.asarray(wh)
        dom = int(np.argmax(both)) if both.any() else None
        reads, writes = int(agg["reads"][k]), int(agg["writes"][k])
        rpat = B.pattern(seq_pairs_r[k] + 1, seq_pairs_r[k] - rnd_r[k], th) if reads else "-"
        wpat = B.pattern(seq_pairs_w[k] + 1, seq_pairs_w[k] - rnd_w[k], th) if writes else "-"
        pat = rpat if writes == 0 else wpat if reads == 0 else (rpat if rpat == wpat else "mixed")
        was_created = bool(np.isfinite(created[k]))
        was_deleted = bool(flags[k] & FF["DELETED"])
        temp = kind == "file" and looks_temporary(path, was_created, was_deleted)
        life = None
        if temp and was_created:
            end = deleted[k] if was_deleted and deleted[k] else (last[k] or t_end)
            life = max(0.0, (end - created[k]) * NS)
        br = int(agg["bytes_read"][k])
        files.append(FileRow(
            path=path, kind=kind, mount=mp, fstype=fst, storage=storage,
            bytes_read=br, bytes_written=int(agg["bytes_written"][k]), reads=reads, writes=writes,
            opens=int(opens[k]), metadata_ops=int(metas[k]), syncs=int(syncs[k]),
            time_s=sum(bd.values()), breakdown=bd, read_hist=rh, write_hist=wh,
            dominant_size=B.size_label(dom), read_pattern=rpat, write_pattern=wpat, pattern=pat,
            size=int(size[k]), times_read=(br / size[k]) if size[k] and br else None,
            readers=len(readers[k]), writers=len(writers[k]), processes=len({procs[i].pid for i in users[k]}),
            created=was_created, deleted=was_deleted, temporary=temp, lifetime_s=life,
            first_s=(first[k] - t0) * NS if np.isfinite(first[k]) else None,
            last_s=(last[k] - t0) * NS if last[k] else None,
            flags=[n for n, (bit, _d) in F.FILE_FLAGS.items() if flags[k] & bit],
            text_format=text_format(path) if kind == "file" else None,
            random_reads=int(rnd_r[k]), random_writes=int(rnd_w[k]),
            tools=sorted({tool_name(procs[i].argv, procs[i].exe) for i in users[k]}),
        ))
        mr = mounts_seen.get(mp)
        if mr is None:
            mr = mounts_seen[mp] = MountRow(mount=mp, fstype=fst, source=src, device=dev, storage=storage,
                                            bytes_read=0, bytes_written=0, reads=0, writes=0, metadata_ops=0,
                                            time_s=0.0, breakdown=dict.fromkeys(B.CLASSES, 0.0), files=0,
                                            temp_files=0, temp_bytes=0)
        f = files[-1]
        mr.bytes_read += f.bytes_read
        mr.bytes_written += f.bytes_written
        mr.reads += f.reads
        mr.writes += f.writes
        mr.metadata_ops += f.metadata_ops
        for c in B.CLASSES:
            mr.breakdown[c] += bd[c]
        mr.time_s += f.time_s
        mr.files += 1
        if f.temporary:
            mr.temp_files += 1
            mr.temp_bytes += f.bytes_written
    un = unattributed.sum(axis=0)
    if un.sum() > 0:
        mounts_seen[NO_FILE] = MountRow(mount=NO_FILE, fstype="", source="", device="", storage="unknown",
                                        bytes_read=0, bytes_written=0, reads=0, writes=0, metadata_ops=0,
                                        time_s=float(un.sum()) * NS, breakdown=_breakdown_dict(un), files=0,
                                        temp_files=0, temp_bytes=0)
    files.sort(key=lambda f: (-f.time_s, -(f.bytes_read + f.bytes_written), f.path))
    mount_rows = sorted(mounts_seen.values(), key=lambda m: (-m.time_s, m.mount))

    # when each mount was read and written (first..last use of files that did), for overlap rules
    for m in mount_rows:
        rs = [(f.first_s, f.last_s) for f in files if f.mount == m.mount and f.bytes_read and f.first_s is not None]
        ws = [(f.first_s, f.last_s) for f in files if f.mount == m.mount and f.bytes_written and f.first_s is not None]
        m.read_window = [float(min(a for a, _ in rs)), float(max(b for _, b in rs))] if rs else None
        m.write_window = [float(min(a for a, _ in ws)), float(max(b for _, b in ws))] if ws else None

    # ---- timeline --------------------------------------------------------------------------------
    mount_names = [m.mount for m in mount_rows if m.mount not in (NO_FILE,)]
    midx = {m: j for j, m in enumerate(mount_names)}
    file_mount = np.asarray([midx.get(f.mount, -1) for f in sorted(files, key=lambda f: path_id[f.path])],
                            dtype=np.int64)
    proc_files = []
    for i in range(len(procs)):
        mask = rp == i
        idx = np.flatnonzero(mask)
        fm = file_mount[rec_path[idx]] if len(idx) else np.zeros(0, dtype=np.int64)
        keep = fm >= 0
        recs = [records[j] for j in idx[keep]]
        proc_files.append({
            "first": np.asarray([r["first_mono"] for r in recs], dtype=np.int64),
            "last": np.asarray([r["last_mono"] for r in recs], dtype=np.int64),
            "mount": fm[keep],
            "ops": np.asarray([r["reads"] + r["writes"] + r["opens"] + r["stats"] + r["metas"] + r["syncs"]
                               for r in recs], dtype=np.float64),
            "bytes": np.asarray([r["bytes_read"] + r["bytes_written"] for r in recs], dtype=np.float64),
        })
    timeline = build_timeline(procs, proc_files, mount_names, t0, t_end, int(th["timeline_bins"]))

    # ---- totals ------------------------------------------------------------------------------------
    ops = np.zeros(len(OP_NAMES), dtype=np.int64)
    for p in procs:
        ops += np.asarray(p.op_count[: len(OP_NAMES)], dtype=np.int64)
    io_s = sum(v for k, v in run_break.items() if k not in ("compute", "pipe_wait"))
    totals = {
        "wall_s": summary.wall_s,
        "own_s": summary.own_s,
        "cpu_s": sum(r.cpu_s for r in proc_rows),
        "io_s": io_s,
        "io_share": io_s / summary.own_s if summary.own_s else None,
        "pipe_wait_s": run_break["pipe_wait"],
        "compute_s": run_break["compute"],
        "bytes_read": summary.bytes_read,
        "bytes_written": summary.bytes_written,
        "kernel_read": summary.kernel_read,
        "kernel_written": summary.kernel_written,
        "coverage": summary.coverage,
        "processes": len(procs),
        "files": sum(1 for f in files if f.kind in ("file", "aggregate")),
        "temp_files": sum(1 for f in files if f.temporary),
        "temp_bytes": sum(f.bytes_written for f in files if f.temporary),
        "mmap_bytes": int(sum(f["mmap_bytes"] for f in records)),
        "untracked_ops": int(sum(p.untracked_ops for p in procs)),
    }
    capture = {
        "path": os.path.basename(cap.path),
        "command": list(meta.get("command") or (procs[0].argv if procs else [])),
        "cwd": meta.get("cwd"),
        "exit_status": meta.get("exit_status"),
        "host": meta.get("host"),
        "kernel": meta.get("kernel"),
        "cpus": meta.get("cpus"),
        "mem_bytes": meta.get("mem_bytes"),
        "start_real_ns": meta.get("start_real_ns"),
        "iolens_version": meta.get("iolens_version"),
        "format_version": list(cap.version),
        "traced": bool(meta.get("trace")),
        "complete": cap.complete,
        "problems": list(cap.problems),
    }
    rh = np.asarray([f.read_hist for f in files if f.kind != "stream"] or [[0] * F.HIST_BINS]).sum(axis=0)
    wh = np.asarray([f.write_hist for f in files if f.kind != "stream"] or [[0] * F.HIST_BINS]).sum(axis=0)
    histograms = {"bins": list(B.BIN_LABELS), "read": [int(v) for v in rh], "write": [int(v) for v in wh]}
    report = Report(
        capture=capture, totals=totals, breakdown=run_break, processes=proc_rows, files=files,
        mounts=mount_rows, histograms=histograms, timeline=timeline,
        ops={n: int(v) for n, v in zip(OP_NAMES, ops) if v}, thresholds=dict(th),
        available_mounts=_available_mounts(meta.get("mounts", [])),
    )
    if advise:
        from iolens.analysis.advice import advise as run_rules

        report.advice = run_rules(report)
    return report


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


def _available_mounts(mounts: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Writable storage the run could have used: one entry per device (not per bind mount)."""
    out, seen = [], set()
    for m in mounts:
        kind = storage_kind(m.get("fstype", ""), m.get("source", ""))
        if kind in ("pseudo", "unknown"):
            continue
        opts = (m.get("options") or "").split(",")
        if "ro" in opts:
            continue
        mp = m["mountpoint"]
        if mp.startswith(("/proc", "/sys", "/dev", "/run", "/boot", "/snap", "/etc")) and mp != "/dev/shm":
            continue
        key = m.get("source") if kind in ("local",) and (m.get("source") or "").startswith("/dev/") else m.get("dev")
        if key in seen or mp in seen:
            continue
        seen.update((key, mp))
        out.append({"mount": mp, "fstype": m.get("fstype", ""), "source": m.get("source", ""),
                    "device": m.get("dev", ""), "storage": kind})
    return out
