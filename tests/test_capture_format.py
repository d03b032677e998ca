"""The capture container: versions, upgrades, truncation and damage, and `iolens parse`."""

from __future__ import annotations

import json
import struct

import pytest

from conftest import iolens
from iolens import _format as F
from iolens.capture import writer as W
from iolens.capture.reader import decode, read_capture
from iolens.errors import CaptureError


@pytest.fixture(scope="module")
def real_capture(tmp_path_factory):
    d = tmp_path_factory.mktemp("cap")
    res = iolens("profile", "-q", "-o", d / "c.iolens", "--", "bash", "-c", f"echo data > {d}/x; cat {d}/x", cwd=d)
    assert res.returncode == 0, res.stderr
    return d / "c.iolens"


def test_parse_dumps_every_record(real_capture):
    res = iolens("parse", "--json", real_capture)
    assert res.returncode == 0, res.stderr
    doc = json.loads(res.stdout)
    assert doc["tag"] == "iolens-parse" and doc["schema_version"] == [1, 0]
    assert doc["complete"] is True and doc["problems"] == []
    cap = read_capture(real_capture)
    assert len(doc["processes"]) == len(cap.processes) >= 2
    names = {p["exe"].rsplit("/", 1)[-1] for p in doc["processes"]}
    assert {"bash", "cat"} <= names
    for p in doc["processes"]:
        assert set(F.LAYOUTS["PROC"][3][0][0:1]) <= set(p["proc"])  # every PROC field is present
        assert all(name in p["proc"] for name, *_ in F.LAYOUTS["PROC"][3])
    text = iolens("parse", real_capture)
    assert text.returncode == 0 and "PROC @" in text.stdout and "FILE" in text.stdout


def test_truncated_capture_is_partial_and_one_line(real_capture, tmp_path):
    data = real_capture.read_bytes()
    cut = tmp_path / "cut.iolens"
    cut.write_bytes(data[: len(data) - 100])
    res = iolens("parse", "--json", cut)
    assert res.returncode == 3
    assert res.stderr.count("\n") == 1 and "Traceback" not in res.stderr
    assert str(cut) in res.stderr and "at byte" in res.stderr
    doc = json.loads(res.stdout)
    assert doc["complete"] is False and len(doc["processes"]) >= 1  # the intact part stays readable


def test_corrupted_record_names_offset(real_capture, tmp_path):
    data = bytearray(real_capture.read_bytes())
    cap = read_capture(real_capture)
    off = cap.processes[-1].offset  # damage the last PROC's record header
    struct.pack_into("<H", data, off, 0x7777)
    bad = tmp_path / "bad.iolens"
    bad.write_bytes(bytes(data))
    res = iolens("parse", bad)
    assert res.returncode == 3 and f"at byte {off}" in res.stderr and "Traceback" not in res.stderr
    partial = decode(bytes(data), str(bad))
    assert len(partial.processes) == len(cap.processes) - 1


def test_not_a_capture_and_missing(tmp_path):
    junk = tmp_path / "junk.iolens"
    junk.write_bytes(b"hello world, not a capture at all")
    res = iolens("parse", junk)
    assert res.returncode == 3 and "not an iolens capture" in res.stderr and "Traceback" not in res.stderr
    res = iolens("parse", tmp_path / "missing.iolens")
    assert res.returncode == 3 and "no such capture file" in res.stderr


def _crafted(major=F.CONTAINER_MAJOR, layouts=None, proc=None, kind_version=None):
    proc = proc or {"pid": 42, "ppid": 1, "flags": 1, "start_mono": 10, "end_mono": 2_000_000_010}
    body = W.record("SCHEMA", W.schema_payload(layouts))
    body += W.record("PROC", W.pack_fixed("PROC", proc, layouts), version=kind_version)
    return W.file_header(major=major) + body


def test_newer_container_is_refused():
    with pytest.raises(CaptureError, match="newer iolens"):
        decode(_crafted(major=F.CONTAINER_MAJOR + 1), "future.iolens")


def test_newer_record_version_is_refused():
    with pytest.raises(CaptureError, match="newer than this iolens"):
        decode(_crafted(kind_version=F.KINDS["PROC"][1] + 1), "future.iolens")


def test_older_layout_is_upgraded():
    # an older PROC layout: without the last two fields, and a smaller record
    kid, ver, size, fields = F.LAYOUTS["PROC"]
    old_fields = fields[:-2]
    old_size = max(off + 8 * count for _n, _t, count, off in old_fields)
    layouts = dict(F.LAYOUTS, PROC=(kid, ver, old_size, old_fields))
    cap = decode(_crafted(layouts=layouts, proc={"pid": 7, "ppid": 3, "flags": 1}), "old.iolens")
    p = cap.processes[0]
    assert (p.pid, p.ppid) == (7, 3)
    for name, _t, count, _off in fields[-2:]:
        assert p.fields[name] == (0 if count == 1 else (0,) * count)  # filled in by the upgrade


def test_schema_matches_generated_layouts(real_capture):
    """The schema the C writer embedded equals the layouts generated for Python from the same header."""
    from iolens.capture.layout import parse_schema
    from iolens.capture.walk import iter_records

    recs = list(iter_records(real_capture.read_bytes(), "c", []))
    schema = parse_schema(next(r for r in recs if r.kind == "SCHEMA").payload, "c")
    for name, (kid, ver, size, fields) in F.LAYOUTS.items():
        lay = schema[kid]
        assert (lay.kind, lay.version, lay.size) == (name, ver, size)
        assert lay.fields == [tuple(f) for f in fields]


def test_container_structs_come_from_the_header():
    """The container's own structs are generated from the C header: their sizes agree with the compiler's."""
    from iolens.capture import container as C

    assert C.FILE_HDR.size == F.FILE_HDR_SIZE and C.REC_HDR.size == F.REC_HDR_SIZE
    assert C.SCHEMA_KIND.size == F.SCHEMA_KIND_SIZE and C.SCHEMA_FIELD.size == F.SCHEMA_FIELD_SIZE
    assert C.FILE_HDR.unpack(W.file_header()) == (F.MAGIC, F.CONTAINER_MAJOR, F.CONTAINER_MINOR, F.FILE_HDR_SIZE)
    name = C.SCHEMA_FIELD.unpack(W.schema_payload()[C.SCHEMA_KIND.size :][: C.SCHEMA_FIELD.size])[0]
    assert name.rstrip(b"\0").decode() == F.LAYOUTS["PROC"][3][0][0]


def test_fuzzed_captures_never_raise_anything_but_capture_errors(real_capture):
    """Random byte flips and cuts: either a capture (maybe with problems) or a CaptureError."""
    import random

    data = real_capture.read_bytes()
    rnd = random.Random(7)
    for _ in range(300):
        buf = bytearray(data[: rnd.randrange(16, len(data) + 1)])
        for _ in range(rnd.randrange(1, 8)):
            buf[rnd.randrange(len(buf))] = rnd.randrange(256)
        try:
            decode(bytes(buf), "fuzz.iolens")
        except CaptureError:
            pass
