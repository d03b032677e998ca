"""The container's own structs (file header, record header, SCHEMA entries), defined once for the reader, the
writer and the merger.  Their formats come from the generated `_format` module, which the build derives from
`native/include/iolens_format.h` (member offsets and sizes as the C compiler lays them out).  The CRC-32C of
CHECK blocks comes from google-crc32c (hardware-accelerated where the CPU has it)."""

from __future__ import annotations

import struct

import google_crc32c

from iolens import _format as F

FILE_HDR = struct.Struct(F.STRUCTS["FILE_HDR"])  # magic, major, minor, header size
REC_HDR = struct.Struct(F.STRUCTS["REC_HDR"])  # kind id, kind version, payload size
SCHEMA_KIND = struct.Struct(F.STRUCTS["SCHEMA_KIND"])  # kind id, version, fixed size, number of fields
SCHEMA_FIELD = struct.Struct(F.STRUCTS["SCHEMA_FIELD"])  # name, type code, count, offset, padding
CHECK = struct.Struct(F.STRUCTS["CHECK"])  # seq, block start, records, PROC records, parts, flags, CRC-32C
CHECK_FINAL = F.CHECK_FLAGS["FINAL"][0]


def crc32c(data: bytes | memoryview, crc: int = 0) -> int:
    """CRC-32C (Castagnoli) of `data`, continuing from `crc`: the checksum of a CHECK block."""
    return google_crc32c.extend(crc, data if isinstance(data, bytes) else bytes(data))
