"""A capture as every command reads it: one way in, one exit status for the same damage.

Each command that reads a capture (report, parse, diff, replay, predict, cost --capture) calls `load_capture`:

- a file that cannot be read at all (missing, not a capture, newer format, nothing readable before the damage)
  is a `CaptureError`: one line, exit status 3, nothing written;
- a partial capture (cut short or damaged: `Capture.problems`) is read up to the damage; each problem is said on
  stderr as a warning, the command writes its outputs from what was read, and ends with `exit_if_partial`: exit
  status 3 (`PARTIAL_EXIT`), the same as a capture that cannot be read, so a script sees the damage either way.
"""

from __future__ import annotations

import sys
from typing import Callable

from iolens.capture.reader import Capture, read_capture
from iolens.errors import PARTIAL_EXIT, CaptureError
from iolens.names import shown


def _stderr(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


def load_capture(path: str, *, doing: str = "reporting", processes: bool = True,
                 warn: Callable[[str], None] | None = _stderr) -> Capture:
    """Read the capture at `path` for a command.

    doing: what the command does with what was read, for the warning ("reporting what came before it").
    processes: a capture with no process image cannot be used (False for a dump, which shows whatever is there).
    warn: where each problem of a partial capture is said (None: the caller says them)."""
    cap = read_capture(path)
    if processes and not cap.processes:
        if cap.problems:
            raise CaptureError(f"{cap.problems[0]}: nothing in it can be read; profile the step again")
        raise CaptureError(f"{path}: the capture holds no process records")
    if warn is not None:
        for prob in cap.problems:
            warn(f"iolens: warning: {shown(prob)}; {doing} what came before it")
    return cap


def exit_if_partial(*caps: Capture) -> None:
    """End the command with PARTIAL_EXIT when a capture it read is partial (its outputs are written by then)."""
    if any(cap.problems for cap in caps):
        sys.exit(PARTIAL_EXIT)
