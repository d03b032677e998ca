"""--trace on the interposer's quick paths: the tiny continuing calls a hot loop makes (a one-byte write(),
a buffered fputc or fread) are counted inline, and with --trace every call is in an event: a system call in
its own, consecutive calls a stream's buffer served in one event of all their bytes (EVENT repeats)."""

from __future__ import annotations

import os
import sys

import numpy as np
import pytest

from helpers.capture import traced_calls
from iolens import _format as F

OPS = [name for name, _cat in F.OPS]


@pytest.mark.parametrize("mode, n, op, timed", [("write", 3000, "WRITE", True), ("fputc", 20000, "FPUTC", False),
                                                ("fread", 20000, "FREAD", False)])
def test_every_call_of_a_hot_loop_is_in_an_event(cprog, profiled, tmp_path, mode, n, op, timed):
    target = tmp_path / f"{mode}.bin"
    if mode == "fread":
        target.write_bytes(b"x" * n)
    res, cap = profiled([cprog("hotloop"), mode, n, target], "--trace")
    assert res.returncode == 0, res.stderr
    p = [p for p in cap.processes if p.exe.endswith("hotloop")][0]
    f = [f for f in p.files if f["path"] == str(target)][0]
    ev = p.events
    assert ev is not None and len(ev) == p.trace_events and traced_calls(p) == sum(p.op_count) and not p.trace_lost
    calls = ev[ev["op"] == OPS.index(op)]
    assert int((1 + calls["repeats"]).sum()) == n == p.op_count[OPS.index(op)]
    assert set(calls["file"]) == {f["index"]} and int(calls["size"].sum()) == n
    # the events tile the file: each starts where the one before ended, and holds 1 byte a call
    assert list(calls["offset"]) == [0, *np.cumsum(calls["size"])[:-1].tolist()]
    assert (calls["size"] == 1 + calls["repeats"]).all()
    assert (ev["start_mono"][1:] >= ev["start_mono"][:-1]).all()
    if timed:  # a system call: its own event and time, each one measured
        assert len(calls) == n and (calls["repeats"] == 0).all() and (calls["dur_ns"] > 0).mean() > 0.9
    else:  # served by the 4 KiB buffer: no clock read, except the calls that fill or flush it; the calls between
        # two of those share one event at the last clock reading
        fills = int((calls["dur_ns"] > 0).sum())
        assert 0 < fills <= n // 4096 + 2 and len(calls) <= 2 * fills + 2
        assert (calls["repeats"][calls["dur_ns"] > 0] == 0).all()
        assert calls["repeats"].max() >= 4000


def test_buffered_calls_share_an_event_only_when_they_continue_each_other(cprog, profiled, tmp_path):
    """tests/native/stdio_mix.c: one thread alternates one-byte fputc between two streams (no call continues the
    one before: an event each), then writes 100 to one after an fseek back (a new run); a second thread writes
    100 to a third stream while the first thread also writes there under the stream's lock (runs are per
    thread)."""
    res, cap = profiled([cprog("stdio_mix"), tmp_path], "--trace")
    assert res.returncode == 0, res.stderr
    p = [p for p in cap.processes if p.exe.endswith("stdio_mix")][0]
    assert traced_calls(p) == sum(p.op_count) and len(p.events) == p.trace_events
    idx = {f["path"].rsplit("/", 1)[-1]: int(f["index"]) for f in p.files if f["path"].startswith(str(tmp_path))}
    ev = p.events[p.events["op"] == OPS.index("FPUTC")]
    a, b, c = (ev[ev["file"] == idx[k]] for k in ("a", "b", "c"))
    assert int((1 + b["repeats"]).sum()) == 500 and (b["repeats"] == 0).all() and len(b) == 500
    assert int((1 + a["repeats"]).sum()) == 600
    alternating, after_seek = a[:500], a[500:]
    assert (alternating["repeats"] == 0).all() and list(alternating["offset"]) == list(range(500))
    assert int((1 + after_seek["repeats"]).sum()) == 100 and after_seek["offset"][0] == 0
    assert len(after_seek) <= 2  # the calls after the seek continue each other
    assert int((1 + c["repeats"]).sum()) == 2000
    for tid in set(c["tid"].tolist()):  # each thread's events tile its own share of the stream
        mine = c[c["tid"] == tid]
        assert int((1 + mine["repeats"]).sum()) == 1000
    assert len(set(c["tid"].tolist())) == 2
    # the Chrome trace says how many calls an event stands for
    from iolens.render.chrome_trace import trace_events
    shown = [e for e in trace_events(cap) if e["name"] == "FPUTC" and (e["args"]["file"] or "").endswith("/c")]
    assert sum(e["args"].get("calls", 1) for e in shown) == 2000 and any("calls" in e["args"] for e in shown)


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


def test_own_time_stays_inside_its_gap_when_the_clock_is_rescaled(profiled, tmp_path):
    """A 2.5 s reader of 32 KiB blocks, computing between them: the timeline is coarsened and the call clock
    rescaled from the TSC anchor during the run (clock.c), and a rescale can set the clock a few microseconds back.
    The recorder's own time measured across one must not wrap to a saturated 4.3 s: every event's own_ns (and
    duration) stays inside the wall time, and each but a thread's first inside the gap before it."""
    data = tmp_path / "in.bin"
    data.write_bytes(os.urandom(32768) * 200)
    code = ("import sys, time\nf = open(sys.argv[1], 'rb', buffering=0)\nend = time.monotonic() + 2.5\n"
            "while time.monotonic() < end:\n    if not f.read(32768): f.seek(0)\n"
            "    t = time.process_time()\n    while time.process_time() - t < 0.001: pass\n")
    res, cap = profiled([sys.executable, "-c", code, str(data)], "--trace")
    assert res.returncode == 0, res.stderr
    ev = np.concatenate([p.events for p in cap.processes if p.events is not None])
    ev = ev[np.lexsort((ev["start_mono"], ev["tid"]))]
    assert (ev["op"] == OPS.index("READ")).sum() > 1000
    wall_ns = float(cap.meta["wall_s"]) * 1e9
    assert int(ev["own_ns"].max()) < wall_ns and int(ev["dur_ns"].max()) < wall_ns, (ev["own_ns"].max(),
                                                                                        ev["dur_ns"].max())
    same = ev["tid"][1:] == ev["tid"][:-1]
    gaps = ev["start_mono"][1:].astype(np.int64) - (ev["start_mono"][:-1] + ev["dur_ns"][:-1]).astype(np.int64)
    over = ev["own_ns"][1:].astype(np.int64)[same] - gaps[same]
    assert (over <= 1_000).all(), np.sort(over)[-5:]  # a clock step back of up to a microsecond aside


def test_each_event_carries_the_recorders_own_time_before_it(profiled, tmp_path):
    """EVENT own_ns: the recorder's time after its calls since the thread's previous event (the bookkeeping of
    that call and its event).  Every event but a thread's first follows a
    hooked call, so has some, and it is a part of the gap it sits in."""
    res, cap = profiled(["sh", "-c", "i=0; while [ $i -lt 300 ]; do echo $i > f$i; i=$((i+1)); done"], "--trace")
    assert res.returncode == 0, res.stderr
    ev = np.concatenate([p.events for p in cap.processes if p.events is not None and p.exe.endswith("sh")])
    ev = ev[np.lexsort((ev["start_mono"], ev["tid"]))]
    first = np.ones(len(ev), dtype=bool)
    first[1:] = ev["tid"][1:] != ev["tid"][:-1]
    later = ev[~first]
    # the copy half of a dup2 over a file's descriptor (the shell putting its stdout back) is an event of no time
    # at the end of that file's close, which its hook recorded just before: no own time between them
    copy = (later["op"] == OPS.index("DUP")) & (later["dur_ns"] == 0)
    assert copy.sum() == 300
    assert len(later) >= 1200 and (later["own_ns"][~copy] > 0).mean() > 0.99, np.sort(later["own_ns"])[:20]
    gaps = later["start_mono"].astype(np.int64) - (ev["start_mono"][:-1] + ev["dur_ns"][:-1]).astype(np.int64)[
        ~first[1:]]
    assert int(later["own_ns"].astype(np.int64).sum()) < int(gaps.sum())  # inside the gaps it sits in
    assert int(ev["own_ns"].astype(np.int64).sum()) < float(cap.meta["wall_s"]) * 1e9
    opens = later[later["op"] == OPS.index("OPEN")]
    assert len(opens) == 300


def test_a_dup2_over_a_files_descriptor_is_that_files_close(profiled, tmp_path):
    """dup2 onto a descriptor open on a file closes that file: on FUSE and NFS a flush, and for its last descriptor
    the release (s3fs uploads the file there).  A shell's `echo x > f` closes f so when it puts its stdout back;
    recorded as a DUP of the old stdout, that close was no close of f in the trace, and on s3fs its time (the
    upload) was the terminal's or the pipe's.  It is now f's CLOSE, with the call's time, then the copy as a DUP
    of no time on the descriptor copied."""
    code = ("import os\nf = os.open('f', os.O_WRONLY | os.O_CREAT, 0o644)\nos.write(f, b'x')\n"
            "g = os.open('g', os.O_WRONLY | os.O_CREAT, 0o644)\nos.dup2(g, f)\nos.write(f, b'y')\n"
            "os.close(f)\nos.close(g)\n")
    res, cap = profiled([sys.executable, "-c", code], "--trace", cwd=tmp_path)
    assert res.returncode == 0, res.stderr
    p = [p for p in cap.processes if p.events is not None and len(p.events)][0]
    for op in ("CLOSE", "DUP"):  # the counters count both halves, as the trace does
        assert p.op_count[OPS.index(op)] == int((p.events["op"] == OPS.index(op)).sum()), op
    idx = {f["path"]: int(f["index"]) for f in p.files}
    ev = p.events[np.isin(p.events["file"], [idx[str(tmp_path / "f")], idx[str(tmp_path / "g")]])]
    names = [(OPS[int(e["op"])], "f" if int(e["file"]) == idx[str(tmp_path / "f")] else "g") for e in ev]
    assert names == [("OPEN", "f"), ("WRITE", "f"), ("OPEN", "g"), ("CLOSE", "f"), ("DUP", "g"), ("WRITE", "g"),
                     ("CLOSE", "g"), ("CLOSE", "g")], names
    close, copy = ev[3], ev[4]
    assert close["dur_ns"] > 0 and copy["dur_ns"] == 0
    assert int(copy["start_mono"]) == int(close["start_mono"]) + int(close["dur_ns"])
    assert (tmp_path / "f").read_bytes() == b"x" and (tmp_path / "g").read_bytes() == b"y"
