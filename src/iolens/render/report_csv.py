"""The per-file table as CSV: one row per path, columns from FileRow itself (one schema for JSON and CSV).

Written by `render/csvsafe.py`: UTF-8, except that a file name whose bytes are not UTF-8 is written as those bytes
(the name as the file system holds it; in Python read with `encoding="utf-8", errors="surrogateescape"`); control
and format characters in a name spelled out as the terminal shows them (`\\e`, `\\n`, `\\x07`, `\\u202e`); a field
with a comma or quote quoted (RFC 4180), so every name stays in its one field.
"""

from __future__ import annotations

from dataclasses import fields
from operator import attrgetter, itemgetter
from typing import Any, Iterator

from iolens.analysis.breakdown import CLASSES
from iolens.analysis.model import FileRow, Report
from iolens.render.csvsafe import csv_parts

_LISTS = {"read_hist", "write_hist", "flags", "tools"}


def columns() -> list[str]:
    out = []
    for f in fields(FileRow):
        if f.name == "breakdown":
            out += [f"{c}_s" for c in CLASSES]
        else:
            out.append(f.name)
    return out


def _row_maker() -> Any:
    """A function of a FileRow giving its cells: the fields fetched at once, each converted as its type needs
    (read once from FileRow's fields, not per row)."""
    names = [f.name for f in fields(FileRow)]
    get = attrgetter(*names)
    bd = names.index("breakdown")
    lists = [i for i, n in enumerate(names) if n in _LISTS]
    classes = itemgetter(*CLASSES)
    seconds = "{:.9f}".format

    def row(r: FileRow) -> list[Any]:
        vals = list(get(r))
        for i in lists:
            vals[i] = ";".join(map(str, vals[i]))
        v = vals[bd]
        out = [f"{x:.9g}" if x.__class__ is float else x for x in vals]
        out[bd:bd + 1] = map(seconds, classes(v))
        return out

    return row


def render_csv(report: Report) -> bytes:
    return b"".join(iter_csv(report))


def iter_csv(report: Report) -> Iterator[bytes]:
    """The table in parts of a few thousand rows (the bytes of render_csv)."""
    return csv_parts(columns(), map(_row_maker(), report.files))
