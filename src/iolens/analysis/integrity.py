"""Is the capture whole?  Where it was cut, and which process images outgrew their records.

A capture is *partial* when the reader stopped at damage (`Capture.problems`, each naming a byte
offset: a record cut short, a damaged record) or when what it holds is visibly short of what was
recorded, which the reader cannot see at a record boundary:

- fewer process images than the parts `iolens profile` merged (META `parts`);
- an image with fewer FILE records than its PROC record counted (`nfiles`).

Then everything after the cut is missing: the images' kernel counters still include their
children's I/O, so the report must say "partial", not blame mmap or static binaries.

An image flagged OVERFLOW went past `--max-files` (its further files are aggregated per directory)
or its part could not grow (calls after that are not attributed to files).  Neither is a cut.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field

from iolens import _format as F
from iolens.capture.reader import Capture

OVERFLOW = F.PROC_FLAGS["OVERFLOW"][0]
_AT_BYTE = re.compile(r"\s*at byte (\d+)")


@dataclass
class Integrity:
    partial: bool = False
    at_byte: int | None = None  # where the usable data ends, when known
    reason: str | None = None
    overflow: list[int] = field(default_factory=list)  # indices of the images flagged OVERFLOW


def _size(path: str) -> int | None:
    try:
        return os.path.getsize(path)
    except OSError:
        return None


def check(cap: Capture) -> Integrity:
    out = Integrity(overflow=[i for i, p in enumerate(cap.processes) if p.fields["flags"] & OVERFLOW])
    if cap.problems:
        first = cap.problems[0]
        m = _AT_BYTE.search(first)
        out.partial, out.at_byte = True, int(m.group(1)) if m else None
        reason = first.split(": ", 1)[1] if first.startswith(f"{cap.path}: ") else first
        out.reason = _AT_BYTE.sub("", reason).strip()
        return out
    procs = cap.processes
    for i, p in enumerate(procs):
        short = int(p.fields.get("nfiles", 0)) - len(p.files)
        if short > 0:
            last = i == len(procs) - 1
            out.partial = True
            out.at_byte = _size(cap.path) if last else p.offset
            where = "the capture ends" if last else f"the process image at byte {p.offset} was cut"
            out.reason = f"{where} before {short:,} of the file records of {os.path.basename(p.exe) or '?'} [{p.pid}]"
            return out
    parts = cap.meta.get("parts")
    if isinstance(parts, int) and parts > len(procs):
        out.partial, out.at_byte = True, _size(cap.path)
        out.reason = f"the capture ends after {len(procs):,} of the {parts:,} process images recorded"
    return out
