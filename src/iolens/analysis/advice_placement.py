"""Advice on where files go: temp files (their lifetimes, syncs, the storage they lived on and its measured speed,
the tool's temp and memory options) and outputs on slow storage (the tool's output option).  Listed in
analysis/advice.py's RULES."""

from __future__ import annotations

import os

import numpy as np

from iolens.analysis import tool_options as T
from iolens.analysis.advice_kit import (SMALL, _class_sum, _device, _local_used, _make, _mount, _other_storage, _own,
                                       _real_column, _real_files, _worth)
from iolens.analysis.breakdown import CLASSES
from iolens.analysis.classify import is_remote
from iolens.analysis.model import Advice, FileRow, MountRow, Report
from iolens.units import human_bytes, human_seconds


def _data_devices(r: Report) -> dict[str, set[str]]:
    """The devices the run's inputs were read from and its outputs written to (temporary files aside)."""
    mount = _real_column(r, "mount")  # their mounts first, then each mount's device once
    kept = ~_real_column(r, "temporary").astype(bool)
    inputs = set(mount[kept & (_real_column(r, "bytes_read") != 0) & ~_real_column(r, "created").astype(bool)].tolist())
    outputs = set(mount[kept & (_real_column(r, "bytes_written") != 0)].tolist())
    return {k: {_device(m) for mp in mps if (m := _mount(r, mp)) is not None}
            for k, mps in (("inputs", inputs), ("outputs", outputs))}


def _temp_mounts(r: Report, th: dict[str, float], temps: list[FileRow],
                 data_devices: dict[str, set[str]]) -> list[tuple]:
    """Per mount of temp files (RAM aside): (time, mount, row, files, why) where they cost: on remote storage, on a
    data device, or a large share of the step."""
    by_mount: dict[str, list[FileRow]] = {}
    for f in temps:
        by_mount.setdefault(f.mount, []).append(f)
    out = []
    for mp, fs in by_mount.items():
        m = _mount(r, mp)
        if m is None or m.storage == "memory":
            continue
        t = sum(f.time_s for f in fs)
        why = []
        if is_remote(m.storage):
            why.append(f"{m.storage} storage ({m.fstype})")
        if sum(f.bytes_written for f in fs) >= th["temp_bytes"]:
            why += [f"the same device as the {role}" for role in ("inputs", "outputs")
                    if _device(m) in data_devices[role]]
        moved = sum(f.bytes_written + f.bytes_read for f in fs)
        slow = t > 0 and moved / t < th["slow_bps"]
        if not why and not (slow and t >= th["temp_share"] * _own(r)):
            continue
        if slow:
            why.append(f"measured at {human_bytes(moved / t)}/s written and read back over their I/O time")
        if is_remote(m.storage) or _worth(r, th, t):
            out.append((t, mp, m, fs, why))
    return sorted(out, key=lambda w: -w[0])


def _syncs_said(fs: list[FileRow]) -> str | None:
    """What the temp files' syncs were, in words that match what happened."""
    synced = [f for f in fs if f.syncs]
    if not synced:
        return None
    n = sum(f.syncs for f in synced)
    if n <= 1.5 * len(synced):
        return "one sync per temp file" if len(synced) == len(fs) else f"one sync per temp file on {len(synced):,}"
    return f"{n / len(synced):,.0f} syncs per temp file"


def _size_option(nbytes: int) -> str:
    """A size as tools' memory options take it (768M, 2G), rounded up."""
    mib = -(-nbytes // (1 << 20))
    return f"{-(-mib // 1024)}G" if mib >= 4096 or (mib >= 1024 and mib % 1024 == 0) else f"{max(1, mib)}M"


def _temp_places(r: Report, m: MountRow, nbytes: int, data_devices: dict[str, set[str]]) -> list[tuple[str, str]]:
    """Where the temp files could go instead: (directory, why), RAM first when they fit in a quarter of it."""
    out = []
    mem = r.capture.get("mem_bytes") or 0
    ram = next((a for a in r.available_mounts if a["storage"] == "memory"), None)
    if ram and mem and nbytes <= mem / 4:
        out.append((ram["mount"].rstrip("/"), f"tmpfs: {human_bytes(nbytes)} fits in {human_bytes(mem)} of RAM"))
    alt = _other_storage(r, exclude_devices={_device(m)} | data_devices["inputs"] | data_devices["outputs"])
    if alt and alt["storage"] == "local":
        out.append((alt["mount"].rstrip("/") + "/tmp", f"local scratch, {alt['fstype']} on {alt['source']}"))
    return out


def _temp_fix(r: Report, fs: list[FileRow], places: list[tuple[str, str]], nbytes: int, syncs: str | None) -> str:
    """The fix in the tool's own options: its temp option (-T), its memory option (-m, -S), else TMPDIR."""
    tools = [t for f in fs for t in f.tools]
    tool = next((t for t in tools if (T.options(t) or T.ToolOptions()).temp), None)
    opts = T.options(tool) if tool else None
    if not places:
        where = ("; this machine shows no other local device and the files do not fit in a quarter of RAM: add a "
                 "local scratch disk")
        places = [("/path/on/local/scratch", "local scratch")]
    else:
        where = ""
    if tool and opts and opts.temp:
        argv = next((p.argv for p in r.processes if p.name == tool), [])
        prefix = os.path.basename((T.value(argv, opts.temp) or "").rstrip("/")) or tool.split()[-1]
        ex = [f"`{tool} {opts.temp} {d}/{prefix if opts.temp_is_prefix else ''} ...` ({why})".replace("/ ...", " ...")
              for d, why in places]
        fix = f"Put {tool}'s temp files on faster storage with {opts.temp}: " + " or ".join(ex) + where
        if opts.temp_is_prefix and T.value(argv, opts.temp) is None:
            fix += f" (without {opts.temp} it spills next to the output)"
        mem = T.memory_bytes(argv, opts)
        if opts.memory and mem and len(fs) > 1:  # each spill is about the memory option's worth of records
            now = T.value(argv, opts.memory) or f"the default {opts.memory_default}"
            fix += (f"; or make fewer, larger ones: raise {opts.memory} (now {now}, {len(fs):,} temp files): a spill "
                    f"is written each time {opts.memory} of records fills, so `{opts.memory} "
                    f"{_size_option(mem * len(fs))}` would keep them in memory if the machine has it")
    else:
        ex = [f"`export TMPDIR={d}` ({why})" for d, why in places]
        fix = "Point the temp files at faster storage: " + " or ".join(ex) + " (or the tool's temp-dir option)" + where
    if syncs and not (tool and opts):
        fix += (f"; a temp file deleted within the run needs no sync: the code that writes them can drop the fsync "
                f"({syncs})")
    return fix


def temp_placement(r: Report, th: dict[str, float]) -> Advice | None:
    """Temp files that cost: on network/FUSE storage, on the inputs' or outputs' device, or a large share of the
    step on storage other than RAM."""
    rows = _real_files(r)
    temps = [rows[i] for i in np.flatnonzero(_real_column(r, "temporary").astype(bool)).tolist()]
    if not temps:
        return None
    data_devices = _data_devices(r)
    found = _temp_mounts(r, th, temps, data_devices)
    if not found:
        return None
    t, mp, m, fs, why = found[0]
    nbytes = sum(f.bytes_written for f in fs)
    bd = {k: sum(f.breakdown[k] for f in fs) for k in fs[0].breakdown}
    wt = sum(v for k, v in bd.items() if k.endswith("_write"))
    rt = sum(v for k, v in bd.items() if k.endswith("_read"))
    nsync = sum(f.syncs for f in fs)
    syncs = _syncs_said(fs)
    share = f" ({100 * t / _own(r):.0f}% of process time)" if _own(r) else ""
    gone = sum(f.created and f.deleted for f in fs)
    lived = ("created and deleted within the run" if gone == len(fs) else
             f"{gone:,} created and deleted within the run, the others named as temporary")
    ev = [f"{len(fs):,} temp files ({lived}), {human_bytes(nbytes)} written, "
          f"{human_seconds(t)} of I/O{share}, on {mp} ({m.source or m.fstype})"
          + (": " + "; ".join(why) if why else "")]
    parts = [f"writes {human_seconds(wt)}" + (f" ({human_bytes(nbytes / wt)}/s)" if wt > 0 else ""),
             f"reads back {human_seconds(rt)}"]
    if nsync:
        parts.append(f"{nsync:,} syncs {human_seconds(bd['sync'])}, {human_seconds(bd['sync'] / nsync)} each ({syncs})")
    parts.append(f"creating and deleting them {human_seconds(bd['metadata'])}")
    ev.append("their time: " + ", ".join(parts))
    for f in sorted(fs, key=lambda f: -f.bytes_written)[:3]:
        ev.append(f"{f.path}: {human_bytes(f.bytes_written)}, lived {human_seconds(f.lifetime_s)} "
                  f"({', '.join(f.tools)})")
    places = _temp_places(r, m, nbytes, data_devices)
    fix = _temp_fix(r, fs, places, nbytes, syncs)
    where = " and ".join(w.replace("the same device as the ", "") for w in why if w.startswith("the same"))
    title = f"{len(fs):,} temp file{'s' if len(fs) != 1 else ''} cost {human_seconds(t)} on {mp}"
    if is_remote(m.storage):
        title += f", {m.storage} storage" + (f", also the {where}' device" if where else "")
    elif where:
        title += f", the same device as the {where}"
    if syncs:
        title += f" ({syncs})"
    tools = sorted({x for f in fs for x in f.tools})
    return _make(r, "temp_placement", title, t, ev, fix,
                 {"seconds": t, "mount": mp, "files": len(fs), "bytes": nbytes, "syncs": nsync,
                  "alternatives": [d for d, _w in places], "tools": tools})


def output_placement(r: Report, th: dict[str, float]) -> Advice | None:
    """Outputs written to network/FUSE storage, or to storage measured slow, for a large share of the step."""
    # every file's columns at once (advice_kit._real_column); per mount, the files in the order of the rows
    rows = _real_files(r)
    written = _real_column(r, "bytes_written")
    mount = _real_column(r, "mount")
    sel = (written != 0) & ~_real_column(r, "temporary").astype(bool) & (_real_column(r, "storage") != "object-store")
    bd = _real_column(r, "breakdown")
    wtime = _class_sum(bd, [*_WRITES, "sync"])
    # small calls are small_requests' business: a file written mostly in them says nothing of the storage
    timed = sel & (_class_sum(bd, SMALL) <= 0.5 * wtime)
    best = None
    for mp in dict.fromkeys(mount[sel].tolist()):  # object stores aside: their own rule
        m = _mount(r, mp)
        if m is None or m.storage == "memory":
            continue
        here = np.flatnonzero(timed & (mount == mp))
        t = sum(wtime[here].tolist())
        nbytes = sum(written[here].tolist())
        rate = nbytes / t if t > 0 else None
        slow = is_remote(m.storage) or (rate is not None and rate < th["slow_bps"])
        if slow and t >= th["output_share"] * _own(r) and (best is None or t > best[0]):
            best = (t, m, [rows[i] for i in here.tolist()], nbytes, rate)
    if best is None or not _worth(r, th, best[0]):
        return None
    t, m, fs, nbytes, rate = best
    fs = sorted(fs, key=lambda f: -f.bytes_written)
    alt = _local_used(r, exclude=_device(m)) or _other_storage(r, exclude_devices={_device(m)}, need_bytes=nbytes)
    ev = [f"{len(fs):,} output file(s), {human_bytes(nbytes)} written to {m.mount} ({m.storage}, {m.fstype} on "
          f"{m.source or '?'}) in {human_seconds(t)} ({100 * t / _own(r):.0f}% of process time), "
          f"{human_bytes(rate or 0)}/s measured"]
    ev += [f"{f.path}: {human_bytes(f.bytes_written)} in {f.writes:,} writes, {human_seconds(_write_time(f))} "
           f"({', '.join(f.tools)})" for f in fs[:3]]
    top = fs[0]
    tool = next((x for x in top.tools if (T.options(x) or T.ToolOptions()).output), None)
    opt = (T.options(tool) or T.ToolOptions()).output if tool else None
    name = os.path.basename(top.path)
    if alt:
        local = f"{alt['mount'].rstrip('/')}/{name}"
        how = f"`{tool} ... {opt} {local}`" if tool and opt else f"write it to {local}"
        fix = (f"Write the output to local storage and copy the finished file once: {how}, then `cp {local} "
               f"{os.path.dirname(top.path)}/` (one sequential copy instead of {top.writes:,} writes to {m.mount})")
    else:
        fix = ("Write the output to local disk or tmpfs and copy the finished file once; this machine shows no "
               "other local device, so add a local scratch disk")
    return _make(r, "output_placement", f"writing {human_bytes(nbytes)} of output to {m.storage} storage "
                 f"{m.mount} cost {human_seconds(t)}", t, ev, fix,
                 {"seconds": t, "mount": m.mount, "bytes": nbytes, "bytes_per_s": rate, "alternative": alt,
                  "files": [f.path for f in fs[:20]]})


_WRITES = [c for c in CLASSES if c.endswith("_write")]


def _write_time(f: FileRow) -> float:
    return sum(f.breakdown.get(k, 0.0) for k in _WRITES) + f.breakdown["sync"]
