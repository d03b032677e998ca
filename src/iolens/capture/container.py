"""The container's own structs (file header, record header, SCHEMA entries), defined once for the reader, the
writer and the merger.  Their formats come from the generated `_format` module, which the build derives from
`native/include/iolens_format.h` (member offsets and sizes as the C compiler lays them out)."""

from __future__ import annotations

import struct

from iolens import _format as F

FILE_HDR = struct.Struct(F.STRUCTS["FILE_HDR"])  # magic, major, minor, header size
REC_HDR = struct.Struct(F.STRUCTS["REC_HDR"])  # kind id, kind version, payload size
SCHEMA_KIND = struct.Struct(F.STRUCTS["SCHEMA_KIND"])  # kind id, version, fixed size, number of fields
SCHEMA_FIELD = struct.Struct(F.STRUCTS["SCHEMA_FIELD"])  # name, type code, count, offset, padding
