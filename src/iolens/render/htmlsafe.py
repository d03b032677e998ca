"""Escaping for the HTML exporters: text for the page, JSON for a <script> element."""

from __future__ import annotations

import html
import json
from typing import Any

from iolens.names import json_safe, shown


def esc(s: Any) -> str:
    """Any value as HTML text, safe in element content and in quoted attribute values; control characters other
    than newline and tab, and bytes that are not UTF-8, spelled out as in the terminal (`iolens.names.shown`)."""
    return html.escape(shown(s, lines=True), quote=True)


def esc_line(s: Any) -> str:
    """One line of HTML text: as `esc`, with a newline spelled out (\\n) as in the terminal."""
    return html.escape(shown(s), quote=True)


def script_json(obj: Any) -> str:
    """JSON that can sit inside <script type="application/json"> whatever the strings hold."""
    text = json_safe(json.dumps(obj, ensure_ascii=False, allow_nan=False, separators=(",", ":")))
    return (text.replace("&", "\\u0026").replace("<", "\\u003c").replace(">", "\\u003e")
            .replace("\u2028", "\\u2028").replace("\u2029", "\\u2029"))
