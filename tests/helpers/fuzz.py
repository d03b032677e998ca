"""What "every reader path is total" means, as code: the fuzz target and the capture mutators (a test harness,
kept beside the tests, outside the package).

`exercise(data)` reads `data` as a capture and, when something was read, builds the report and renders it in every
format, and dumps it as `iolens parse` does.  It may raise `IolensError` (a one-line error) and nothing else; any
other exception is a bug.  `mutate()` makes the three kinds of damage a capture meets (a cut, an insertion, a
changed byte), and `classify()` says whether the reader noticed.  `statuses()` runs every command that reads a
capture on one file, which must all give the same exit status.  Used by tests/test_fuzz_reader.py,
tests/test_capture_commands.py and benchmarks/fuzz_capture.py.
"""

from __future__ import annotations

import io
import json
import random
from pathlib import Path
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
    from iolens.render import exports
    from iolens.render.report_text import render_report_text

    rep = build_report(cap, with_overrides([]))
    subject = exports.Exported(rep, capture=cap, sample="fuzz")
    for fmt in exports.offered("report"):  # every format the report is written in, from the one registry
        exports.render("report", fmt.name, subject)
    out = io.StringIO()
    render_report_text(rep, Console(file=out, width=120, highlight=False, soft_wrap=False))
    _encodes(out.getvalue())
    from iolens.analysis.diff import diff_reports
    from iolens.render.diff_text import render_diff_text

    d = diff_reports(rep, rep)
    for fmt in exports.offered("diff"):
        exports.render("diff", fmt.name, d)
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


READERS = ("report", "parse", "diff", "replay", "predict", "cost")  # every command that reads a capture


class Readers:
    """Runs each command that reads a capture on a file, in this process, with what each needs in `work`: a
    target directory (predict calibrates it once, into a results store of its own) and fresh output names.  The
    replay writes its plan as a fio iolog, touching no storage."""

    def __init__(self, work: Path):
        self.work = work
        self.target = work / "target"
        self.target.mkdir(parents=True, exist_ok=True)
        self.env = {"IOLENS_DB": str(work / "results.sqlite")}
        self.n = 0

    def argv(self, command: str, cap: Path) -> list[str]:
        self.n += 1
        out, t = str(self.work / f"out{self.n}"), str(self.target)
        return {
            "report": ["report", "-q", str(cap)],
            "parse": ["parse", "--json", str(cap)],
            "diff": ["diff", str(cap), str(cap), "--json", out],
            "replay": ["replay", str(cap), "--fio-iolog", out],
            "predict": ["predict", str(cap), "--on", t, "--home", t, "--json", out],
            "cost": ["cost", "--option", "aws:s3-standard-ia=10", "--capture", str(cap), "--no-store", "--json", out],
        }[command]

    def invoke(self, argv: list[str]) -> Any:
        """click's result of `iolens ARGV`; an exception other than the exit is a bug, raised."""
        from click.testing import CliRunner

        from iolens.cli import main

        res = CliRunner().invoke(main, argv, env=self.env)
        if res.exception is not None and not isinstance(res.exception, SystemExit):
            raise RuntimeError(f"iolens {' '.join(argv)}: {res.exception!r}") from res.exception
        return res

    def statuses(self, cap: Path, commands: tuple[str, ...] = READERS) -> dict[str, tuple[int, str]]:
        """Each command's exit status and stderr on `cap`."""
        out = {}
        for c in commands:
            res = self.invoke(self.argv(c, cap))
            out[c] = (res.exit_code, res.stderr)
        return out
