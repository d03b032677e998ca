"""The report as JSON: a tag, a [major, minor] schema version, and every key always (null when n/a).

docs/report-json.md documents every key.  Floats are rounded to nanoseconds / 9 significant places
so that output is stable across machines.  Text is UTF-8; a byte of a file name that is not UTF-8 is written as a
`\\udcXX` escape (`os.fsencode` of the loaded string gives the name's bytes back).
"""

from __future__ import annotations

import json
import math
from dataclasses import asdict, fields, is_dataclass
from json.encoder import encode_basestring as _str  # the encoder's own quoting of a str (ensure_ascii=False)
from operator import attrgetter
from typing import Any, Callable, Iterator, Sequence

import numpy as np

from iolens.analysis.model import FileRow, Report
from iolens.names import json_safe

TAG = "iolens-report"
SCHEMA_VERSION = [1, 3]


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
        if key != "files":  # plain data rounded as a small report's are (report_dict)
            yield _utf8(head + _dumps(_clean(_tree(value))))
            continue
        yield _utf8(head + "[")
        for i in range(0, len(value), _PART):
            yield _utf8((", " if i else "") + _rows(value[i : i + _PART]))
        yield b"]"
    yield b"}\n"


def _tree(v: Any) -> Any:
    """`v` as plain data, as asdict makes a report's fields."""
    if is_dataclass(v) and not isinstance(v, type):
        return asdict(v)
    if isinstance(v, (list, tuple)):
        return [_tree(x) for x in v]
    if isinstance(v, dict):
        return {k: _tree(x) for k, x in v.items()}
    return v


def _dumps(value: Any) -> str:
    # a report is a tree of plain data (no object holds itself): the encoder's cycle check only costs time
    return json.dumps(value, default=_plain, ensure_ascii=False, allow_nan=False, check_circular=False)


def _rows(rows: list[Any]) -> str:
    """The rows as `_dumps(rows)[1:-1]` gives them, FileRows encoded a column at a time: each field's values by a
    converter for its type (a breakdown as a column per class), then each row's texts put in one template: the
    per-value work of the encoder's default and of the rounding, done in bulk."""
    if not rows or not all(r.__class__ is FileRow for r in rows):
        return _dumps(rows)[1:-1]
    get, names, rounded = _FIELDS.get(FileRow) or _FIELDS.setdefault(FileRow, _plan(FileRow))
    kinds = {f.name: str(f.type).replace(" | None", "") for f in fields(FileRow)}
    cols: list[Sequence[Any]] = []
    parts = []
    for name, values in zip(names, zip(*map(get, rows))):
        split = _by_key(values) if kinds[name] == "dict[str, float]" else None
        if split is not None:  # a dict of floats per row, each with the same keys: a column per key
            keys, per_key = split
            cols += map(_floats, per_key)
            parts.append(f"{_str(name)}: {{" + ", ".join(f"{_pct(k)}: %s" for k in keys) + "}")
        else:
            cols.append(_column(values, kinds[name], name in rounded))
            parts.append(f"{_pct(name)}: %s")
    template = "{" + ", ".join(parts) + "}"
    return ", ".join(map(template.__mod__, zip(*cols)))


def _pct(key: str) -> str:
    """A key's JSON text in a %-template."""
    return _str(key).replace("%", "%%")


def _by_key(values: tuple[Any, ...]) -> tuple[tuple[str, ...], list[tuple[float, ...]]] | None:
    """The keys of every dict in values and a column of values per key, when all are dicts of floats with the same
    str keys in the same order."""
    if set(map(type, values)) != {dict}:
        return None
    keys = set(map(tuple, values))
    if len(keys) != 1:
        return None
    (ks,) = keys
    if not all(k.__class__ is str for k in ks):
        return None
    per_key = list(zip(*map(dict.values, values))) if ks else []
    if any(set(map(type, col)) - {float} for col in per_key):
        return None
    return ks, per_key


def _column(values: tuple[Any, ...], kind: str, rounded: bool) -> Sequence[Any]:
    """One field's values as objects whose `str` is the text the encoder writes for them (after _round when
    rounded): ints, floats and lists of ints as they are, other values by one conversion for the whole column where
    every value has the field's type (or is None), else each by the encoder."""
    present = set(map(type, values))
    classes = present - {type(None)}
    if kind == "float" and classes <= {float}:
        return _floats(values)
    if rounded or kind not in _BY_KIND or not classes <= {_BY_KIND[kind][0]}:
        return [_dumps(_round(v) if rounded else v) for v in values]
    if kind in ("int", "list[int]"):  # str() of an int, or of a list of ints, is its JSON text
        return values if classes == present else ["null" if v is None else v for v in values]
    conv = _BY_KIND[kind][1]
    try:
        if kind == "list[str]":  # a few distinct lists (flags, tools), each converted once
            keys = list(map(tuple, values))
            memo = {k: conv(k) for k in set(keys)}
            return list(map(memo.__getitem__, keys))
        memo = {v: "null" if v is None else conv(v) for v in set(values)}
        return list(map(memo.__getitem__, values))
    except TypeError:  # a list of another type than its field's
        return [_dumps(v) for v in values]


_P10 = np.array([float(10**i) for i in range(10)])  # 1 to 1e9, each exact
_TIE = 1e-6  # how near a half a scaled value may come before it is rounded one by one (its error is below 1e-7)


def _floats(values: tuple[float | None, ...]) -> list[float | str]:
    """`_num(v)` of each float (or None) of a column, as an object whose `str` is the encoder's text ("null" for
    None and values that are not finite): rounded in bulk, exactly. A value is scaled by the power of ten that puts
    its kept digits before the point (1e9 below 1, else 10 ** (9 - its integer digits)), rounded to an integer, and
    divided back, which gives the double nearest to the rounded decimal, as `round` and `float(f"{v:.9g}")` do,
    since both integers are exact and division is correctly rounded. The scaled product is within 1e-7 of the
    exact one, so its rounding is the exact one's unless it lies within _TIE of a half: those, values of 1e9 and
    above, and values that are not finite are rounded one by one."""
    a = np.array(values, dtype=np.float64)  # None: nan
    mag = np.abs(a)
    digits = np.searchsorted(_P10, mag, side="right")  # integer digits (0 below 1, 10 from 1e9 and for nan)
    scale = _P10[9 - np.minimum(digits, 9)]  # 1e9 below 1, 1e8 from 1 to 10, ..., 1 from 1e8
    with np.errstate(invalid="ignore", over="ignore"):
        y = mag * scale
        one_by_one = (digits > 9) | ~np.isfinite(y) | (np.abs(y - np.floor(y) - 0.5) < _TIE)
        out: list[float | str] = np.copysign(np.rint(y) / scale, a).tolist()
    for i in np.flatnonzero(one_by_one).tolist():
        v = values[i]
        out[i] = "null" if v is None or not math.isfinite(v) else _finite(v)
    return out


def _finite(v: float) -> str:
    """float.__repr__(_num(v)) of a finite v, without the round trip through a float where the rounded text is
    already the shortest one (at most 9 significant digits, so no shorter text gives the same float)."""
    a = abs(v)
    if a >= 1.0:
        s = f"{v:.9g}"
        if "e" not in s:  # below 1e9: written as repr writes it, with ".0" for a whole number
            return s if "." in s else s + ".0"
        return float.__repr__(float(s))
    if a >= 1e-4:  # repr writes 1e-4 and above without an exponent
        s = f"{v:.9f}".rstrip("0")
        return s + "0" if s[-1] == "." else s
    return float.__repr__(round(v, 9))


def _strs(v: list[str]) -> str:
    return "[" + ", ".join(map(_str, v)) + "]"


# field type: (the class of every value, its JSON text); a list of ints as Python writes it is its JSON text (the
# ints of a FileRow's lists come from numpy's tolist(), plain ints)
_BY_KIND: dict[str, tuple[type, Callable[[Any], str]]] = {
    "int": (int, int.__repr__), "str": (str, _str), "bool": (bool, lambda v: "true" if v else "false"),
    "list[int]": (list, list.__repr__), "list[str]": (list, _strs),
}


def _utf8(text: str) -> bytes:
    try:
        return text.encode()
    except UnicodeEncodeError:  # a name's byte that is not UTF-8: escaped, as JSON allows
        return json_safe(text).encode()
