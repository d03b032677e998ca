"""The subcommands, one module each, registered in this explicit list.

Module `iolens.commands.NAME` defines the click command `NAME`.  A command's module is imported only when that
command runs or its own help is shown; `iolens --help` lists the commands from `_summaries.py`, generated from
their docstrings by `gen_summaries.py` (a test checks it is current), so it imports none of them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import click

COMMANDS = ("profile", "parse", "report", "diff", "data", "compare", "bench", "results", "lab", "compress", "cost",
            "replay", "predict", "wrap", "doctor")


def load(name: str) -> click.Command:
    """The click command `name` (one of COMMANDS), importing its module."""
    import importlib

    return getattr(importlib.import_module(f"iolens.commands.{name}"), name)
