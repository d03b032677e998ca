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
