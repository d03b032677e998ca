"""Write captures: the container header and records, in the layout of _format.

Used to merge per-process parts into one file and to craft captures in tests.
"""

from __future__ import annotations

import json
import struct
from typing import Any

from iolens import _format as F
from iolens.capture.container import FILE_HDR, REC_HDR, SCHEMA_FIELD, SCHEMA_KIND

_TYPECODE = {name: code for code, name in F.TYPES.items()}
_CHAR = {"u8": "B", "u32": "I", "u64": "Q"}


def file_header(major: int = F.CONTAINER_MAJOR, minor: int = F.CONTAINER_MINOR) -> bytes:
    return FILE_HDR.pack(F.MAGIC, major, minor, FILE_HDR.size)


def record(kind: str, payload: bytes, version: int | None = None) -> bytes:
    kid, ver, _doc = F.KINDS[kind]
    pad = (-len(payload)) % 8
    return REC_HDR.pack(kid, ver if version is None else version, len(payload) + pad) + payload + b"\0" * pad


def schema_payload(layouts: dict[str, tuple[int, int, int, list]] | None = None) -> bytes:
    out = bytearray()
    for _name, (kid, ver, size, fields) in (layouts or F.LAYOUTS).items():
        out += SCHEMA_KIND.pack(kid, ver, size, len(fields))
        for fname, typ, count, off in fields:
            out += SCHEMA_FIELD.pack(fname.encode(), _TYPECODE[typ], count, off, 0)
    return bytes(out)


def pack_fixed(kind: str, values: dict[str, Any], layouts: dict | None = None) -> bytes:
    """The fixed part of a record; unspecified fields are zero."""
    _kid, _ver, size, fields = (layouts or F.LAYOUTS)[kind]
    buf = bytearray(size)
    for name, typ, count, off in fields:
        v = values.get(name, 0)
        if count == 1:
            struct.pack_into("<" + _CHAR[typ], buf, off, v)
        else:
            vals = list(v) if v else [0] * count
            vals += [0] * (count - len(vals))
            struct.pack_into(f"<{count}{_CHAR[typ]}", buf, off, *vals[:count])
    return bytes(buf)


def meta_record(meta: dict[str, Any]) -> bytes:
    return record("META", json.dumps(meta, sort_keys=True).encode())


def string_record(what: str, text: str) -> bytes:
    raw = text.encode("utf-8", "surrogateescape")
    return record("STRING", pack_fixed("STRING", {"what": F.STRING_KINDS[what], "len": len(raw)}) + raw + b"\0")


def file_record(values: dict[str, Any]) -> bytes:
    path = values["path"].encode("utf-8", "surrogateescape")
    vals = dict(values, path_len=len(path))
    return record("FILE", pack_fixed("FILE", vals) + path + b"\0")
