"""JSON export of a cost report: the report dict itself (tag iolens-cost, schema [major, minor]; docs/cost.md)."""

from __future__ import annotations

from typing import Any

from iolens.render.compare_json import render_json as _compare_json


def render_json(rep: dict[str, Any]) -> bytes:
    return _compare_json(rep)  # same rules: indented, non-finite numbers as null
