"""Merge the per-process parts of one run into a single capture file."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from iolens import _format as F
from iolens.capture.container import FILE_HDR, REC_HDR
from iolens.capture.writer import file_header, meta_record, record
from iolens.output import _claim

TRACE_CHUNK = 32 << 20  # raw event bytes per TRACE record


@dataclass
class MergeResult:
    parts: int = 0
    bytes_written: int = 0
    problems: list[str] = field(default_factory=list)


def _part_key(p: Path) -> tuple[int, int]:
    pid, _, mono = p.stem.partition("-")
    try:
        return int(mono), int(pid)
    except ValueError:
        return (0, 0)


def part_records(data: bytes, name: str, problems: list[str]) -> bytes:
    """The records of one part, up to its end marker; damage is reported and the rest dropped."""
    if len(data) < FILE_HDR.size or data[: len(F.MAGIC)] != F.MAGIC:
        problems.append(f"{name}: not an iolens part (skipped)")
        return b""
    pos = FILE_HDR.unpack_from(data, 0)[3]
    start = pos
    while pos + REC_HDR.size <= len(data):
        kid, _ver, size = REC_HDR.unpack_from(data, pos)
        if kid == 0:
            break
        if size % 8 or pos + REC_HDR.size + size > len(data):
            problems.append(f"{name}: damaged record at byte {pos} (rest of this process dropped)")
            break
        pos += REC_HDR.size + size
    return data[start:pos]


def trace_records(path: Path) -> bytes:
    import zstandard

    ev_size = F.LAYOUTS["EVENT"][2]
    raw = path.read_bytes()
    raw = raw[: len(raw) - len(raw) % ev_size]
    out = bytearray()
    comp = zstandard.ZstdCompressor(level=3)
    for i in range(0, len(raw), TRACE_CHUNK):
        out += record("TRACE", comp.compress(raw[i : i + TRACE_CHUNK]))
    return bytes(out)


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
        out.write(file_header())
        out.write(meta_record(dict(meta, parts=len(parts))))
        for part in parts:
            body = part_records(part.read_bytes(), part.name, res.problems)
            if not body:
                continue
            out.write(body)
            res.parts += 1
            trace = part.with_suffix(".trace")
            if trace.exists() and trace.stat().st_size:
                out.write(trace_records(trace))
        res.bytes_written = out.tell()
