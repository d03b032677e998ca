"""The time breakdown: each (process, file) record's measured time split into the report's categories.

docs/report.md ("How the split is apportioned") is the prose version of this module.  Everything
here works on whole arrays of records at once (a capture can hold 100,000 files), so the functions
take and return numpy arrays; `split_one` is the one-record form for tests and readers.
"""

from __future__ import annotations

import math
from operator import itemgetter
from typing import Any, Sequence

import numpy as np

from iolens import _format as F

READ, WRITE, META, SYNC, STREAM = (F.CATEGORIES.index(c) for c in ("READ", "WRITE", "META", "SYNC", "STREAM"))
NCAT = len(F.CATEGORIES)

# The categories of the breakdown, in display order.  `compute` exists only per process and above.
IO_CLASSES = [
    "tiny_read", "small_read", "streaming_read", "random_read",
    "tiny_write", "small_write", "streaming_write", "random_write",
    "metadata", "sync",
]
CLASSES = IO_CLASSES + ["pipe_wait"]
BREAKDOWN = CLASSES + ["compute"]
CLASS_INDEX = {c: i for i, c in enumerate(CLASSES)}
# which capture category each class's time comes from
CLASS_CAT = [READ] * 4 + [WRITE] * 4 + [META, SYNC, STREAM]
LABELS = {
    "tiny_read": "tiny reads", "small_read": "small reads", "streaming_read": "streaming reads",
    "random_read": "random reads", "tiny_write": "tiny writes", "small_write": "small writes",
    "streaming_write": "streaming writes", "random_write": "random writes", "metadata": "metadata",
    "sync": "sync", "pipe_wait": "waiting on pipes", "compute": "compute",
}

EDGES = list(F.HIST_EDGES)
# the bins' byte ranges: (lo, hi]; the first starts at 1 byte, the last is taken as 4x wide
BIN_LO = [1.0] + [float(e) for e in EDGES]
BIN_HI = [float(e) for e in EDGES] + [EDGES[-1] * 4.0]
BIN_LABELS = ["0-100 B", "101 B-1 KiB", "1-10 KiB", "10-100 KiB", "100 KiB-1 MiB", "1-4 MiB", "4-10 MiB",
              "10-100 MiB", "100 MiB-1 GiB", "> 1 GiB"]


def _loguniform_mean(a: float, b: float) -> float:
    return a if b <= a else (b - a) / math.log(b / a)


def bin_split(tiny: float, small: float) -> tuple[np.ndarray, np.ndarray]:
    """For each size bin, the share of its calls that is tiny, small and large (3 x 10), and their mean sizes.

    A bin cut by a threshold is shared as if sizes were spread evenly on a log scale within it.
    """
    frac = np.zeros((3, len(BIN_LO)))
    mean = np.zeros((3, len(BIN_LO)))
    for i, (lo, hi) in enumerate(zip(BIN_LO, BIN_HI)):
        cuts = [lo, min(max(tiny, lo), hi), min(max(small, lo), hi), hi]
        span = math.log(hi / lo)
        for k in range(3):
            a, b = cuts[k], cuts[k + 1]
            frac[k, i] = math.log(b / a) / span if b > a else 0.0
            mean[k, i] = _loguniform_mean(a, b) if b > a else 0.0
    # a threshold at a bin edge gives the whole bin to one side exactly
    frac[frac < 1e-12] = 0.0
    return frac, mean


def _infer_cut_bins(hist: np.ndarray, nb: np.ndarray, frac: np.ndarray, fr: np.ndarray, mn: np.ndarray,
                    th: dict[str, float]) -> None:
    """Where a record's only threshold-cut bin with calls can be sized from its bytes, use that size.

    Tools mostly read and write in fixed-size pieces (stdio's 4 KiB, gzip's 8 KiB), so when the bytes
    left after the record's other bins (taken at their log-scale mean) put the cut bin's mean call
    size clearly on one side of the threshold, the whole bin goes to that side.  Otherwise the bin
    stays shared on a log scale.
    """
    cut = [i for i in range(frac.shape[1]) if np.count_nonzero(frac[:, i]) > 1]
    if not cut:
        return
    full_mean = np.array([_loguniform_mean(lo, hi) for lo, hi in zip(BIN_LO, BIN_HI)])
    has = hist[:, cut] > 0
    for j, c in enumerate(cut):
        only = has[:, j] & (has.sum(axis=1) == 1)
        if not only.any():
            continue
        other = hist[only] @ full_mean - hist[only, c] * full_mean[c]
        est = (nb[only] - other) / hist[only, c]
        ok = (est >= BIN_LO[c]) & (est <= BIN_HI[c])
        rows = np.flatnonzero(only)[ok]
        est = est[ok]
        k = np.where(est < th["tiny_bytes"], 0, np.where(est < th["small_bytes"], 1, 2))
        fr[rows, :, c] = 0.0
        fr[rows, k, c] = 1.0
        mn[rows, k, c] = est


def eof_reads(read_hist: np.ndarray, opens: np.ndarray) -> np.ndarray:
    """Per record, the calls of its smallest read bin taken as empty reads at end of file.

    Nearly every reader's last read on a file returns 0 bytes; the capture counts it in the smallest
    size bin (0-100 B), where it is indistinguishable from a short read.  When that bin holds no more
    calls than the record has opens (one end-of-file read per open; a descriptor inherited from the
    shell counts as one open) and the record has reads in larger bins, those calls are taken as the
    end-of-file reads: still calls, but of 0 bytes, and they do not decide the record's size class.
    """
    hist = np.asarray(read_hist, dtype=np.float64)
    if not hist.size:
        return np.zeros(hist.shape[0])
    first = hist[:, 0]
    larger = hist[:, 1:].sum(axis=1)
    limit = np.maximum(np.asarray(opens, dtype=np.float64), 1.0)
    return np.where((first > 0) & (first <= limit) & (larger > 0), first, 0.0)


def split_direction(hist: np.ndarray, nbytes: np.ndarray, ops: np.ndarray, seq: np.ndarray, time_ns: np.ndarray,
                    th: dict[str, float], empty: np.ndarray | None = None) -> np.ndarray:
    """One direction (reads or writes) of many records: time (N,) -> (N, 4) tiny/small/streaming/random.

    hist is (N, 10) calls per size bin; nbytes, ops and seq (calls that continued forwards) are (N,).
    empty (N,) is the calls of the first bin that moved no bytes (eof_reads): they are shared among
    the classes of the record's other calls instead of counting as tiny.
    """
    hist = np.asarray(hist, dtype=np.float64)
    nb = np.asarray(nbytes, dtype=np.float64)
    if empty is not None:
        empty = np.asarray(empty, dtype=np.float64)
        hist = hist.copy()
        hist[:, 0] -= empty
    frac, mean = bin_split(th["tiny_bytes"], th["small_bytes"])
    fr = np.broadcast_to(frac, (hist.shape[0],) + frac.shape).copy()  # (N, 3, 10)
    mn = np.broadcast_to(mean, fr.shape).copy()
    _infer_cut_bins(hist, nb, frac, fr, mn, th)
    counts = np.einsum("nb,nkb->nk", hist, fr)  # (N, 3) calls per class
    if empty is not None:
        csum = counts.sum(axis=1, keepdims=True)
        counts += np.divide(counts, csum, out=np.zeros_like(counts), where=csum > 0) * empty[:, None]
    modeled = np.einsum("nb,nkb->nk", hist, fr * mn)  # (N, 3) bytes per class
    total = modeled.sum(axis=1)
    scale = np.divide(nb, total, out=np.ones_like(nb), where=total > 0)
    nbytes3 = modeled * scale[:, None]
    weight = counts * th["call_cost_ns"] + nbytes3 * th["byte_cost_ns"]
    wsum = weight.sum(axis=1)
    t = np.asarray(time_ns, dtype=np.float64)
    share = np.divide(weight, wsum[:, None], out=np.zeros_like(weight), where=wsum[:, None] > 0)
    # a record with time but no sized calls (all calls failed): count it as small
    nosize = (wsum <= 0) & (t > 0)
    share[nosize, 1] = 1.0
    parts = share * t[:, None]
    ops = np.asarray(ops, dtype=np.float64)
    back = np.maximum(0.0, ops - 1.0 - np.asarray(seq, dtype=np.float64))  # the first call is neither
    rnd = np.divide(back, ops, out=np.zeros_like(ops), where=ops > 0)
    out = np.empty((len(t), 4))
    out[:, 0] = parts[:, 0]
    out[:, 1] = parts[:, 1]
    out[:, 2] = parts[:, 2] * (1.0 - rnd)
    out[:, 3] = parts[:, 2] * rnd
    return out


def split_records(rec: dict[str, np.ndarray], th: dict[str, float]) -> np.ndarray:
    """Summed call time of many records split into CLASSES: (N, 11) nanoseconds.

    rec holds arrays named like the FILE fields: read_hist/write_hist (N, 10), cat_time_ns (N, 5),
    reads, writes, seq_reads, seq_writes, bytes_read, bytes_written, opens (N,).  The empty reads at end of
    file (eof_reads) count as calls of the record's other reads' classes.
    """
    cat = np.asarray(rec["cat_time_ns"], dtype=np.float64).reshape(-1, NCAT)
    n = cat.shape[0]
    out = np.zeros((n, len(CLASSES)))
    if n == 0:
        return out
    empty = eof_reads(rec["read_hist"], rec["opens"]) if "opens" in rec else None
    out[:, 0:4] = split_direction(rec["read_hist"], rec["bytes_read"], rec["reads"], rec["seq_reads"], cat[:, READ], th,
                                  empty)
    out[:, 4:8] = split_direction(rec["write_hist"], rec["bytes_written"], rec["writes"], rec["seq_writes"],
                                  cat[:, WRITE], th)
    out[:, 8] = cat[:, META]
    out[:, 9] = cat[:, SYNC]
    out[:, 10] = cat[:, STREAM]
    return out


RECORD_FIELDS = ("reads", "writes", "seq_reads", "seq_writes", "bytes_read", "bytes_written", "opens")


def record_arrays(records: Sequence[dict[str, Any]]) -> dict[str, np.ndarray]:
    """FILE records (dicts) -> the arrays split_records takes."""
    n = len(records)
    table = np.array(list(map(itemgetter(*RECORD_FIELDS), records)), dtype=np.float64).reshape(n, len(RECORD_FIELDS))
    out: dict[str, np.ndarray] = {k: table[:, i] for i, k in enumerate(RECORD_FIELDS)}
    for k, width in (("read_hist", F.HIST_BINS), ("write_hist", F.HIST_BINS), ("cat_time_ns", NCAT)):
        out[k] = np.array(list(map(itemgetter(k), records)), dtype=np.float64).reshape(n, width)
    return out


def table_arrays(tables: Sequence[np.ndarray]) -> dict[str, np.ndarray]:
    """FILE records as tables (the reader's FILE_DTYPE), one after the other -> the arrays split_records takes."""
    return {k: np.concatenate([t[k] for t in tables], dtype=np.float64)
            for k in (*RECORD_FIELDS, "read_hist", "write_hist", "cat_time_ns")}


def split_one(record: dict[str, Any], th: dict[str, float]) -> dict[str, float]:
    """One FILE record's summed call time split into CLASSES, in seconds."""
    row = split_records(record_arrays([record]), th)[0]
    return {c: float(row[i]) * 1e-9 for i, c in enumerate(CLASSES)}


def process_factors(cat_time_ns: Sequence[int], cat_wall_ns: Sequence[int], io_wall_s: float, own_s: float,
                    stream_s: float) -> np.ndarray:
    """Per capture category, the factor that turns a process's summed call time into wall-clock time.

    The I/O categories are scaled to their wall time and then, together, to the process's I/O wall
    time (capped at its own time); pipe waits to what is left of its own time.  Single-threaded
    processes have factors of 1.
    """
    ct = np.asarray(cat_time_ns, dtype=np.float64)
    cw = np.asarray(cat_wall_ns, dtype=np.float64)
    f = np.divide(np.minimum(cw, ct), ct, out=np.zeros(NCAT), where=ct > 0)
    io_cats = [READ, WRITE, META, SYNC]
    walls = (ct * f)[io_cats].sum() * 1e-9
    io_cap = min(io_wall_s, own_s)
    if walls > io_cap and walls > 0:
        f[io_cats] *= io_cap / walls
    f[STREAM] = stream_s / (ct[STREAM] * 1e-9) if ct[STREAM] > 0 else 0.0
    return np.minimum(f, 1.0)


def size_label(bin_index: int | None) -> str:
    return "-" if bin_index is None else BIN_LABELS[bin_index]


def pattern(ops: float, seq: float, th: dict[str, float]) -> str:
    """sequential, random or mixed, from the calls after the first; '-' with fewer than two calls."""
    if ops < 2:
        return "-" if ops < 1 else "sequential"
    fwd = seq / (ops - 1)
    if fwd >= th["sequential_fraction"]:
        return "sequential"
    if 1 - fwd >= th["random_fraction"]:
        return "random"
    return "mixed"


def patterns(ops: np.ndarray, seq: np.ndarray, th: dict[str, float]) -> list[str]:
    """pattern() for arrays of records."""
    ops = np.asarray(ops, dtype=np.float64)
    seq = np.asarray(seq, dtype=np.float64)
    fwd = np.divide(seq, ops - 1, out=np.ones_like(ops), where=ops >= 2)
    out = np.where(fwd >= th["sequential_fraction"], "sequential",
                   np.where(1 - fwd >= th["random_fraction"], "random", "mixed"))
    out = np.where(ops < 1, "-", out)
    return out.tolist()
