"""The report as JSON: a tag, a [major, minor] schema version, and every key always (null when n/a).

docs/report-json.md documents every key.  Floats are rounded to nanoseconds / 9 significant places
so that output is stable across machines.  Text is UTF-8; a byte of a file name that is not UTF-8 is written as a
`\\udcXX` escape (`os.fsencode` of the loaded string gives the name's bytes back).
"""

from __future__ import annotations

import json
import math
from dataclasses import asdict, fields, is_dataclass
from operator import attrgetter
from typing import Any, Iterator

from iolens.analysis.model import Report
from iolens.names import json_safe

TAG = "iolens-report"
SCHEMA_VERSION = [1, 2]


def _num(v: float) -> float | None:
    """A float rounded to nanoseconds / 9 significant places (None when not finite)."""
    if v == 0.0:  # most of a large report's floats: as round() gives it
        return v
    if not math.isfinite(v):
        return None
    return float(f"{v:.9g}") if abs(v) >= 1 else round(v, 9)


def _clean(v: Any) -> Any:
    if isinstance(v, float):
        return _num(v)
    if isinstance(v, dict):
        return {str(k): _clean(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [_clean(x) for x in v]
    if hasattr(v, "item") and not isinstance(v, (str, bytes)):  # numpy scalars
        return _clean(v.item())
    return v


_FIELDS: dict[type, tuple[Any, tuple[str, ...], tuple[str, ...]]] = {}
_EXACT = ("str", "int", "bool", "list[int]", "list[str]")  # field types whose values JSON writes as they are


def _plan(t: type) -> tuple[Any, tuple[str, ...], tuple[str, ...]]:
    """A dataclass's fields, fetched at once, and those that may hold a float to round (read once per type)."""
    if not is_dataclass(t):
        raise TypeError(f"cannot write {t.__name__} as JSON")
    fs = fields(t)
    names = tuple(f.name for f in fs)
    rounded = tuple(f.name for f in fs if str(f.type).replace(" | None", "") not in _EXACT)
    get = attrgetter(*names) if len(names) > 1 else (lambda o: (getattr(o, names[0]),))
    return get, names, rounded


def _plain(o: Any) -> Any:
    """json.dumps default: a dataclass as a dict of its fields, rounded like _clean."""
    plan = _FIELDS.get(type(o))
    if plan is None:
        plan = _FIELDS[type(o)] = _plan(type(o))
    get, names, rounded = plan
    d = dict(zip(names, get(o)))
    for k in rounded:
        d[k] = _round(d[k])
    return d


def _round(v: Any) -> Any:
    if isinstance(v, float):
        return _num(v)
    if isinstance(v, dict) and v and isinstance(next(iter(v.values())), float):
        return {k: _num(x) if isinstance(x, float) else _clean(x) for k, x in v.items()}
    return v


def report_dict(report: Report | dict[str, Any]) -> dict[str, Any]:
    d = asdict(report) if isinstance(report, Report) else dict(report)
    return _clean({"tag": TAG, "schema_version": SCHEMA_VERSION, **d})


LARGE = 2000  # files in a report written compactly, in parts
_PART = 2000  # files in each part


def render_json(report: Report, *, indent: int | None = 1) -> bytes:
    """The whole document at once (see iter_json)."""
    return b"".join(iter_json(report, indent=indent))


def iter_json(report: Report, *, indent: int | None = 1) -> Iterator[bytes]:
    """The document in parts. Small reports are indented, in one part; large ones (over LARGE files) are written
    compactly, which is much faster, and their file list a few thousand rows at a time, so that neither the whole
    text nor its bytes are ever held (the same bytes as one compact `json.dumps`)."""
    if not (is_dataclass(report) and len(getattr(report, "files", ())) > LARGE):
        yield _utf8(json.dumps(report_dict(report), indent=indent, ensure_ascii=False, allow_nan=False) + "\n")
        return
    doc = {"tag": TAG, "schema_version": SCHEMA_VERSION, **{f.name: getattr(report, f.name) for f in fields(report)}}
    sep = "{"
    for key, value in doc.items():
        head = f"{sep}{json.dumps(key, ensure_ascii=False)}: "
        sep = ", "
        if key != "files":
            yield _utf8(head + _dumps(value))
            continue
        yield _utf8(head + "[")
        for i in range(0, len(value), _PART):
            yield _utf8((", " if i else "") + _dumps(value[i : i + _PART])[1:-1])
        yield b"]"
    yield b"}\n"


def _dumps(value: Any) -> str:
    # a report is a tree of plain data (no object holds itself): the encoder's cycle check only costs time
    return json.dumps(value, default=_plain, ensure_ascii=False, allow_nan=False, check_circular=False)


def _utf8(text: str) -> bytes:
    try:
        return text.encode()
    except UnicodeEncodeError:  # a name's byte that is not UTF-8: escaped, as JSON allows
        return json_safe(text).encode()
