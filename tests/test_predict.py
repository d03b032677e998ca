"""iolens predict's relative model: the recorded time plus, per operation class, its count times the per-op cost on
the target less the cost at home; compute unchanged."""

from __future__ import annotations

import os
import re

import numpy as np
import pytest

from conftest import iolens

pytestmark = pytest.mark.timeout(300)

def _zero():
    from iolens.whatif.calibration import CLASSES
    return dict.fromkeys(CLASSES, 0.0)


ZERO = _zero()


def model(**kw):
    from iolens.whatif.predict import StepModel

    class_s = dict(ZERO, read_small=2.0, write_large=2.0)
    class_n = dict.fromkeys(ZERO, 0) | {"read_small": 1000, "write_large": 10}
    args = {"wall_s": 10.0, "io_wall_s": 4.0, "class_s": class_s, "class_n": class_n, "traced": True,
            "overlap": 1.0} | kw
    return StepModel(**args)


def test_relative_prediction_by_hand():
    from iolens.whatif.predict import predict

    home = dict(ZERO, read_small=0.002, write_large=0.1, meta=1.0)
    slow = dict(ZERO, read_small=0.003, write_large=0.3, meta=9.0)  # meta: no such op in the step, no effect
    # 10 s recorded + 1000 x (3 - 2) ms + 10 x (300 - 100) ms = 10 + 1 + 2
    p = predict(model(), slow, home, "slow")
    assert p.wall_s == pytest.approx(13.0) and p.io_delta_s == pytest.approx(3.0)
    assert p.low_s < 13.0 < p.high_s
    assert p.io_share == pytest.approx((13.0 - 6.0) / 13.0)
    assert p.dominant == "write_large"  # 2 + 2 s against 2 + 1 s
    assert p.class_s == pytest.approx({"read_small": 3.0, "write_large": 4.0})  # only the classes the step has
    # two threads in storage calls at once: the extra time overlaps too
    assert predict(model(overlap=2.0), slow, home, "slow").wall_s == pytest.approx(11.5)
    # the same storage as home: the recorded time
    assert predict(model(), home, home, "home").wall_s == pytest.approx(10.0)
    # no home calibration: the recorded mean per op (2 ms and 200 ms) is the reference: 10 + 1 + 1
    p = predict(model(), slow, None, "slow")
    assert p.wall_s == pytest.approx(12.0) and p.reference == "recorded per-op times"
    # much faster storage: never below the compute (10 - 4 s)
    fast = dict(ZERO, read_small=0.0, write_large=0.0)
    p = predict(model(), fast, home, "fast")
    assert p.wall_s == pytest.approx(10.0 - 2.0 - 1.0) and p.wall_s >= 6.0
    assert predict(model(), dict(ZERO, read_small=0.0, write_large=-1.0), home, "x").wall_s == pytest.approx(6.0)


def test_the_compute_follows_the_cpus_speed_now_against_while_recording(tmp_path):
    """A CPU that runs the replayer's burn work 50% slower now than while the step was recorded: the compute (10 -
    4 s) takes 3 s more on every target, and the interval widens with it.  cpu_ratio_now reads the capture's
    probe against one taken now; a counters-only capture has none, and the model then says nothing of it."""
    from helpers.capture import traced_and_counted
    from iolens.whatif.predict import cpu_ratio_now, predict, step_model

    home = dict(ZERO, read_small=0.002, write_large=0.1)
    slow = dict(ZERO, read_small=0.003, write_large=0.3)
    base, later = predict(model(), slow, home, "slow"), predict(model(cpu_ratio=1.5), slow, home, "slow")
    assert later.wall_s == pytest.approx(base.wall_s + 3.0) and later.io_delta_s == pytest.approx(3.0)
    assert later.high_s - later.wall_s > base.high_s - base.wall_s
    floored = predict(model(cpu_ratio=1.5, cpu_floor_s=6.0), slow, home, "slow")
    assert floored.low_s >= 9.0  # never below the step's own CPU as it runs now
    none = dict(ZERO, read_small=0.0, write_large=-1.0)
    assert predict(model(cpu_ratio=0.5), none, home, "x").wall_s == pytest.approx(3.0)  # its compute alone
    caps = traced_and_counted(tmp_path)
    for trace, cap in caps.items():
        ratio = cpu_ratio_now(cap)
        assert (ratio is not None and 0.5 < ratio < 2.0) if trace else ratio is None
        assert not any("CPU probe" in n for n in step_model(cap).unseen)
    traced = caps[True]
    del traced.meta["cpu_probe"]  # an earlier iolens's traced capture
    assert cpu_ratio_now(traced) is None and any("no CPU probe" in n for n in step_model(traced).unseen)


def test_a_correction_larger_than_the_recorded_io_is_clamped():
    """A capture whose ops cost more than the home storage's calibration says (cp -r's creates on a slow root disk)
    and a target far cheaper: the difference of calibrations takes more than the whole recorded I/O away.  The I/O
    is then the recorded I/O times the ratio of the calibrated costs, the step never below its own CPU, and the
    interval's upper side wider by what the clamp added."""
    from iolens.whatif.predict import predict

    home = dict(ZERO, read_small=0.01, write_large=0.3)  # 13 s of the step's ops at home; 4 s recorded
    cheap = dict(ZERO, read_small=0.001, write_large=0.03)  # a tenth of home's
    p = predict(model(), cheap, home, "cheap")
    assert p.io_delta_s < -4.0  # the correction alone: below 0 s of I/O
    assert p.wall_s == pytest.approx(6.0 + 4.0 * 0.1)
    assert p.high_s - p.wall_s > 0.5 * p.wall_s  # the clamp's width on top of the band
    assert predict(model(cpu_floor_s=8.0), cheap, home, "cheap").wall_s == pytest.approx(8.0)
    dear = dict(ZERO, read_small=0.1, write_large=3.0)  # no clamp where the target is dearer than home
    assert predict(model(), dear, home, "dear").wall_s == pytest.approx(10.0 + 130.0 - 13.0)


def test_prediction_from_a_capture_with_known_operations(tmp_path):
    """dd with 1 MiB blocks: exactly 4 large reads, the read that finds the end, and 4 large writes."""
    from iolens.capture.reader import read_capture
    from iolens.whatif.predict import predict, step_model

    (tmp_path / "in.dat").write_bytes(os.urandom(4 << 20))
    cap_path = tmp_path / "dd.iolens"
    r = iolens("profile", "--trace", "-o", cap_path, "--", "dd", "if=in.dat", "of=out.dat", "bs=1M",
               "status=none", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    cap = read_capture(cap_path)
    m = step_model(cap)
    assert m.traced
    assert m.class_n["read_large"] == 4 and m.class_n["write_large"] == 4
    assert m.class_n["read_small"] == 1 and m.class_n["write_small"] == 0
    home = dict(dict.fromkeys(ZERO, 1e-5), read_large=0.001, write_large=0.002, read_small=1e-6)
    there = dict(home, read_large=0.011, write_large=0.007)  # +10 ms per large read, +5 ms per large write
    p = predict(m, there, home, "there")
    # one thread: the recorded wall time, less the profiler's recording of its events, plus 4 x 10 ms + 4 x 5 ms
    assert m.overlap <= 1.0 + 1e-9
    from iolens.whatif.timeline import event_costs, recording_cost
    from iolens.whatif.plan import TRACE_EVENT_OVERHEAD_NS, TRACE_PATH_OVERHEAD_NS
    costs = event_costs(TRACE_EVENT_OVERHEAD_NS, TRACE_PATH_OVERHEAD_NS)
    evs = [pr.events for pr in cap.processes if pr.events is not None]
    ops = np.concatenate([ev["op"] for ev in evs]).astype(np.int64)
    # per event the per-op figure, or the recorder's own time measured after it where more
    assert m.recording_s == pytest.approx(sum(int(recording_cost(ev, costs).sum()) for ev in evs) / 1e9)
    assert m.recording_s > costs[np.minimum(ops, len(costs) - 1)].sum() / 1e9
    assert 0 < m.recording_s < 1e-2 and m.compute_s == pytest.approx(m.wall_s - m.recording_s - m.io_wall_s)
    assert step_model(cap, event_overhead_ns=0, path_overhead_ns=None).recording_s == 0
    assert p.wall_s == pytest.approx(m.wall_s - m.recording_s + 0.06, abs=1e-9)
    assert p.io_delta_s == pytest.approx(0.06)


def test_writes_are_priced_buffered_unless_the_step_syncs():
    """A step that never syncs does not wait for its writeback: its writes are priced by the buffered calibration;
    a step that syncs is priced with the writeback its syncs wait for (the `_synced` classes)."""
    from iolens.whatif.predict import predict

    home = dict(ZERO, read_small=0.002, write_large=0.1, write_large_synced=0.2, sync=0.01)
    slow = dict(ZERO, read_small=0.002, write_large=0.3, write_large_synced=0.9, sync=0.01)
    # no sync: 10 s + 10 x (300 - 100) ms
    assert predict(model(), slow, home, "slow").wall_s == pytest.approx(12.0)
    # one sync (priced alike on both): 10 s + 10 x (900 - 200) ms
    synced = model(class_s=dict(ZERO, read_small=2.0, write_large=2.0, sync=0.01),
                   class_n=dict.fromkeys(ZERO, 0) | {"read_small": 1000, "write_large": 10, "sync": 1})
    assert predict(synced, slow, home, "slow").wall_s == pytest.approx(17.0)
    # a calibration without the synced classes (stored by an older version) prices the writes as it can
    plain_home = {k: v for k, v in home.items() if not k.endswith("_synced")}
    plain_slow = {k: v for k, v in slow.items() if not k.endswith("_synced")}
    assert predict(synced, plain_slow, plain_home, "slow").wall_s == pytest.approx(12.0)


def test_write_calibration_syncs_only_in_its_synced_classes(tmp_path):
    from iolens.workspace.target import resolve
    from iolens.whatif.engine import op_codes
    from iolens.whatif.calibration import (CAL_CLASSES, CAL_RUNS, CLASSES, META_FILE_BYTES, META_KINDS, _cal_plan,
                                           calibrate)

    c = op_codes()
    syncs = {c["FSYNC"], c["FDATASYNC"], c["SYNCFS"]}
    for cls in CAL_RUNS:
        ops = _cal_plan(cls).ops["op"]
        n_sync = int(sum(int(o) in syncs for o in ops))
        n_write = int((ops == c["WRITE"]).sum())
        if cls.startswith("write"):  # up to the file's close, which some storage makes pay for the writes
            assert int(ops[-1]) == c["CLOSE"] and int((ops == c["CLOSE"]).sum()) == 1, cls
        if cls in ("write_small", "write_large"):
            assert n_write > 0 and n_sync == 0, cls
        elif cls.endswith("_synced"):
            assert n_write > 0 and n_sync == 1 and int(ops[-2]) == c["FDATASYNC"], cls
            # the same writes as the buffered class, then one fdatasync
            assert n_write == int((_cal_plan(cls.removesuffix("_synced")).ops["op"] == c["WRITE"]).sum())
        elif cls == "sync":
            assert n_sync == n_write == 64
        elif cls == "meta":  # each created file gets a few bytes before its close, as a step's do
            sizes = _cal_plan(cls).ops["size"][ops == c["WRITE"]]
            assert n_sync == 0 and n_write == 300 and set(sizes.tolist()) == {META_FILE_BYTES}
            assert int((ops == c["READDIR"]).sum()) == 1  # the directory of the files, listed once
            assert int((ops == c["FSTAT"]).sum()) == 300  # each file stat'ed through a descriptor once
        else:
            assert n_sync == 0, cls
    target = tmp_path / "t"
    target.mkdir()
    cal = calibrate(resolve(str(target)))
    assert set(cal) == set(CAL_CLASSES) and set(CLASSES) < set(cal) and set(META_KINDS) < set(cal)
    assert all(v > 0 for v in cal.values()), cal
    assert list(target.iterdir()) == []
    # each metadata kind priced from the metadata run's own ops: a create costs more than a close, and more than
    # listing one entry of a directory
    assert cal["meta_create"] > 2 * cal["meta_close"], cal
    assert cal["meta_list"] < cal["meta_create"], cal


def test_metadata_is_modelled_by_kind(tmp_path):
    """A shell's loop of `echo > f`: one create per file (its first open), closes, a stat and an unlink, each kind
    counted apart and priced by its own calibration: a target where creates cost 1 ms more and closes nothing
    more is predicted 1 ms more per create."""
    from iolens.capture.reader import read_capture
    from iolens.whatif.predict import predict, step_model

    cap_path = tmp_path / "sh.iolens"
    r = iolens("profile", "--trace", "-o", cap_path, "--", "sh", "-c",
               "for i in 1 2 3 4 5; do echo $i > f$i; done; echo 6 >> f1; cat f2 > /dev/null; "
               "test -e f3; rm f4; ls > /dev/null", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    m = step_model(read_capture(cap_path))
    assert m.class_n["meta_create"] == 5  # f1..f5, not f1 again
    assert m.class_n["meta_open"] >= 2  # f1 appended to, f2 by cat
    assert m.class_n["meta_unlink"] == 1 and m.class_n["meta_close"] >= 7
    assert m.class_n["meta_stat"] >= 1  # test -e
    assert m.class_n["meta_fstat"] >= 1  # cat's fstat of what it opened, not a stat by name
    # ls: each entry it read is one listed (f1..f5 less f4, the dots), not a metadata op of the calibration's mean
    assert m.class_n["meta_list"] >= 6 and m.class_n["meta"] == 0
    home = dict.fromkeys(ZERO, 1e-6)
    there = dict(home, meta_create=1e-3 + 1e-6)
    assert predict(m, there, home, "there").io_delta_s == pytest.approx(5e-3 / max(1.0, m.overlap))
    listing = dict(home, meta_list=1e-3 + 1e-6)
    assert predict(m, listing, home, "there").io_delta_s == pytest.approx(m.class_n["meta_list"] * 1e-3
                                                                          / max(1.0, m.overlap))


def test_buffered_stdio_calls_are_not_storage_requests(cprog, tmp_path):
    """20,000 fputc calls to a fully buffered stream: storage sees only the buffer's flushes (4 KiB each), and only
    those are priced on a target; the calls the buffer served took no time and cost the same anywhere."""
    from iolens.capture.reader import read_capture
    from iolens.whatif.predict import predict, step_model

    cap_path = tmp_path / "fputc.iolens"
    r = iolens("profile", "--trace", "-o", cap_path, "--", cprog("hotloop"), "fputc", "20000", tmp_path / "o.bin",
               cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    m = step_model(read_capture(cap_path))
    assert 5 <= m.class_n["write_small"] <= 8, m.class_n  # 20,000 bytes in 4 KiB flushes, and the last one
    home = dict.fromkeys(ZERO, 1e-6)
    assert predict(m, dict(home, write_small=1e-3 + 1e-6), home, "x").io_delta_s < 10e-3


def test_small_copies_have_their_own_class(tmp_path):
    """cat of small files: each copy_file_range is one small copy (its source side is not priced again as a read),
    priced by the copy calibration (on btrfs a small copy costs ~50 us where a small write costs a few)."""
    from iolens import _format as F
    from iolens.capture.reader import read_capture
    from iolens.whatif.predict import step_model

    for i in range(4):
        (tmp_path / f"s{i}").write_text(f"{i}\n")
    cap_path = tmp_path / "cat.iolens"
    r = iolens("profile", "--trace", "-o", cap_path, "--", "sh", "-c", "cat s0 s1 s2 s3 > all", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    cap = read_capture(cap_path)
    ops = [n for n, _c in F.OPS]
    calls = sum(p.op_count[ops.index("COPY_FILE_RANGE")] + p.op_count[ops.index("SENDFILE")]
                for p in cap.processes)
    m = step_model(cap)
    assert calls >= 4 and m.class_n["copy_small"] == calls
    assert m.class_n["read_small"] + m.class_n["write_small"] < calls  # the copies are neither


def test_large_calls_are_priced_by_the_bytes_they_move():
    """Ten 512 KiB writes are five calibration calls' worth (1 MiB each): a large call is bandwidth-bound, so a
    target 200 ms slower per MiB makes them 1 s slower, not 2 s."""
    from iolens.whatif.calibration import LARGE_CALL
    from iolens.whatif.predict import predict

    home = dict(ZERO, read_small=0.002, write_large=0.1)
    slow = dict(ZERO, read_small=0.002, write_large=0.3)
    assert predict(model(), slow, home, "slow").wall_s == pytest.approx(12.0)  # no bytes known: per call
    m = model(class_b={"write_large": 10 * LARGE_CALL // 2})
    assert predict(m, slow, home, "slow").wall_s == pytest.approx(11.0)
    # no home calibration: the recorded time per MiB (2 s / 5 MiB) is the reference: 10 + 5 x (0.3 - 0.4)
    assert predict(m, slow, None, "slow").wall_s == pytest.approx(9.5)


def test_small_calls_cost_their_own_and_their_bytes(tmp_path):
    """A small write whose bytes the trace gives costs a + b * size on the line through the 4 KiB and the 1 MiB
    calibration calls: where a 4 KiB write costs 0.1 ms and a 1 MiB one 25.6 ms (a FUSE client of an object
    store that uploads at the close), a hundred 32 KiB writes cost what their 3.2 MiB cost, not a hundred 4 KiB
    writes' worth.  Without bytes they are priced per call; at the calibration sizes the line meets both points."""
    from iolens.whatif.calibration import LARGE_CALL, SMALL_CALL
    from iolens.whatif.predict import class_cost, predict

    s3 = dict(ZERO, write_small=1e-4, write_large=0.0256)
    per_byte = (0.0256 - 1e-4) / (LARGE_CALL - SMALL_CALL)
    counts = dict.fromkeys(ZERO, 0) | {"write_small": 100}
    m = model(class_n=counts, class_b={"write_small": 100 * 32768})
    assert class_cost(m, "write_small", s3) == pytest.approx(100 * (1e-4 - per_byte * 4096) + 100 * 32768 * per_byte)
    assert class_cost(m, "write_small", s3) > 7 * 100 * 1e-4
    assert class_cost(model(class_n=counts), "write_small", s3) == pytest.approx(100 * 1e-4)  # no bytes known
    at_4k = model(class_n=counts, class_b={"write_small": 100 * SMALL_CALL})
    assert class_cost(at_4k, "write_small", s3) == pytest.approx(100 * 1e-4)
    one_mib = model(class_n=dict(counts, write_small=1), class_b={"write_small": LARGE_CALL})
    assert class_cost(one_mib, "write_small", s3) == pytest.approx(0.0256)
    # large calls no dearer per byte than small ones: nothing is per byte, the call's cost stays
    flat = dict(s3, write_large=1e-5)
    assert class_cost(m, "write_small", flat) == pytest.approx(100 * 1e-4)
    # the relative prediction takes the same line at home: tmpfs at 2 us and 0.2 ms
    home = dict(ZERO, write_small=2e-6, write_large=2e-4)
    rec = dict(ZERO, write_small=0.001)
    p = predict(model(class_n=counts, class_s=rec, class_b=m.class_b), s3, home, "s3")
    assert p.io_delta_s == pytest.approx(class_cost(m, "write_small", s3) - class_cost(m, "write_small", home))


def test_a_calibration_is_stored_and_reused(tmp_path):
    """A target's calibration is measured once and reused from the results store (same directory, host, cache and
    calibration version); --recalibrate (refresh) measures it again; another cache state is another calibration."""
    from iolens.workspace.target import resolve
    from iolens.store import ResultsStore
    from iolens.whatif.calibration import CAL_KIND, calibrate

    target = tmp_path / "t"
    target.mkdir()
    t = resolve(str(target))
    with ResultsStore(tmp_path / "db.sqlite") as store:
        first = calibrate(t, store=store)
        assert len(store.runs(kind=CAL_KIND)) == 1
        assert calibrate(t, store=store) == first  # reused, not measured again
        assert len(store.runs(kind=CAL_KIND)) == 1
        calibrate(t, store=store, refresh=True)
        assert len(store.runs(kind=CAL_KIND)) == 2
        assert calibrate(t, store=store) != first  # the newest one


def test_what_the_model_cannot_see_is_said_and_only_that(tmp_path):
    """A shell's kernel counters include the children it reaped: summed with theirs, a `sh -c 'cat a > b'` of
    10 MB was said to have moved 10 MB the trace did not attribute, where `iolens report` shows full coverage.
    A capture cut short and an image that never saved its end (killed with SIGKILL) are said, in the output and
    in the JSON's cannot_see."""
    import json

    from iolens.capture.reader import read_capture
    from iolens.whatif.caveats import model_notes

    (tmp_path / "a").write_bytes(os.urandom(10 << 20))
    cap = tmp_path / "c.iolens"
    res = iolens("profile", "-q", "-o", cap, "--", "sh", "-c", "cat a > b", cwd=tmp_path)
    assert res.returncode == 0, res.stderr
    assert model_notes(read_capture(cap)) == []

    cut = tmp_path / "cut.iolens"
    cut.write_bytes(cap.read_bytes()[:len(cap.read_bytes()) * 2 // 3])
    assert "capture is partial" in model_notes(read_capture(cut))[0]

    killed = tmp_path / "k.iolens"  # the subshell wrote b2 itself (a builtin) and sleeps when it is killed
    res = iolens("profile", "-q", "--trace", "-o", killed, "--", "sh", "-c",
                 "(echo x > b2; sleep 3; true) & sleep 1; kill -9 $!; wait", cwd=tmp_path)
    assert res.returncode == 0, res.stderr
    t = tmp_path / "t"
    t.mkdir()
    out = tmp_path / "p.json"
    res = iolens("predict", killed, "--on", t, "--json", out, cwd=tmp_path)
    assert res.returncode == 0, res.stderr
    said = [n for n in json.loads(out.read_text())["cannot_see"] if "never saved their end" in n]
    assert len(said) == 1 and "sh [" in said[0], json.loads(out.read_text())["cannot_see"]
    assert "never saved their end" in " ".join(res.stdout.split())
    res = iolens("replay", killed, "--on", t, cwd=tmp_path)
    assert res.returncode == 0 and "never saved their end" in " ".join((res.stdout + res.stderr).split())


def test_an_untraced_threaded_process_may_spread_its_cpu_over_every_cpu():
    """Without a trace the threads are not known: a process that made threads is floored at its CPU over the
    machine's CPUs, never at its whole CPU time (minimap2 with 9 s of CPU in 4.7 s was predicted at no less than 9
    s, the interval's low end above every real run); a single-threaded one still at its whole CPU."""
    from iolens import _format as F
    from iolens.capture.reader import Capture, Process
    from iolens.whatif.predict import cpu_floor

    def proc(flags: int) -> Process:
        fields = dict(flags=flags | F.PROC_FLAGS["FINALIZED"][0], utime_ns=9_000_000_000, stime_ns=0,
                      utime_start_ns=0, stime_start_ns=0)
        return Process(fields=fields)

    threaded = Capture("x", {}, [proc(F.PROC_FLAGS["MULTITHREADED"][0])], [], (2, 0))
    single = Capture("x", {}, [proc(0)], [], (2, 0))
    assert cpu_floor(threaded, 0, cpus=2) == pytest.approx(4.5, abs=0.01)
    assert cpu_floor(single, 0, cpus=2) == pytest.approx(9.0, abs=0.01)


def test_the_terminal_says_classes_in_the_reports_words_and_what_each_target_is_against():
    """The table and the largest-classes line name a class as the report does ("small reads", not read_small),
    and the line under them says what the comparison is, not "each target against: home storage calibration"."""
    import io

    from rich.console import Console

    from iolens.analysis.breakdown import LABELS
    from iolens.render.whatif_text import render_predict
    from iolens.whatif.predict import predict

    home = dict(ZERO, read_small=0.002, write_large=0.1)
    slow = dict(ZERO, read_small=0.003, write_large=0.3, meta_create=0.01)
    for ref_home, said in ((home, "each target's calibration is compared with the home storage's"),
                           (None, "compared with the step's own recorded time per operation")):
        buf = io.StringIO()
        render_predict(Console(file=buf, width=200, color_system=None), "c.iolens", model(),
                       [predict(model(), slow, ref_home, "slow")], "", "warm")
        text = " ".join(buf.getvalue().split())
        assert said in text and "each target against" not in text, text
        line = text.partition("largest classes: ")[2]
        assert line.startswith((f"{LABELS['small_read']} 3.000 s", f"{LABELS['streaming_write']} ")), text
        assert f"{LABELS['streaming_write']} " in line and f"{LABELS['small_read']} 3.000 s" in line, text
        assert re.search(f"│ ({LABELS['small_read']}|{LABELS['streaming_write']}) slow, largest", text), text
        assert "read_small" not in text and "write_large" not in text and "small reads" in text, text
