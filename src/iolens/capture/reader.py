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

import functools
import json
import math
import os
import struct
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from iolens import _format as F
from iolens.errors import CaptureError, CaptureTruncated
from iolens.redact import capture_env, redact_argv
from iolens.sysinfo import cpu_probe_ok, cpu_record_ok

from iolens.capture.layout import (IDENTITY_FIELDS, KNOWN_VERSION, Layout, MAX_VALUE, NUMPY_TYPE, _CURRENT,
                                   _TYPESIZE, layout_dtype, packed_dtype, parse_schema)
from iolens.capture.walk import Damage, RawRecord, _Walk

FILE_DTYPE = packed_dtype(_CURRENT["FILE"])  # FILE records as held once read: the current layout's fields


@dataclass
class Process:
    """One process image: its PROC fields plus what belongs to it."""

    fields: dict[str, Any]
    exe: str = ""
    argv: list[str] = field(default_factory=list)
    cwd: str = ""
    host: str = ""
    env: dict[str, str] = field(default_factory=dict)
    # FILE records: their fixed fields as one row each of a table (FILE_DTYPE, the current layout) and their paths
    file_table: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=FILE_DTYPE))
    paths: list[str] = field(default_factory=list)
    timeline: dict[str, Any] | None = None
    children: list[dict[str, Any]] = field(default_factory=list)
    events: np.ndarray | None = None
    offset: int = 0

    def __getattr__(self, name: str) -> Any:
        try:
            return self.__dict__["fields"][name]
        except KeyError:
            raise AttributeError(name) from None

    @functools.cached_property
    def files(self) -> list[dict[str, Any]]:
        """The FILE records one dict each (field -> int, arrays as tuples, and "path"), made when first asked for:
        the report reads `file_table` and never needs them."""
        names = FILE_DTYPE.names or ()
        arrays = [n for n in names if FILE_DTYPE[n].shape]
        out = []
        for row, path in zip(self.file_table.tolist(), self.paths):
            f = dict(zip(names, row))
            for n in arrays:  # a structured row's tolist() leaves a subarray field as an ndarray of numpy scalars
                f[n] = tuple(f[n].tolist())
            f["path"] = path
            out.append(f)
        return out

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


_BUFFER = 1 << 20  # a capture file is read through a buffer this large


DUR_TOP = 0xFFFFFFFF  # an EVENT dur_ns that did not fit (EVENT version 4: dur_ms holds it)
# Events as read: the current EVENT layout's fields, packed, with dur_ns widened to hold every call's duration
_EVENT_DTYPE = np.dtype([(name, "<u8" if name == "dur_ns" else NUMPY_TYPE[typ])
                         for name, typ, _count, _off in _CURRENT["EVENT"].fields])


def _upgrade_events(ev: np.ndarray) -> np.ndarray:
    """Events as read (_EVENT_DTYPE): fields an older (or damaged) layout lacks are zero, and a duration that did
    not fit dur_ns is taken from dur_ms (EVENT version 4)."""
    out = np.zeros(len(ev), dtype=_EVENT_DTYPE)
    for name in _EVENT_DTYPE.names or ():
        if name in (ev.dtype.names or ()):
            out[name] = ev[name]
    long = (out["dur_ns"] == DUR_TOP) & (out["dur_ms"] > 0)
    out["dur_ns"][long] = out["dur_ms"][long].astype(np.uint64) * 1_000_000
    return out


class _BadFile(Exception):
    """A FILE record found damaged when its process's records were made a table: where, and why."""

    def __init__(self, offset: int, reason: str):
        super().__init__(reason)
        self.offset = offset


def _file_plan(lay: Layout) -> tuple[np.dtype, np.ndarray | list[str] | None, bool]:
    """How a FILE layout is read: its dtype; the 8-byte words (or else the fields) whose value must be below
    MAX_VALUE (None: no range check, for a layout with text, as Layout.decode); whether it is the current layout,
    so its records are the table as they are."""
    dtype = layout_dtype(lay)
    checked: np.ndarray | list[str] | None = None
    if all(typ != "u8" for _name, typ, _count, _off in lay.fields):
        names = [name for name, _typ, count, _off in lay.fields if not (name in IDENTITY_FIELDS and count == 1)]
        checked = names
        if not lay.size % 8 and all(typ == "u64" and not off % 8 for _name, typ, _count, off in lay.fields):
            checked = np.asarray([off // 8 + i for name, _typ, count, off in lay.fields if name in names
                                  for i in range(count)], dtype=np.intp)
    same = dtype == layout_dtype(_CURRENT["FILE"]) and dtype.itemsize == FILE_DTYPE.itemsize
    return dtype, checked, same


class _FileTable:
    """FILE records gathered as they come (their fixed part as bytes, their path decoded) and made one table per
    run of records with one layout: numpy reads the capture's own layout (from its SCHEMA), checks the range of
    every value at once and upgrades the table to the current layout (the fields an older one lacks are zero)."""

    def __init__(self, walk: _Walk):
        self.walk = walk
        self.proc: Process | None = None
        self.lay: Layout | None = None
        self.recs: list[RawRecord] = []  # the run gathered, made a table at flush
        self.mark = (0, 0)  # the walk's damage and problems when the last record came
        self.path_at: tuple[int, int] | None = None  # offset and size of path_len in self.lay
        self.plan: tuple[np.dtype, np.ndarray | list[str] | None, bool] = (FILE_DTYPE, None, True)  # of self.lay

    def add(self, proc: Process, lay: Layout, rec: RawRecord) -> None:
        if proc is not self.proc or lay is not self.lay:
            self.flush()
            if lay is not self.lay:
                self.plan = _file_plan(lay)
            self.proc, self.lay = proc, lay
            self.path_at = next(((off, _TYPESIZE[typ]) for name, typ, count, off in lay.fields
                                 if name == "path_len" and count == 1 and typ != "u8"), None)
        self.recs.append(rec)
        self.mark = (len(self.walk.damage), len(self.walk.problems))

    def _paths(self, recs: list[RawRecord], size: int) -> list[str]:
        """The paths after the fixed part of each record, path_len bytes long (none without a path_len)."""
        if self.path_at is None:
            return [""] * len(recs)
        off, width = self.path_at
        lens = [int.from_bytes(r.payload[off : off + width], "little") for r in recs]
        return [bytes(r.payload[size : size + n]).decode("utf-8", "surrogateescape") for r, n in zip(recs, lens)]

    def flush(self) -> None:
        """The records gathered, made a table appended to their process's; raises _BadFile at the first record
        with a value out of range (the records before it are kept; the walk's damage met after it is dropped, as
        the walk would have stopped there)."""
        proc, lay, recs = self.proc, self.lay, self.recs
        if proc is None or lay is None or not recs:
            return
        dtype, checked, same = self.plan
        self.recs = []
        size = lay.size
        buf = b"".join([r.payload[:size] for r in recs])
        paths = self._paths(recs, size)
        raw = np.frombuffer(buf, dtype=dtype)
        n = len(raw)
        bad = np.zeros(n, dtype=bool)
        if isinstance(checked, np.ndarray):  # 8-byte words: one comparison for them all
            np.any(np.frombuffer(buf, dtype="<u8").reshape(n, -1)[:, checked] >= MAX_VALUE, axis=1, out=bad)
        elif checked is not None:
            for name in checked:
                bad |= (raw[name] >= MAX_VALUE).reshape(n, -1).any(axis=1)
        first_bad = int(np.argmax(bad)) if bad.any() else n
        if same:  # the current layout: the records are the table
            table = raw[:first_bad]
        else:
            table = np.zeros(first_bad, dtype=FILE_DTYPE)
            have = set(raw.dtype.names or ())
            for name in FILE_DTYPE.names or ():
                if name in have:
                    src = raw[name][:first_bad]
                    if src.ndim == 1:
                        table[name] = src
                    else:
                        table[name][:, : src.shape[1]] = src
        proc.file_table = table if not len(proc.file_table) else np.concatenate([proc.file_table, table])
        proc.paths.extend(paths[:first_bad])
        if first_bad < n:
            damage, problems = self.mark
            del self.walk.damage[damage:], self.walk.problems[problems:]
            raise _BadFile(recs[first_bad].offset, f"a {lay.kind} value is out of range")


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
        self.files = _FileTable(walk)

    def layout(self, kind: str, rec: RawRecord) -> Layout:
        lay = self.byname.get(kind)
        if lay is None:
            raise CaptureError(f"{self.path}: {rec.kind} record at byte {rec.offset} comes before any SCHEMA record")
        if kind != "EVENT" and len(rec.payload) < lay.size:
            raise ValueError(f"shorter than its {lay.size}-byte layout")
        return lay

    def record(self, rec: RawRecord) -> None:
        kind, payload = rec.kind, rec.payload
        if kind == "FILE":  # most records: the checks of layout() and the branches below, in short
            lay = self.byname.get("FILE")
            if self.cur is not None and lay is not None and len(payload) >= lay.size:
                self.files.add(self.cur, lay, rec)
                return
        else:
            self.files.flush()
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
            self.files.add(self.cur, self.layout("FILE", rec), rec)
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
            cur.argv = argv_of(text)
        elif what == F.STRING_KINDS["CWD"]:
            cur.cwd = text
        elif what == F.STRING_KINDS["HOST"]:
            cur.host = text
        elif what == F.STRING_KINDS["ENV"]:
            cur.env.update(env_of(text))

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
        if "command" in self.meta:
            self.meta["command"] = redact_argv(self.meta["command"])

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
        ev = _upgrade_events(np.frombuffer(raw[:usable], dtype=layout_dtype(lay)))
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


def argv_of(text: str) -> list[str]:
    """An ARGV string's words, redacted again (as META's command and ENV are): a capture made before a rule
    existed is shown without the secret."""
    return list(_redacted_argv(text))


def env_of(text: str) -> dict[str, str]:
    """An ENV string's variables, redacted again."""
    return dict(_redacted_env(text))


# a capture's processes share their environment, and many their command line: each text is redacted once
@functools.lru_cache(maxsize=4096)
def _redacted_argv(text: str) -> tuple[str, ...]:
    return tuple(redact_argv(text.split("\0")[:-1] if text.endswith("\0") else text.split("\0")))


@functools.lru_cache(maxsize=1024)
def _redacted_env(text: str) -> tuple[tuple[str, str], ...]:
    return tuple(capture_env(dict(item.split("=", 1) for item in text.split("\0") if "=" in item)).items())


# META keys iolens writes, and the types a reader relies on (other keys are kept as they are)
_META_TYPES: dict[str, tuple[type, ...]] = {
    "tool": (str,), "iolens_version": (str,), "command": (list,), "cwd": (str,), "parent_pid": (int,),
    "wall_s": (int, float), "exit_status": (int,),
    "exit_signal": (int, type(None)), "trace": (bool,), "mounts": (list,), "host": (str,),
    "kernel": (str,), "cpus": (int,), "mem_bytes": (int,), "cpu_model": (str,), "start_real_ns": (int,),
    "start_mono": (int,), "end_mono": (int,), "children_rusage": (dict,), "parts": (int,),
    "running_at_save": (list,), "machine_cpu_s": (dict,), "cpu_probe": (dict,),
}
_NUMBER_DICTS = ("children_rusage",)  # META keys whose values are all finite numbers


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
        return all(isinstance(m, dict) and isinstance(m.get("mountpoint"), str) and all(isinstance(v, str) for v in
                   m.values()) for m in value)
    if key == "running_at_save" and isinstance(value, list):
        return all(isinstance(p, int) and not isinstance(p, bool) and 0 < p < 1 << 31 for p in value)
    if key == "machine_cpu_s":
        return cpu_record_ok(value)
    if key == "cpu_probe":
        return cpu_probe_ok(value)
    if key in _NUMBER_DICTS and isinstance(value, dict):
        return all(isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)
                   and abs(v) < 1 << 63 for v in value.values())
    return True


def _decode(walk: _Walk, path: str) -> Capture:
    d = _Decoder(path, walk)
    try:
        for rec in walk.records():  # the header first: a file that is not a capture is refused before anything else
            try:
                d.record(rec)
            except (struct.error, ValueError, OverflowError, MemoryError) as err:
                d.files.flush()  # the FILE records before this one may hold the first damage
                walk.bad(rec.offset, f"{rec.kind} record is damaged ({err})")
                break
        d.files.flush()
    except _BadFile as err:
        walk.bad(err.offset, f"FILE record is damaged ({err})")
    major, minor = walk.version
    cap = Capture(path=path, meta=d.meta, processes=d.procs, problems=walk.problems, version=(major, minor),
                  damage=walk.damage, sealed=walk.sealed)
    if not walk.damage:
        _short_of_recorded(cap, walk)
    return cap


def _short_of_recorded(cap: Capture, walk: _Walk) -> None:
    """A capture cut at a record boundary shows no damage to the walk, only in its counts: fewer FILE records than
    an image's PROC counted, or fewer images than the parts its META lists (a sealed capture too, when the merge
    dropped a damaged part)."""
    procs = cap.processes
    for i, p in enumerate(procs):
        short = int(p.fields.get("nfiles", 0)) - len(p.paths)
        if short > 0:
            at, where = (walk.n, "capture ends") if i == len(procs) - 1 else (p.offset, "process image was cut")
            walk.bad(at, f"{where} before {short:,} of the file records of {os.path.basename(p.exe) or '?'} "
                     f"[{p.fields.get('pid', '?')}]", partial=True)
            return
    parts = cap.meta.get("parts")
    if isinstance(parts, int) and len(procs) < parts:
        walk.bad(walk.n, f"capture holds {len(procs)} of the {parts} process images its META lists (cut short?)",
                 partial=True)


def decode(data: bytes, path: str = "<capture>") -> Capture:
    """A capture held in memory."""
    return _decode(_Walk(data, path, []), path)


def read_capture(path: str | Path, *, strict: bool = False) -> Capture:
    """A capture file, read in order and never whole: its header is checked before anything after it is read, so a
    large file that is not a capture is refused at once."""
    if not str(path).strip():  # Path("") is ".", the working directory
        raise CaptureError("an empty name was given for the capture; give the capture file `iolens profile -o` wrote")
    p = Path(path)
    try:
        if p.is_dir():
            raise IsADirectoryError
        if not p.is_file() and p.exists():  # a device or a pipe: /dev/zero never ends, a FIFO may never start
            raise CaptureError(f"{p}: is not a regular file (a device or a pipe); give the capture file "
                               "`iolens profile -o` wrote")
        with open(p, "rb", buffering=_BUFFER) as fh:
            cap = _decode(_Walk(fh, str(p), [], os.fstat(fh.fileno()).st_size), str(p))
    except FileNotFoundError:
        raise CaptureError(f"{p}: no such capture file; check the path (`iolens profile -o FILE` writes one)") from None
    except IsADirectoryError:
        raise CaptureError(f"{p}: is a directory, not a capture file; give a file `iolens profile -o` wrote (`iolens "
                           "report DIR` reads a pipeline's capture directory)") from None
    except PermissionError:
        raise CaptureError(f"{p}: permission denied; make it readable or run as its owner") from None
    except OSError as err:  # a symbolic link loop, a name too long, an I/O error
        raise CaptureError(f"{p}: cannot read the capture file: {err.strerror or err}") from None
    if strict and cap.damage:  # every problem the reader finds is a Damage with its offset
        first = cap.damage[0]
        raise CaptureTruncated(str(p), first.offset, first.reason)
    return cap
