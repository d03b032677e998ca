"""Sealed captures prove they are whole: every cut, insertion and changed byte is found, with its offset."""

from __future__ import annotations

import json
import random
import struct

import pytest

from conftest import datapath, iolens
from iolens import _format as F
from iolens.capture import writer as W
from iolens.capture.container import CHECK, REC_HDR
from helpers.fuzz import classify, fingerprint, mutate
from iolens.capture.reader import decode, read_capture
from iolens.capture.walk import iter_records
from iolens.errors import CaptureError, CaptureTruncated

OLD = datapath("capture", "v1.0-bash-trace.iolens")  # written by iolens 0.1.0 before captures were sealed


@pytest.fixture(scope="module")
def sealed(tmp_path_factory):
    d = tmp_path_factory.mktemp("sealed")
    res = iolens("profile", "-q", "--trace", "-o", d / "c.iolens", "--", "bash", "-c",
                 f"echo data > {d}/x; cat {d}/x; ls {d} > /dev/null", cwd=d)
    assert res.returncode == 0, res.stderr
    return (d / "c.iolens").read_bytes()


def boundaries(data: bytes) -> list[tuple[str, int]]:
    """(kind, offset) of every record, CHECK records included."""
    out, pos = [], F.FILE_HDR_SIZE
    kinds = {kid: name for name, (kid, _v, _d) in F.KINDS.items()}
    while pos < len(data):
        kid, _ver, size = REC_HDR.unpack_from(data, pos)
        out.append((kinds[kid], pos))
        pos += REC_HDR.size + size
    return out


def test_a_merged_capture_is_sealed_and_whole(sealed):
    cap = decode(sealed, "c.iolens")
    assert cap.version == (F.CONTAINER_MAJOR, F.CONTAINER_MINOR) == (2, 0)
    assert cap.complete and cap.sealed
    assert cap.integrity == {"partial": False, "corrupt": False, "offset": None, "reason": "", "checked": True}
    recs = boundaries(sealed)
    assert recs[0] == ("CHECK", F.FILE_HDR_SIZE) and recs[-1][0] == "CHECK"
    *_, flags, _crc = CHECK.unpack_from(sealed, recs[-1][1] + REC_HDR.size)
    assert flags & F.CHECK_FLAGS["FINAL"][0] and recs[-1][1] + REC_HDR.size + CHECK.size == len(sealed)
    assert len(cap.processes) == int(cap.meta["parts"]) >= 3


def test_every_cut_is_partial_with_its_offset(sealed):
    whole = decode(sealed, "c")
    for cut in [pos for _k, pos in boundaries(sealed)] + list(range(1 + F.FILE_HDR_SIZE, len(sealed), 997)):
        cap = decode(sealed[:cut], "c")
        i = cap.integrity
        assert not cap.complete and i["partial"] and not i["corrupt"], cut
        assert i["offset"] is not None and i["offset"] <= cut and f"at byte {i['offset']}" in cap.problems[0]
        assert len(cap.processes) <= len(whole.processes)
        for p, q in zip(cap.processes, whole.processes):  # what was read is what was written
            assert p.fields == q.fields and p.files == q.files


def test_every_small_insertion_is_found(sealed):
    for _kind, pos in boundaries(sealed):
        for n in range(1, 8):
            for fill in (bytes(n), b"\x01" * n):
                cap = decode(sealed[:pos] + fill + sealed[pos:], "c")
                assert not cap.complete and cap.integrity["corrupt"], (pos, n)


def test_a_changed_counter_is_caught_by_the_checksum(sealed):
    cap = decode(sealed, "c")
    last = cap.processes[-1]
    lay = F.LAYOUTS["PROC"]
    off = last.offset + REC_HDR.size + next(o for name, _t, _c, o in lay[3] if name == "bytes_written")
    bad = bytearray(sealed)
    struct.pack_into("<Q", bad, off, last.bytes_written + 1)
    got = decode(bytes(bad), "c")
    i = got.integrity
    assert i["partial"] and i["corrupt"] and "checksum mismatch" in i["reason"]
    assert i["offset"] <= last.offset  # the start of the block holding that PROC
    assert len(got.processes) == len(cap.processes) - 1  # the blocks before it stay readable


def test_bytes_after_the_trailer_and_a_wrong_header_version(sealed):
    cap = decode(sealed + b"\0" * 8, "c")
    assert cap.integrity["corrupt"] and cap.integrity["offset"] == len(sealed)
    assert len(cap.processes) == len(decode(sealed, "c").processes)
    old_header = bytearray(sealed)
    struct.pack_into("<H", old_header, 8, 1)  # claims format 1.x
    assert decode(bytes(old_header), "c").integrity["corrupt"]
    with pytest.raises(CaptureError, match="newer iolens"):
        decode(W.file_header(major=F.CONTAINER_MAJOR + 1) + sealed[16:], "c")


def test_a_newer_record_version_in_a_sealed_block_is_refused():
    body = W.record("SCHEMA", W.schema_payload()) + W.record("PROC", W.pack_fixed("PROC", {"pid": 1}),
                                                             version=F.KINDS["PROC"][1] + 1)
    with pytest.raises(CaptureError, match="newer than this iolens"):
        decode(W.seal(body), "future.iolens")


def test_twenty_thousandth_of_the_mutant_run(sealed):
    """A slice of benchmarks/fuzz_capture.py mutants: none missed, no traceback."""
    rnd = random.Random(3)
    orig = fingerprint(decode(sealed, "c"))
    kinds = ("truncate", "insert", "flip")
    verdicts = [classify(orig, mutate(sealed, rnd, kind)) for _ in range(200) for kind in kinds]
    assert verdicts.count("detected") == len(verdicts)


def test_old_capture_still_reads():
    cap = read_capture(OLD)
    assert cap.version == (1, 0) and cap.complete and not cap.sealed
    assert cap.integrity["checked"] is False
    assert [p.exe.rsplit("/", 1)[-1] for p in cap.processes] == ["bash", "cat", "ls"]
    assert all(p.events is not None and len(p.events) for p in cap.processes)
    # EVENT version 1 had no repeats: one event a call, read as repeats 0 (the reader's upgrade)
    assert all(p.events.dtype == cap.processes[0].events.dtype and not p.events["repeats"].any()
               for p in cap.processes)
    assert cap.meta["parts"] == 3 and cap.meta["command"][0] == "bash"


def test_old_capture_cut_at_a_record_boundary_is_partial():
    data = OLD.read_bytes()
    last_proc = max(r.offset for r in iter_records(data, "o", []) if r.kind == "PROC")
    cap = decode(data[:last_proc], "o")
    assert not cap.complete and cap.integrity["partial"] and "2 of the 3 process images" in cap.problems[0]
    ins = data[:last_proc] + b"\0" * 8 + data[last_proc:]  # zeros read as the end marker, but more follows
    assert decode(ins, "o").integrity["corrupt"]


def test_strict_read_and_cli_name_the_offset(sealed, tmp_path):
    cut = tmp_path / "cut.iolens"
    cut.write_bytes(sealed[:-200])
    with pytest.raises(CaptureTruncated) as err:
        read_capture(cut, strict=True)
    off = err.value.offset
    res = iolens("parse", "--json", cut)
    assert res.returncode == 3 and res.stderr.count("\n") == 1 and f"at byte {off}" in res.stderr
    doc = json.loads(res.stdout)
    assert doc["complete"] is False and doc["integrity"]["partial"] and doc["integrity"]["offset"] == off
    rep = iolens("report", "--json", "-", cut)
    assert rep.returncode == 3 and "Traceback" not in rep.stderr and f"at byte {off}" in rep.stderr
    assert json.loads(rep.stdout)["capture"]["complete"] is False
