"""The one CSV writer of the exporters: RFC 4180 quoting, and untrusted text as `iolens.names.csv_text` has it.

Every text cell goes through `csv_text`, so no field holds a control character (an escape sequence, BEL, a
carriage return, a newline) or a bidi override; a field with a comma or a double quote is quoted, with its quotes
doubled (RFC 4180).  The bytes are UTF-8, except that a file name that is not UTF-8 keeps its own bytes (read in
Python with `encoding="utf-8", errors="surrogateescape"`).
"""

from __future__ import annotations

import csv
import io
from typing import Any, Iterable, Iterator, Sequence

from iolens.names import csv_text, utf8


def _cell(v: Any) -> Any:
    if v is None:
        return ""
    return csv_text(v) if isinstance(v, str) else v


def csv_bytes(header: list[str], rows: Iterable[Iterable[Any]]) -> bytes:
    """The table as CSV: the header row, then one line per row (None is an empty field)."""
    return b"".join(csv_parts(header, rows))


def csv_parts(header: list[str], rows: Iterable[Iterable[Any]], part: int = 5000) -> Iterator[bytes]:
    """csv_bytes in parts of `part` rows, so that a large table is never held whole."""
    buf = io.StringIO()
    csv.writer(buf, lineterminator="\n", quoting=csv.QUOTE_MINIMAL).writerow([_cell(h) for h in header])
    yield utf8(buf.getvalue())
    yield from row_parts(rows, part)


def row_parts(rows: Iterable[Iterable[Any]], part: int = 5000) -> Iterator[bytes]:
    """The lines of the rows (as csv_parts writes them, without the header), in parts of `part` rows."""
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n", quoting=csv.QUOTE_MINIMAL)
    for i, row in enumerate(rows, 1):  # most cells are numbers and printable names: those are written as they are
        w.writerow(["" if v is None else v if v.__class__ is not str or v.isprintable() else csv_text(v)
                    for v in row])
        if not i % part:
            yield utf8(buf.getvalue())
            buf.seek(0)
            buf.truncate()
    yield utf8(buf.getvalue())


def text_cells(values: Sequence[str | None]) -> list[str]:
    """A column of text (or None) as the writer writes each of its fields (what `csv_parts` writes for it), each
    distinct value converted once: for the columns of a large table, which `csv_table` puts together."""
    memo = {v: _text_field(v) for v in set(values)}
    return list(map(memo.__getitem__, values))


def _text_field(v: str | None) -> str:
    if v is None:
        return ""
    t = v if v.isprintable() else csv_text(v)
    if '"' in t:
        return '"' + t.replace('"', '""') + '"'
    return f'"{t}"' if "," in t or "\n" in t or "\r" in t else t


def csv_table(columns: Sequence[tuple[str, Sequence[Any]]]) -> str:
    """The lines of a table of two or more columns, given a column at a time: each column a %-conversion and its
    values, written by it into every row at once ('%s' for fields made by `text_cells`, or numbers as their own
    text; '%.9f' for fixed decimals): a number's field never needs quoting."""
    template = ",".join(conv for conv, _values in columns) + "\n"
    return "".join(map(template.__mod__, zip(*(values for _conv, values in columns))))
