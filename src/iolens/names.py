"""Untrusted text (file names, argv, environment, tool output) in every output, one policy.

Names come from the program that was profiled, so they may hold anything a file name can: bytes that are not
UTF-8, escape sequences that clear the screen or set the window title, newlines, bidi overrides, or text that
looks like rich markup.  The capture reader decodes names with `surrogateescape` (as Python does for file names),
so the raw bytes are always recoverable: `os.fsencode(name)`.

- `shown(s)`: the display form for a terminal (and for HTML text): printable characters as they are; control
  and format characters, line separators and undecodable bytes spelled out visibly (`\\e`, `\\n`, `\\x07`,
  `\\xff` for a byte that is not UTF-8, `\\u202e`).  It is for humans and is not reversible.
- `shown_text(s)`: the same as a `rich.text.Text`, which rich never reads as markup.
- `json_safe(text)`: JSON written with `ensure_ascii=False`, with every lone surrogate written as a `\\udcXX`
  escape, so the output is valid UTF-8 and `json.loads` gives back the name exactly (lossless).
- `csv_text(s)`: a CSV field: as `shown`, except that the bytes of a name that is not UTF-8 stay those bytes (with
  `utf8`), so a spreadsheet or `csv.reader` gets the name as the file system holds it whenever it is printable.
- `utf8(s)`: text as UTF-8, with the bytes of a name that is not UTF-8 written back as those bytes (CSV).
"""

from __future__ import annotations

import re
import unicodedata
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from rich.text import Text

_NAMED = {"\x1b": "\\e", "\n": "\\n", "\r": "\\r", "\t": "\\t"}
_SURROGATE = re.compile("[\ud800-\udfff]")


def _visible(ch: str) -> bool:
    return ch.isprintable() or unicodedata.category(ch) == "Zs"  # no-break and other spaces stay spaces


def _spell(ch: str) -> str:
    if ch in _NAMED:
        return _NAMED[ch]
    n = ord(ch)
    if 0xDC80 <= n <= 0xDCFF:  # a byte that was not UTF-8, as surrogateescape keeps it
        return f"\\x{n - 0xDC00:02x}"
    if n < 0x100:
        return f"\\x{n:02x}"
    return f"\\u{n:04x}" if n < 0x10000 else f"\\U{n:08x}"


def _byte(ch: str) -> bool:
    return "\udc80" <= ch <= "\udcff"  # a byte that was not UTF-8, as surrogateescape keeps it


def shown(s: object, *, lines: bool = False, raw_bytes: bool = False) -> str:
    """`s` as text that is safe to print: nothing in it moves the cursor, styles, links or reorders the line.

    lines: keep newlines and tabs (text that is meant to have lines, such as a tool's stderr, in HTML).
    raw_bytes: keep the bytes of a name that is not UTF-8 (for an output written with `utf8`)."""
    s = str(s)
    if s.isprintable():
        return s
    return "".join(ch if _visible(ch) or (lines and ch in "\n\t") or (raw_bytes and _byte(ch)) else _spell(ch)
                   for ch in s)


def csv_text(s: object) -> str:
    """A CSV field (written with `utf8`): control and format characters spelled out as `shown` does, so no field
    holds an escape sequence, a bidi override, a carriage return or a newline; a name's bytes that are not UTF-8
    kept."""
    return shown(s, raw_bytes=True)


def shown_text(s: object, style: str = "") -> Text:
    """`shown(s)` as rich Text: printed as it is, never read as markup."""
    from rich.text import Text

    return Text(shown(s), style=style)


def _escape_surrogate(m: re.Match[str]) -> str:
    return f"\\u{ord(m.group()):04x}"


def json_safe(text: str) -> str:
    """JSON text from `json.dumps(..., ensure_ascii=False)` with lone surrogates escaped (`\\udcff`).

    JSON syntax is ASCII, so a surrogate can only be inside a string, where `\\uXXXX` means the same code point."""
    try:
        text.encode("utf-8")  # fast (C) check: text without a surrogate is returned as it is
        return text
    except UnicodeEncodeError:
        return _SURROGATE.sub(_escape_surrogate, text)


def utf8(s: str) -> bytes:
    """UTF-8, with a name's undecodable bytes written back as they were (other lone surrogates escaped)."""
    try:
        return s.encode("utf-8", "surrogateescape")
    except UnicodeEncodeError:
        return re.sub("[\ud800-\udc7f\udd00-\udfff]", _escape_surrogate, s).encode("utf-8", "surrogateescape")
