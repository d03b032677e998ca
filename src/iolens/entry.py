"""The `iolens` script.  `iolens --help` and `iolens --version` are answered here without importing click: the
help is the text click renders for the group at a terminal of 80 columns or more, pre-rendered into
`commands/_summaries.py` by `gen_summaries.py` (a test checks both that it is current and that it equals what the
click group prints).  Everything else, and the help on a narrower terminal, goes to `iolens.cli`."""

from __future__ import annotations

import os
import sys

HELP_COLUMNS = 80  # click wraps help at min(columns, 80) - 2: from 80 columns on, the text is the same


def _columns() -> int:
    """The terminal's columns, as shutil.get_terminal_size (which click uses) finds them."""
    try:
        cols = int(os.environ["COLUMNS"])
    except (KeyError, ValueError):
        cols = 0
    stdout = sys.__stdout__
    if cols <= 0 and stdout is not None:
        try:
            cols = os.get_terminal_size(stdout.fileno()).columns
        except (AttributeError, ValueError, OSError):
            cols = 0
    return cols or 80


def main() -> None:
    args = sys.argv[1:]
    if os.path.basename(sys.argv[0]) == "iolens" and args in (["--version"], ["--help"], ["-h"]):
        if args == ["--version"]:
            from iolens import __version__

            sys.stdout.write(f"iolens, version {__version__}\n")
            return
        if _columns() >= HELP_COLUMNS:
            from iolens.commands._summaries import HELP

            sys.stdout.write(HELP)
            return
    from iolens.cli import run

    run()
