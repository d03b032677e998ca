"""--trace on the interposer's quick paths: the tiny continuing calls a hot loop makes (a one-byte write(),
a buffered fputc or fread) are counted inline, and with --trace each still gets its own event, the same event
the general path makes."""

from __future__ import annotations

import pytest

from iolens import _format as F

OPS = [name for name, _cat in F.OPS]


@pytest.mark.parametrize("mode, n, op, timed", [("write", 3000, "WRITE", True), ("fputc", 20000, "FPUTC", False),
                                                ("fread", 20000, "FREAD", False)])
def test_every_call_of_a_hot_loop_has_its_event(cprog, profiled, tmp_path, mode, n, op, timed):
    target = tmp_path / f"{mode}.bin"
    if mode == "fread":
        target.write_bytes(b"x" * n)
    res, cap = profiled([cprog("hotloop"), mode, n, target], "--trace")
    assert res.returncode == 0, res.stderr
    p = [p for p in cap.processes if p.exe.endswith("hotloop")][0]
    f = [f for f in p.files if f["path"] == str(target)][0]
    ev = p.events
    assert ev is not None and len(ev) == p.trace_events == sum(p.op_count) and not p.trace_lost
    calls = ev[ev["op"] == OPS.index(op)]
    assert len(calls) == n == p.op_count[OPS.index(op)]
    assert set(calls["file"]) == {f["index"]} and set(calls["size"]) == {1}
    assert list(calls["offset"]) == list(range(n))
    assert (ev["start_mono"][1:] >= ev["start_mono"][:-1]).all()
    if timed:  # a system call: its own time, each one measured
        assert (calls["dur_ns"] > 0).mean() > 0.9
    else:  # served by the buffer: no clock read (only the calls that fill or flush the 4 KiB buffer have a time)
        assert 0 < (calls["dur_ns"] > 0).sum() <= n // 4096 + 2


@pytest.mark.parametrize("counters_only", [False, True])
def test_a_copy_says_which_file_it_read(profiled, tmp_path, counters_only):
    """copy_file_range (cat, cp) and sendfile move bytes from one file to another in one call: the call's op is on
    its destination, and its source side is an op of its own, COPY_SOURCE (the source file, its offset and the
    bytes), counted with or without --trace and, with it, traced right before the call at the call's start with
    no time of its own.  Without it a replay never read the sources (cat sf/* on btrfs: -33%)."""
    srcs = []
    for i, text in enumerate(["alpha\n", "bravo bravo\n", "c\n"]):
        srcs.append(tmp_path / f"s{i}")
        srcs[-1].write_text(text)
    res, cap = profiled(["sh", "-c", f"cat {' '.join(map(str, srcs))} > {tmp_path / 'all'}"],
                        *([] if counters_only else ["--trace"]))
    assert res.returncode == 0, res.stderr
    assert (tmp_path / "all").read_text() == "alpha\nbravo bravo\nc\n"
    p = [p for p in cap.processes if p.exe.endswith("/cat")][0]
    copies = p.op_count[OPS.index("COPY_FILE_RANGE")] + p.op_count[OPS.index("SENDFILE")]
    assert copies >= 3 and p.op_count[OPS.index("COPY_SOURCE")] == copies
    files = {f["index"]: f for f in p.files}
    by_path = {f["path"]: f for f in p.files}
    assert [by_path[str(s)]["bytes_read"] for s in srcs] == [6, 12, 2]
    if counters_only:
        assert p.events is None
        return
    ev = p.events
    assert len(ev) == p.trace_events == sum(p.op_count) and sum(p.timeline["count"]) == sum(p.op_count)
    src_i = [i for i in range(len(ev)) if ev["op"][i] == OPS.index("COPY_SOURCE")]
    assert len(src_i) == copies
    for i in src_i:  # right before its call, on the same thread, at the same start, with no time of its own
        call = ev[i + 1]
        assert OPS[call["op"]] in ("COPY_FILE_RANGE", "SENDFILE") and call["tid"] == ev["tid"][i]
        assert ev["start_mono"][i] == call["start_mono"] and ev["dur_ns"][i] == 0 and ev["size"][i] == call["size"]
        assert files[int(call["file"])]["path"] == str(tmp_path / "all")
    moved = [(files[int(ev["file"][i])]["path"], int(ev["offset"][i]), int(ev["size"][i])) for i in src_i
             if ev["size"][i]]
    assert moved == [(str(s), 0, len(s.read_text())) for s in srcs]
