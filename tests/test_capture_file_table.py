"""FILE records are read as one numpy table per process: every value as the record-by-record decoder gives it, an
older layout upgraded, and damage (a value out of range) found at its own record with the records before it kept."""

from __future__ import annotations

from iolens import _format as F
from iolens.capture import writer as W
from iolens.capture.layout import MAX_VALUE, current_layouts
from iolens.capture.reader import decode

FILE_FIELDS = F.LAYOUTS["FILE"][3]


def _values(i: int) -> dict:
    """A FILE record with every field set to a distinct value (arrays too), and a 64-bit inode."""
    out: dict = {"path": f"/data/p/f{i}.bam"}
    for j, (name, _typ, count, _off) in enumerate(FILE_FIELDS):
        if name == "path_len":
            continue
        base = 1000 * i + 10 * j + 1
        out[name] = base if count == 1 else [base + k for k in range(count)]
    out["ino"] = 18053519015812245239 - i  # an identity: may use all 64 bits
    return out


def _proc(pid: int, nfiles: int) -> bytes:
    return W.record("PROC", W.pack_fixed("PROC", {"pid": pid, "nfiles": nfiles, "flags": 3}))


def _capture(parts: list[bytes], layouts: dict | None = None) -> tuple[bytes, list[int]]:
    """The capture's bytes and the byte offset of each part."""
    head = [W.file_header(), W.record("SCHEMA", W.schema_payload(layouts))]
    data, offsets = b"".join(head), []
    for p in parts:
        offsets.append(len(data))
        data += p
    return data + b"\0" * 8, offsets


def test_table_holds_what_the_record_decoder_gives():
    lay = current_layouts()["FILE"]
    recs = [[_values(10 * p + i) for i in range(3 + p)] for p in range(3)]
    parts = []
    for p, fs in enumerate(recs):
        parts.append(_proc(100 + p, len(fs)))
        parts += [W.file_record(f) for f in fs]
    data, _ = _capture(parts)
    cap = decode(data)
    assert cap.complete and [len(p.paths) for p in cap.processes] == [3, 4, 5]
    for proc, fs in zip(cap.processes, recs):
        assert proc.paths == [f["path"] for f in fs]
        for row, f in zip(proc.files, fs):
            raw = W.file_record(f)[8:]  # the payload after the record header
            want = lay.decode(raw)
            want["path"] = f["path"]
            assert row == want  # every field, arrays as tuples, the path
        assert proc.file_table["ino"].tolist() == [f["ino"] for f in fs]
        assert proc.file_table["read_hist"].tolist() == [f["read_hist"] for f in fs]


def test_older_file_layout_is_upgraded():
    # an older FILE layout: without stdio_buf_size, and write_hist two bins shorter (later fields keep their offsets)
    kid, ver, size, fields = F.LAYOUTS["FILE"]
    old = [(n, t, c - 2 if n == "write_hist" else c, o) for n, t, c, o in fields if n != "stdio_buf_size"]
    layouts = dict(F.LAYOUTS, FILE=(kid, ver, size, old))
    f = _values(1)
    payload = W.pack_fixed("FILE", dict(f, path_len=len(f["path"])), layouts) + f["path"].encode() + b"\0"
    data, _ = _capture([_proc(7, 1), W.record("FILE", payload)], layouts)
    cap = decode(data)
    assert cap.complete
    row = cap.processes[0].files[0]
    assert row["stdio_buf_size"] == 0  # a field the older layout lacks
    assert row["write_hist"] == tuple(f["write_hist"][:-2]) + (0, 0)  # the bins it lacks are zero
    assert row["read_hist"] == tuple(f["read_hist"]) and row["path"] == f["path"]
    assert row["bytes_written"] == f["bytes_written"]


def test_value_out_of_range_is_damage_at_its_record():
    bad = dict(_values(2), bytes_read=MAX_VALUE)
    parts = [_proc(1, 2), W.file_record(_values(0)), W.file_record(_values(1)),
             _proc(2, 3), W.file_record(_values(3)), W.file_record(bad), W.file_record(_values(4)),
             _proc(3, 1), W.file_record(_values(5))]
    data, offsets = _capture(parts)
    cap = decode(data)
    assert not cap.complete
    assert cap.damage[0].offset == offsets[5] and len(cap.damage) == 1
    assert "FILE record is damaged (a FILE value is out of range)" in cap.problems[0]
    # what came before the damaged record is kept; nothing after it is read
    assert [len(p.paths) for p in cap.processes] == [2, 1]
    assert cap.processes[1].paths == [_values(3)["path"]]


def test_parse_text_shows_plain_numbers():
    """`iolens parse` prints FILE arrays as plain numbers (`read_hist=(1, 2, ...)`), never numpy's reprs."""
    from iolens.commands.parse import text_lines

    f = _values(1)
    data, _ = _capture([_proc(100, 1), W.file_record(f)])
    cap = decode(data)
    row = cap.processes[0].files[0]
    assert all(type(v) is int for v in row["read_hist"]) and type(row["ino"]) is int
    text = "\n".join(text_lines(cap))
    assert "np." not in text
    assert f"read_hist={tuple(f['read_hist'])}" in text
