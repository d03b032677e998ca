"""Walking a capture's records after its header: plain (1.x) or sealed in CHECK blocks (2.x), with the damage
met kept with its byte offset."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterator


from iolens import _format as F
from iolens.capture.container import CHECK, CHECK_FINAL, FILE_HDR, REC_HDR, crc32c
from iolens.errors import CaptureError
from iolens.capture.layout import KIND_BY_ID, KNOWN_VERSION, MAX_RECORD

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
