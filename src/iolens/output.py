"""Writing a rendered export: to a file, or to standard output for '-'."""

from __future__ import annotations

import sys
from pathlib import Path

from iolens.errors import UsageError


def write_output(path: str, data: bytes) -> None:
    if path == "-":
        sys.stdout.buffer.write(data)
        sys.stdout.flush()
        return
    try:
        Path(path).write_bytes(data)
    except OSError as err:
        raise UsageError(f"cannot write {path}: {err.strerror or err}") from None
