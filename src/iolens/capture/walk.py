"""Walking a capture's records after its header: plain (1.x) or sealed in CHECK blocks (2.x), with the damage
met kept with its byte offset.

The walk reads in order and never holds more than it must: the header is read and checked first (a file that is
not a capture is refused after its first 16 bytes), then record by record; a sealed block's records are held until
its CHECK has proven them.  The source is a file (read a window of _CHUNK bytes at a time, never whole) or bytes
in memory; a record's payload is a view of that window, not a copy."""

from __future__ import annotations

import io
from dataclasses import dataclass
from typing import BinaryIO, Iterator


from iolens import _format as F
from iolens.capture.container import CHECK, CHECK_FINAL, FILE_HDR, REC_HDR, crc32c
from iolens.errors import CaptureError
from iolens.capture.layout import KIND_BY_ID, KNOWN_VERSION, MAX_RECORD

_CHUNK = 1 << 20  # bytes read at a time where the walk only looks (the zeros after an end marker)


@dataclass(slots=True)
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
    or, for 1.x only, at the end of the file.  Either must hold a record before its end: a header followed by
    nothing or by zeros is a capture cut short.

    `source` is bytes, or a binary file positioned at its start together with its `size` (the walk reads no
    further, and a file that shrinks meanwhile reads as cut short).
    """

    def __init__(self, source: bytes | BinaryIO, path: str, problems: list[str], size: int | None = None):
        if isinstance(source, (bytes, bytearray, memoryview)):
            size = len(source)
            source = io.BytesIO(source)
        assert size is not None, "a file source needs its size"
        self.fh, self.n, self.pos = source, size, 0
        self.buf, self.buf_at = b"", 0  # the window read from the file, and the file offset of its first byte
        self.path, self.problems = path, problems
        self.damage: list[Damage] = []
        self.sealed = False
        self.version = (0, 0)
        self.records_seen = 0

    def bad(self, offset: int, reason: str, *, partial: bool = False) -> None:
        self.problems.append(f"{self.path}: {reason} at byte {offset}")
        self.damage.append(Damage(offset, reason, partial))

    def _seek(self, pos: int) -> None:
        self.fh.seek(pos)
        self.pos, self.buf, self.buf_at = pos, b"", pos

    def _read(self, k: int) -> memoryview | None:
        """The next k bytes (a view of the window), or None (after noting it) when the file ended sooner than its
        size said."""
        off = self.pos - self.buf_at
        if off + k > len(self.buf):  # the window holds less: read on from its end, a window's worth or k
            rest = self.buf[off:]
            more = self.fh.read(max(_CHUNK, k - len(rest)))
            self.buf, self.buf_at, off = rest + more if rest else more, self.pos, 0
            if k > len(self.buf):
                self.bad(self.pos + len(self.buf), "capture ends sooner than its size (changed while it was "
                         "read?)", partial=True)
                return None
        self.pos += k
        return memoryview(self.buf)[off : off + k]

    def header(self) -> tuple[int, int, int]:
        data = self.fh.read(FILE_HDR.size)
        self.pos = self.buf_at = len(data)
        if len(data) < FILE_HDR.size:
            raise CaptureError(f"{self.path}: not an iolens capture (only {len(data)} bytes)")
        magic, major, minor, hdr_size = FILE_HDR.unpack(data)
        if magic != F.MAGIC:
            raise CaptureError(f"{self.path}: not an iolens capture (it does not start as one does); give a file "
                               "written by iolens profile -o")
        self.version = (major, minor)
        if major > F.CONTAINER_MAJOR:
            raise CaptureError(
                f"{self.path}: written by a newer iolens (capture format {major}.{minor}, this iolens reads "
                f"{F.CONTAINER_MAJOR}.x); upgrade iolens to read it"
            )
        return major, minor, hdr_size

    def next_record(self) -> tuple[str, int, int, memoryview] | None:
        """(kind, version, payload size, header bytes) of the record at self.pos, its header read, or None after
        noting the damage; kind "" is the end marker."""
        at = self.pos
        if at + REC_HDR.size > self.n:
            self.bad(at, "record header cut short", partial=True)
            return None
        head = self._read(REC_HDR.size)
        if head is None:
            return None
        kid, ver, size = REC_HDR.unpack(head)
        if kid == 0:
            return "", ver, 0, head
        kind = KIND_BY_ID.get(kid)
        if kind is None or size % 8 or size > MAX_RECORD:
            self.bad(at, f"damaged record (kind {kid}, size {size})")
            return None
        if at + REC_HDR.size + size > self.n:
            self.bad(at, f"{kind} record cut short", partial=True)
            return None
        return kind, ver, size, head

    def raw(self, kind: str, ver: int, at: int, payload: memoryview) -> RawRecord:
        if ver > KNOWN_VERSION[kind]:
            raise CaptureError(
                f"{self.path}: {kind} record version {ver} at byte {at} is newer than this iolens reads "
                f"(version {KNOWN_VERSION[kind]}); upgrade iolens to read it"
            )
        return RawRecord(kind, ver, at, payload)

    def _zeros_ahead(self, limit: int | None = None) -> bool:
        """Whether what follows is zero, to the end or for `limit` bytes (read a chunk at a time)."""
        end = self.n if limit is None else min(self.n, self.pos + limit)
        while self.pos < end:
            chunk = self._read(min(_CHUNK, end - self.pos))
            if chunk is None:
                return True
            if bytes(chunk).strip(b"\0"):
                return False
        return True

    def records(self) -> Iterator[RawRecord]:
        major, _minor, hdr_size = self.header()
        if not FILE_HDR.size <= hdr_size <= self.n:
            self.bad(12, f"impossible header size {hdr_size}")
            return
        self._seek(hdr_size)
        if hdr_size + REC_HDR.size <= self.n:
            first = self.fh.read(REC_HDR.size)
            self._seek(hdr_size)
            if len(first) == REC_HDR.size and REC_HDR.unpack(first)[0] == F.KINDS["CHECK"][0]:
                if major < 2:
                    self.bad(4, f"a format {major}.x header on a capture sealed with checksums (format 2.x)")
                    return
                self.sealed = True
                yield from self._sealed(self._crc_to(hdr_size))
                return
        yield from self._plain(major, hdr_size)

    def _whole(self) -> RawRecord | None:
        """The record at self.pos when the window holds all of it and it is a plain one (not an end marker or
        CHECK, well formed, of a version this iolens reads), the walk moved past it; else None, and the walk has
        not moved (next_record then looks at it byte by byte)."""
        at, buf = self.pos, self.buf
        off = at - self.buf_at
        head = REC_HDR.size
        if off + head > len(buf) or at + head > self.n:
            return None
        kid, ver, size = REC_HDR.unpack_from(buf, off)
        kind = KIND_BY_ID.get(kid)
        end = off + head + size
        if (kind is None or kind == "CHECK" or size % 8 or size > MAX_RECORD or end > len(buf)
                or at + head + size > self.n or ver > KNOWN_VERSION[kind]):
            return None
        self.pos = at + head + size
        return RawRecord(kind, ver, at, memoryview(buf)[off + head : end])

    def _plain(self, major: int, start: int) -> Iterator[RawRecord]:
        whole = self._whole
        while self.pos < self.n:
            got = whole()
            if got is not None:
                self.records_seen += 1
                yield got
                continue
            at = self.pos
            rec = self.next_record()
            if rec is None:
                return
            kind, ver, size, _head = rec
            if kind == "":
                # with no record before it, only the next bytes are looked at: cut short (zeros where its records
                # were, a file preallocated and never written) or damaged, it is refused either way
                if not self._zeros_ahead(None if self.records_seen else _CHUNK):
                    self.bad(at, f"end marker followed by {self.n - at - REC_HDR.size} more bytes")
                elif not self.records_seen:
                    self.bad(start, "no records after the header (cut short, or zeros where its records were)",
                             partial=True)
                return
            if kind == "CHECK":
                self.bad(at, "CHECK record in a capture that is not sealed")
                return
            payload = self._read(size)
            if payload is None:
                return
            self.records_seen += 1
            yield self.raw(kind, ver, at, payload)
        if major >= 2:
            self.bad(self.pos, "capture ends without its end marker or trailer (cut short?)", partial=True)
        elif not self.records_seen:
            self.bad(start, "no records after the header (cut short?)", partial=True)

    def _crc_to(self, end: int) -> int:
        """CRC-32C of the bytes from the start of the file to `end` (the first block's checksum covers the header),
        leaving the walk at `end`."""
        self.fh.seek(0)
        crc, pos = 0, 0
        while pos < end:
            chunk = self.fh.read(min(_CHUNK, end - pos))
            if not chunk:
                break
            crc, pos = crc32c(chunk, crc), pos + len(chunk)
        self._seek(end)
        return crc

    def _sealed(self, crc: int) -> Iterator[RawRecord]:
        seq, start = 0, 0
        records = procs = 0
        block: list[tuple[str, int, int, memoryview]] = []
        while True:
            at = self.pos
            if at >= self.n:
                self.bad(at, "capture ends before its trailer (cut short?)", partial=True)
                return
            got = self._whole()
            if got is not None:  # its header and payload are one run of the window
                crc = crc32c(self.buf[at - self.buf_at : self.pos - self.buf_at], crc)
                block.append((got.kind, got.version, at, got.payload))
                continue
            rec = self.next_record()
            if rec is None:
                return
            kind, ver, size, head = rec
            if kind != "CHECK":
                if kind == "":
                    self.bad(at, "end marker inside a sealed capture")
                    return
                payload = self._read(size)
                if payload is None:
                    return
                crc = crc32c(payload, crc32c(head, crc))
                block.append((kind, ver, at, payload))
                continue
            if size != CHECK.size:
                self.bad(at, f"damaged CHECK record (size {size})")
                return
            body = self._read(size)
            if body is None:
                return
            end = self.pos
            c_seq, c_start, c_records, c_procs, _parts, c_flags, c_crc = CHECK.unpack(body)
            if crc32c(body[:-4], crc32c(head, crc)) != c_crc:
                self.bad(start, f"checksum mismatch in block {seq} (bytes {start} to {end})")
                return
            records += len(block)
            procs += sum(1 for b in block if b[0] == "PROC")
            if (c_seq, c_start, c_records, c_procs) != (seq, start, records, procs):
                self.bad(at, f"CHECK {seq} does not match the records before it")
                return
            for b_kind, b_ver, b_at, payload in block:
                self.records_seen += 1
                yield self.raw(b_kind, b_ver, b_at, payload)
            if c_flags & CHECK_FINAL:
                if end != self.n:
                    self.bad(end, f"{self.n - end} bytes after the trailer")
                return
            seq, start, block, crc = seq + 1, end, [], 0


def iter_records(data: bytes, path: str, problems: list[str]) -> Iterator[RawRecord]:
    """Records after the container header; damage is appended to `problems` and ends the walk."""
    return _Walk(data, path, problems).records()
