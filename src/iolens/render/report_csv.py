"""The per-file table as CSV: one row per path, columns from FileRow itself (one schema for JSON and CSV).

Written by `render/csvsafe.py`: UTF-8, except that a file name whose bytes are not UTF-8 is written as those bytes
(the name as the file system holds it; in Python read with `encoding="utf-8", errors="surrogateescape"`); control
and format characters in a name spelled out as the terminal shows them (`\\e`, `\\n`, `\\x07`, `\\u202e`); a field
with a comma or quote quoted (RFC 4180), so every name stays in its one field.
"""

from __future__ import annotations

from dataclasses import fields
from itertools import chain, repeat
from operator import attrgetter, itemgetter
from typing import Any, Iterator, Sequence

from iolens.analysis.breakdown import CLASSES
from iolens.analysis.model import FileRow, Report
from iolens.names import utf8
from iolens.render.csvsafe import csv_parts, csv_table, row_parts, text_cells

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


_PART = 5000  # rows in each part of the table


def iter_csv(report: Report) -> Iterator[bytes]:
    """The table in parts of a few thousand rows (the bytes of render_csv): a column at a time where every value of
    each field has the field's type (the same bytes as row by row, which writes the others)."""
    yield from csv_parts(columns(), ())
    files = report.files
    row = None
    for i in range(0, len(files), _PART):
        part = files[i : i + _PART]
        text = _by_column(part)
        if text is None:
            row = row or _row_maker()
            yield from row_parts(map(row, part), len(part))
        else:
            yield utf8(text)


def _by_column(rows: list[FileRow]) -> str | None:
    """The rows' lines, made a column at a time, or None when a value is not of its field's type."""
    if not rows or not all(r.__class__ is FileRow for r in rows):
        return None
    cols: list[tuple[str, Sequence[Any]]] = []
    for f, values in zip(fields(FileRow), zip(*map(_GET, rows))):
        kind = str(f.type)
        present = set(map(type, values))
        if f.name == "breakdown":
            if present != {dict}:
                return None
            per_class = list(zip(*map(itemgetter(*CLASSES), values)))
            if any(set(map(type, c)) != {float} for c in per_class):
                return None
            cols += [("%.9f", c) for c in per_class]
        elif f.name in _LISTS:
            if present != {list}:
                return None
            if kind == "list[int]" and set(map(type, chain.from_iterable(values))) <= {int}:
                cols.append(("%s", _ints(values)))
            else:
                cols.append(("%s", text_cells(list(map(";".join, map(map, repeat(str), values))))))
        elif present <= _TEXT.get(kind, set()):
            cols.append(("%s", text_cells(values)))
        elif present == _EXACT.get(kind):
            cols.append((_EXACT_CONV.get(kind, "%s"), values))
        elif present <= _EXACT.get(kind, set()) | {type(None)}:
            conv = _EXACT_CONV.get(kind, "%s")
            cols.append(("%s", ["" if v is None else conv % v for v in values]))
        else:
            return None
    return csv_table(cols)


_GET = attrgetter(*(f.name for f in fields(FileRow)))
_TEXT: dict[str, set[type]] = {"str": {str}, "str | None": {str, type(None)}}  # field type: classes written as text
_EXACT: dict[str, set[type]] = {"int": {int}, "bool": {bool}, "float": {float}, "float | None": {float}}  # numbers
_EXACT_CONV = {"float": "%.9g", "float | None": "%.9g"}  # a float as the row writer writes it


def _ints(values: tuple[list[int], ...]) -> list[str]:
    """Lists of ints as fields: "1;2;3" for [1, 2, 3]; lists of one length (a histogram's bins) by one template."""
    sizes = set(map(len, values))
    if len(sizes) != 1:
        return list(map(";".join, map(map, repeat(str), values)))
    template = ";".join(["%d"] * sizes.pop())
    return list(map(template.__mod__, map(tuple, values)))
