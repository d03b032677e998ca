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
import math
import struct
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterator

import numpy as np

from iolens import _format as F
from iolens.capture.container import CHECK, CHECK_FINAL, FILE_HDR, REC_HDR, SCHEMA_FIELD, SCHEMA_KIND, crc32c
from iolens.errors import CaptureError, CaptureTruncated

KIND_BY_ID = {kid: name for name, (kid, _ver, _doc) in F.KINDS.items()}
KNOWN_VERSION = {name: ver for name, (_kid, ver, _doc) in F.KINDS.items()}
_TYPECHAR = {"u8": "B", "u32": "I", "u64": "Q"}
_TYPESIZE = {"u8": 1, "u32": 4, "u64": 8}
MAX_RECORD = 1 << 31
# No counter, time (ns since 1970: 2^62 is the year 2116), size or offset the interposer writes reaches 2^62, so a
# larger value is damage; keeping values below it also keeps the analysis's int64 sums from overflowing.
MAX_VALUE = 1 << 62


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

    def compile(self) -> None:
        fmt, items, pos, i = ["<"], [], 0, 0
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
            if typ == "u8":
                fmt.append(f"{count}s")
                items.append(f"{name!r}: v[{i}]")
                i += 1
            else:
                fmt.append(f"{count}{_TYPECHAR[typ]}")
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
        self._build = eval("lambda v: {" + ", ".join(items) + "}")  # noqa: S307 - built from field names

    def decode(self, buf: bytes | memoryview, offset: int = 0) -> dict[str, Any]:
        if self._struct is None:
            self.compile()
        assert self._struct is not None
        v = self._struct.unpack_from(buf, offset)
        if self._ints and v and max(v) >= MAX_VALUE:
            raise ValueError(f"a {self.kind} value is out of range")
        return self._build(v)


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


@dataclass
class Damage:
    """Where a capture stops being whole: `partial` when it ends early, else corrupt (bytes changed or added)."""

    offset: int
    reason: str
    partial: bool = False


class _Walk:
    """Walks the records after the container header, keeping the damage met (with its byte offset).

    A sealed capture (2.x, a CHECK right after the header) yields the records of a block only once its CHECK
    matches: CRC-32C, place and running counts; it must end with the trailer, and nothing may follow that.  An
    unsealed one (1.x, or crafted) yields records as it meets them and ends at a kind-0 record followed by zeros,
    or, for 1.x only, at the end of the file.
    """

    def __init__(self, data: bytes, path: str, problems: list[str]):
        self.data, self.path, self.problems = data, path, problems
        self.damage: list[Damage] = []
        self.sealed = False
        self.view = memoryview(data)

    def bad(self, offset: int, reason: str, *, partial: bool = False) -> None:
        self.problems.append(f"{self.path}: {reason} at byte {offset}")
        self.damage.append(Damage(offset, reason, partial))

    def header(self) -> tuple[int, int, int]:
        data, path = self.data, self.path
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
        return major, minor, hdr_size

    def next_record(self, pos: int) -> tuple[str, int, int] | None:
        """(kind, version, end) of the record at pos, or None after noting the damage; kind "" is the end marker."""
        n = len(self.data)
        if pos + REC_HDR.size > n:
            self.bad(pos, "record header cut short", partial=True)
            return None
        kid, ver, size = REC_HDR.unpack_from(self.data, pos)
        if kid == 0:
            return "", ver, pos + REC_HDR.size
        kind = KIND_BY_ID.get(kid)
        if kind is None or size % 8 or size > MAX_RECORD:
            self.bad(pos, f"damaged record (kind {kid}, size {size})")
            return None
        if pos + REC_HDR.size + size > n:
            self.bad(pos, f"{kind} record cut short", partial=True)
            return None
        return kind, ver, pos + REC_HDR.size + size

    def raw(self, kind: str, ver: int, pos: int, end: int) -> RawRecord:
        if ver > KNOWN_VERSION[kind]:
            raise CaptureError(
                f"{self.path}: {kind} record version {ver} at byte {pos} is newer than this iolens reads "
                f"(version {KNOWN_VERSION[kind]}); upgrade iolens to read it"
            )
        return RawRecord(kind, ver, pos, self.view[pos + REC_HDR.size : end])

    def records(self) -> Iterator[RawRecord]:
        major, _minor, hdr_size = self.header()
        n = len(self.data)
        if not FILE_HDR.size <= hdr_size <= n:
            self.bad(12, f"impossible header size {hdr_size}")
            return
        pos = hdr_size
        first = REC_HDR.unpack_from(self.data, pos)[0] if pos + REC_HDR.size <= n else None
        if first == F.KINDS["CHECK"][0]:
            if major < 2:
                self.bad(4, f"a format {major}.x header on a capture sealed with checksums (format 2.x)")
                return
            self.sealed = True
            yield from self._sealed(pos)
        else:
            yield from self._plain(pos, major)

    def _plain(self, pos: int, major: int) -> Iterator[RawRecord]:
        n = len(self.data)
        while pos < n:
            rec = self.next_record(pos)
            if rec is None:
                return
            kind, ver, end = rec
            if kind == "":
                if any(self.view[end:]):
                    self.bad(pos, f"end marker followed by {n - end} more bytes")
                return
            if kind == "CHECK":
                self.bad(pos, "CHECK record in a capture that is not sealed")
                return
            yield self.raw(kind, ver, pos, end)
            pos = end
        if major >= 2:
            self.bad(pos, "capture ends without its end marker or trailer (cut short?)", partial=True)

    def _sealed(self, pos: int) -> Iterator[RawRecord]:
        n, seq, start = len(self.data), 0, 0
        records = procs = 0
        block: list[tuple[str, int, int, int]] = []
        while True:
            if pos >= n:
                self.bad(pos, "capture ends before its trailer (cut short?)", partial=True)
                return
            rec = self.next_record(pos)
            if rec is None:
                return
            kind, ver, end = rec
            if kind != "CHECK":
                if kind == "":
                    self.bad(pos, "end marker inside a sealed capture")
                    return
                block.append((kind, ver, pos, end))
                pos = end
                continue
            if end - pos != REC_HDR.size + CHECK.size:
                self.bad(pos, f"damaged CHECK record (size {end - pos - REC_HDR.size})")
                return
            c_seq, c_start, c_records, c_procs, _parts, c_flags, c_crc = CHECK.unpack_from(
                self.data, pos + REC_HDR.size)
            if crc32c(self.view[start : end - 4]) != c_crc:
                self.bad(start, f"checksum mismatch in block {seq} (bytes {start} to {end})")
                return
            records += len(block)
            procs += sum(1 for b in block if b[0] == "PROC")
            if (c_seq, c_start, c_records, c_procs) != (seq, start, records, procs):
                self.bad(pos, f"CHECK {seq} does not match the records before it")
                return
            for kind, ver, at, rend in block:
                yield self.raw(kind, ver, at, rend)
            if c_flags & CHECK_FINAL:
                if end != n:
                    self.bad(end, f"{n - end} bytes after the trailer")
                return
            seq, start, pos, block = seq + 1, end, end, []


def iter_records(data: bytes, path: str, problems: list[str]) -> Iterator[RawRecord]:
    """Records after the container header; damage is appended to `problems` and ends the walk."""
    return _Walk(data, path, problems).records()


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
    damage: list[Damage] = field(default_factory=list)
    sealed: bool = False  # carries checksums (format 2.x), so "complete" is proven, not assumed

    @property
    def complete(self) -> bool:
        return not self.problems

    @property
    def integrity(self) -> dict[str, Any]:
        """Plain data: partial (not whole: cut short, damaged or parts lost), corrupt (bytes changed or added),
        the byte offset and reason of the first damage, and whether checksums proved the rest."""
        first = self.damage[0] if self.damage else None
        return {
            "partial": not self.complete,
            "corrupt": any(not d.partial for d in self.damage),
            "offset": first.offset if first else None,
            "reason": first.reason if first else (self.problems[0] if self.problems else ""),
            "checked": self.sealed,
        }


def _event_dtype(layout: Layout) -> np.dtype:
    names, formats, offsets = [], [], []
    for name, typ, count, off in layout.fields:
        names.append(name)
        formats.append({"u8": "u1", "u32": "<u4", "u64": "<u8"}[typ])
        offsets.append(off)
    return np.dtype({"names": names, "formats": formats, "offsets": offsets, "itemsize": layout.size})


_EVENT_DTYPE = _event_dtype(_CURRENT["EVENT"])


def _upgrade_events(ev: np.ndarray) -> np.ndarray:
    """Events in the current EVENT layout: fields an older (or damaged) layout lacks are zero."""
    if ev.dtype == _EVENT_DTYPE:
        return ev
    out = np.zeros(len(ev), dtype=_EVENT_DTYPE)
    for name in _EVENT_DTYPE.names or ():
        if name in (ev.dtype.names or ()):
            out[name] = ev[name]
    return out


class _Decoder:
    """Decodes records in order; SCHEMA changes the layouts for the records after it."""

    def __init__(self, path: str, walk: _Walk):
        self.path = path
        self.walk = walk
        self.problems = walk.problems
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
            self._meta(rec)
        elif kind == "PROC":
            self.cur = Process(fields=self.layout("PROC", rec).decode(payload), offset=rec.offset)
            self.procs.append(self.cur)
        elif self.cur is None:
            self.walk.bad(rec.offset, f"{kind} record has no PROC before it")
        elif kind == "STRING":
            self._string(self.cur, self.layout("STRING", rec), payload)
        elif kind == "FILE":
            lay = self.layout("FILE", rec)
            f = lay.decode(payload)
            f["path"] = bytes(payload[lay.size : lay.size + f["path_len"]]).decode("utf-8", "surrogateescape")
            self.cur.files.append(f)
        elif kind == "TIMELINE":
            t = self.layout("TIMELINE", rec).decode(payload)
            if not (t["nbins"] <= len(t["bytes_read"]) and t["nbins"] * len(F.CATEGORIES) <= len(t["count"])
                    and t["shift"] < 63):
                raise ValueError("TIMELINE bins or width are impossible")
            self.cur.timeline = t
        elif kind == "CHILD":
            self.cur.children.append(self.layout("CHILD", rec).decode(payload))
        elif kind == "TRACE":
            self._trace(self.cur, self.layout("EVENT", rec), rec)

    def _string(self, cur: Process, lay: Layout, payload: memoryview) -> None:
        s = lay.decode(payload)
        text = bytes(payload[lay.size : lay.size + s["len"]]).decode("utf-8", "replace")
        what = s["what"]
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

    def _meta(self, rec: RawRecord) -> None:
        try:
            meta = json.loads(bytes(rec.payload).rstrip(b"\0").decode("utf-8"))
        except (UnicodeDecodeError, json.JSONDecodeError, RecursionError):
            self.walk.bad(rec.offset, "META record is not valid JSON")
            return
        if not isinstance(meta, dict):
            self.walk.bad(rec.offset, "META record is not a JSON object")
            return
        wrong = sorted(k for k, v in meta.items() if not _meta_ok(k, v))
        if wrong:
            self.walk.bad(rec.offset, f"META record has values of the wrong type ({', '.join(map(repr, wrong[:3]))})")
        self.meta = {k: v for k, v in meta.items() if k not in wrong}

    def _trace(self, cur: Process, lay: Layout, rec: RawRecord) -> None:
        import zstandard

        if lay.size == 0:
            raise ValueError("EVENT layout has no size")
        payload = bytes(rec.payload)
        try:
            # bounded: the frame says its size (the merge writes it), and no TRACE record holds more than the
            # maximum, so a damaged frame header cannot make this allocate without limit
            size = zstandard.get_frame_parameters(payload).content_size
            if not 0 <= size <= F.TRACE_RECORD_MAX:
                self.walk.bad(rec.offset, f"TRACE record holds an impossible size ({size} bytes)")
                return
            dctx = zstandard.ZstdDecompressor(max_window_size=1 << 27)
            with dctx.stream_reader(payload) as reader:
                raw = _read_at_most(reader, size)
        except zstandard.ZstdError as err:
            self.walk.bad(rec.offset, f"TRACE record does not decompress ({err})")
            return
        if len(raw) != size:
            self.walk.bad(rec.offset, f"TRACE record decompresses to {len(raw)} of its {size} bytes")
            return
        usable = len(raw) - len(raw) % lay.size
        ev = _upgrade_events(np.frombuffer(raw[:usable], dtype=_event_dtype(lay)))
        for name in ev.dtype.names or ():
            if len(ev) and int(ev[name].max()) >= MAX_VALUE:
                raise ValueError(f"an EVENT {name} is out of range")
        cur.events = ev if cur.events is None else np.concatenate([cur.events, ev])


def _read_at_most(reader: Any, limit: int) -> bytes:
    out = bytearray()
    while len(out) < limit:
        chunk = reader.read(min(limit - len(out), 1 << 20))
        if not chunk:
            break
        out += chunk
    return bytes(out)


# META keys iolens writes, and the types a reader relies on (other keys are kept as they are)
_META_TYPES: dict[str, tuple[type, ...]] = {
    "tool": (str,), "iolens_version": (str,), "command": (list,), "cwd": (str,), "parent_pid": (int,),
    "wall_s": (int, float), "exit_status": (int,), "trace": (bool,), "mounts": (list,), "host": (str,),
    "kernel": (str,), "cpus": (int,), "mem_bytes": (int,), "cpu_model": (str,), "start_real_ns": (int,),
    "start_mono": (int,), "end_mono": (int,), "children_rusage": (dict,), "parts": (int,),
}


def _meta_ok(key: str, value: Any) -> bool:
    types = _META_TYPES.get(key)
    if types is None:
        return True
    if not isinstance(value, types) or (isinstance(value, bool) and bool not in types):
        return False
    if isinstance(value, float):
        return math.isfinite(value) and abs(value) < 1e15
    if isinstance(value, int):
        return -(1 << 63) <= value < 1 << 63
    if key == "command" and isinstance(value, list):
        return all(isinstance(a, str) for a in value)
    if key == "mounts" and isinstance(value, list):
        return all(isinstance(m, dict) and all(isinstance(v, str) for v in m.values()) for m in value)
    if key == "children_rusage" and isinstance(value, dict):
        return all(isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)
                   and abs(v) < 1 << 63 for v in value.values())
    return True


def decode(data: bytes, path: str = "<capture>") -> Capture:
    major, minor = FILE_HDR.unpack_from(data, 0)[1:3] if len(data) >= FILE_HDR.size else (0, 0)
    walk = _Walk(data, path, [])
    d = _Decoder(path, walk)
    for rec in walk.records():
        try:
            d.record(rec)
        except (struct.error, ValueError, OverflowError, MemoryError) as err:
            walk.bad(rec.offset, f"{rec.kind} record is damaged ({err})")
            break
    cap = Capture(path=path, meta=d.meta, processes=d.procs, problems=walk.problems, version=(major, minor),
                  damage=walk.damage, sealed=walk.sealed)
    parts = d.meta.get("parts")
    if not walk.sealed and not walk.damage and isinstance(parts, int) and len(d.procs) < parts:
        # format 1.x has no trailer: a capture cut at a record boundary shows only in the count of its parts
        walk.bad(len(data), f"capture holds {len(d.procs)} of the {parts} process images its META lists (cut short?)",
                 partial=True)
    return cap


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
        first = cap.damage[0] if cap.damage else Damage(len(data), cap.problems[0].split(": ", 1)[-1])
        raise CaptureTruncated(str(p), first.offset, first.reason)
    return cap
