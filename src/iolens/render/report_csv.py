"""The per-file table as CSV: one row per path, columns from FileRow itself (one schema for JSON and CSV).

Encoding: UTF-8, except that a file name whose bytes are not UTF-8 is written as those bytes, unchanged (the
name as the file system holds it; in Python read with `encoding="utf-8", errors="surrogateescape"`).  A field
with a comma, quote or newline is quoted (RFC 4180), so every name stays in its one field.
"""

from __future__ import annotations

import csv
import io
from dataclasses import fields

from iolens.analysis.breakdown import CLASSES
from iolens.analysis.model import FileRow
from iolens.names import utf8

_LISTS = {"read_hist", "write_hist", "flags", "tools"}


def columns() -> list[str]:
    out = []
    for f in fields(FileRow):
        if f.name == "breakdown":
            out += [f"{c}_s" for c in CLASSES]
        else:
            out.append(f.name)
    return out


def render_csv(report) -> bytes:
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(columns())
    for row in report.files:
        out = []
        for f in fields(FileRow):
            v = getattr(row, f.name)
            if f.name == "breakdown":
                out += [f"{v[c]:.9f}" for c in CLASSES]
            elif f.name in _LISTS:
                out.append(";".join(str(x) for x in v))
            elif isinstance(v, float):
                out.append(f"{v:.9g}")
            elif v is None:
                out.append("")
            else:
                out.append(v)
        w.writerow(out)
    return utf8(buf.getvalue())
