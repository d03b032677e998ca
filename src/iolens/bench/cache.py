"""Cache honesty: what state each measurement was in, and warnings when a number cannot be the device's.

States (recorded with every result):
- reads:  `cold-direct` (O_DIRECT really used), `cold-evicted` (flushed and dropped from the page cache, mincore
  found under 5% still resident, and the block device's own counters show it delivered at least half the bytes
  read), `warm` (eviction skipped on purpose, or it had no effect by either check);
- writes: `cold-direct`, `synced` (fsync/fdatasync inside the timing: the device took the data) or `buffered`
  (only the page cache took it);
- metadata: `stat` is `cold-evicted` only when caches were dropped (root, --drop-caches), else `warm`;
  create/delete are `buffered` unless files were fsync'd;
- the null target: `none`.
"""

from __future__ import annotations

from typing import Any

from iolens.bench.metrics import READ_OPS, device_of
from iolens.bench.targets import Target
from iolens.units import human_bytes

STATES = ("cold-direct", "cold-evicted", "warm", "synced", "buffered", "none")
RESIDENT_LIMIT = 0.05
# A cold read must come from the device: when the device delivered less than this share of the bytes read, the
# rest came from a cache, whatever mincore said.  Judged only on phases that read at least DEVICE_MIN_BYTES, on
# content the filesystem cannot shrink.
DEVICE_SHARE_MIN = 0.5
DEVICE_MIN_BYTES = 16 << 20


def device_shortfall(ph: dict[str, Any], compressing: bool = False) -> tuple[float, float] | None:
    """(bytes read, bytes the device delivered) when a read phase's device delivered too little, else None.

    Reads of compressible content on a compressing filesystem (btrfs compress=, ZFS) legitimately take fewer device
    bytes than logical ones, so they are not judged unless the content is random."""
    g = ph["groups"][0]
    if g.get("op") not in READ_OPS | {"randrw"}:
        return None
    dev = device_of(ph)
    if not dev:
        return None
    if compressing and g.get("content") not in (None, "random"):
        return None
    d = g.get("dir") or 0
    read = sum(x["bytes"] for x in ph["groups"] if (x.get("dir") or 0) == d and x["op"] in READ_OPS | {"randrw"})
    if read < DEVICE_MIN_BYTES or dev["read_bytes"] >= DEVICE_SHARE_MIN * read:
        return None
    return float(read), float(dev["read_bytes"])


def compressing(t: Target) -> bool:
    return t.fstype == "zfs" or "compress" in (t.mount_options or "")


def state_of(ph: dict[str, Any], t: Target | None = None) -> str:
    """The cache state of a phase, judged by its first group (the one its latency comes from)."""
    g = ph["groups"][0]
    op = g["op"]
    cache = ph.get("cache") or {}
    if g.get("engine") == "null":
        return "none"  # the null target: no storage, no cache
    if g.get("direct_used"):
        return "cold-direct"
    if op in READ_OPS or op == "randrw":
        if not cache.get("evicted"):
            return "warm"
        frac = cache.get("resident_fraction")
        if frac is not None and frac > RESIDENT_LIMIT:
            return "warm"
        if device_shortfall(ph, compressing(t) if t else False):
            return "warm"
        return "cold-evicted"
    if op == "stat":
        return "cold-evicted" if cache.get("dropped") else "warm"
    if op in ("write", "randwrite"):
        return "synced" if g.get("sync") not in (None, "none") else "buffered"
    return "buffered"


def notes_for(ph: dict[str, Any], state: str, t: Target) -> list[str]:
    """Why a state is what it is, when that is not obvious."""
    notes = []
    g = ph["groups"][0]
    cache = ph.get("cache") or {}
    if g.get("direct_requested") and g.get("direct_refused"):
        notes.append(f"{t.fstype or 'this filesystem'} refused O_DIRECT; buffered I/O was used")
    if cache.get("drop_requested") and not cache.get("dropped"):
        notes.append(f"could not drop caches ({cache.get('drop_error') or 'not root'}); evicted per file instead")
    if cache.get("evicted") and state == "warm" and g["op"] in READ_OPS | {"randrw"}:
        frac = cache.get("resident_fraction") or 0.0
        short = device_shortfall(ph, compressing(t))
        if t.device_class == "memory":
            notes.append(f"{t.fstype} pages are the storage: eviction cannot apply, reads are memory speed")
        elif frac > RESIDENT_LIMIT:
            notes.append(f"eviction did not take: {100 * frac:.0f}% of the files stayed in the page cache")
        elif short:
            notes.append(f"the device ({t.device or 'its block device'}) delivered only {human_bytes(short[1])} of "
                         f"the {human_bytes(short[0])} read (kernel block counters): the rest came from a cache")
    if cache.get("evicted") and cache.get("resident_fraction") is None and g["op"] in READ_OPS:
        notes.append("residency after eviction could not be checked (mmap refused)")
    return notes


def plausibility(test: str, t: Target, ph: dict[str, Any], state: str, metrics: dict[str, Any]) -> list[str]:
    """Warnings for numbers no device of this class could deliver: the data came from a cache."""
    warnings: list[str] = []
    op = ph["groups"][0]["op"]
    if op not in READ_OPS:
        return warnings
    rate = metrics.get("read_Bps") or metrics.get("throughput_Bps")
    iops = metrics.get("iops")
    moved = metrics.get("bytes") or 0.0
    ops = metrics.get("ops") or 0.0
    limit, limit_iops = t.plausible_read_Bps, t.plausible_read_iops
    fix = "use --direct, or --drop-caches as root"
    if state == "warm" and not (ph.get("cache") or {}).get("evict_requested"):
        return warnings  # --warm: the cache was what the user asked to measure
    # a throttle or a device's own cache lets a short burst through (blk-throttle grants a 100 ms slice):
    # judge only phases that moved more than 0.2 s worth at the limit
    if limit and rate and rate > 1.1 * limit and moved > 0.2 * limit:
        warnings.append(f"{test} on {t.spec}: {human_bytes(rate)}/s is faster than {t.limit_source} allows "
                        f"({human_bytes(limit)}/s): it was probably served from a cache, not the device; {fix}")
    elif limit_iops and iops and op == "randread" and iops > 1.5 * limit_iops and ops > 0.2 * limit_iops:
        warnings.append(f"{test} on {t.spec}: {iops:,.0f} IOPS is more than {t.limit_source} allows "
                        f"({limit_iops:,.0f}): it was probably served from a cache, not the device; {fix}")
    elif state == "warm" and t.device_class not in ("memory", "none", "ram") and op in READ_OPS:
        cache = ph.get("cache") or {}
        short = device_shortfall(ph, compressing(t))
        if short and cache.get("evict_requested"):
            warnings.append(f"{test} on {t.spec} was read warm: the device delivered only "
                            f"{100 * short[1] / short[0]:.0f}% of the bytes read, the page cache the rest; {fix}")
        elif cache.get("evict_requested"):
            warnings.append(f"{test} on {t.spec} was read warm (eviction did not take): the page cache was "
                            f"measured, not the device; {fix}")
    return warnings
