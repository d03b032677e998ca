"""Write captures: the container header and records, in the layout of _format.

Used to merge per-process parts into one file and to craft captures in tests.  `Sealer` writes a sealed
capture: a CHECK record after the header and after every block of records, the last one the trailer.
"""

from __future__ import annotations

import json
import struct
from typing import Any, BinaryIO

from iolens import _format as F
from iolens.capture.container import CHECK, CHECK_FINAL, FILE_HDR, REC_HDR, SCHEMA_FIELD, SCHEMA_KIND, crc32c
from iolens.capture.layout import STRUCT_CHAR

_TYPECODE = {name: code for code, name in F.TYPES.items()}


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
            struct.pack_into("<" + STRUCT_CHAR[typ], buf, off, v)
        else:
            vals = list(v) if v else [0] * count
            vals += [0] * (count - len(vals))
            struct.pack_into(f"<{count}{STRUCT_CHAR[typ]}", buf, off, *vals[:count])
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


_CHECK_ID = F.KINDS["CHECK"][0]
_PROC_ID = F.KINDS["PROC"][0]


class Sealer:
    """Writes a sealed capture to `out`: the file header, then records, each block closed by a CHECK.

        s = Sealer(out)             # writes the header and the first CHECK
        s.add(meta_record(meta)); s.close_block()
        s.add(records_of_a_part, part=True); s.close_block()
        s.finish()                  # the trailer
    """

    def __init__(self, out: BinaryIO, block: int = F.CHECK_BLOCK):
        self.out, self.block = out, block
        self.pos = self.start = self.crc = 0
        self.seq = self.records = self.procs = self.parts = 0
        self._write(file_header())
        self.close_block()

    def _write(self, data: bytes | memoryview) -> None:
        self.out.write(data)
        self.crc = crc32c(data, self.crc)
        self.pos += len(data)

    def add(self, records: bytes, *, part: bool = False) -> None:
        """Whole records (as `record` makes them); a block is closed at a record boundary once it is large."""
        view, pos = memoryview(records), 0
        self.parts += part
        while pos + REC_HDR.size <= len(view):
            kid, _ver, size = REC_HDR.unpack_from(view, pos)
            end = pos + REC_HDR.size + size
            self._write(view[pos:end])
            self.records += 1
            self.procs += kid == _PROC_ID
            pos = end
            if self.pos - self.start >= self.block:
                self.close_block()

    def close_block(self, *, final: bool = False) -> None:
        if self.seq and self.pos == self.start and not final:
            return  # nothing since the last CHECK
        fields = CHECK.pack(self.seq, self.start, self.records, self.procs, self.parts,
                            CHECK_FINAL if final else 0, 0)[:-4]
        head = REC_HDR.pack(_CHECK_ID, F.KINDS["CHECK"][1], CHECK.size) + fields
        self._write(head)
        self._write(struct.pack("<I", self.crc))
        self.seq += 1
        self.start, self.crc = self.pos, 0

    def finish(self) -> None:
        """The trailer: closes the last block and says nothing follows."""
        self.close_block(final=True)


def seal(records: bytes) -> bytes:
    """A sealed capture holding `records` (whole records, no file header), in one block: for tests."""
    import io

    buf = io.BytesIO()
    s = Sealer(buf)
    s.add(records)
    s.finish()
    return buf.getvalue()
