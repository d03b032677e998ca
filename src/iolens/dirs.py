"""Where iolens keeps its files: an explicit IOLENS_* variable, else the XDG base directory, else its default."""

from __future__ import annotations

import os
from pathlib import Path

XDG_DEFAULTS = {"XDG_DATA_HOME": (".local", "share"), "XDG_STATE_HOME": (".local", "state"),
                "XDG_CACHE_HOME": (".cache",)}


def user_path(override: str, xdg: str, *parts: str) -> Path:
    """$override if set, else $xdg/iolens/PARTS (the XDG default under ~ when $xdg is unset)."""
    env = os.environ.get(override)
    if env:
        return Path(env)
    base = os.environ.get(xdg) or os.path.join(os.path.expanduser("~"), *XDG_DEFAULTS[xdg])
    return Path(base, "iolens", *parts)
