"""Files: the records of each path merged across processes into one FileRow per path.

All per-path sums are vectorised: the records are sorted by path so that each path's records are one
run that numpy's ufunc.reduceat folds (a capture can hold 100,000 files).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import re
import stat
from itertools import repeat

import numpy as np

from iolens import _format as F
from iolens.analysis import breakdown as B
from iolens.analysis.classify import TEXT_EXT, file_kind, looks_temporary, text_format
from iolens.analysis.model import PIPES, UNKNOWN, FileRow
from iolens.analysis.mounts import MountResolver
from iolens.analysis.records import Records
from iolens.capture.reader import Capture

NS = 1e-9
BIG = np.iinfo(np.int64).max  # "never" for per-path minima
TEXT_EXTS = {e.lstrip(".") for e in TEXT_EXT}
FF = {name: bit for name, (bit, _doc) in F.FILE_FLAGS.items()}
SUM_FIELDS = ("reads", "writes", "bytes_read", "bytes_written", "read_hist", "write_hist")
_SHARED_LIB = re.compile(r"\.so(\.\d+)*$")


def is_program(path: str, mode: int, exes: set[str]) -> bool:
    """An executable or shared library by its mode, its name or a process image run from it.

    The loader maps these (ld.so's own opens and mmaps are not calls iolens sees), and shells and
    interpreters stat them while searching PATH or sys.path: rows of 0 B and microseconds.
    """
    if path in exes or _SHARED_LIB.search(path):
        return True
    # a damaged capture's mode can be any u64, which stat.S_ISREG refuses
    return stat.S_IFMT(mode & 0o177777) == stat.S_IFREG and bool(mode & 0o111)


@dataclass
class Paths:
    """Per-path sums of the records: one entry per distinct path, in the order paths first appear."""

    names: list[str]
    of_record: np.ndarray  # (N,) each record's path index
    kinds: list[str]  # file, dir, stream, aggregate
    mounts: list[dict[str, Any] | None]  # the mount-table entry of each path (None for streams)
    sums: dict[str, np.ndarray]  # SUM_FIELDS summed per path
    metas: np.ndarray  # metadata calls per path
    breakdown: np.ndarray  # (npath, CLASSES) wall-clock ns
    # fold_files: some of the FileRows' fields as arrays, one entry per path (the rules that read every file)
    rows: dict[str, np.ndarray] = field(default_factory=dict)

    def __len__(self) -> int:
        return len(self.names)


class _ByPath:
    """Folds per-record arrays into per-path arrays."""

    def __init__(self, recs: Records):
        path_id: dict[str, int] = {}
        self.of_record = np.fromiter((path_id.setdefault(path, len(path_id)) for path in recs.paths),
                                     dtype=np.int64, count=len(recs))
        self.names = list(path_id)
        self.order = np.argsort(self.of_record, kind="stable")
        self.starts = (np.flatnonzero(np.r_[True, np.diff(self.of_record[self.order]) != 0]) if len(recs)
                       else np.zeros(0, int))

    def __call__(self, values: np.ndarray, how: Any = np.add, init: float = 0) -> np.ndarray:
        if not len(self.of_record):
            return np.full((0,) + values.shape[1:], init, dtype=values.dtype)
        return how.reduceat(values[self.order], self.starts, axis=0)


def _columns(recs: Records, per_path: _ByPath) -> dict[str, np.ndarray]:
    """Per-path arrays besides the plain sums: times, sizes, flags, call counts, jumps."""
    ex, arrays = recs.extra, recs.arrays
    reads_r, writes_r = arrays["reads"], arrays["writes"]
    created_ok = (ex["created_mono"] > 0) & ((ex["flags"] & FF["CREATED"]) > 0)
    return {
        "first": per_path(np.where(ex["first_mono"] > 0, ex["first_mono"], BIG), np.minimum, BIG),
        "last": per_path(ex["last_mono"], np.maximum),
        "size": per_path(np.maximum(ex["max_read_end"], ex["max_write_end"]), np.maximum),
        "created": per_path(np.where(created_ok, ex["created_mono"], BIG), np.minimum, BIG),
        "deleted": per_path(ex["deleted_mono"], np.maximum),
        "flags": per_path(ex["flags"], np.bitwise_or),
        "opens": per_path(ex["opens"]),
        "metas": per_path(ex["stats"] + ex["seeks"] + ex["metas"] + ex["opens"]),
        "syncs": per_path(ex["syncs"]),
        "mode": per_path(ex["mode"], np.bitwise_or),
        "rnd_r": per_path(np.where(reads_r > 0, np.maximum(0, reads_r - 1 - arrays["seq_reads"]), 0)),
        "rnd_w": per_path(np.where(writes_r > 0, np.maximum(0, writes_r - 1 - arrays["seq_writes"]), 0)),
        "pairs_r": per_path(np.maximum(0, reads_r - 1)),
        "pairs_w": per_path(np.maximum(0, writes_r - 1)),
    }


def _distinct(values: np.ndarray) -> np.ndarray:
    """np.unique(values), each value once in order, by a sort: np.unique hashes them first (numpy 2.4), which took
    about 30 times as long on 100,000 int64 codes."""
    s = np.sort(values)
    return s[np.concatenate([[True], s[1:] != s[:-1]])] if len(s) else s


def _users(cap: Capture, recs: Records, rec_path: np.ndarray, npath: int) -> dict[str, np.ndarray]:
    """Distinct processes (by pid) that read, wrote and used each path."""
    procs = cap.processes
    pid_idx = np.unique(np.asarray([p.pid for p in procs], dtype=np.int64), return_inverse=True)[1].reshape(-1)
    npid = int(pid_idx.max()) + 1 if procs else 1
    rec_pid = pid_idx[recs.proc] if len(recs) else np.zeros(0, dtype=np.int64)

    def distinct(mask: np.ndarray) -> np.ndarray:
        u = _distinct(rec_path[mask] * npid + rec_pid[mask])
        return np.bincount(u // npid, minlength=npath)

    return {"readers": distinct(recs.arrays["reads"] > 0), "writers": distinct(recs.arrays["writes"] > 0),
            "users": distinct(np.ones(len(recs), dtype=bool))}


def _tools(recs: Records, names: list[str], rec_path: np.ndarray, npath: int) -> list[list[str]]:
    """The tools (by name) that used each path, sorted."""
    tool_id: dict[str, int] = {}
    proc_tool = np.asarray([tool_id.setdefault(n, len(tool_id)) for n in names] or [0], dtype=np.int64)
    tool_names = sorted(tool_id, key=tool_id.__getitem__)
    ntool = max(1, len(tool_id))
    tools: list[list[str]] = [[] for _ in range(npath)]
    if len(recs):
        for code in _distinct(rec_path * ntool + proc_tool[recs.proc]).tolist():
            tools[code // ntool].append(tool_names[code % ntool])
        tools = [sorted(t) if len(t) > 1 else t for t in tools]
    return tools


def fold_paths(cap: Capture, recs: Records, resolve: MountResolver) -> tuple[Paths, dict[str, np.ndarray]]:
    """Per-path sums, kinds and mounts; also the remaining per-path columns the file rows need."""
    per_path = _ByPath(recs)
    npath = len(per_path.names)
    cols = _columns(recs, per_path)
    cols.update(_users(cap, recs, per_path.of_record, npath))
    first_rec = (np.unique(per_path.of_record, return_index=True)[1] if len(recs)
                 else np.zeros(0, dtype=np.int64))
    flags = recs.extra["flags"][first_rec].tolist()
    kind_of = {fl: file_kind({"flags": fl}) for fl in set(flags)}  # once per flags value
    kinds = list(map(kind_of.__getitem__, flags))
    paths = per_path.names
    mounts = [None if kind == "stream" else resolve(dev, path)
              for kind, dev, path in zip(kinds, recs.extra["dev"][first_rec].tolist(), paths)]
    paths_ = Paths(names=paths, of_record=per_path.of_record, kinds=kinds, mounts=mounts,
                   sums={k: per_path(recs.arrays[k]) for k in SUM_FIELDS}, metas=cols["metas"],
                   breakdown=per_path(recs.scaled))
    return paths_, cols


def fold_files(cap: Capture, recs: Records, names: list[str], th: dict[str, float], resolve: MountResolver,
               span: tuple[int, int]) -> tuple[Paths, list[FileRow]]:
    """One FileRow per path, in the order paths first appear; span is the run's (start, end) monotonic ns.

    Every column is computed for all paths at once; only what depends on a name (temporary, text format, program)
    is looked at path by path, and only for the paths it can apply to."""
    paths, cols = fold_paths(cap, recs, resolve)
    t0, t_end = span
    agg = paths.sums
    n = len(paths)
    kinds = paths.kinds
    both = agg["read_hist"] + agg["write_hist"]
    reads_a, writes_a = agg["reads"], agg["writes"]
    rp = np.where(reads_a > 0, np.asarray(B.patterns(cols["pairs_r"] + 1, cols["pairs_r"] - cols["rnd_r"], th)
                                          if n else np.zeros(0, str), dtype=object), "-")
    wp = np.where(writes_a > 0, np.asarray(B.patterns(cols["pairs_w"] + 1, cols["pairs_w"] - cols["rnd_w"], th)
                                           if n else np.zeros(0, str), dtype=object), "-")
    pat = np.where(writes_a == 0, rp, np.where(reads_a == 0, wp, np.where(rp == wp, rp, "mixed")))
    col: dict[str, list[Any]] = {k: v.astype(np.int64).tolist() for k, v in agg.items()}
    for k in ("opens", "metas", "syncs", "rnd_r", "rnd_w"):
        col[k] = cols[k].astype(np.int64).tolist()
    created_a, fl_a = cols["created"], cols["flags"]
    was_created = (created_a != BIG).tolist()
    was_deleted = ((fl_a & FF["DELETED"]) != 0).tolist()
    reads, writes, size, bytes_read = col["reads"], col["writes"], cols["size"].tolist(), col["bytes_read"]
    first, last, created = cols["first"].tolist(), cols["last"].tolist(), created_a.tolist()
    temp, program = [False] * n, [False] * n
    life: list[float | None] = [None] * n
    text: list[str | None] = [None] * n
    exes = {p.exe for p in cap.processes if p.exe}
    deleted, mode = cols["deleted"].tolist(), cols["mode"].tolist()
    for k in np.flatnonzero(np.asarray([kd == "file" for kd in kinds], dtype=bool)).tolist():
        path = paths.names[k]
        if was_created[k] and looks_temporary(path, True, was_deleted[k]):
            temp[k] = True
            end = deleted[k] if was_deleted[k] and deleted[k] else (last[k] or t_end)
            life[k] = max(0.0, (end - created[k]) * NS)
        if path.rsplit(".", 1)[-1].lower() in TEXT_EXTS:
            text[k] = text_format(path)
        if not reads[k] and not writes[k] and not was_created[k]:
            program[k] = is_program(path, mode[k], exes)
    where = _Where(resolve)
    mount, fstype, storage = zip(*map(where, kinds, paths.mounts)) if n else ((), (), ())
    flag_names = _FlagNames()
    labels = [B.size_label(i) for i in range(len(B.BIN_LABELS))] + [B.size_label(None)]  # index -1: none
    dom = np.where(both.any(axis=1), both.argmax(axis=1), -1).tolist()
    bd_a = paths.breakdown * NS
    bd = bd_a.tolist()
    row_time = np.zeros(n)
    for j in range(bd_a.shape[1] if n else 0):  # left to right, as sum() of the row would: the same bits
        row_time += bd_a[:, j]
    tools = _tools(recs, names, paths.of_record, n)
    paths.rows = {"breakdown": bd_a, "bytes_read": agg["bytes_read"].astype(np.int64),
                  "bytes_written": agg["bytes_written"].astype(np.int64), "time_s": row_time,
                  "temporary": np.asarray(temp, dtype=bool), "created": created_a != BIG,
                  "mount": np.asarray(mount, dtype=object), "storage": np.asarray(storage, dtype=object),
                  "random_reads": cols["rnd_r"].astype(np.int64), "random_writes": cols["rnd_w"].astype(np.int64),
                  "size": cols["size"].astype(np.int64), "syncs": cols["syncs"].astype(np.int64),
                  "real": np.asarray([k in ("file", "aggregate") for k in kinds], dtype=bool)}
    # the per-row containers made in C loops (map), each row its own dict and list
    bds = list(map(dict, map(zip, repeat(B.CLASSES), bd)))
    flags = list(map(list, map(flag_names.__getitem__, fl_a.tolist())))
    files = [  # positional, in FileRow's field order (a third faster than by keyword, at 100,000 rows)
        FileRow(path, kind, mp, fst, sto, br, bw, r, w, op, me, sy, rt, bd_row, rh, wh, dm, rp_, wp_, pt, sz,
                (br / sz) if sz and br else None, rd, wr, us, cr, de, tp, lf, (fi - t0) * NS if fi != BIG else None,
                (la - t0) * NS if la else None, fl, tx, rr, rw, tl, pg)
        for (path, kind, mp, fst, sto, br, bw, r, w, op, me, sy, rt, bd_row, rh, wh, dm, rp_, wp_, pt, sz, rd, wr, us,
             cr, de, tp, lf, fi, la, fl, tx, rr, rw, tl, pg)
        in zip(paths.names, kinds, mount, fstype, storage, bytes_read, col["bytes_written"], reads, writes,
               col["opens"], col["metas"], col["syncs"], row_time.tolist(), bds, col["read_hist"], col["write_hist"],
               map(labels.__getitem__, dom), rp.tolist(), wp.tolist(), pat.tolist(), size, cols["readers"].tolist(),
               cols["writers"].tolist(), cols["users"].tolist(), was_created, was_deleted, temp, life, first, last,
               flags, text, col["rnd_r"], col["rnd_w"], tools, program)
    ]
    return paths, files


class _Where:
    """A path's (mount point, filesystem type, storage kind), worked out once per mount-table entry."""

    def __init__(self, resolve: MountResolver):
        self.resolve = resolve
        self.seen: dict[int, tuple[str, str, str]] = {}

    def __call__(self, kind: str, m: dict[str, Any] | None) -> tuple[str, str, str]:
        if kind == "stream":
            return PIPES, "", "pipe"
        got = self.seen.get(id(m))
        if got is None:
            mp, fst = (m["mountpoint"], m["fstype"]) if m else (UNKNOWN, "")
            got = self.seen[id(m)] = (mp, fst, self.resolve.kind(m))
        return got


class _FlagNames(dict[int, list[str]]):
    """The FILE_FLAGS names of a flags value, worked out once per value (the caller copies them for each row)."""

    def __missing__(self, fl: int) -> list[str]:
        names = self[fl] = [n for n, (bit, _d) in F.FILE_FLAGS.items() if fl & bit]
        return names


def rank_order(paths: Paths) -> np.ndarray:
    """The order of fold_files' rows in the report, from their columns: most time first, then most bytes, then by
    path (one row per path, so no two tie)."""
    if not len(paths):
        return np.zeros(0, dtype=np.int64)
    rows = paths.rows
    return np.lexsort((np.asarray(paths.names, dtype=str), -(rows["bytes_read"] + rows["bytes_written"]),
                       -rows["time_s"]))


def top_files(files: list[FileRow]) -> list[FileRow]:
    """The rows of the top-files tables: files and aggregates, without the programs the loader maps."""
    return [f for f in files if f.kind in ("file", "aggregate") and not f.program]
