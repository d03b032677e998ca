"""Process images in a replay: the profiler's cost of each image comes out of the gaps, and a replay of a step
that starts many short processes wakes only the threads that wait for each start and end."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest

from conftest import iolens

pytestmark = pytest.mark.timeout(300)


def profile(tmp_path: Path, argv: list[str]) -> Path:
    out = tmp_path / "step.iolens"
    r = iolens("profile", "-q", "--trace", "-o", out, "--", *argv, cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    return out


def test_the_profilers_time_before_an_images_first_event_comes_out_of_the_gap_before_it(tmp_path, cprog):
    """An image makes its capture part on its first recorded call, before the call starts: the recorder times
    that into the first event's own_ns.  It, and the image's own cost (PROCESS_OVERHEAD_NS), come out of the gap
    before the image's first op, not the gap after it."""
    from iolens.capture.reader import read_capture
    from iolens.whatif.engine import op_codes
    from iolens.whatif.plan import build_plan
    from iolens.whatif.timeline import PROCESS_OVERHEAD_NS, before_first

    (tmp_path / "in.dat").write_bytes(os.urandom(600_000))
    cap = read_capture(profile(tmp_path, [str(cprog("replay_known")), "in.dat", "out.dat"]))
    procs = [p for p in cap.processes if p.events is not None and len(p.events)]
    assert len(procs) == 1  # one image, two threads
    ev = procs[0].events
    tids = np.unique(ev["tid"])
    firsts = np.array([np.nonzero(ev["tid"] == t)[0][np.argmin(ev["start_mono"][ev["tid"] == t])] for t in tids])
    later = np.setdiff1d(np.arange(len(ev)), firsts)
    # the thread that made the part (a file, a mapping, the start's records) carries tens of us before its first
    # event, many times an event's own time after a call
    made = int(ev["own_ns"][firsts].max())
    assert made > 20_000 and made > 10 * float(np.median(ev["own_ns"][later])), (made, ev["own_ns"][later])
    bf = before_first(ev)
    assert (bf[later] == 0).all()
    image_first = int(np.argmin(ev["start_mono"]))
    assert (bf[firsts] == ev["own_ns"][firsts] + np.where(firsts == image_first, PROCESS_OVERHEAD_NS, 0)).all()
    c = op_codes()
    raw = build_plan(cap, event_overhead_ns=0, path_overhead_ns=None)
    costed = build_plan(cap, event_overhead_ns=1, path_overhead_ns=1)  # per-event figures next to nothing
    for k, t in enumerate(tids):  # plan thread k is the image's k-th tid; its first op follows its START
        rows = np.nonzero(raw.ops["thread"] == k)[0]
        assert raw.ops["op"][rows[0]] == c["START"]
        first_op = rows[1]
        taken = int(raw.ops["gap"][first_op]) - int(costed.ops["gap"][first_op])
        want = min(int(bf[firsts[k]]), int(raw.ops["gap"][first_op]))
        assert abs(taken - want) <= 10, (k, taken, want)  # the 1 ns figures of events before it aside


def test_a_shell_loops_children_are_woken_only_by_their_own_start_and_end(tmp_path):
    """A shell that runs 150 short children one after another: each child's replay thread waits for its process
    to start, and the shell for each to end.  Each start and end wakes the threads waiting for that process only:
    woken on every start and end, the 150 waiting threads took ~150 x 150 context switches, and each child
    started 0.2-0.3 ms late (a count of the replayer's own switches, not a time, is what this checks)."""
    from iolens.workspace.target import resolve
    from iolens.capture.reader import read_capture
    from iolens.whatif.plan import build_plan
    from iolens.whatif.replay import replay_on

    n = 150
    (tmp_path / "small").write_bytes(b"x" * 100)
    cap = read_capture(profile(tmp_path, ["sh", "-c", f"i=0; while [ $i -lt {n} ]; do cat small >/dev/null; "
                                                      "i=$((i+1)); done"]))
    plan = build_plan(cap)
    assert plan.processes == n + 1
    target = tmp_path / "t"
    target.mkdir()
    res = replay_on(plan, resolve(str(target)))
    assert res.errors == 0 and res.dependency_timeouts == 0
    switches = res.raw["voluntary_switches"] + res.raw["involuntary_switches"]
    # a few per child (its start, its parent's wait, the 50 ms re-checks), not one per waiting thread
    assert switches < 20 * n, switches


def test_an_end_of_file_wait_is_never_for_an_image_started_after_the_read(tmp_path):
    """A shell's `x=$(echo $i); true` reads its subshell's pipe to its end, reaps the subshell, then starts
    `true`, which often ends within the slack the end-of-file wait allows for the clocks.  That wait was put on
    `true`, before the shell's SPAWN of it: the replay stuck there for the 10 s dependency timeout, once per
    iteration that hit.  Checked on the plan: no thread waits for an image before it started that image."""
    from iolens.capture.reader import read_capture
    from iolens.whatif.engine import op_codes
    from iolens.whatif.plan import build_plan

    cap = read_capture(profile(tmp_path, ["bash", "-c", "for i in $(seq 150); do x=$(echo $i); /bin/true; done"]))
    plan = build_plan(cap)
    c = op_codes()
    ops = plan.ops
    assert int((ops["op"] == c["SPAWN"]).sum()) >= 300  # the subshells and the `true`s
    eof_waits = early = 0
    for th in np.unique(ops["thread"]):
        seq = ops[ops["thread"] == th]
        spawned: set[int] = set()
        for i, o in enumerate(seq):
            if o["op"] == c["SPAWN"]:
                spawned.add(int(o["obj"]))
            elif o["op"] == c["WAIT"]:
                after_eof = i > 0 and seq[i - 1]["op"] == c["PIPE_READ"] and seq[i - 1]["size"] == 0
                eof_waits += after_eof
                mine = [int(x["obj"]) for x in seq if x["op"] == c["SPAWN"]]
                early += int(o["obj"]) in mine and int(o["obj"]) not in spawned
    assert early == 0
    assert eof_waits > 0  # the rule under test ran: the shell's end-of-file reads wait for their subshells
