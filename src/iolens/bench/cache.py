"""Cache honesty: what state each measurement was in, and warnings when a number cannot be the device's.

States (recorded with every result):
- reads:  `cold-direct` (O_DIRECT really used), `cold-evicted` (flushed and dropped from the page cache, mincore
  found under 5% still resident, and the block device's own counters show it delivered at least half the bytes
  read), `warm` (eviction skipped on purpose, or it had no effect by either check);
- writes: `cold-direct`, `synced` (fsync/fdatasync inside the timing and the device took the data: its counters
  show at least half the bytes written) or `buffered` (only the page cache took it: no sync, or a sync after
  overwrites the cache absorbed, as random writes to a small file, when the device wrote under half the bytes);
- metadata: `stat` is `cold-evicted` only when caches were dropped (root, --drop-caches), else `warm`;
  create/delete are `buffered` unless files were fsync'd;
- the null target: `none`.
"""

from __future__ import annotations

from typing import Any

from iolens.bench.metrics import device_of, read_ops, reading_ops
from iolens.workspace.target import Target, compression_of
from iolens.units import human_bytes

STATES = ("cold-direct", "cold-evicted", "warm", "synced", "buffered", "none")
RESIDENT_LIMIT = 0.05
# A cold read must come from the device: when the device delivered less than this share of the bytes read, the
# rest came from a cache, whatever mincore said.  Judged only on phases that read at least DEVICE_MIN_BYTES, on
# content the filesystem cannot shrink.
DEVICE_SHARE_MIN = 0.5
DEVICE_MIN_BYTES = 16 << 20
# A read faster than the target's plausible limit is not called cached when the device delivered at least this
# share of its bytes (a throttle's first slice, or a device's own burst): the counters saw the device do it.
DEVICE_SHARE_ALL = 0.95


def _read_groups(ph: dict[str, Any]) -> list[tuple[int, dict[str, Any]]]:
    """(index, group) of the groups that read from the first group's directory."""
    d = ph["groups"][0].get("dir") or 0
    reading = reading_ops()
    return [(i, x) for i, x in enumerate(ph["groups"]) if (x.get("dir") or 0) == d and x["op"] in reading]


def read_content(ph: dict[str, Any], job: dict[str, Any] | None = None) -> set[str | None]:
    """What the files a phase reads contain: each read group's content, from the engine's result when it names
    one (a prepared file), else from the phase as sent (`job`), where the suite records what wrote the files it
    reads.  None stands for unknown."""
    sent = (job or {}).get("groups") or []
    out: set[str | None] = set()
    for i, g in _read_groups(ph):
        c = g.get("content")
        if c is None and i < len(sent):
            c = sent[i].get("content")
        out.add(c)
    return out


def device_shortfall(ph: dict[str, Any], compressing: bool = False,
                     job: dict[str, Any] | None = None) -> tuple[float, float] | None:
    """(bytes read, bytes the device delivered) when a read phase's device delivered too little, else None.

    Reads of compressible content on a compressing filesystem (btrfs compress=, ZFS) legitimately take fewer device
    bytes than logical ones, so they are not judged unless the content is random (or unknown)."""
    g = ph["groups"][0]
    if g.get("op") not in reading_ops():
        return None
    dev = device_of(ph)
    if not dev:
        return None
    contents = read_content(ph, job)
    if compressing and None not in contents and "random" not in contents:
        return None
    read = sum(x["bytes"] for _i, x in _read_groups(ph))
    if read < DEVICE_MIN_BYTES or dev["read_bytes"] >= DEVICE_SHARE_MIN * read:
        return None
    return float(read), float(dev["read_bytes"])


def device_delivered_all(ph: dict[str, Any]) -> bool:
    """Whether the block device's counters show it read (nearly) every byte the phase read."""
    dev = device_of(ph)
    if not dev or dev.get("read_bytes") is None:
        return False
    read = sum(x["bytes"] for _i, x in _read_groups(ph))
    return read > 0 and dev["read_bytes"] >= DEVICE_SHARE_ALL * read


def write_shortfall(ph: dict[str, Any], compressing: bool = False) -> tuple[float, float] | None:
    """(bytes written, bytes the device wrote) when a synced write phase's device wrote too little: the writes
    overwrote pages in the cache and only the last copy reached the device, so their rate is the page cache's."""
    g = ph["groups"][0]
    if g.get("op") not in ("write", "randwrite", "randrw") or g.get("sync") in (None, "none") or compressing:
        return None
    dev = device_of(ph)
    if not dev or dev.get("write_bytes") is None:
        return None
    written = sum(x["bytes"] for x in ph["groups"] if x["op"] in ("write", "randwrite") and
                  (x.get("dir") or 0) == (g.get("dir") or 0))
    if written < DEVICE_MIN_BYTES or dev["write_bytes"] >= DEVICE_SHARE_MIN * written:
        return None
    return float(written), float(dev["write_bytes"])


def compressing(t: Target) -> bool:
    return t.fstype == "zfs" or bool(t.compression or compression_of(t.mount_options))


def state_of(ph: dict[str, Any], t: Target | None = None, job: dict[str, Any] | None = None) -> str:
    """The cache state of a phase, judged by its first group (the one its latency comes from).

    job is the phase as it was sent to the engine (what the files read contain comes from there)."""
    g = ph["groups"][0]
    op = g["op"]
    cache = ph.get("cache") or {}
    if g.get("engine") == "null":
        return "none"  # the null target: no storage, no cache
    if g.get("direct_used"):
        return "cold-direct"
    if op in reading_ops():
        if not cache.get("evicted"):
            return "warm"
        frac = cache.get("resident_fraction")
        if frac is not None and frac > RESIDENT_LIMIT:
            return "warm"
        if device_shortfall(ph, compressing(t) if t else False, job):
            return "warm"
        return "cold-evicted"
    if op == "stat":
        return "cold-evicted" if cache.get("dropped") else "warm"
    if op in ("write", "randwrite"):
        synced = g.get("sync") not in (None, "none") and not write_shortfall(ph, compressing(t) if t else False)
        return "synced" if synced else "buffered"
    return "buffered"


def notes_for(ph: dict[str, Any], state: str, t: Target, job: dict[str, Any] | None = None) -> list[str]:
    """Why a state is what it is, when that is not obvious."""
    notes = []
    g = ph["groups"][0]
    cache = ph.get("cache") or {}
    if g.get("direct_requested") and g.get("direct_refused"):
        notes.append(f"{t.fstype or 'this filesystem'} refused O_DIRECT; buffered I/O was used")
    if cache.get("drop_requested") and not cache.get("dropped"):
        notes.append(f"could not drop caches ({cache.get('drop_error') or 'not root'}); evicted per file instead")
    if cache.get("evicted") and state == "warm" and g["op"] in reading_ops():
        frac = cache.get("resident_fraction") or 0.0
        short = device_shortfall(ph, compressing(t), job)
        if t.device_class == "memory":
            notes.append(f"{t.fstype} pages are the storage: eviction cannot apply, reads are memory speed")
        elif frac > RESIDENT_LIMIT:
            notes.append(f"eviction did not take: {100 * frac:.0f}% of the files stayed in the page cache")
        elif short:
            notes.append(f"the device ({t.device or 'its block device'}) delivered only {human_bytes(short[1])} of "
                         f"the {human_bytes(short[0])} read (kernel block counters): the rest came from a cache")
    short_w = write_shortfall(ph, compressing(t))
    if short_w and state == "buffered":
        notes.append(f"not synced: the device ({t.device or 'its block device'}) wrote only {human_bytes(short_w[1])} "
                     f"of the {human_bytes(short_w[0])} written (kernel block counters); the rest were overwrites "
                     "the page cache absorbed before the sync, so this rate is the page cache's")
    if cache.get("evicted") and cache.get("resident_fraction") is None and g["op"] in read_ops():
        notes.append("residency after eviction could not be checked (mmap refused)")
    return notes


def _over_limit(test: str, t: Target, ph: dict[str, Any], state: str, metrics: dict[str, Any]) -> str | None:
    """"TEST on TARGET: N is faster than LIMIT allows (L)" when a read beat the target's plausible limit."""
    op = ph["groups"][0]["op"]
    if op not in read_ops():
        return None
    if state == "warm" and not (ph.get("cache") or {}).get("evict_requested"):
        return None  # --warm: the cache was what the user asked to measure
    rate = metrics.get("read_Bps") or metrics.get("throughput_Bps")
    iops = metrics.get("iops")
    moved = metrics.get("bytes") or 0.0
    ops = metrics.get("ops") or 0.0
    limit, limit_iops = t.plausible_read_Bps, t.plausible_read_iops
    # a throttle or a device's own cache lets a short burst through (blk-throttle grants a 100 ms slice):
    # judge only phases that moved more than 0.2 s worth at the limit
    if limit and rate and rate > 1.1 * limit and moved > 0.2 * limit:
        return (f"{test} on {t.spec}: {human_bytes(rate)}/s is faster than {t.limit_source} allows "
                f"({human_bytes(limit)}/s)")
    if limit_iops and iops and op == "randread" and iops > 1.5 * limit_iops and ops > 0.2 * limit_iops:
        return f"{test} on {t.spec}: {iops:,.0f} IOPS is more than {t.limit_source} allows ({limit_iops:,.0f})"
    return None


def plausibility(test: str, t: Target, ph: dict[str, Any], state: str, metrics: dict[str, Any],
                 job: dict[str, Any] | None = None) -> list[str]:
    """Warnings for numbers no device of this class could deliver: the data came from a cache.

    A number over the limit is not blamed on a cache when the device's own counters show it delivered the bytes
    read (a burst: a throttle's first slice, a device's own cache); `burst_notes` says so instead."""
    warnings: list[str] = []
    op = ph["groups"][0]["op"]
    if op not in read_ops():
        return warnings
    fix = "use --direct, or --drop-caches as root"
    over = _over_limit(test, t, ph, state, metrics)
    if over and not device_delivered_all(ph):
        warnings.append(f"{over}: it was probably served from a cache, not the device; {fix}")
    elif state == "warm" and t.device_class not in ("memory", "none", "ram"):
        cache = ph.get("cache") or {}
        short = device_shortfall(ph, compressing(t), job)
        if short and cache.get("evict_requested"):
            warnings.append(f"{test} on {t.spec} was read warm: the device delivered only "
                            f"{100 * short[1] / short[0]:.0f}% of the bytes read, the page cache the rest; {fix}")
        elif cache.get("evict_requested"):
            warnings.append(f"{test} on {t.spec} was read warm (eviction did not take): the page cache was "
                            f"measured, not the device; {fix}")
    return warnings


def burst_notes(test: str, t: Target, ph: dict[str, Any], state: str, metrics: dict[str, Any]) -> list[str]:
    """A note for a read over the plausible limit that the device's counters show the device delivered."""
    over = _over_limit(test, t, ph, state, metrics)
    if not over or not device_delivered_all(ph):
        return []
    return [f"{over}, but the device ({t.device or 'its block device'}) delivered the bytes read (kernel block "
            "counters): a burst the limit let through, not a cache"]
