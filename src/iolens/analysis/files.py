"""Files: the records of each path merged across processes into one FileRow per path.

All per-path sums are vectorised: the records are sorted by path so that each path's records are one
run that numpy's ufunc.reduceat folds (a capture can hold 100,000 files).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import re
import stat

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


def _users(cap: Capture, recs: Records, rec_path: np.ndarray, npath: int) -> dict[str, np.ndarray]:
    """Distinct processes (by pid) that read, wrote and used each path."""
    procs = cap.processes
    pid_idx = np.unique(np.asarray([p.pid for p in procs], dtype=np.int64), return_inverse=True)[1].reshape(-1)
    npid = int(pid_idx.max()) + 1 if procs else 1
    rec_pid = pid_idx[recs.proc] if len(recs) else np.zeros(0, dtype=np.int64)

    def distinct(mask: np.ndarray) -> np.ndarray:
        u = np.unique(rec_path[mask] * npid + rec_pid[mask])
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
        for code in np.unique(rec_path * ntool + proc_tool[recs.proc]).tolist():
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
    kinds = [file_kind({"flags": int(fl)}) for fl in recs.extra["flags"][first_rec].tolist()]
    devs = recs.extra["dev"][first_rec].tolist()
    paths = per_path.names
    mounts = [resolve(devs[k], paths[k]) if kinds[k] != "stream" else None for k in range(npath)]
    paths_ = Paths(names=paths, of_record=per_path.of_record, kinds=kinds, mounts=mounts,
                   sums={k: per_path(recs.arrays[k]) for k in SUM_FIELDS}, metas=cols["metas"],
                   breakdown=per_path(recs.scaled))
    return paths_, cols


def fold_files(cap: Capture, recs: Records, names: list[str], th: dict[str, float], resolve: MountResolver,
               span: tuple[int, int]) -> tuple[Paths, list[FileRow]]:
    """One FileRow per path, in the order paths first appear; span is the run's (start, end) monotonic ns."""
    paths, cols = fold_paths(cap, recs, resolve)
    agg = paths.sums
    both = agg["read_hist"] + agg["write_hist"]
    rpat = B.patterns(cols["pairs_r"] + 1, cols["pairs_r"] - cols["rnd_r"], th)
    wpat = B.patterns(cols["pairs_w"] + 1, cols["pairs_w"] - cols["rnd_w"], th)
    col: dict[str, list[Any]] = {k: v.astype(np.int64).tolist() for k, v in agg.items()}
    for k in ("first", "last", "size", "created", "deleted", "flags", "readers", "writers", "users", "mode"):
        col[k] = cols[k].tolist()
    for k in ("opens", "metas", "syncs", "rnd_r", "rnd_w"):
        col[k] = cols[k].astype(np.int64).tolist()
    col["dom"] = np.where(both.any(axis=1), both.argmax(axis=1), -1).tolist()
    col["rpat"], col["wpat"] = rpat, wpat
    col["tools"] = _tools(recs, names, paths.of_record, len(paths))
    col["breakdown"] = (paths.breakdown * NS).tolist()
    row = _RowMaker(col, resolve, span, {p.exe for p in cap.processes if p.exe})
    files = [row(k, path, paths.kinds[k], paths.mounts[k]) for k, path in enumerate(paths.names)]
    return paths, files


class _RowMaker:
    def __init__(self, col: dict[str, list[Any]], resolve: MountResolver, span: tuple[int, int], exes: set[str]):
        self.col, self.resolve, (self.t0, self.t_end), self.exes = col, resolve, span, exes
        self.flag_names = list(F.FILE_FLAGS.items())
        self.flag_cache: dict[int, list[str]] = {}

    def flags(self, fl: int) -> list[str]:
        if fl not in self.flag_cache:
            self.flag_cache[fl] = [n for n, (bit, _d) in self.flag_names if fl & bit]
        return self.flag_cache[fl]

    def where(self, kind: str, m: dict[str, Any] | None) -> tuple[str, str, str]:
        if kind == "stream":
            return PIPES, "", "pipe"
        mp, fst = (m["mountpoint"], m["fstype"]) if m else (UNKNOWN, "")
        return mp, fst, self.resolve.kind(m)

    def __call__(self, k: int, path: str, kind: str, m: dict[str, Any] | None) -> FileRow:
        c, t0 = self.col, self.t0
        mp, fst, storage = self.where(kind, m)
        reads, writes = c["reads"][k], c["writes"][k]
        rp_, wp_ = (c["rpat"][k] if reads else "-"), (c["wpat"][k] if writes else "-")
        pat = rp_ if writes == 0 else wp_ if reads == 0 else (rp_ if rp_ == wp_ else "mixed")
        fl = c["flags"][k]
        was_created = c["created"][k] != BIG
        was_deleted = bool(fl & FF["DELETED"])
        temp = was_created and kind == "file" and looks_temporary(path, was_created, was_deleted)
        first_k, last_k = c["first"][k], c["last"][k]
        life = None
        if temp:
            end = c["deleted"][k] if was_deleted and c["deleted"][k] else (last_k or self.t_end)
            life = max(0.0, (end - c["created"][k]) * NS)
        br, sz, dom = c["bytes_read"][k], c["size"][k], c["dom"][k]
        bd_row = c["breakdown"][k]
        return FileRow(
            path=path, kind=kind, mount=mp, fstype=fst, storage=storage,
            bytes_read=br, bytes_written=c["bytes_written"][k], reads=reads, writes=writes,
            opens=c["opens"][k], metadata_ops=c["metas"][k], syncs=c["syncs"][k],
            time_s=sum(bd_row), breakdown=dict(zip(B.CLASSES, bd_row)), read_hist=c["read_hist"][k],
            write_hist=c["write_hist"][k], dominant_size=B.size_label(dom if dom >= 0 else None),
            read_pattern=rp_, write_pattern=wp_, pattern=pat, size=sz, times_read=(br / sz) if sz and br else None,
            readers=c["readers"][k], writers=c["writers"][k], processes=c["users"][k],
            created=was_created, deleted=was_deleted, temporary=temp, lifetime_s=life,
            first_s=(first_k - t0) * NS if first_k != BIG else None,
            last_s=(last_k - t0) * NS if last_k else None, flags=self.flags(fl),
            text_format=text_format(path) if kind == "file" and path.rsplit(".", 1)[-1].lower() in TEXT_EXTS else None,
            random_reads=c["rnd_r"][k], random_writes=c["rnd_w"][k], tools=c["tools"][k],
            program=(kind == "file" and not reads and not writes and not was_created
                     and is_program(path, c["mode"][k], self.exes)),
        )


def ranked(files: list[FileRow]) -> list[FileRow]:
    """Most time first, then most bytes, then by path."""
    return sorted(files, key=lambda f: (-f.time_s, -(f.bytes_read + f.bytes_written), f.path))


def top_files(files: list[FileRow]) -> list[FileRow]:
    """The rows of the top-files tables: files and aggregates, without the programs the loader maps."""
    return [f for f in files if f.kind in ("file", "aggregate") and not f.program]
