"""CSV: the per-file table of a capture's report (RFC 4180, UTF-8)."""

from __future__ import annotations

from collections.abc import Iterator

from iolens.render.exports import Exported, Format


def _report(s: Exported) -> Iterator[bytes]:
    from iolens.render.report_csv import iter_csv

    return iter_csv(s.report)


FORMAT = Format("csv", "--csv", ".csv", "Write the per-file table as CSV (RFC 4180, UTF-8; a name that is not UTF-8 "
                "keeps its bytes: read it with errors='surrogateescape'; control characters in names are spelled "
                "out as in the terminal: \\e, \\n, \\x07)", {"report": _report})
