"""Merge the per-process parts of one run into a single sealed capture file.

The checksums are computed here, where the final capture is written, so the interposer's hot path carries none:
each part's records (and its trace) form blocks closed by CHECK records, and a trailer ends the file.
"""

from __future__ import annotations

import os
import struct
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterator

from iolens import _format as F
from iolens.capture.container import FILE_HDR, REC_HDR
from iolens.capture.writer import Sealer, meta_record, pack_fixed, record, schema_payload
from iolens.output import _claim

TRACE_CHUNK = F.TRACE_RECORD_MAX  # raw event bytes per TRACE record (a reader decompresses no more)


@dataclass
class MergeResult:
    parts: int = 0
    bytes_written: int = 0
    problems: list[str] = field(default_factory=list)


_PART_KINDS = {kid for name, (kid, _v, _d) in F.KINDS.items() if name != "CHECK"}  # what the interposer writes
_PROC_ID = F.KINDS["PROC"][0]
_COMPACT_KINDS = {F.KINDS[k][0]: k for k in ("PROC", "STRING")}  # what a compact part holds


def _part_key(p: Path) -> tuple[int, int]:
    pid, _, mono = p.stem.partition("-")
    try:
        return int(mono), int(pid)
    except ValueError:
        return (0, 0)


def part_records(data: bytes, name: str, problems: list[str]) -> bytes:
    """The records of one part, up to its end marker; damage is reported and the rest dropped.  A compact part
    (one written whole at its image's end) comes back with what it leaves out (`complete_compact`)."""
    if len(data) < FILE_HDR.size or data[: len(F.MAGIC)] != F.MAGIC:
        problems.append(f"{name}: not an iolens part (skipped)")
        return b""
    pos = FILE_HDR.unpack_from(data, 0)[3]
    start = pos
    while pos + REC_HDR.size <= len(data):
        kid, _ver, size = REC_HDR.unpack_from(data, pos)
        if kid == 0:
            break
        if kid not in _PART_KINDS or size % 8 or pos + REC_HDR.size + size > len(data):
            problems.append(f"{name}: damaged record at byte {pos} (rest of this process dropped)")
            break
        pos += REC_HDR.size + size
    if pos > start and REC_HDR.unpack_from(data, start)[0] == _PROC_ID:
        return complete_compact(data[start:pos], name, problems)
    return data[start:pos]


def complete_compact(body: bytes, name: str, problems: list[str]) -> bytes:
    """A compact part: PROC first, no SCHEMA.  An image that recorded no call writes only its PROC and STRING
    records when it ends (preload/built.c, iolens_write_built), in the layouts of the build that wrote it; the
    SCHEMA of those layouts and the empty TIMELINE a mapped part carries are added here, so the capture holds what
    it would hold had the interposer written them.  A compact part of another build's layouts is skipped."""
    pos = 0
    while pos < len(body):
        kid, ver, size = REC_HDR.unpack_from(body, pos)
        kind = _COMPACT_KINDS.get(kid)
        if kind is None or ver != F.KINDS[kind][1]:
            problems.append(f"{name}: a compact part of another iolens version's layouts (skipped)")
            return b""
        pos += REC_HDR.size + size
    _kid, _ver, size, fields = F.LAYOUTS["PROC"]
    off = next(o for fname, _t, _n, o in fields if fname == "start_mono")
    if REC_HDR.unpack_from(body, 0)[2] < size:
        problems.append(f"{name}: damaged record at byte {FILE_HDR.size} (rest of this process dropped)")
        return b""
    (start_mono,) = struct.unpack_from("<Q", body, REC_HDR.size + off)
    timeline = pack_fixed("TIMELINE", {"t0_mono": start_mono, "shift": F.TIMELINE_SHIFT0, "nbins": F.TIMELINE_BINS})
    return record("SCHEMA", schema_payload()) + body + record("TIMELINE", timeline)


def trace_records(path: Path) -> Iterator[bytes]:
    """The TRACE records of one part's trace file: whole events, compressed TRACE_CHUNK raw bytes at a time."""
    import zstandard

    ev_size = F.LAYOUTS["EVENT"][2]
    raw = path.read_bytes()
    raw = raw[: len(raw) - len(raw) % ev_size]
    comp = zstandard.ZstdCompressor(level=3)
    chunk = TRACE_CHUNK - TRACE_CHUNK % ev_size
    for i in range(0, len(raw), chunk):
        yield record("TRACE", comp.compress(raw[i : i + chunk]))


def merge_parts(part_dir: Path, out_path: Path, meta: dict[str, Any], *, overwrite: bool = False) -> MergeResult:
    """Write out_path from every part in part_dir: under a temporary name beside it, moved into place when whole.

    Without `overwrite` an existing out_path is never replaced (FileExistsError, also for a name taken meanwhile).
    """
    res = MergeResult()
    parts = sorted(part_dir.glob("*.part"), key=_part_key)
    tmp = out_path.with_name(f".{out_path.name}.{os.getpid()}.tmp")
    try:
        _write(tmp, parts, meta, res)
        if overwrite:
            os.replace(tmp, out_path)
        else:
            _claim(str(tmp), out_path)
    finally:
        tmp.unlink(missing_ok=True)
    return res


def _write(tmp: Path, parts: list[Path], meta: dict[str, Any], res: MergeResult) -> None:
    with open(tmp, "wb") as out:
        seal = Sealer(out)
        seal.add(meta_record(dict(meta, parts=len(parts))))
        seal.close_block()
        for part in parts:
            body = part_records(part.read_bytes(), part.name, res.problems)
            if not body:
                continue
            seal.add(body, part=True)
            res.parts += 1
            trace = part.with_suffix(".trace")
            if trace.exists() and trace.stat().st_size:
                for rec in trace_records(trace):
                    seal.add(rec)
            seal.close_block()
        seal.finish()
        res.bytes_written = out.tell()
