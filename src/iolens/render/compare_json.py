"""JSON export of a compare report: the report dict itself (documented in docs/compare.md)."""

from __future__ import annotations

import json
import math
from typing import Any


def _clean(v: Any) -> Any:
    if isinstance(v, float) and not math.isfinite(v):
        return None
    if isinstance(v, dict):
        return {k: _clean(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [_clean(x) for x in v]
    return v


def render_json(rep: dict[str, Any]) -> bytes:
    return (json.dumps(_clean(rep), indent=2, allow_nan=False) + "\n").encode()
