"""A report's file rows a field at a time, for the exports that write every file (JSON and CSV write them a column at
a time: each field's values converted at once, not row by row).

Reading a field of every row is most of what gathering the columns costs (100,000 rows are far apart in memory),
so the columns of a list of rows are gathered once and shared by the exports of one report: the last list asked
for is kept, with its columns, until another is asked for. A list is read again when its rows are no longer the
same objects or their number changed; the rows are plain data that no renderer changes.
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from operator import attrgetter, is_
from typing import Any

from iolens.analysis.model import FileRow

NAMES = tuple(f.name for f in fields(FileRow))
KINDS = {f.name: str(f.type) for f in fields(FileRow)}  # field name: its type as written ("float | None")
_GET = attrgetter(*NAMES)


@dataclass(frozen=True)
class Column:
    values: tuple[Any, ...]
    classes: frozenset[type]  # of its values (type(None) for None)
    by_key: dict[str, Column] | None = None  # dicts with the same str keys in the same order: a column per key


def _column(values: tuple[Any, ...]) -> Column:
    classes = frozenset(map(type, values))
    return Column(values, classes, _by_key(values) if classes == {dict} else None)


def _by_key(values: tuple[dict, ...]) -> dict[str, Column] | None:
    keys = set(map(tuple, values))
    if len(keys) != 1:
        return None
    (ks,) = keys
    if not all(k.__class__ is str for k in ks):
        return None
    per_key = zip(*map(dict.values, values)) if ks else ()
    return {k: Column(v, frozenset(map(type, v))) for k, v in zip(ks, per_key)}


_last: list[Any] = [None, (), None]  # the rows last asked for, the rows themselves, their columns


def file_columns(rows: list[Any]) -> dict[str, Column] | None:
    """The columns of `rows` by field name (FileRow's order), or None when one of them is not a FileRow."""
    if _last[0] is rows and len(_last[1]) == len(rows) and all(map(is_, _last[1], rows)):
        return _last[2]
    cols = None
    if all(r.__class__ is FileRow for r in rows):
        cols = dict(zip(NAMES, map(_column, zip(*map(_GET, rows))))) if rows else {n: _column(()) for n in NAMES}
    _last[:] = [rows, tuple(rows), cols]
    return cols
