"""The one CSV writer of the exporters: RFC 4180 quoting, and untrusted text as `iolens.names.csv_text` has it.

Every text cell goes through `csv_text`, so no field holds a control character (an escape sequence, BEL, a
carriage return, a newline) or a bidi override; a field with a comma or a double quote is quoted, with its quotes
doubled (RFC 4180).  The bytes are UTF-8, except that a file name that is not UTF-8 keeps its own bytes (read in
Python with `encoding="utf-8", errors="surrogateescape"`).
"""

from __future__ import annotations

import csv
import io
from typing import Any, Iterable, Iterator

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
    w = csv.writer(buf, lineterminator="\n", quoting=csv.QUOTE_MINIMAL)
    w.writerow([_cell(h) for h in header])
    for i, row in enumerate(rows, 1):  # most cells are numbers and printable names: those are written as they are
        w.writerow(["" if v is None else v if v.__class__ is not str or v.isprintable() else csv_text(v)
                    for v in row])
        if not i % part:
            yield utf8(buf.getvalue())
            buf.seek(0)
            buf.truncate()
    yield utf8(buf.getvalue())
