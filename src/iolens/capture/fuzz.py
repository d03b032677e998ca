"""What "every reader path is total" means, as code: the fuzz target and the capture mutators.

`exercise(data)` reads `data` as a capture and, when something was read, builds the report and renders it in every
format, and dumps it as `iolens parse` does.  It may raise `IolensError` (a one-line error) and nothing else; any
other exception is a bug.  `mutate()` makes the three kinds of damage a capture meets (a cut, an insertion, a
changed byte), and `classify()` says whether the reader noticed.  Used by tests/test_fuzz_reader.py and
benchmarks/fuzz_capture.py.
"""

from __future__ import annotations

import io
import json
import random
from typing import Any

from iolens.capture.reader import Capture, decode
from iolens.errors import IolensError

MUTATIONS = ("truncate", "insert", "flip")


def _encodes(text: str) -> None:
    text.encode("utf-8")  # what writing it to a UTF-8 terminal or file does; raises on a lone surrogate


def render_all(cap: Capture) -> None:
    """Everything `parse`, `report` (every format) and `diff` make from a capture."""
    from rich.console import Console

    from iolens.analysis.report import build_report
    from iolens.analysis.thresholds import with_overrides
    from iolens.commands.parse import capture_dict, text_lines

    json.dumps(capture_dict(cap), default=str)
    for line in text_lines(cap):
        _encodes(line)
    if not cap.processes:
        return
    from iolens.render.chrome_trace import render_chrome_trace
    from iolens.render.report_csv import render_csv
    from iolens.render.report_html import render_html
    from iolens.render.report_json import render_json
    from iolens.render.report_text import render_report_text

    rep = build_report(cap, with_overrides([]))
    render_json(rep)
    render_csv(rep)
    render_html(rep)
    render_chrome_trace(cap)
    out = io.StringIO()
    render_report_text(rep, Console(file=out, width=120, highlight=False, soft_wrap=False))
    _encodes(out.getvalue())
    from iolens.analysis.diff import diff_reports
    from iolens.render.diff_text import render_diff_json, render_diff_text

    d = diff_reports(rep, rep)
    render_diff_json(d)
    out = io.StringIO()
    render_diff_text(d, Console(file=out, width=120, highlight=False, soft_wrap=False))
    _encodes(out.getvalue())


def undecodable_name(err: UnicodeEncodeError) -> bool:
    """A name with bytes that are not UTF-8 (read back as lone surrogates, as Python does for file names) that a
    renderer could not write: a fault of the outputs, which must escape such names, not of the reader."""
    return any("\udc80" <= ch <= "\udcff" for ch in err.object[err.start : err.end])


def exercise(data: bytes, *, report: bool = True) -> Capture | None:
    """Read `data` (and render what was read); None when the reader refused it with a one-line error."""
    try:
        cap = decode(data, "fuzz.iolens")
    except IolensError:
        return None
    if report:
        try:
            render_all(cap)
        except IolensError:
            return None
        except UnicodeEncodeError as err:
            if not undecodable_name(err):
                raise
    return cap


def mutate(data: bytes, rnd: random.Random, kind: str) -> bytes:
    """One piece of damage: a cut (anywhere after the magic), 1-7 inserted bytes, or one byte changed."""
    if kind == "truncate":
        return data[: rnd.randrange(8, len(data))]
    if kind == "insert":
        at = rnd.randrange(8, len(data) + 1)
        n = rnd.randrange(1, 8)
        ins = bytes(n) if rnd.random() < 0.5 else rnd.randbytes(n)
        return data[:at] + ins + data[at:]
    at = rnd.randrange(len(data))
    buf = bytearray(data)
    buf[at] ^= rnd.randrange(1, 256)
    return bytes(buf)


def fingerprint(cap: Capture) -> Any:
    """What a reader makes of a capture, to compare a mutant with the original."""
    from iolens.commands.parse import capture_dict

    doc = capture_dict(cap)
    for k in ("path", "complete", "problems", "integrity"):
        doc.pop(k, None)
    return json.dumps(doc, sort_keys=True, default=str)


def classify(original: Any, mutant: bytes) -> str:
    """detected (refused, or read as partial/corrupt), harmless (read whole and the same as the original),
    missed (read whole but different); a traceback propagates."""
    try:
        cap = decode(mutant, "mutant.iolens")
    except IolensError:
        return "detected"
    if not cap.complete:
        return "detected"
    return "harmless" if fingerprint(cap) == original else "missed"
