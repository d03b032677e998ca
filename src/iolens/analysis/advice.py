"""Advice: one small function per rule, each returning an Advice (with its evidence) or None.

Every rule reads the finished report model (analysis/model.py: Report) and the thresholds table
(analysis/thresholds.py, the entries named after the rule); it never reads the capture.
`time_at_stake_s` is an upper bound on what fixing the problem could save: the time the run spent in
the I/O the rule is about.  Rules are listed in RULES; docs/report.md
has the same list in prose.
"""

from __future__ import annotations

import os
from collections import Counter
from typing import Callable

import numpy as np

from iolens.analysis.advice_coverage import low_coverage, storage_not_bottleneck
from iolens.analysis.advice_kit import (SMALL, _class_sum, _device, _local_used, _make, _maybe_at_least, _other_storage,
                                       _own, _real_column, _real_files, _real_rows, _worth, _worth_hits)
from iolens.analysis.advice_placement import output_placement, temp_placement
from iolens.analysis.advice_tools import compression, threads
from iolens.analysis.classify import TEXT_FIX, is_remote
from iolens.analysis.model import META_OPS, SYNC_OPS, Advice, Report
from iolens.units import human_bytes, human_seconds

__all__ = ["META_OPS", "RULES", "SYNC_OPS", "Advice", "advise"]

# ---- the rules ---------------------------------------------------------------------------------------


def small_requests(r: Report, th: dict[str, float]) -> Advice | None:
    """Many tiny or small data calls: buffer, use a bigger tool buffer, or compressed formats."""
    t = sum(r.breakdown[c] for c in SMALL)
    if not (_worth(r, th, t) and t >= th["small_requests_share"] * _own(r)):
        return None
    files = sorted(_real_files(r), key=lambda f: -sum(f.breakdown[c] for c in SMALL))[:5]
    calls = sum(f.reads + f.writes for f in files)
    ev = [f"{human_seconds(t)} in data calls under {human_bytes(th['small_bytes'])} "
          f"({100 * t / _own(r):.0f}% of process time)"]
    for f in files:
        ft = sum(f.breakdown[c] for c in SMALL)
        if ft <= 0:
            continue
        ev.append(f"{f.path}: {f.reads + f.writes:,} calls, mostly {f.dominant_size}, {human_seconds(ft)} "
                  f"({', '.join(f.tools)}) on {f.storage} {f.mount}")
    tools = sorted({t for f in files for t in f.tools})
    remote = any(is_remote(f.storage) for f in files)
    fix = ("Make fewer, larger requests: give the tool a bigger buffer or block size (Python "
           "open(..., buffering=1 << 20), `dd bs=4M`, a tool's --buffer-size), write compressed formats that "
           "write in large blocks (BAM/CRAM, bgzip with -@ threads), or pipe between steps instead of "
           "writing small records to a file")
    if remote:
        fix += "; on network or FUSE storage, work on a local copy, where each small call is not a round trip"
    return _make(r, "small_requests", f"{calls:,} tiny or small I/O calls cost {human_seconds(t)}", t, ev, fix,
                 {"seconds": t, "files": [f.path for f in files], "tools": tools})


def metadata_storm(r: Report, th: dict[str, float]) -> Advice | None:
    """A storm of open/stat/readdir calls, or many small files."""
    t = r.breakdown["metadata"]
    ops = {k: v for k, v in r.ops.items() if k in META_OPS}
    n = sum(ops.values())
    if not (_worth(r, th, t) and t >= th["metadata_share"] * _own(r)):
        return None
    small_files = [f for f in _real_files(r) if 0 < max(f.size, f.bytes_read, f.bytes_written) < th["small_bytes"]]
    if not (n >= th["metadata_ops"] or len(small_files) >= th["many_small_files"]):
        return None
    wall = r.totals["wall_s"] or 0
    ev = [f"{n:,} metadata calls ({n / wall:,.0f}/s over the run) took {human_seconds(t)}" if wall else
          f"{n:,} metadata calls took {human_seconds(t)}"]
    ev.append("calls: " + ", ".join(f"{k.lower()} {v:,}" for k, v in sorted(ops.items(), key=lambda kv: -kv[1])[:6]))
    if small_files:
        ev.append(f"{len(small_files):,} files smaller than {human_bytes(th['small_bytes'])}")
    dirs: Counter[str] = Counter()
    for f in _real_files(r):
        dirs[os.path.dirname(f.path)] += f.metadata_ops
    for d, k in dirs.most_common(3):
        if k:
            ev.append(f"{d}/: {k:,} metadata calls")
    fix = ("Use fewer, larger files (one multi-sample file, a tar or zip archive, HDF5/Zarr instead of one "
           "file per record), stop tools from re-checking the same paths in a loop, and keep directories of "
           "many small files on local disk or tmpfs rather than network or FUSE storage")
    return _make(r, "metadata_storm", f"metadata storm: {n:,} open/stat/readdir calls cost {human_seconds(t)}", t,
                 ev, fix, {"seconds": t, "ops": ops, "small_files": len(small_files)})


def fsync_storm(r: Report, th: dict[str, float]) -> Advice | None:
    """Many fsync-type calls on files that outlive the run (a temp file's syncs are temp_placement's)."""
    synced = _real_rows(r, (_real_column(r, "syncs") != 0) & ~_real_column(r, "temporary").astype(bool))
    files = sorted((f for f in synced if f.syncs and not f.temporary), key=lambda f: -f.breakdown["sync"])
    t = sum(f.breakdown["sync"] for f in files)
    n = sum(f.syncs for f in files)
    if not (n >= th["sync_ops"] and t >= th["sync_share"] * _own(r) and _worth(r, th, t)):
        return None
    writes = sum(f.writes for f in files)
    ev = [f"{n:,} sync calls on {len(files):,} file(s) took {human_seconds(t)} ({100 * t / _own(r):.0f}% of "
          f"process time), {human_seconds(t / n)} each"]
    ev += [f"{f.path}: {f.syncs:,} syncs, {f.writes:,} writes, {human_seconds(f.breakdown['sync'])} "
           f"({', '.join(f.tools)})" for f in files[:5]]
    if n <= 1.5 * len(files):
        what = f"one sync per file ({len(files):,} files)"
        fix = (f"Each file is synced once when complete; what costs is the storage's sync latency "
               f"({human_seconds(t / n)} each): write many small files as one (an archive, a multi-record file), "
               "and put files that can be regenerated on local scratch or tmpfs, where a sync is cheap")
    else:
        what = (f"a sync after every write ({n:,} syncs, {writes:,} writes)" if n >= 0.5 * writes
                else f"{n / len(files):,.0f} syncs per file")
        fix = ("Sync once when a file is complete instead of after every few writes (turn off a tool's per-record "
               "sync option; for a scratch SQLite database, PRAGMA synchronous=OFF); output that can be regenerated "
               "can go to local scratch or tmpfs, where sync is cheap")
    return _make(r, "fsync_storm", f"{n:,} sync calls cost {human_seconds(t)}: {what}", t, ev, fix,
                 {"seconds": t, "syncs": n, "files": [f.path for f in files[:5]]})


def same_device_read_write(r: Report, th: dict[str, float]) -> Advice | None:
    """Reading and writing one device at the same time while another device is available."""
    wall = r.totals["wall_s"] or 0
    best = None
    for m in r.mounts:
        if m.storage != "local" or not m.read_window or not m.write_window:
            continue
        rb, wb = m.bytes_read, m.bytes_written
        if rb < th["same_device_bytes"] or wb < th["same_device_bytes"]:
            continue
        overlap = min(m.read_window[1], m.write_window[1]) - max(m.read_window[0], m.write_window[0])
        if wall <= 0 or overlap < th["same_device_overlap"] * wall:
            continue
        rt = sum(v for k, v in m.breakdown.items() if k.endswith("_read"))
        wt = sum(v for k, v in m.breakdown.items() if k.endswith("_write")) + m.breakdown["sync"]
        t = min(rt, wt)
        if best is None or t > best[0]:
            best = (t, m, rb, wb, overlap, rt, wt)
    if best is None:
        return None
    t, m, rb, wb, overlap, rt, wt = best
    alt = _other_storage(r, exclude_devices={_device(m)}, need_bytes=wb)
    if alt is None or alt["storage"] != "local" or not _worth(r, th, t):
        return None
    outs = sorted((f for f in _real_files(r) if f.mount == m.mount and f.bytes_written and not f.temporary),
                  key=lambda f: -f.bytes_written)[:3]
    ev = [f"{m.mount} ({m.source or m.fstype}) read {human_bytes(rb)} and written {human_bytes(wb)} at the same "
          f"time for {human_seconds(overlap)}; reads took {human_seconds(rt)}, writes {human_seconds(wt)}",
          f"{alt['mount']} ({alt['fstype']} on {alt['source']}) is another local device"]
    ev += [f"output {f.path}: {human_bytes(f.bytes_written)}" for f in outs]
    example = f"{alt['mount'].rstrip('/')}/{os.path.basename(outs[0].path)}" if outs else alt["mount"]
    fix = (f"Write the outputs to {alt['mount']} (for example `-o {example}`) so reads and writes go to different "
           "devices and do not compete for the same disk")
    return _make(r, "same_device_read_write",
                 f"reads and writes compete for {m.mount} while {alt['mount']} is another device", t, ev, fix,
                 {"seconds": t, "mount": m.mount, "bytes_read": rb, "bytes_written": wb, "alternative": alt})


def reread(r: Report, th: dict[str, float]) -> Advice | None:
    """The same file read more than once."""
    hits = []
    size, nread = _real_column(r, "size"), _real_column(r, "bytes_read")
    for f in _real_rows(r, (size != 0) & (nread != 0) & _maybe_at_least(nread - size, th["reread_bytes"])):
        if not f.size or f.times_read is None or f.times_read < th["reread_factor"]:
            continue
        extra = f.bytes_read - f.size
        if extra < th["reread_bytes"]:
            continue
        rt = sum(v for k, v in f.breakdown.items() if k.endswith("_read"))
        hits.append((rt * (1 - 1 / f.times_read), f))
    t = _worth_hits(r, th, hits)
    if t is None:
        return None
    ev = [f"{f.path}: {human_bytes(f.size)} read {f.times_read:.1f}x ({human_bytes(f.bytes_read)}) by "
          f"{f.readers} process(es) ({', '.join(f.tools)}), repeats cost up to {human_seconds(s)}, "
          f"on {f.storage} {f.mount}"
          for s, f in hits[:5]]
    remote = any(is_remote(f.storage) for _s, f in hits)
    sam_index = any("samtools index" in f.tools and "samtools sort" in f.tools for _s, f in hits)
    fix = "Read it once: "
    parts = []
    if sam_index:
        parts.append("`samtools sort --write-index -o out.bam` writes the index while sorting, so no second pass")
    if remote:
        top = next(f for _s, f in hits if is_remote(f.storage))
        parts.append(f"stage it onto local disk once (`cp {top.path} {_stage_dir(r)}/`) and read the copy")
    parts.append("combine the passes, or feed several readers from one pass with `tee`")
    mem = r.capture.get("mem_bytes")
    big = max(f.size for _s, f in hits)
    if mem and big > mem / 2:
        parts.append(f"it is larger than half of RAM ({human_bytes(mem)}), so the page cache cannot hold it "
                     "between passes")
    fix += "; ".join(parts)
    return _make(r, "reread", f"{len(hits)} file(s) read more than once, repeats cost {human_seconds(t)}", t, ev,
                 fix, {"seconds": t, "files": [f.path for _s, f in hits]})


def _stage_dir(r: Report) -> str:
    """A local directory to stage inputs into: the local storage the run already uses most, else another."""
    alt = _local_used(r) or _other_storage(r, exclude_devices=set())
    return alt["mount"].rstrip("/") if alt else "$TMPDIR"


_RANDOM_OR_SMALL = ("random_read", "random_write", *SMALL)


def remote_random(r: Report, th: dict[str, float]) -> Advice | None:
    """Random or small-request access on network or FUSE storage."""
    storage = _real_column(r, "storage")
    remote = (storage == "network") | (storage == "fuse") | (storage == "object-store")
    jumps = _real_column(r, "random_reads") + _real_column(r, "random_writes")
    took = _class_sum(_real_column(r, "breakdown"), _RANDOM_OR_SMALL)
    at = np.flatnonzero(remote & ((jumps != 0) | (took != 0)))  # every file's at once, in the rows' order
    n = sum(jumps[at].tolist())
    t = sum(took[at].tolist())
    if n < th["remote_random_ops"] or not _worth(r, th, t):
        return None
    rows = _real_files(r)
    hits = [(x, b, rows[i]) for x, b, i in zip(took[at].tolist(), jumps[at].tolist(), at.tolist())]
    hits.sort(key=lambda h: -h[0])
    kinds = sorted({f.storage for _t, _b, f in hits})
    ev = [f"{n:,} non-sequential calls on {', '.join(kinds)} storage; random and small requests there took "
          f"{human_seconds(t)}"]
    ev += [f"{f.path}: {b:,} jumps, pattern {f.pattern}, {human_seconds(x)} on {f.fstype} {f.mount}"
           for x, b, f in hits[:5]]
    fix = ("Copy the inputs to local disk first and run there (localize, run, delocalize): each jump on a network "
           "or FUSE mount is a round trip. If copying is not possible, turn on the client's local cache "
           "(Mountpoint for S3 --cache DIR, rclone --vfs-cache-mode full, NFS with a larger rsize)")
    return _make(r, "remote_random", f"random access on {', '.join(kinds)} storage cost {human_seconds(t)}", t, ev,
                 fix, {"seconds": t, "jumps": n, "files": [f.path for _t, _b, f in hits[:20]]})


def object_store_writes(r: Report, th: dict[str, float]) -> Advice | None:
    """Writes an object-store mount handles badly: random writes, appends, renames of large files."""
    hits = []
    storage = _real_column(r, "storage")
    for f in _real_rows(r, (storage == "object-store") | (storage == "fuse")):
        if f.storage not in ("object-store", "fuse"):
            continue
        why = []
        if f.random_writes >= th["object_random_writes"]:
            why.append(f"{f.random_writes:,} non-sequential writes")
        if "APPEND" in f.flags and f.bytes_written:
            why.append("appends")
        if ("RENAMED_FROM" in f.flags or "RENAMED_TO" in f.flags) and f.size >= th["object_rename_bytes"]:
            why.append(f"rename of a {human_bytes(f.size)} file")
        if "TRUNCATED" in f.flags and not f.created:
            why.append("truncate of an existing file")
        if why:
            hits.append((f, why))
    if not hits:
        return None
    t = sum(sum(v for k, v in f.breakdown.items() if k.endswith("_write")) + f.breakdown["metadata"]
            + f.breakdown["sync"] for f, _w in hits)
    ev = [f"{f.path} on {f.fstype} {f.mount}: " + ", ".join(w) for f, w in hits[:6]]
    fix = ("Write these files to local disk and copy each finished file to the bucket once (`aws s3 cp`, "
           "`rclone copy`): an object store replaces whole objects, so appends and random writes rewrite the "
           "object (or are refused, as by Mountpoint for S3) and a rename is a full copy")
    obj = any(f.storage == "object-store" for f, _w in hits)
    return _make(r, "object_store_writes", f"{len(hits)} file(s) written in ways an object store handles badly",
                 t, ev, fix, {"seconds": t, "files": [f.path for f, _w in hits]},
                 severity="high" if obj else None)


def uncompressed_text(r: Report, th: dict[str, float]) -> Advice | None:
    """Large uncompressed text output (SAM, FASTQ, VCF...) that is read again later."""
    hits = []
    keep = _maybe_at_least(_real_column(r, "bytes_written"), th["text_bytes"]) & (_real_column(r, "bytes_read") != 0)
    for f in _real_rows(r, keep):
        if not f.text_format or f.bytes_written < th["text_bytes"] or not f.bytes_read:
            continue
        t = sum(v for k, v in f.breakdown.items() if k != "pipe_wait")
        hits.append((t, f))
    if not hits:
        return None
    t = sum(x for x, _f in hits)
    if not _worth(r, th, t):
        return None
    hits.sort(key=lambda h: -h[0])
    ev = [f"{f.path}: {f.text_format} text, {human_bytes(f.bytes_written)} written and {human_bytes(f.bytes_read)} "
          f"read back ({', '.join(f.tools)}), {human_seconds(x)} of I/O" for x, f in hits[:5]]
    fmts = sorted({f.text_format for _x, f in hits if f.text_format})
    fixes = [TEXT_FIX[x] for x in fmts if x in TEXT_FIX]
    fix = "; ".join(fixes) or "Write it compressed or pipe it to its reader"
    fix += ("; or keep it where the filesystem compresses (btrfs compress=zstd, ZFS compression=lz4: about 1.5x "
            "on FASTQ for a few % CPU)")
    return _make(r, "uncompressed_text",
                 f"{human_bytes(sum(f.bytes_written for _x, f in hits))} of uncompressed {', '.join(fmts)} written "
                 "and read back", t, ev, fix[0].upper() + fix[1:], {"seconds": t, "files": [f.path for _x, f in hits]})


RULES: list[Callable] = [
    small_requests, metadata_storm, fsync_storm, temp_placement, output_placement, same_device_read_write, reread,
    remote_random, object_store_writes, uncompressed_text, compression, threads, low_coverage,
    storage_not_bottleneck,
]
SEVERITY_ORDER = {"high": 0, "medium": 1, "low": 2, "info": 3}


def advise(report: Report, rules: list[Callable] | None = None) -> list[Advice]:
    """Every rule that fires, most time at stake first; the informational ones last."""
    th = report.thresholds
    out = [a for a in (rule(report, th) for rule in (rules or RULES)) if a is not None]
    out.sort(key=lambda a: (a.severity == "info", -(a.time_at_stake_s or 0.0), SEVERITY_ORDER[a.severity], a.rule))
    return out

