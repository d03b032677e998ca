"""Every threshold of the report in one table: the breakdown's size classes and each advice rule's trigger.

Each entry is (default, unit, meaning).  `iolens report --set NAME=VALUE` overrides one for a run and
`iolens report --thresholds` lists them.  docs/report.md explains the breakdown's choices; each rule's
entries are named after the rule (`<rule>_...`).
"""

from __future__ import annotations

from typing import Any

from iolens.errors import UsageError

KiB = 1024
MiB = 1024 * KiB

TABLE: dict[str, tuple[float, str, str]] = {
    # ---- the time breakdown ------------------------------------------------------------------------
    "tiny_bytes": (4 * KiB, "bytes", "data calls smaller than this are tiny (one page)"),
    "small_bytes": (64 * KiB, "bytes", "data calls smaller than this (and not tiny) are small"),
    "call_cost_ns": (2000, "ns", "cost model: fixed cost of one call, to share a file's time among size classes"),
    "byte_cost_ns": (0.5, "ns/byte", "cost model: cost per byte moved (about a page-cache copy)"),
    "sequential_fraction": (0.9, "fraction", "a file whose calls go forwards at least this often is sequential"),
    "random_fraction": (0.5, "fraction", "a file whose calls go backwards at least this often is random"),
    "timeline_bins": (200, "bins", "most bins on the report's common time grid"),
    # ---- advice: a rule fires only when the time at stake is at least this, and this share of the run
    "min_seconds": (1.0, "s", "every rule: least time at stake worth reporting"),
    "min_share": (0.02, "fraction", "every rule: least share of the run's process time worth reporting"),
    "short_share": (0.2, "fraction", "every rule, on a short step: less than min_seconds at stake is still reported "
                    "when it is at least this share of process time"),
    "short_min_seconds": (0.05, "s", "...and at least this much (a step of a few milliseconds gets no advice)"),
    "scale_to": (1.0, "x", "the full input is this many times the profiled one: advice states the time at stake "
                 "at that size and min_seconds applies to it (`report --scale-to N`)"),
    # small/tiny requests
    "small_requests_share": (0.05, "fraction", "tiny+small data calls take at least this share of process time"),
    # metadata storm
    "metadata_share": (0.05, "fraction", "metadata calls take at least this share of process time"),
    "metadata_ops": (10000, "calls", "...and there are at least this many metadata calls"),
    "many_small_files": (1000, "files", "this many files smaller than small_bytes also count as a storm"),
    # fsync storm
    "sync_ops": (100, "calls", "at least this many sync calls"),
    "sync_share": (0.02, "fraction", "...taking at least this share of process time"),
    # temp files
    "temp_bytes": (64 * MiB, "bytes", "temp files on the inputs' or outputs' device that wrote at least "
                   "this much"),
    "temp_share": (0.05, "fraction", "temp files' I/O (writes, reads, syncs, create and delete) on storage other than "
                   "RAM measured slower than slow_bps takes at least this share of process time"),
    # outputs on slow storage
    "output_share": (0.1, "fraction", "writing outputs to network/FUSE storage, or to storage measured slower than "
                     "slow_bps, takes at least this share of process time"),
    "slow_bps": (100 * MiB, "bytes/s", "temp files (bytes written and read back) or outputs (written) moving slower "
                 "than this per second of their I/O (syncs, creating and deleting included) are on slow storage"),
    # compression and threads
    "compress_cpu_share": (0.5, "fraction", "a compressor computing at least this share of its time: its level and "
                           "codec matter"),
    "threads_share": (0.5, "fraction", "a tool with a thread option, run on at most half the CPUs, computing at "
                      "least this share of its time"),
    # read + write the same device
    "same_device_bytes": (256 * MiB, "bytes", "both read and written on one device, at least this much each"),
    "same_device_overlap": (0.3, "fraction", "...with reads and writes overlapping for this share of the run"),
    # re-read
    "reread_bytes": (64 * MiB, "bytes", "a file read again for at least this many extra bytes"),
    "reread_factor": (1.5, "x", "...and read at least this many times its size"),
    # random access on network/FUSE
    "remote_random_ops": (1000, "calls", "non-sequential or tiny/small calls on a network or FUSE mount"),
    # object-store-hostile writes
    "object_rename_bytes": (8 * MiB, "bytes", "renaming a file at least this large on an object-store mount"),
    "object_random_writes": (1, "calls", "any non-sequential writes on an object-store or FUSE mount"),
    # uncompressed text re-read
    "text_bytes": (256 * MiB, "bytes", "uncompressed text output at least this large that is read again"),
    # coverage
    "coverage_min": (0.9, "fraction", "attributed share of the kernel's bytes below which part of the I/O is unseen"),
    "coverage_bytes": (16 * MiB, "bytes", "...and at least this many bytes are unseen"),
    # storage is not the bottleneck
    "io_bound_share": (0.10, "fraction", "storage I/O below this share of process time: storage is not the bottleneck"),
}


def defaults() -> dict[str, float]:
    return {k: v[0] for k, v in TABLE.items()}


def with_overrides(pairs: list[str] | dict[str, Any] | None = None) -> dict[str, float]:
    """The table's defaults with NAME=VALUE overrides applied; unknown names are a usage error."""
    out = defaults()
    items = pairs.items() if isinstance(pairs, dict) else (_split(p) for p in (pairs or []))
    for name, value in items:
        if name not in TABLE:
            known = ", ".join(sorted(TABLE))
            raise UsageError(f"unknown threshold {name!r}; known: {known}")
        try:
            out[name] = float(value)
        except (TypeError, ValueError):
            raise UsageError(f"threshold {name} needs a number, not {value!r}") from None
    if out["scale_to"] <= 0:
        raise UsageError("scale_to (--scale-to) is how many times larger the full input is: a number above 0")
    if out["tiny_bytes"] > out["small_bytes"]:
        raise UsageError("tiny_bytes must not be larger than small_bytes")
    return out


def _split(pair: str) -> tuple[str, str]:
    if "=" not in pair:
        raise UsageError(f"--set needs NAME=VALUE, not {pair!r}")
    name, value = pair.split("=", 1)
    return name.strip(), value.strip()
