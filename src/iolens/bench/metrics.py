"""The metrics of a bench result, listed once: JSON, CSV, the store and the table all use this list.

`from_phase` turns one engine phase result into these metrics (plain floats, None when not applicable).

Which ops read, write, stream or touch small files is the engine's to say (`iolens-bench --describe`, through
`engine.op_names`): `reading_ops()` and friends ask it on first use, never at import, and it answers once.
"""

from __future__ import annotations

from typing import Any

from iolens.bench import engine

# key, unit, what it is
METRICS: list[tuple[str, str, str]] = [
    ("throughput_Bps", "B/s", "bytes moved by all groups per second of wall time"),
    ("iops", "op/s", "operations per second (files per second for small-file ops)"),
    ("read_Bps", "B/s", "bytes read per second (null when nothing was read or reads and writes mix)"),
    ("write_Bps", "B/s", "bytes written per second (null when nothing was written or reads and writes mix)"),
    ("bytes", "B", "bytes moved"),
    ("read_bytes", "B", "bytes read (null when a group mixes reads and writes, as randrw does)"),
    ("write_bytes", "B", "bytes written (null when a group mixes reads and writes)"),
    ("ops", "op", "operations done"),
    ("wall_s", "s", "first thread start to last thread end, including final syncs and closes"),
    ("cpu_user_s", "s", "user CPU time of the engine during the phase"),
    ("cpu_sys_s", "s", "system CPU time of the engine during the phase"),
    ("cpu_per_op_us", "us", "user + system CPU per operation"),
    ("lat_mean_us", "us", "mean latency of the phase's first group"),
    ("lat_p50_us", "us", "median latency"),
    ("lat_p90_us", "us", "90th percentile latency"),
    ("lat_p99_us", "us", "99th percentile latency"),
    ("lat_p999_us", "us", "99.9th percentile latency"),
    ("lat_max_us", "us", "largest latency"),
    ("sync_s", "s", "time in fsync/fdatasync, summed over threads"),
    ("first_thread_done_s", "s", "when the first thread finished (IOR stonewall spread: compare with last)"),
    ("last_thread_done_s", "s", "when the last thread finished"),
    ("resident_fraction", "", "share of the read files still in the page cache after eviction (mincore)"),
    ("device_read_bytes", "B", "bytes the target's block device read during the phase (its kernel counters; "
     "whole device, so other programs' I/O counts too; null without a block device)"),
    ("device_write_bytes", "B", "bytes the target's block device wrote during the phase (as above)"),
]
METRIC_KEYS = [m[0] for m in METRICS]
UNITS = {k: u for k, u, _ in METRICS}

# The op sets under their old names (metrics.READ_OPS and so on), as the engine describes them, made on first use
_OP_SETS: dict[str, dict[str, str]] = {"READ_OPS": {"io": "read"}, "WRITE_OPS": {"io": "write"},
                                       "MIXED_OPS": {"io": "mixed"}, "SEQ_OPS": {"kind": "seq"},
                                       "RAND_OPS": {"kind": "rand"}, "SMALL_OPS": {"kind": "small"}}


def __getattr__(name: str) -> frozenset[str]:
    if name in _OP_SETS:
        return engine.op_names(**_OP_SETS[name])
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def read_ops() -> frozenset[str]:
    """Ops whose bytes are all reads."""
    return engine.op_names(io="read")


def write_ops() -> frozenset[str]:
    """Ops whose bytes are all writes."""
    return engine.op_names(io="write")


def mixed_ops() -> frozenset[str]:
    """Ops that both read and write (randrw)."""
    return engine.op_names(io="mixed")


def reading_ops() -> frozenset[str]:
    """Ops that read at all: pure reads and mixed ones."""
    return read_ops() | mixed_ops()


def primary_metric(groups: list[dict[str, Any]]) -> str:
    """The one number a test is judged by: throughput for streaming, IOPS for random and small-file ops."""
    op = groups[0]["op"]
    return "throughput_Bps" if len(groups) > 1 or op in engine.op_names(kind="seq") else "iops"


def _us(ns: float | None) -> float | None:
    return None if ns is None else ns / 1e3


def device_of(ph: dict[str, Any]) -> dict[str, Any] | None:
    """Block-layer counters of the device under the phase's first group's directory (None when unknown)."""
    devices = ph.get("devices") or []
    d = ph["groups"][0].get("dir") or 0
    return devices[d] if 0 <= d < len(devices) else None


def from_phase(ph: dict[str, Any]) -> dict[str, float | None]:
    groups = ph["groups"]
    dev = device_of(ph)
    threads = [t for g in groups for t in g["per_thread"]]
    start = min((t["start_s"] for t in threads), default=0.0)
    end = max((t["end_s"] for t in threads), default=0.0)
    wall = end - start
    total_b = sum(g["bytes"] for g in groups)
    total_o = sum(g["ops"] for g in groups)
    reads, writes = read_ops(), write_ops()
    rb = sum(g["bytes"] for g in groups if g["op"] in reads)
    wb = sum(g["bytes"] for g in groups if g["op"] in writes)
    has_r = any(g["op"] in reads for g in groups)
    has_w = any(g["op"] in writes for g in groups)
    mixed = any(g["op"] in mixed_ops() for g in groups)
    lat = groups[0]["latency_ns"]
    cpu = (ph.get("cpu_user_s") or 0.0) + (ph.get("cpu_sys_s") or 0.0)
    done = [t["end_s"] - start for t in threads]

    def rate(x: float) -> float | None:
        return x / wall if wall > 0 else None

    return {
        "throughput_Bps": rate(total_b),
        "iops": rate(total_o),
        "read_Bps": rate(rb) if has_r and not mixed else None,
        "write_Bps": rate(wb) if has_w and not mixed else None,
        "bytes": float(total_b),
        "ops": float(total_o),
        "read_bytes": None if mixed else float(rb),
        "write_bytes": None if mixed else float(wb),
        "wall_s": wall,
        "cpu_user_s": ph.get("cpu_user_s"),
        "cpu_sys_s": ph.get("cpu_sys_s"),
        "cpu_per_op_us": cpu / total_o * 1e6 if total_o else None,
        "lat_mean_us": _us(lat.get("mean")),
        "lat_p50_us": _us(lat.get("p50")),
        "lat_p90_us": _us(lat.get("p90")),
        "lat_p99_us": _us(lat.get("p99")),
        "lat_p999_us": _us(lat.get("p99.9")),
        "lat_max_us": _us(lat.get("max")),
        "sync_s": sum(g.get("sync_s") or 0.0 for g in groups),
        "first_thread_done_s": min(done) if done else None,
        "last_thread_done_s": max(done) if done else None,
        "resident_fraction": (ph.get("cache") or {}).get("resident_fraction"),
        "device_read_bytes": float(dev["read_bytes"]) if dev else None,
        "device_write_bytes": float(dev["write_bytes"]) if dev else None,
    }
