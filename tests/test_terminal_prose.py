"""Prose on a terminal folds as it does on a pipe: at the width, each continuation under the line's own indent and
two more spaces, a figure kept with its unit; a print that asks for its own layout is left alone."""

from __future__ import annotations

import io

import pytest

from iolens.render.terminal import console

LINE = "  " + "some words " * 5 + "took 1.5 s " + "then more words " * 4 + "and the end"


@pytest.mark.parametrize("terminal", [True, False], ids=["terminal", "pipe-with-COLUMNS"])
def test_prose_hangs_its_continuations_at_the_width(monkeypatch, terminal):
    monkeypatch.setenv("COLUMNS", "60")
    monkeypatch.delenv("IOLENS_TERMINAL", raising=False)
    buf = io.StringIO()
    con = console(file=buf, force_terminal=terminal, color_system=None)
    con.print(LINE)
    lines = buf.getvalue().splitlines()
    assert len(lines) > 1 and lines[0].startswith("  some"), lines
    assert all(ln.startswith("    ") and not ln.startswith("     ") for ln in lines[1:]), lines
    assert all(len(ln) <= 60 and ln == ln.rstrip() for ln in lines), lines
    assert any("took 1.5 s" in ln for ln in lines), lines  # a figure kept with its unit


def test_a_print_with_its_own_layout_is_not_folded(monkeypatch):
    monkeypatch.setenv("COLUMNS", "60")
    buf = io.StringIO()
    con = console(file=buf, force_terminal=True, color_system=None)
    con.print(LINE, soft_wrap=True)
    assert buf.getvalue() == LINE + "\n"
