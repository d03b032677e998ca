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
from typing import Any, Callable, Iterator, Sequence

from iolens.analysis.breakdown import CLASSES
from iolens.analysis.model import FileRow, Report
from iolens.names import utf8
from iolens.render.csvsafe import csv_parts, csv_table, row_parts, text_cells
from iolens.render.file_columns import KINDS, Column, file_columns

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
    cols = file_columns(files)
    convs = None if cols is None else _conversions(cols)
    row = None
    for i in range(0, len(files), _PART):
        if convs is None:
            row = row or _row_maker()
            yield from row_parts(map(row, files[i : i + _PART]), _PART)
        else:
            yield utf8(csv_table([(conv, make(values[i : i + _PART])) for conv, make, values in convs]))


def _by_column(rows: list[FileRow]) -> str | None:
    """The rows' lines, made a column at a time, or None when a value is not of its field's type."""
    cols = file_columns(rows)
    convs = None if cols is None or not rows else _conversions(cols)
    return None if convs is None else csv_table([(conv, make(values)) for conv, make, values in convs])


Conversion = tuple[str, Callable[[tuple[Any, ...]], Sequence[Any]], tuple[Any, ...]]


def _conversions(cols: dict[str, Column]) -> list[Conversion] | None:
    """For each column of the table: its %-conversion in the row template, what makes its cells from a run of the
    field's values, and those values; None when a value is not of its field's type (then the rows are written one
    by one, as before)."""
    out: list[Conversion] = []
    for name, col in cols.items():
        kind, present = KINDS[name], col.classes
        if name == "breakdown":
            per_key = col.by_key or {}
            if not set(CLASSES) <= set(per_key) or any(per_key[c].classes != {float} for c in CLASSES):
                return None
            out += [("%.9f", _same, per_key[c].values) for c in CLASSES]
        elif name in _LISTS:
            if present != {list}:
                return None
            ints = kind == "list[int]" and set(map(type, chain.from_iterable(col.values))) <= {int}
            out.append(("%s", _ints if ints else _joined, col.values))
        elif present <= _TEXT.get(kind, set()):
            out.append(("%s", text_cells, col.values))
        elif present == _EXACT.get(kind):
            out.append((_EXACT_CONV.get(kind, "%s"), _same, col.values))
        elif present <= _EXACT.get(kind, set()) | {type(None)}:
            out.append(("%s", _or_empty(_EXACT_CONV.get(kind, "%s")), col.values))
        else:
            return None
    return out


def _same(values: tuple[Any, ...]) -> tuple[Any, ...]:
    return values


def _or_empty(conv: str) -> Callable[[tuple[Any, ...]], list[str]]:
    return lambda values: ["" if v is None else conv % v for v in values]


def _joined(values: tuple[Any, ...]) -> list[str]:
    """Lists as fields: their items' text joined by ';', as text (quoted when it needs to be)."""
    return text_cells(list(map(";".join, map(map, repeat(str), values))))


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
