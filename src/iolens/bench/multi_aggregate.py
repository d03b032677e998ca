"""The aggregate of a multi-client phase from every rank's engine result (pure; see bench/mpi.py).

As elbencho reports them:

- last done: all ranks' bytes (ops) over the time from the first start to the last rank's end;
- first done: the bytes (ops) all ranks had finished when the first rank ended, over that time; the other ranks'
  share at that moment is interpolated within the engine's one-second series.
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass, field
from typing import Any


def _sum_groups(ph: dict[str, Any], key: str) -> float:
    return float(sum(g.get(key) or 0 for g in ph.get("groups", [])))


def _span(ph: dict[str, Any]) -> tuple[float, float]:
    """(begin, end) of a rank's phase in seconds after start_at: its first thread's start, last thread's end."""
    lag = float(ph.get("start_lag_s") or 0.0)
    threads = [t for g in ph.get("groups", []) for t in g.get("per_thread") or []]
    if not threads:
        return lag, lag + float(ph.get("wall_s") or 0.0)
    return lag + min(t["start_s"] for t in threads), lag + max(t["end_s"] for t in threads)


def _done_by(ph: dict[str, Any], key: str, t: float) -> float:
    """Bytes (key=series_bytes) or ops (series_ops) a rank had finished t seconds after start_at, interpolated
    linearly within the engine's one-second buckets; all of them once the rank has ended."""
    begin, end = _span(ph)
    total = _sum_groups(ph, "bytes" if key == "series_bytes" else "ops")
    if t >= end:
        return total
    lag = float(ph.get("start_lag_s") or 0.0)
    rel, b_rel, e_rel = t - lag, begin - lag, end - lag
    done = 0.0
    for g in ph.get("groups", []):
        for i, v in enumerate(g.get(key) or []):
            lo, hi = max(float(i), b_rel), min(i + 1.0, e_rel)  # the part of second i the rank was running
            if rel >= hi:
                done += v
            elif rel > lo:
                done += v * (rel - lo) / (hi - lo)
    return min(done, total)


@dataclass
class Client:
    rank: int
    host: str
    target: str
    bytes: float
    ops: float
    begin_s: float
    done_s: float
    throughput_Bps: float | None
    iops: float | None
    files_bytes: int | None = None   # what the rank's files hold after a write phase (st_size), else None
    reads_rank: int | None = None    # whose data a neighbour read read (IOR -C: rank (r + 1) % N)
    stonewalled: bool = False        # it ran until the stonewall (and may have finished less than its work)


@dataclass
class Aggregate:
    test: str
    phase: str
    ops: list[str]
    clients: list[Client]
    bytes: float
    ops_done: float
    first_done_s: float
    last_done_s: float
    first_done_bytes: float
    first_done_ops: float
    first_done_Bps: float | None
    last_done_Bps: float | None
    first_done_iops: float | None
    last_done_iops: float | None
    stonewall_s: float | None
    spread: dict[str, Any] = field(default_factory=dict)
    shared_file_bytes: int | None = None     # a shared file's st_size after its write phase, else None
    shared_file_expected: int | None = None  # what it must be, from what each writer reported
    entries_left: int | None = None          # files and directories left in a shared directory after deleting


def _rate(x: float, s: float) -> float | None:
    return x / s if s > 0 else None


def aggregate(test: str, results: list[dict[str, Any]], hosts: list[str], targets: list[str],
              files_bytes: list[int | None] | None = None) -> Aggregate:
    """One phase's figures from every rank's engine result for it (rank order)."""
    spans = [_span(ph) for ph in results]
    t0 = min(b for b, _e in spans)
    first = min(e for _b, e in spans)
    last = max(e for _b, e in spans)
    sw = results[0].get("stonewall_s")
    clients = []
    for r, ph in enumerate(results):
        b, o = _sum_groups(ph, "bytes"), _sum_groups(ph, "ops")
        begin, end = spans[r]
        clients.append(Client(r, hosts[r], targets[r], b, o, begin - t0, end - t0, _rate(b, end - begin),
                              _rate(o, end - begin), (files_bytes or [None] * len(results))[r],
                              stonewalled=sw is not None and end >= 0.999 * float(sw)))
    fb = sum(_done_by(ph, "series_bytes", first) for ph in results)
    fo = sum(_done_by(ph, "series_ops", first) for ph in results)
    total_b = sum(c.bytes for c in clients)
    total_o = sum(c.ops for c in clients)
    primary = [c.throughput_Bps if total_b else c.iops for c in clients]
    vals = [v for v in primary if v is not None]
    mean = statistics.fmean(vals) if vals else None
    spread = {"metric": "throughput_Bps" if total_b else "iops", "mean": mean, "min": min(vals) if vals else None,
              "max": max(vals) if vals else None,
              "cv": (statistics.pstdev(vals) / mean) if vals and mean else None}
    return Aggregate(test, results[0]["name"], sorted({g["op"] for g in results[0]["groups"]}), clients, total_b,
                     total_o, first - t0, last - t0, fb, fo, _rate(fb, first - t0), _rate(total_b, last - t0),
                     _rate(fo, first - t0), _rate(total_o, last - t0), sw, spread)


def shared_file_size(layout: str, writer_bytes: list[int], size: int, bs: int) -> int:
    """The size one shared file must have after writer w (of len(writer_bytes)) wrote writer_bytes[w] bytes.

    shared (IOR's segmented layout): writer w's bytes start at w * size.  strided: writer w's k-th block is block
    k * W + w of the file (W writers), so its last byte ends block (k_last * W + w)."""
    n, end = len(writer_bytes), 0
    for w, b in enumerate(writer_bytes):
        if b <= 0:
            continue
        if layout == "shared":
            end = max(end, w * size + b)
        else:
            last = (b - 1) // bs  # index of its last (maybe partial) block
            end = max(end, (last * n + w) * bs + (b - last * bs))
    return end
