"""The "Where the time went" bar and legend without colour (a file, a pipe, NO_COLOR): each category is drawn with
its own character, so the bar's segments can be matched to the legend's rows."""

from __future__ import annotations

import io
import os

from rich.console import Console

from conftest import datapath, iolens
from iolens.analysis.report import build_report
from iolens.capture.reader import read_capture
from iolens.render.report_text import render_report_text

CAPTURE = datapath("report", "small.iolens")


def legend(out: str) -> tuple[str, dict[str, str]]:
    """The bar and each category row's swatch, from the report's text."""
    lines = out.splitlines()
    at = next(i for i, line in enumerate(lines) if line.startswith("Where the time went"))
    bar_at = next(i for i in range(at + 1, len(lines)) if lines[i].startswith("  ") and lines[i].strip()
                  and not lines[i].startswith("  waits"))
    rows: dict[str, str] = {}
    for line in lines[bar_at + 1:]:
        if not line.strip():
            break
        parts = [p.strip() for p in line.split("│")]
        if len(parts) == 4 and parts[0]:
            rows[parts[1]] = parts[0]
    return lines[bar_at].strip(), rows


def check(out: str) -> None:
    bar, rows = legend(out)
    assert len(rows) >= 5, rows
    assert all(len(set(s)) == 1 and len(s) == 2 for s in rows.values()), rows
    glyphs = [s[0] for s in rows.values()]
    assert len(set(glyphs)) == len(glyphs), f"two rows share a swatch: {rows}"
    assert len(bar) == 72
    assert set(bar) <= set(glyphs), (bar, rows)
    assert len(set(bar)) >= 3, bar  # the bar is made of several categories' characters, not one block
    # the widest segment is the largest category's character
    assert max(set(bar), key=bar.count) == rows["compute"][0]


def test_piped_report_draws_each_category_with_its_own_character():
    env = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "IOLENS_TERMINAL", "NO_COLOR")}
    res = iolens("report", CAPTURE, env=env, check=True)
    assert "\x1b" not in res.stdout
    check(res.stdout)


def test_no_color_on_a_terminal_draws_characters_too():
    env = {k: v for k, v in os.environ.items() if k != "COLUMNS"}
    res = iolens("report", CAPTURE, env={**env, "IOLENS_TERMINAL": "120", "NO_COLOR": "1"}, check=True)
    check(res.stdout)


def test_colour_terminal_keeps_coloured_blocks():
    buf = io.StringIO()
    render_report_text(build_report(read_capture(CAPTURE)),
                       Console(file=buf, width=120, force_terminal=True, color_system="standard"))
    out = buf.getvalue()
    assert "\x1b[" in out and "██" in out and "▓▓" not in out
