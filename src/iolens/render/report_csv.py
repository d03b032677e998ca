"""The per-file table as CSV: one row per path, columns from FileRow itself (one schema for JSON and CSV).

Written by `render/csvsafe.py`: UTF-8, except that a file name whose bytes are not UTF-8 is written as those bytes
(the name as the file system holds it; in Python read with `encoding="utf-8", errors="surrogateescape"`); control
and format characters in a name spelled out as the terminal shows them (`\\e`, `\\n`, `\\x07`, `\\u202e`); a field
with a comma or quote quoted (RFC 4180), so every name stays in its one field.
"""

from __future__ import annotations

from dataclasses import fields
from typing import Any

from iolens.analysis.breakdown import CLASSES
from iolens.analysis.model import FileRow, Report
from iolens.render.csvsafe import csv_bytes

_LISTS = {"read_hist", "write_hist", "flags", "tools"}


def columns() -> list[str]:
    out = []
    for f in fields(FileRow):
        if f.name == "breakdown":
            out += [f"{c}_s" for c in CLASSES]
        else:
            out.append(f.name)
    return out


def _row(row: FileRow) -> list[Any]:
    out: list[Any] = []
    for f in fields(FileRow):
        v = getattr(row, f.name)
        if f.name == "breakdown":
            out += [f"{v[c]:.9f}" for c in CLASSES]
        elif f.name in _LISTS:
            out.append(";".join(str(x) for x in v))
        elif isinstance(v, float):
            out.append(f"{v:.9g}")
        else:
            out.append(v)
    return out


def render_csv(report: Report) -> bytes:
    return csv_bytes(columns(), (_row(row) for row in report.files))
