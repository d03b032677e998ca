"""Record layouts: the ones this build writes, and those a capture describes in its own SCHEMA record."""

from __future__ import annotations

import struct
from dataclasses import dataclass
from typing import Any

import numpy as np

from iolens import _format as F
from iolens.capture.container import SCHEMA_FIELD, SCHEMA_KIND

KIND_BY_ID = {kid: name for name, (kid, _ver, _doc) in F.KINDS.items()}
KNOWN_VERSION = {name: ver for name, (_kid, ver, _doc) in F.KINDS.items()}
STRUCT_CHAR = {"u8": "B", "u32": "I", "u64": "Q"}  # each of _format's TYPES as a struct format character
_TYPESIZE = {typ: struct.calcsize("<" + c) for typ, c in STRUCT_CHAR.items()}
MAX_RECORD = 1 << 31
# No counter, time (ns since 1970: 2^62 is the year 2116), size or offset the interposer writes reaches 2^62, so a
# larger value is damage; keeping values below it also keeps the analysis's int64 sums from overflowing.
MAX_VALUE = 1 << 62
# Identities, not quantities: never summed, and a filesystem may use all 64 bits of them (rclone's FUSE mount gives
# files inode numbers such as 18053519015812245239), so they are exempt from the range check.
IDENTITY_FIELDS = frozenset({"dev", "ino"})


@dataclass
class Layout:
    """A fixed record layout: field name -> (type, count, offset)."""

    kind: str
    version: int
    size: int
    fields: list[tuple[str, str, int, int]]
    _struct: struct.Struct | None = None
    _build: Any = None
    _ints: bool = True  # every value is an integer (no u8 text), so one max() checks the range
    _ident: frozenset[int] = frozenset()  # positions in the unpacked values of IDENTITY_FIELDS

    def compile(self) -> None:
        fmt, items, pos, i = ["<"], [], 0, 0
        ident: set[int] = set()
        cur = _CURRENT.get(self.kind)
        known = {f[0]: f for f in cur.fields} if cur is not None and cur is not self else {}
        for name, typ, count, off in sorted(self.fields, key=lambda f: f[3]):
            if off < pos:
                raise ValueError(f"SCHEMA for {self.kind} is damaged (field {name!r} overlaps another)")
            want = known.get(name)
            if want is not None and ((want[1] == "u8") != (typ == "u8") or (want[2] == 1) != (count == 1)
                                     or count > want[2]):
                raise ValueError(f"SCHEMA for {self.kind} is damaged (field {name!r} has the wrong shape)")
            if off > pos:
                fmt.append(f"{off - pos}x")
            if name in IDENTITY_FIELDS and typ != "u8" and count == 1:
                ident.add(i)
            if typ == "u8":
                fmt.append(f"{count}s")
                items.append(f"{name!r}: v[{i}]")
                i += 1
            else:
                fmt.append(f"{count}{STRUCT_CHAR[typ]}")
                # an older, shorter array is upgraded by filling the entries it lacks with zero
                pad = f" + (0,) * {want[2] - count}" if want is not None and want[2] > count else ""
                items.append(f"{name!r}: v[{i}]" if count == 1 else f"{name!r}: v[{i}:{i + count}]{pad}")
                i += count
            pos = off + count * _TYPESIZE[typ]
        if self.size > pos:
            fmt.append(f"{self.size - pos}x")
        # fields this (older) layout lacks, filled with zero so readers see every current key
        have = {f[0] for f in self.fields}
        for name, _typ, count, _off in cur.fields if known and cur is not None else []:
            if name not in have:
                items.append(f"{name!r}: " + ("0" if count == 1 else f"(0,) * {count}"))
        self._struct = struct.Struct("".join(fmt))
        # one dict display per record is much faster than a loop over fields
        self._ints = all(f[1] != "u8" for f in self.fields)
        self._ident = frozenset(ident)
        self._build = eval("lambda v: {" + ", ".join(items) + "}")  # noqa: S307 - built from field names

    def decode(self, buf: bytes | memoryview, offset: int = 0) -> dict[str, Any]:
        if self._struct is None:
            self.compile()
        assert self._struct is not None
        v = self._struct.unpack_from(buf, offset)
        if self._ints and v and max(v) >= MAX_VALUE and any(
                x >= MAX_VALUE for j, x in enumerate(v) if j not in self._ident):
            raise ValueError(f"a {self.kind} value is out of range")
        return self._build(v)


def current_layouts() -> dict[str, Layout]:
    return {
        name: Layout(name, ver, size, list(fields)) for name, (_kid, ver, size, fields) in F.LAYOUTS.items()
    }


_CURRENT = current_layouts()
NUMPY_TYPE = {"u8": "u1", "u32": "<u4", "u64": "<u8"}  # a SCHEMA field type as numpy's


def layout_dtype(layout: Layout) -> np.dtype:
    """A layout as a numpy structured dtype: each field at its offset, arrays as sub-arrays, records of its size."""
    names, formats, offsets = [], [], []
    for name, typ, count, off in layout.fields:
        names.append(name)
        formats.append(NUMPY_TYPE[typ] if count == 1 else (NUMPY_TYPE[typ], (count,)))
        offsets.append(off)
    return np.dtype({"names": names, "formats": formats, "offsets": offsets, "itemsize": layout.size})


def packed_dtype(layout: Layout) -> np.dtype:
    """The fields of a layout packed in their order: what a table of records is held in once read."""
    return np.dtype([(name, NUMPY_TYPE[typ]) if count == 1 else (name, NUMPY_TYPE[typ], (count,))
                     for name, typ, count, _off in layout.fields])


def parse_schema(payload: bytes | memoryview, where: str) -> dict[int, Layout]:
    layouts: dict[int, Layout] = {}
    pos = 0
    while pos + SCHEMA_KIND.size <= len(payload):
        kid, ver, size, nfields = SCHEMA_KIND.unpack_from(payload, pos)
        pos += SCHEMA_KIND.size
        if pos + nfields * SCHEMA_FIELD.size > len(payload):
            raise ValueError("SCHEMA record is damaged")
        fields = []
        for _ in range(nfields):
            raw, typ, count, off, _pad = SCHEMA_FIELD.unpack_from(payload, pos)
            pos += SCHEMA_FIELD.size
            name = raw.split(b"\0", 1)[0].decode("ascii", "replace")
            if typ not in F.TYPES or not 0 < count <= 1 << 16 or off + count * _TYPESIZE[F.TYPES[typ]] > size:
                raise ValueError(f"SCHEMA record is damaged (field {name!r})")
            fields.append((name, F.TYPES.get(typ, "u64"), count, off))
        kname = KIND_BY_ID.get(kid, f"KIND{kid}")
        layouts[kid] = Layout(kname, ver, size, fields)
    return layouts
