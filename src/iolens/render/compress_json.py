"""JSON export of `iolens compress`: the result document as computed (tag, schema_version, every key)."""

from __future__ import annotations

import json
from typing import Any


def render_json(doc: dict[str, Any]) -> bytes:
    return (json.dumps(doc, indent=2, sort_keys=False, default=str) + "\n").encode()
