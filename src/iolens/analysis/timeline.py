"""Process timelines on one common grid: IOPS and throughput over time, per category and per mount.

Each process image carries its own binned timeline (bin width 2**shift ns from its own t0_mono).
`rebin` spreads a process's bins over the common grid in proportion to overlap; `mount_shares`
estimates which mounts a process's activity in each of its bins went to, from the use windows of its
files (docs/report.md, "Timeline").
"""

from __future__ import annotations

import math
from dataclasses import dataclass, fields
from typing import Any, Callable

import numpy as np

from iolens import _format as F
from iolens.analysis.model import NO_FILE, MountRow, Timeline
from iolens.analysis.records import Records
from iolens.analysis.storage import Placement

NCAT = len(F.CATEGORIES)


@dataclass
class Grid:
    start_mono: int
    bin_ns: int
    nbins: int

    @property
    def edges(self) -> np.ndarray:
        return self.start_mono + self.bin_ns * np.arange(self.nbins + 1, dtype=np.float64)


def common_grid(start_mono: int, end_mono: int, finest_bin_ns: int | None, max_bins: int) -> Grid:
    """At most max_bins bins over [start, end], never finer than the finest process bin."""
    span = max(1, end_mono - start_mono)
    width = max(1, math.ceil(span / max(1, max_bins)))
    if finest_bin_ns:
        width = max(width, finest_bin_ns)
    return Grid(start_mono, width, max(1, math.ceil(span / width)))


def rebin(values: np.ndarray, t0: int, width: int, grid: Grid) -> np.ndarray:
    """values (nbins, ...) on bins [t0 + i*width, t0 + (i+1)*width) -> the grid's bins, by overlap.

    Amounts outside the grid are clamped into its first or last bin, so totals are kept.
    """
    values = np.asarray(values, dtype=np.float64)
    n = values.shape[0]
    src_edges = t0 + width * np.arange(n + 1, dtype=np.float64)
    g = np.clip(grid.edges, src_edges[0], src_edges[-1])
    g[0], g[-1] = src_edges[0], src_edges[-1]
    cum = np.concatenate([np.zeros((1,) + values.shape[1:]), np.cumsum(values, axis=0)])
    return np.diff(interp_columns(g, src_edges, cum), axis=0)


def interp_columns(x: np.ndarray, xp: np.ndarray, fp: np.ndarray) -> np.ndarray:
    """np.interp(x, xp, fp[:, j]) for every column j of fp at once (fp may be 1-D), bit for bit: numpy's own
    formula, slope * (x - xp[j]) + fp[j] with xp[j] <= x < xp[j + 1], and fp[j] itself where x is xp[j].  x lies
    within [xp[0], xp[-1]] (rebin clips it there), so numpy's left and right values never apply."""
    last = len(xp) - 1
    j = np.searchsorted(xp, x, side="right") - 1  # the last j with xp[j] <= x, as numpy's binary search finds it
    at = np.minimum(j, last - 1) if last else j
    lo, hi = fp[at], fp[np.minimum(at + 1, last)]
    span = xp[np.minimum(at + 1, last)] - xp[at]
    off = x - xp[at]
    if fp.ndim > 1:
        span, off = span[:, None], off[:, None]
    with np.errstate(invalid="ignore", divide="ignore"):
        out = (hi - lo) / span * off + lo
    exact = (j == last) | (xp[j] == x)  # x on a point: numpy takes fp there, not the line through it
    if fp.ndim > 1:
        exact = exact[:, None]
    return np.where(exact, fp[j], out)


def mount_shares(nbins: int, t0: int, width: int, first: np.ndarray, last: np.ndarray, mount_idx: np.ndarray,
                 amount: np.ndarray, nmounts: int) -> np.ndarray:
    """(nmounts, nbins) share of each bin's activity per mount; bins no file covers have no share.

    Each file's amount is spread evenly over the bins from its first to its last use.
    """
    est: np.ndarray = np.zeros((nmounts, nbins + 1))
    if len(first):
        b0 = np.clip((first - t0) // width, 0, nbins - 1).astype(np.int64)
        b1 = np.clip((np.maximum(last, first) - t0) // width, 0, nbins - 1).astype(np.int64)
        rate = amount / (b1 - b0 + 1)
        # each file adds its rate from its first bin and takes it off after its last, the additions first, in
        # record order: as np.add.at did, one call at a time, to the same bits
        at = np.concatenate([mount_idx * (nbins + 1) + b0, mount_idx * (nbins + 1) + b1 + 1])
        est = np.bincount(at, np.concatenate([rate, -rate]), minlength=nmounts * (nbins + 1)).reshape(est.shape)
    est = np.cumsum(est[:, :nbins], axis=1)
    est[est < 0] = 0.0
    tot = est.sum(axis=0)
    return np.divide(est, tot, out=np.zeros_like(est), where=tot > 0)


def build_timeline(procs: list[Any], proc_files: list[dict[str, np.ndarray]], mounts: list[str], t0: int,
                   t_end: int, max_bins: int) -> Timeline:
    """procs: Process objects (their .timeline); proc_files[i]: arrays first, last, mount, ops, bytes of
    process i's file records (mount is an index into `mounts`)."""
    tls = [p.timeline for p in procs]
    widths = [1 << int(t["shift"]) for t in tls if t]
    grid = common_grid(t0, t_end, min(widths) if widths else None, max_bins)
    n = grid.nbins
    counts = np.zeros((n, NCAT))
    rbytes = np.zeros(n)
    wbytes = np.zeros(n)
    m_ops = np.zeros((n, len(mounts)))
    m_bytes = np.zeros((n, len(mounts)))
    io_cats = [i for i, c in enumerate(F.CATEGORIES) if c != "STREAM"]
    nm = len(mounts)
    for tl, pf in zip(tls, proc_files):
        if not tl:
            continue
        nb = int(tl["nbins"]) or F.TIMELINE_BINS
        w = 1 << int(tl["shift"])
        t = int(tl["t0_mono"])
        c = np.asarray(tl["count"], dtype=np.float64)[: nb * NCAT].reshape(nb, NCAT)
        r = np.asarray(tl["bytes_read"], dtype=np.float64)[:nb]
        wr = np.asarray(tl["bytes_written"], dtype=np.float64)[:nb]
        if not (c.any() or r.any() or wr.any()):
            continue
        cols = [c, r[:, None], wr[:, None]]
        if nm and len(pf["first"]):
            ops_here = c[:, io_cats].sum(axis=1)
            by_ops = mount_shares(nb, t, w, pf["first"], pf["last"], pf["mount"], pf["ops"], nm)
            by_bytes = mount_shares(nb, t, w, pf["first"], pf["last"], pf["mount"], pf["bytes"], nm)
            cols += [(by_ops * ops_here).T, (by_bytes * (r + wr)).T]
        if len(c) == len(r) == len(wr):  # one rebin of the columns side by side: each spread as it would be alone
            both = rebin(np.column_stack(cols), t, w, grid)
        else:  # a layout with fewer bins of some (an older or damaged capture)
            both = np.column_stack([rebin(col, t, w, grid) for col in cols[:3]]
                                   + ([rebin(np.column_stack(cols[3:]), t, w, grid)] if len(cols) > 3 else []))
        counts += both[:, :NCAT]
        rbytes += both[:, NCAT]
        wbytes += both[:, NCAT + 1]
        if len(cols) > 3:
            m_ops += both[:, NCAT + 2 : NCAT + 2 + nm]
            m_bytes += both[:, NCAT + 2 + nm :]
    sec = grid.bin_ns * 1e-9
    keep = [j for j in range(len(mounts)) if m_ops[:, j].any() or m_bytes[:, j].any()]
    return Timeline(
        bin_s=sec,
        nbins=n,
        t_s=[round(i * sec, 9) for i in range(n)],
        iops={cat.lower(): (counts[:, i] / sec).tolist() for i, cat in enumerate(F.CATEGORIES)},
        read_bps=(rbytes / sec).tolist(),
        write_bps=(wbytes / sec).tolist(),
        per_mount_iops={mounts[j]: (m_ops[:, j] / sec).tolist() for j in keep},
        per_mount_bps={mounts[j]: (m_bytes[:, j] / sec).tolist() for j in keep},
    )


_FIELDS = frozenset(f.name for f in fields(Timeline))


class LaterTimeline(Timeline):
    """A Timeline worked out when one of its fields is first read.  The terminal report never shows the timeline,
    and at 1,000 processes it is a tenth of the time of building the report; the exports read it as any Timeline
    (every field, asdict), and the first read works it out."""

    def __init__(self, make: Callable[[], Timeline]) -> None:  # the fields come from make(), when first read
        self.__dict__["_make"] = make

    def __getattribute__(self, name: str) -> Any:
        if name in _FIELDS:
            d = object.__getattribute__(self, "__dict__")
            if "_make" in d:
                d.update(vars(d.pop("_make")()))
        return object.__getattribute__(self, name)


def report_timeline(procs: list[Any], recs: Records, path_of_record: np.ndarray, placement: Placement,
                    mounts: list[MountRow], span: tuple[int, int], max_bins: int) -> Timeline:
    """The report's timeline: each image's file records, as use windows on the mounts of the report.  The records
    each image's timeline needs are picked out now (their arrays, not the whole table, are kept); the timeline is
    worked out when first read (LaterTimeline)."""
    names = [m.mount for m in mounts if m.mount != NO_FILE]
    midx = {m: j for j, m in enumerate(names)}
    if len(placement.of_path):
        path_mount = np.asarray([midx.get(n, -1) for n in placement.names], dtype=np.int64)[placement.of_path]
    else:
        path_mount = np.zeros(0, dtype=np.int64)
    rec_mount = path_mount[path_of_record] if len(recs) else np.zeros(0, dtype=np.int64)
    ex, arrays = recs.extra, recs.arrays
    rec_ops = arrays["reads"] + arrays["writes"] + ex["opens"] + ex["stats"] + ex["metas"] + ex["syncs"]
    rec_bytes = arrays["bytes_read"] + arrays["bytes_written"]
    keep = rec_mount >= 0  # each image's kept records, in order: one compress, then a slice per image
    first, last, mount = ex["first_mono"][keep], ex["last_mono"][keep], rec_mount[keep]
    ops, nbytes = rec_ops[keep], rec_bytes[keep]
    at = np.concatenate([[0], np.cumsum(keep)])[np.asarray(recs.offsets, dtype=np.int64)].tolist()
    proc_files = [{"first": first[a:b], "last": last[a:b], "mount": mount[a:b], "ops": ops[a:b], "bytes": nbytes[a:b]}
                  for a, b in zip(at, at[1:])]
    return LaterTimeline(lambda: build_timeline(procs, proc_files, names, span[0], span[1], max_bins))
