"""Read a capture: the container header, then records decoded by their embedded SCHEMA.

Layouts come from the capture itself, so an older capture reads with its own
layout and is upgraded by filling the fields it lacks with zero.  A capture
from a newer container major version, or with a record kind newer than this
reader, is refused with a message.  A truncated or damaged capture raises
nothing by itself: the problem is kept in `Capture.problems` (file and byte
offset) and everything before it stays readable; `read_capture(strict=True)`
raises `CaptureTruncated` instead.
"""

from __future__ import annotations

import json
import struct
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterator

import numpy as np

from iolens import _format as F
from iolens.capture.container import FILE_HDR, REC_HDR, SCHEMA_FIELD, SCHEMA_KIND
from iolens.errors import CaptureError, CaptureTruncated

KIND_BY_ID = {kid: name for name, (kid, _ver, _doc) in F.KINDS.items()}
KNOWN_VERSION = {name: ver for name, (_kid, ver, _doc) in F.KINDS.items()}
_TYPECHAR = {"u8": "B", "u32": "I", "u64": "Q"}
_TYPESIZE = {"u8": 1, "u32": 4, "u64": 8}
MAX_RECORD = 1 << 31


@dataclass
class Layout:
    """A fixed record layout: field name -> (type, count, offset)."""

    kind: str
    version: int
    size: int
    fields: list[tuple[str, str, int, int]]
    _struct: struct.Struct | None = None
    _build: Any = None

    def compile(self) -> None:
        fmt, items, pos, i = ["<"], [], 0, 0
        for name, typ, count, off in sorted(self.fields, key=lambda f: f[3]):
            if off < pos:
                raise ValueError(f"SCHEMA for {self.kind} is damaged (field {name!r} overlaps another)")
            if off > pos:
                fmt.append(f"{off - pos}x")
            if typ == "u8":
                fmt.append(f"{count}s")
                items.append(f"{name!r}: v[{i}]")
                i += 1
            else:
                fmt.append(f"{count}{_TYPECHAR[typ]}")
                items.append(f"{name!r}: v[{i}]" if count == 1 else f"{name!r}: v[{i}:{i + count}]")
                i += count
            pos = off + count * _TYPESIZE[typ]
        if self.size > pos:
            fmt.append(f"{self.size - pos}x")
        # fields this (older) layout lacks, filled with zero so readers see every current key
        have = {f[0] for f in self.fields}
        cur = _CURRENT.get(self.kind)
        for name, _typ, count, _off in cur.fields if cur is not None and cur is not self else []:
            if name not in have:
                items.append(f"{name!r}: " + ("0" if count == 1 else f"(0,) * {count}"))
        self._struct = struct.Struct("".join(fmt))
        # one dict display per record is much faster than a loop over fields
        self._build = eval("lambda v: {" + ", ".join(items) + "}")  # noqa: S307 - built from field names

    def decode(self, buf: bytes | memoryview, offset: int = 0) -> dict[str, Any]:
        if self._struct is None:
            self.compile()
        return self._build(self._struct.unpack_from(buf, offset))


def current_layouts() -> dict[str, Layout]:
    return {
        name: Layout(name, ver, size, list(fields)) for name, (_kid, ver, size, fields) in F.LAYOUTS.items()
    }


_CURRENT = current_layouts()


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


@dataclass
class RawRecord:
    kind: str
    version: int
    offset: int
    payload: memoryview


def iter_records(data: bytes, path: str, problems: list[str]) -> Iterator[RawRecord]:
    """Records after the container header; damage is appended to `problems` and ends the walk."""
    if len(data) < FILE_HDR.size:
        raise CaptureError(f"{path}: not an iolens capture (only {len(data)} bytes)")
    magic, major, minor, hdr_size = FILE_HDR.unpack_from(data, 0)
    if magic != F.MAGIC:
        raise CaptureError(f"{path}: not an iolens capture (bad magic)")
    if major > F.CONTAINER_MAJOR:
        raise CaptureError(
            f"{path}: written by a newer iolens (capture format {major}.{minor}, this iolens reads "
            f"{F.CONTAINER_MAJOR}.x); upgrade iolens to read it"
        )
    pos = hdr_size
    view = memoryview(data)
    n = len(data)
    while pos < n:
        if pos + REC_HDR.size > n:
            problems.append(f"{path}: record header cut short at byte {pos}")
            return
        kid, ver, size = REC_HDR.unpack_from(data, pos)
        if kid == 0:
            return
        kind = KIND_BY_ID.get(kid)
        if kind is None or size % 8 or size > MAX_RECORD:
            problems.append(f"{path}: damaged record (kind {kid}, size {size}) at byte {pos}")
            return
        if pos + REC_HDR.size + size > n:
            problems.append(f"{path}: {kind} record cut short at byte {pos}")
            return
        if ver > KNOWN_VERSION[kind]:
            raise CaptureError(
                f"{path}: {kind} record version {ver} at byte {pos} is newer than this iolens reads "
                f"(version {KNOWN_VERSION[kind]}); upgrade iolens to read it"
            )
        yield RawRecord(kind, ver, pos, view[pos + REC_HDR.size : pos + REC_HDR.size + size])
        pos += REC_HDR.size + size


@dataclass
class Process:
    """One process image: its PROC fields plus what belongs to it."""

    fields: dict[str, Any]
    exe: str = ""
    argv: list[str] = field(default_factory=list)
    cwd: str = ""
    host: str = ""
    env: dict[str, str] = field(default_factory=dict)
    files: list[dict[str, Any]] = field(default_factory=list)
    timeline: dict[str, Any] | None = None
    children: list[dict[str, Any]] = field(default_factory=list)
    events: np.ndarray | None = None
    offset: int = 0

    def __getattr__(self, name: str) -> Any:
        try:
            return self.__dict__["fields"][name]
        except KeyError:
            raise AttributeError(name) from None

    @property
    def finalized(self) -> bool:
        return bool(self.fields["flags"] & F.PROC_FLAGS["FINALIZED"][0])


@dataclass
class Capture:
    path: str
    meta: dict[str, Any]
    processes: list[Process]
    problems: list[str]
    version: tuple[int, int]

    @property
    def complete(self) -> bool:
        return not self.problems


def _event_dtype(layout: Layout) -> np.dtype:
    names, formats, offsets = [], [], []
    for name, typ, count, off in layout.fields:
        names.append(name)
        formats.append({"u8": "u1", "u32": "<u4", "u64": "<u8"}[typ])
        offsets.append(off)
    return np.dtype({"names": names, "formats": formats, "offsets": offsets, "itemsize": layout.size})


class _Decoder:
    """Decodes records in order; SCHEMA changes the layouts for the records after it."""

    def __init__(self, path: str):
        self.path = path
        self.problems: list[str] = []
        self.meta: dict[str, Any] = {}
        self.procs: list[Process] = []
        self.byname: dict[str, Layout] = {}
        self.cur: Process | None = None

    def layout(self, kind: str, rec: RawRecord) -> Layout:
        lay = self.byname.get(kind)
        if lay is None:
            raise CaptureError(f"{self.path}: {rec.kind} record at byte {rec.offset} comes before any SCHEMA record")
        if kind != "EVENT" and len(rec.payload) < lay.size:
            raise ValueError(f"shorter than its {lay.size}-byte layout")
        return lay

    def record(self, rec: RawRecord) -> None:
        kind, payload = rec.kind, rec.payload
        if kind == "SCHEMA":
            layouts = parse_schema(payload, self.path)
            for lay in layouts.values():
                if lay.version > KNOWN_VERSION.get(lay.kind, lay.version):
                    raise CaptureError(
                        f"{self.path}: {lay.kind} layout version {lay.version} is newer than this iolens reads; "
                        "upgrade iolens to read it"
                    )
                lay.compile()
            self.byname = {lay.kind: lay for lay in layouts.values()}
        elif kind == "META":
            try:
                self.meta = json.loads(bytes(payload).rstrip(b"\0").decode("utf-8"))
            except (UnicodeDecodeError, json.JSONDecodeError):
                self.problems.append(f"{self.path}: META record at byte {rec.offset} is not valid JSON")
        elif kind == "PROC":
            self.cur = Process(fields=self.layout("PROC", rec).decode(payload), offset=rec.offset)
            self.procs.append(self.cur)
        elif self.cur is None:
            self.problems.append(f"{self.path}: {kind} record at byte {rec.offset} has no PROC before it")
        elif kind == "STRING":
            self._string(self.layout("STRING", rec), payload)
        elif kind == "FILE":
            lay = self.layout("FILE", rec)
            f = lay.decode(payload)
            f["path"] = bytes(payload[lay.size : lay.size + f["path_len"]]).decode("utf-8", "surrogateescape")
            self.cur.files.append(f)
        elif kind == "TIMELINE":
            self.cur.timeline = self.layout("TIMELINE", rec).decode(payload)
        elif kind == "CHILD":
            self.cur.children.append(self.layout("CHILD", rec).decode(payload))
        elif kind == "TRACE":
            self._trace(self.layout("EVENT", rec), rec)

    def _string(self, lay: Layout, payload: memoryview) -> None:
        s = lay.decode(payload)
        text = bytes(payload[lay.size : lay.size + s["len"]]).decode("utf-8", "replace")
        what, cur = s["what"], self.cur
        if what == F.STRING_KINDS["EXE"]:
            cur.exe = text
        elif what == F.STRING_KINDS["ARGV"]:
            cur.argv = text.split("\0")[:-1] if text.endswith("\0") else text.split("\0")
        elif what == F.STRING_KINDS["CWD"]:
            cur.cwd = text
        elif what == F.STRING_KINDS["HOST"]:
            cur.host = text
        elif what == F.STRING_KINDS["ENV"]:
            for item in text.split("\0"):
                if "=" in item:
                    k, v = item.split("=", 1)
                    cur.env[k] = v

    def _trace(self, lay: Layout, rec: RawRecord) -> None:
        import zstandard

        try:
            raw = zstandard.ZstdDecompressor().decompress(bytes(rec.payload))
        except zstandard.ZstdError as err:
            self.problems.append(f"{self.path}: TRACE record at byte {rec.offset} does not decompress ({err})")
            return
        usable = len(raw) - len(raw) % lay.size
        ev = np.frombuffer(raw[:usable], dtype=_event_dtype(lay))
        cur = self.cur
        cur.events = ev if cur.events is None else np.concatenate([cur.events, ev])


def decode(data: bytes, path: str = "<capture>") -> Capture:
    major, minor = FILE_HDR.unpack_from(data, 0)[1:3] if len(data) >= FILE_HDR.size else (0, 0)
    d = _Decoder(path)
    for rec in iter_records(data, path, d.problems):
        try:
            d.record(rec)
        except (struct.error, ValueError, OverflowError) as err:
            d.problems.append(f"{path}: {rec.kind} record at byte {rec.offset} is damaged ({err})")
            break
    return Capture(path=path, meta=d.meta, processes=d.procs, problems=d.problems, version=(major, minor))


def read_capture(path: str | Path, *, strict: bool = False) -> Capture:
    p = Path(path)
    try:
        data = p.read_bytes()
    except FileNotFoundError:
        raise CaptureError(f"{p}: no such capture file") from None
    except IsADirectoryError:
        raise CaptureError(f"{p}: is a directory, not a capture file") from None
    except PermissionError:
        raise CaptureError(f"{p}: permission denied") from None
    cap = decode(data, str(p))
    if strict and cap.problems:
        first = cap.problems[0]
        off = int(first.rsplit("byte ", 1)[1].split()[0]) if "byte " in first else 0
        raise CaptureTruncated(str(p), off, first.split(": ", 1)[1].rsplit(" at byte", 1)[0])
    return cap
