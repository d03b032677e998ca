"""The report as plain data: breakdown per process, file, mount and run; phases; timeline; files; advice.

build_report(capture) is the one entry point; every renderer (terminal, JSON, CSV, HTML, MultiQC)
lays out the Report it returns and computes nothing of its own.
"""

from __future__ import annotations

import os
from operator import itemgetter
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np

from iolens import _format as F
from iolens.analysis import breakdown as B
from iolens.analysis.classify import TEXT_EXT, looks_temporary, storage_kind, text_format, tool_name
from iolens.analysis.mounts import MountResolver
from iolens.analysis.summary import file_kind, summarize
from iolens.analysis.thresholds import with_overrides
from iolens.analysis.timeline import Timeline, build_timeline
from iolens.capture.reader import Capture

NS = 1e-9
TEXT_EXTS = {e.lstrip(".") for e in TEXT_EXT}
FF = {name: bit for name, (bit, _doc) in F.FILE_FLAGS.items()}
OP_NAMES = [name for name, _cat in F.OPS]
META_OPS = {name for name, cat in F.OPS if cat == "META"}
PIPES = "(pipes, sockets, terminals)"
NO_FILE = "(not attributed to a file)"
UNKNOWN = "(unknown mount)"


@dataclass(slots=True)
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


@dataclass(slots=True)
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


@dataclass(slots=True)
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
    summary = summarize(cap, top=0, files=False)
    t0 = min((p.start_mono for p in procs), default=0)
    t_end = max([meta.get("end_mono") or 0] + [p.end_mono for p in procs] + [t0 + 1])

    # ---- every (process, file) record, split and scaled to wall-clock time -----------------------
    records: list[dict[str, Any]] = [f for p in procs for f in p.files]
    per_proc = np.asarray([len(p.files) for p in procs], dtype=np.int64)
    offs = np.concatenate([[0], np.cumsum(per_proc)])
    nproc = len(procs)
    rp = np.repeat(np.arange(nproc), per_proc)
    arrays = B.record_arrays(records)
    ex = _extra_arrays(records)
    raw = B.split_records(arrays, th)  # summed call time, ns

    by_key = {(s.pid, round(s.start_s, 9)): s for s in summary.tree}
    sums = [by_key[(p.pid, round((p.start_mono - t0) * NS, 9))] for p in procs]
    factors = np.zeros((nproc, B.NCAT))
    for i, (p, s) in enumerate(zip(procs, sums)):
        stream = min(s.cat_wall_s["stream"], max(0.0, s.own_s - min(s.io_wall_s, s.own_s)))
        factors[i] = B.process_factors(p.cat_time_ns, p.cat_wall_ns, s.io_wall_s, s.own_s, stream)
    class_cat = np.asarray(B.CLASS_CAT)
    scaled = raw * factors[rp][:, class_cat] if len(records) else raw
    proc_break = np.zeros((nproc, len(B.CLASSES)))
    attributed = np.zeros((nproc, B.NCAT))
    if len(records):
        np.add.at(proc_break, rp, scaled)
        np.add.at(attributed, rp, arrays["cat_time_ns"])
    # calls on descriptors with no file record: shared like the process's attributed time
    unattributed = np.zeros((nproc, len(B.CLASSES)))
    proc_cat = np.asarray([p.cat_time_ns for p in procs], dtype=np.float64).reshape(nproc, B.NCAT)
    left = (proc_cat - attributed) * factors
    for i, c in zip(*np.nonzero(left > 0)):
        cls = np.flatnonzero(class_cat == c)
        part = proc_break[i, cls]
        if part.sum() > 0:
            unattributed[i, cls] = left[i, c] * part / part.sum()
        else:
            unattributed[i, cls[1] if len(cls) > 1 else cls[0]] = left[i, c]
    proc_break += unattributed

    # ---- processes and phases ------------------------------------------------------------------
    names = [tool_name(p.argv, p.exe) for p in procs]
    mmap_per_proc = np.zeros(nproc)
    if len(records):
        np.add.at(mmap_per_proc, rp, ex["mmap_bytes"])
    rows_by_obj = {}
    pb = proc_break.tolist()
    for i, (p, s) in enumerate(zip(procs, sums)):
        bd = dict(zip(B.CLASSES, (v * NS for v in pb[i])))
        io = sum(v for k, v in bd.items() if k != "pipe_wait")
        bd["compute"] = max(0.0, s.own_s - sum(bd.values()))
        rows_by_obj[id(s)] = ProcRow(
            index=i, pid=s.pid, ppid=s.ppid, name=names[i], argv=list(p.argv), depth=s.depth,
            start_s=s.start_s, end_s=s.start_s + s.wall_s, wall_s=s.wall_s, own_s=s.own_s, cpu_s=s.cpu_s,
            io_s=io, bytes_read=s.bytes_read, bytes_written=s.bytes_written, files=s.files,
            exit_status=s.exit_status, ended=s.ended, breakdown=bd, kernel_read=s.kernel_read,
            kernel_written=s.kernel_written, mmap_bytes=int(mmap_per_proc[i]), untracked_ops=int(p.untracked_ops),
        )
    proc_rows = [rows_by_obj[id(s)] for s in summary.tree]
    _subtree_totals(proc_rows)
    run_break = {c: sum(r.breakdown[c] for r in proc_rows) for c in B.BREAKDOWN}

    # ---- files: merge records per path (all vectorised: a capture can hold 100,000 files) ------------
    path_id: dict[str, int] = {}
    rec_path = np.fromiter((path_id.setdefault(f["path"], len(path_id)) for f in records), dtype=np.int64,
                           count=len(records))
    npath = len(path_id)
    paths = list(path_id)

    # records sorted by path, so each path's records are one run that ufunc.reduceat folds
    by_path = np.argsort(rec_path, kind="stable")
    starts = np.flatnonzero(np.r_[True, np.diff(rec_path[by_path]) != 0]) if len(records) else np.zeros(0, int)

    def per_path(values: np.ndarray, how=np.add, init: float = 0) -> np.ndarray:
        if not len(records):
            return np.full((0,) + values.shape[1:], init, dtype=values.dtype)
        return how.reduceat(values[by_path], starts, axis=0)

    big = np.iinfo(np.int64).max
    p_break = per_path(scaled)
    agg = {k: per_path(arrays[k]) for k in ("reads", "writes", "bytes_read", "bytes_written", "read_hist", "write_hist")}
    first = per_path(np.where(ex["first_mono"] > 0, ex["first_mono"], big), np.minimum, big)
    last = per_path(ex["last_mono"], np.maximum)
    size = per_path(np.maximum(ex["max_read_end"], ex["max_write_end"]), np.maximum)
    created_ok = (ex["created_mono"] > 0) & ((ex["flags"] & FF["CREATED"]) > 0)
    created = per_path(np.where(created_ok, ex["created_mono"], big), np.minimum, big)
    deleted = per_path(ex["deleted_mono"], np.maximum)
    flags = per_path(ex["flags"], np.bitwise_or)
    opens = per_path(ex["opens"])
    metas = per_path(ex["stats"] + ex["seeks"] + ex["metas"] + ex["opens"])
    syncs = per_path(ex["syncs"])
    reads_r, writes_r = arrays["reads"], arrays["writes"]
    rnd_r = per_path(np.where(reads_r > 0, np.maximum(0, reads_r - 1 - arrays["seq_reads"]), 0))
    rnd_w = per_path(np.where(writes_r > 0, np.maximum(0, writes_r - 1 - arrays["seq_writes"]), 0))
    pairs_r = per_path(np.maximum(0, reads_r - 1))
    pairs_w = per_path(np.maximum(0, writes_r - 1))
    # distinct processes (by pid) that read, wrote, used each path; and their tools
    pid_idx = np.unique(np.asarray([p.pid for p in procs], dtype=np.int64), return_inverse=True)[1].reshape(-1)
    npid = int(pid_idx.max()) + 1 if nproc else 1
    rec_pid = pid_idx[rp] if len(records) else np.zeros(0, dtype=np.int64)

    def distinct(mask: np.ndarray) -> np.ndarray:
        u = np.unique(rec_path[mask] * npid + rec_pid[mask])
        return np.bincount(u // npid, minlength=npath)

    readers = distinct(reads_r > 0)
    writers = distinct(writes_r > 0)
    users = distinct(np.ones(len(records), dtype=bool))
    tool_id: dict[str, int] = {}
    proc_tool = np.asarray([tool_id.setdefault(n, len(tool_id)) for n in names] or [0], dtype=np.int64)
    tool_names = sorted(tool_id, key=tool_id.get)
    ntool = max(1, len(tool_id))
    tools: list[list[str]] = [[] for _ in range(npath)]
    if len(records):
        for code in np.unique(rec_path * ntool + proc_tool[rp]).tolist():
            tools[code // ntool].append(tool_names[code % ntool])
        tools = [sorted(t) if len(t) > 1 else t for t in tools]
    first_rec = np.unique(rec_path, return_index=True)[1] if len(records) else np.zeros(0, dtype=np.int64)
    kinds = [_kind(int(fl)) for fl in ex["flags"][first_rec].tolist()]
    devs = ex["dev"][first_rec].tolist()

    resolve = MountResolver(meta.get("mounts", []))
    mount_of = [resolve(devs[k], paths[k]) if kinds[k] != "stream" else None for k in range(npath)]
    both = agg["read_hist"] + agg["write_hist"]
    dom = np.where(both.any(axis=1), both.argmax(axis=1), -1).tolist()
    rpat = B.patterns(pairs_r + 1, pairs_r - rnd_r, th)
    wpat = B.patterns(pairs_w + 1, pairs_w - rnd_w, th)
    L = {k: v.astype(np.int64).tolist() for k, v in agg.items()}
    bd_rows = (p_break * NS).tolist()
    lists = {"first": first.tolist(), "last": last.tolist(), "size": size.tolist(), "created": created.tolist(),
             "deleted": deleted.tolist(), "flags": flags.tolist(), "opens": opens.astype(np.int64).tolist(),
             "metas": metas.astype(np.int64).tolist(), "syncs": syncs.astype(np.int64).tolist(),
             "rnd_r": rnd_r.astype(np.int64).tolist(), "rnd_w": rnd_w.astype(np.int64).tolist(),
             "readers": readers.tolist(), "writers": writers.tolist(), "users": users.tolist()}
    flag_names = list(F.FILE_FLAGS.items())
    flag_cache: dict[int, list[str]] = {}
    files: list[FileRow] = []
    for k, path in enumerate(paths):
        kind = kinds[k]
        if kind == "stream":
            mp, fst, storage = PIPES, "", "pipe"
        else:
            m = mount_of[k]
            mp, fst = (m["mountpoint"], m["fstype"]) if m else (UNKNOWN, "")
            storage = resolve.kind(m)
        reads, writes = L["reads"][k], L["writes"][k]
        rp_, wp_ = (rpat[k] if reads else "-"), (wpat[k] if writes else "-")
        pat = rp_ if writes == 0 else wp_ if reads == 0 else (rp_ if rp_ == wp_ else "mixed")
        fl = lists["flags"][k]
        was_created = lists["created"][k] != big
        was_deleted = bool(fl & FF["DELETED"])
        temp = was_created and kind == "file" and looks_temporary(path, was_created, was_deleted)
        first_k, last_k = lists["first"][k], lists["last"][k]
        life = None
        if temp:
            end = lists["deleted"][k] if was_deleted and lists["deleted"][k] else (last_k or t_end)
            life = max(0.0, (end - lists["created"][k]) * NS)
        br, sz = L["bytes_read"][k], lists["size"][k]
        bd = dict(zip(B.CLASSES, bd_rows[k]))
        files.append(FileRow(
            path=path, kind=kind, mount=mp, fstype=fst, storage=storage,
            bytes_read=br, bytes_written=L["bytes_written"][k], reads=reads, writes=writes,
            opens=lists["opens"][k], metadata_ops=lists["metas"][k], syncs=lists["syncs"][k],
            time_s=sum(bd_rows[k]), breakdown=bd, read_hist=L["read_hist"][k], write_hist=L["write_hist"][k],
            dominant_size=B.size_label(dom[k] if dom[k] >= 0 else None), read_pattern=rp_, write_pattern=wp_,
            pattern=pat, size=sz, times_read=(br / sz) if sz and br else None,
            readers=lists["readers"][k], writers=lists["writers"][k], processes=lists["users"][k],
            created=was_created, deleted=was_deleted, temporary=temp, lifetime_s=life,
            first_s=(first_k - t0) * NS if first_k != big else None,
            last_s=(last_k - t0) * NS if last_k else None,
            flags=flag_cache[fl] if fl in flag_cache else flag_cache.setdefault(
                fl, [n for n, (bit, _d) in flag_names if fl & bit]),
            text_format=text_format(path) if kind == "file" and path.rsplit(".", 1)[-1].lower() in TEXT_EXTS else None,
            random_reads=lists["rnd_r"][k], random_writes=lists["rnd_w"][k], tools=tools[k],
        ))

    # ---- mounts: sums over their files ---------------------------------------------------------------
    mount_idx: dict[str, int] = {}
    f_mount = np.asarray([mount_idx.setdefault(f.mount, len(mount_idx)) for f in files], dtype=np.int64)
    nm = len(mount_idx)

    def per_mount(values) -> np.ndarray:
        values = np.asarray(values)
        out = np.zeros((nm,) + values.shape[1:])
        np.add.at(out, f_mount, values)
        return out

    temp_mask = np.asarray([f.temporary for f in files], dtype=bool)
    m_sum = {k: per_mount(agg[k]) for k in ("bytes_read", "bytes_written", "reads", "writes")}
    m_meta = per_mount(metas)
    m_break = per_mount(p_break) if npath else np.zeros((0, len(B.CLASSES)))
    m_files = np.bincount(f_mount, minlength=nm)
    m_temp = np.bincount(f_mount[temp_mask], minlength=nm)
    m_temp_bytes = per_mount(np.where(temp_mask, agg["bytes_written"], 0))
    fs_first = np.asarray([f.first_s if f.first_s is not None else np.nan for f in files])
    fs_last = np.asarray([f.last_s if f.last_s is not None else np.nan for f in files])
    mounts_seen: dict[str, MountRow] = {}
    for name, j in mount_idx.items():
        k0 = int(np.flatnonzero(f_mount == j)[0])
        m = mount_of[k0] if files[k0].kind != "stream" else None
        windows = []
        for col in ("bytes_read", "bytes_written"):
            sel = (f_mount == j) & (agg[col] > 0) & ~np.isnan(fs_first)
            windows.append([float(fs_first[sel].min()), float(fs_last[sel].max())] if sel.any() else None)
        mounts_seen[name] = MountRow(
            mount=name, fstype=files[k0].fstype, source=(m or {}).get("source", ""), device=(m or {}).get("dev", ""),
            storage=files[k0].storage, bytes_read=int(m_sum["bytes_read"][j]),
            bytes_written=int(m_sum["bytes_written"][j]), reads=int(m_sum["reads"][j]),
            writes=int(m_sum["writes"][j]), metadata_ops=int(m_meta[j]), time_s=float(m_break[j].sum()) * NS,
            breakdown=_breakdown_dict(m_break[j]), files=int(m_files[j]), temp_files=int(m_temp[j]),
            temp_bytes=int(m_temp_bytes[j]), read_window=windows[0], write_window=windows[1])
    un = unattributed.sum(axis=0)
    if un.sum() > 0:
        mounts_seen[NO_FILE] = MountRow(mount=NO_FILE, fstype="", source="", device="", storage="unknown",
                                        bytes_read=0, bytes_written=0, reads=0, writes=0, metadata_ops=0,
                                        time_s=float(un.sum()) * NS, breakdown=_breakdown_dict(un), files=0,
                                        temp_files=0, temp_bytes=0)
    order = sorted(range(npath), key=lambda k: (-files[k].time_s, -(files[k].bytes_read + files[k].bytes_written),
                                               files[k].path))
    files = [files[k] for k in order]
    mount_rows = sorted(mounts_seen.values(), key=lambda m: (-m.time_s, m.mount))

    # ---- timeline --------------------------------------------------------------------------------
    mount_names = [m.mount for m in mount_rows if m.mount != NO_FILE]
    midx = {m: j for j, m in enumerate(mount_names)}
    path_mount = np.asarray([midx.get(name, -1) for name in
                             (sorted(mount_idx, key=mount_idx.get))], dtype=np.int64)[f_mount] if npath else \
        np.zeros(0, dtype=np.int64)
    rec_mount = path_mount[rec_path] if len(records) else np.zeros(0, dtype=np.int64)
    rec_ops = arrays["reads"] + arrays["writes"] + ex["opens"] + ex["stats"] + ex["metas"] + ex["syncs"]
    rec_bytes = arrays["bytes_read"] + arrays["bytes_written"]
    proc_files = []
    for i in range(nproc):
        sl = slice(int(offs[i]), int(offs[i + 1]))
        keep = rec_mount[sl] >= 0
        proc_files.append({"first": ex["first_mono"][sl][keep], "last": ex["last_mono"][sl][keep],
                           "mount": rec_mount[sl][keep], "ops": rec_ops[sl][keep], "bytes": rec_bytes[sl][keep]})
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
        "mmap_bytes": int(ex["mmap_bytes"].sum()),
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
    not_stream = np.asarray([k != "stream" for k in kinds], dtype=bool)
    rh = agg["read_hist"][not_stream].sum(axis=0) if npath else np.zeros(F.HIST_BINS)
    wh = agg["write_hist"][not_stream].sum(axis=0) if npath else np.zeros(F.HIST_BINS)
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


EXTRA_FIELDS = ("first_mono", "last_mono", "max_read_end", "max_write_end", "created_mono", "deleted_mono", "flags",
                "opens", "stats", "seeks", "metas", "syncs", "mmap_bytes", "dev")


def _extra_arrays(records: list[dict[str, Any]]) -> dict[str, np.ndarray]:
    table = np.array(list(map(itemgetter(*EXTRA_FIELDS), records)), dtype=np.uint64).astype(np.int64)
    table = table.reshape(len(records), len(EXTRA_FIELDS))
    return {k: table[:, i] for i, k in enumerate(EXTRA_FIELDS)}


def _kind(flags: int) -> str:
    return file_kind({"flags": flags})


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
