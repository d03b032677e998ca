"""Storage use: the files' sums per mount, and the writable storage the run could have used instead."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from iolens.analysis import breakdown as B
from iolens.analysis.classify import storage_kind
from iolens.analysis.files import Paths
from iolens.analysis.model import NO_FILE, FileRow, MountRow

NS = 1e-9


@dataclass
class Placement:
    """Which mount each path is on: names in the order first met, and each path's index into them."""

    names: list[str]
    of_path: np.ndarray


def _breakdown_dict(row: np.ndarray) -> dict[str, float]:
    return {c: float(row[i]) * NS for i, c in enumerate(B.CLASSES)}


def _windows(first: np.ndarray, last: np.ndarray, paths: Paths, in_mount: np.ndarray) -> list[list[float] | None]:
    """[first, last] use (s) of the mount's files that were read, and of those written."""
    out = []
    for col in ("bytes_read", "bytes_written"):
        sel = in_mount & (paths.sums[col] > 0) & ~np.isnan(first)
        out.append([float(first[sel].min()), float(last[sel].max())] if sel.any() else None)
    return out


def fold_mounts(files: list[FileRow], paths: Paths, unattributed: np.ndarray) -> tuple[list[MountRow], Placement]:
    """One MountRow per mount the files are on (plus one for calls with no file), most time first.

    files are in path order (as fold_files returns them, before ranking).
    """
    mount_idx: dict[str, int] = {}
    f_mount = np.asarray([mount_idx.setdefault(f.mount, len(mount_idx)) for f in files], dtype=np.int64)
    nm = len(mount_idx)

    def per_mount(values: Any) -> np.ndarray:
        values = np.asarray(values)
        out = np.zeros((nm,) + values.shape[1:])
        np.add.at(out, f_mount, values)
        return out

    temp_mask = np.asarray([f.temporary for f in files], dtype=bool)
    m_sum = {k: per_mount(paths.sums[k]) for k in ("bytes_read", "bytes_written", "reads", "writes")}
    m_meta = per_mount(paths.metas)
    m_break = per_mount(paths.breakdown) if len(paths) else np.zeros((0, len(B.CLASSES)))
    m_files = np.bincount(f_mount, minlength=nm)
    m_temp = np.bincount(f_mount[temp_mask], minlength=nm)
    m_temp_bytes = per_mount(np.where(temp_mask, paths.sums["bytes_written"], 0))
    first = np.asarray([f.first_s if f.first_s is not None else np.nan for f in files])
    last = np.asarray([f.last_s if f.last_s is not None else np.nan for f in files])
    rows: list[MountRow] = []
    for name, j in mount_idx.items():
        k0 = int(np.flatnonzero(f_mount == j)[0])
        m = (paths.mounts[k0] if files[k0].kind != "stream" else None) or {}
        read_window, write_window = _windows(first, last, paths, f_mount == j)
        rows.append(MountRow(
            mount=name, fstype=files[k0].fstype, source=m.get("source", ""), device=m.get("dev", ""),
            storage=files[k0].storage, bytes_read=int(m_sum["bytes_read"][j]),
            bytes_written=int(m_sum["bytes_written"][j]), reads=int(m_sum["reads"][j]),
            writes=int(m_sum["writes"][j]), metadata_ops=int(m_meta[j]), time_s=float(m_break[j].sum()) * NS,
            breakdown=_breakdown_dict(m_break[j]), files=int(m_files[j]), temp_files=int(m_temp[j]),
            temp_bytes=int(m_temp_bytes[j]), read_window=read_window, write_window=write_window))
    un = unattributed.sum(axis=0)
    if un.sum() > 0:
        rows.append(MountRow(mount=NO_FILE, fstype="", source="", device="", storage="unknown", bytes_read=0,
                             bytes_written=0, reads=0, writes=0, metadata_ops=0, time_s=float(un.sum()) * NS,
                             breakdown=_breakdown_dict(un), files=0, temp_files=0, temp_bytes=0))
    rows.sort(key=lambda m: (-m.time_s, m.mount))
    return rows, Placement(names=list(mount_idx), of_path=f_mount)


def available_mounts(mounts: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Writable storage the run could have used: one entry per device (not per bind mount)."""
    out: list[dict[str, Any]] = []
    seen: set[str | None] = set()
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
