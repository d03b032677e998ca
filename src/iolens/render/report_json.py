"""The report as JSON: a tag, a [major, minor] schema version, and every key always (null when n/a).

docs/report-json.md documents every key.  Floats are rounded to nanoseconds / 9 significant places
so that output is stable across machines.
"""

from __future__ import annotations

import json
import math
from dataclasses import asdict, is_dataclass
from typing import Any

TAG = "iolens-report"
SCHEMA_VERSION = [1, 0]


def _clean(v: Any) -> Any:
    if isinstance(v, float):
        if not math.isfinite(v):
            return None
        return float(f"{v:.9g}") if abs(v) >= 1 else round(v, 9)
    if isinstance(v, dict):
        return {str(k): _clean(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [_clean(x) for x in v]
    if hasattr(v, "item") and not isinstance(v, (str, bytes)):  # numpy scalars
        return _clean(v.item())
    return v


def report_dict(report) -> dict[str, Any]:
    d = asdict(report) if is_dataclass(report) else dict(report)
    return _clean({"tag": TAG, "schema_version": SCHEMA_VERSION, **d})


def render_json(report, *, indent: int | None = 1) -> bytes:
    return (json.dumps(report_dict(report), indent=indent, ensure_ascii=False, allow_nan=False) + "\n").encode()
