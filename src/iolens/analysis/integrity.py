"""Is the capture whole?  Where it was cut, and which process images outgrew their records.

A capture is *partial* when the reader found it so (`Capture.problems`, each naming a byte
offset): it stopped at damage (a record cut short, a damaged record), or what it holds is visibly
short of what was recorded (fewer FILE records than an image's PROC counted, fewer images than the
parts META lists), which no walk sees at a record boundary.  Every command that reads a capture
goes by the same problems, so each gives the same exit status for the same damage.

Then everything after the cut is missing: the images' kernel counters still include their
children's I/O, so the report must say "partial", not blame mmap or static binaries.

An image flagged OVERFLOW went past `--max-files` (its further files are aggregated per directory)
or its part could not grow (calls after that are not attributed to files).  Neither is a cut.
"""

from __future__ import annotations

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


def check(cap: Capture) -> Integrity:
    out = Integrity(overflow=[i for i, p in enumerate(cap.processes) if p.fields["flags"] & OVERFLOW])
    if cap.problems:
        first = cap.problems[0]
        m = _AT_BYTE.search(first)
        out.partial, out.at_byte = True, int(m.group(1)) if m else None
        reason = first.split(": ", 1)[1] if first.startswith(f"{cap.path}: ") else first
        out.reason = _AT_BYTE.sub("", reason).strip()
    return out
