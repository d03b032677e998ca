"""Every (process, file) record of a capture as arrays, its call time split into the breakdown's classes
and scaled to wall-clock time per process (docs/report.md, "How the split is apportioned").

The files, mounts and timeline folds all start from this table.  Everything is vectorised: a capture
can hold 100,000 file records.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from iolens.analysis import breakdown as B
from iolens.analysis.model import ProcSummary
from iolens.analysis.processes import stream_s
from iolens.capture.reader import FILE_DTYPE, Process

EXTRA_FIELDS = ("first_mono", "last_mono", "max_read_end", "max_write_end", "created_mono", "deleted_mono", "flags",
                "opens", "stats", "seeks", "metas", "syncs", "mmap_bytes", "dev", "mode")


@dataclass
class Records:
    paths: list[str]  # each FILE record's path, image by image
    proc: np.ndarray  # (N,) the index of each record's process image
    offsets: np.ndarray  # (nproc + 1,) image i's records are records[offsets[i]:offsets[i + 1]]
    arrays: dict[str, np.ndarray]  # the fields breakdown.split_records takes
    extra: dict[str, np.ndarray]  # EXTRA_FIELDS, int64
    scaled: np.ndarray  # (N, CLASSES) wall-clock ns per class
    proc_break: np.ndarray  # (nproc, CLASSES) ns per image, calls without a file record included
    unattributed: np.ndarray  # (nproc, CLASSES) the part of proc_break with no file record

    def __len__(self) -> int:
        return len(self.paths)


def _extra_arrays(tables: list[np.ndarray]) -> dict[str, np.ndarray]:
    # as int64: identities (dev) may use all 64 bits and wrap, as astype wraps them; every quantity is below 2^62
    return {k: np.concatenate([t[k] for t in tables], dtype=np.int64, casting="unsafe") for k in EXTRA_FIELDS}


def _factors(procs: list[Process], imgs: list[ProcSummary]) -> np.ndarray:
    """Per image and capture category, what turns summed call time into wall-clock time."""
    factors = np.zeros((len(procs), B.NCAT))
    for i, (p, s) in enumerate(zip(procs, imgs)):
        factors[i] = B.process_factors(p.cat_time_ns, p.cat_wall_ns, s.io_wall_s, s.own_s, stream_s(s))
    return factors


def _unattributed(procs: list[Process], attributed: np.ndarray, factors: np.ndarray,
                  proc_break: np.ndarray) -> np.ndarray:
    """Calls on descriptors with no file record: shared like the image's attributed time."""
    nproc = len(procs)
    class_cat = np.asarray(B.CLASS_CAT)
    out = np.zeros((nproc, len(B.CLASSES)))
    proc_cat = np.asarray([p.cat_time_ns for p in procs], dtype=np.float64).reshape(nproc, B.NCAT)
    left = (proc_cat - attributed) * factors
    for i, c in zip(*np.nonzero(left > 0)):
        cls = np.flatnonzero(class_cat == c)
        part = proc_break[i, cls]
        if part.sum() > 0:
            out[i, cls] = left[i, c] * part / part.sum()
        else:
            out[i, cls[1] if len(cls) > 1 else cls[0]] = left[i, c]
    return out


def fold_records(procs: list[Process], imgs: list[ProcSummary], th: dict[str, float]) -> Records:
    # each field gathered from the images' tables: the records are never copied whole
    tables = [p.file_table for p in procs] or [np.zeros(0, dtype=FILE_DTYPE)]
    paths = [path for p in procs for path in p.paths]
    per_proc = np.asarray([len(p.paths) for p in procs], dtype=np.int64)
    nproc = len(procs)
    rp = np.repeat(np.arange(nproc), per_proc)
    arrays = B.table_arrays(tables)
    raw = B.split_records(arrays, th)  # summed call time, ns
    factors = _factors(procs, imgs)
    scaled = raw * factors[rp][:, np.asarray(B.CLASS_CAT)] if len(paths) else raw
    proc_break = np.zeros((nproc, len(B.CLASSES)))
    attributed = np.zeros((nproc, B.NCAT))
    if len(paths):
        np.add.at(proc_break, rp, scaled)
        np.add.at(attributed, rp, arrays["cat_time_ns"])
    unattributed = _unattributed(procs, attributed, factors, proc_break)
    proc_break += unattributed
    return Records(paths=paths, proc=rp, offsets=np.concatenate([[0], np.cumsum(per_proc)]),
                   arrays=arrays, extra=_extra_arrays(tables), scaled=scaled, proc_break=proc_break,
                   unattributed=unattributed)


def per_proc_sum(recs: Records, values: np.ndarray, nproc: int) -> np.ndarray:
    out = np.zeros(nproc)
    if len(recs):
        np.add.at(out, recs.proc, values)
    return out
