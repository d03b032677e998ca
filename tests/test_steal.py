"""Steal while recording: on a virtual machine the hypervisor can run something else on a CPU the step's process
was running on.  The process's CPU times leave that out and its wall time holds it, so without a correction a
replay waits out, and a prediction keeps, the steal of the minute the capture was taken.  The capture carries the
machine's busy and stolen CPU time over the run (META machine_cpu_s); the plan and the model take the steal out."""

from __future__ import annotations

import os
import sys
from types import SimpleNamespace

import numpy as np
import pytest

from conftest import iolens

pytestmark = pytest.mark.timeout(300)


def test_cpu_seconds_reads_busy_and_stolen_time(tmp_path):
    from iolens.sysinfo import cpu_delta, cpu_seconds

    tick = os.sysconf("SC_CLK_TCK")
    stat = tmp_path / "stat"
    # user nice system idle iowait irq softirq steal guest guest_nice
    stat.write_text(f"cpu  {3 * tick} {tick} {2 * tick} 999 5 {tick} {tick} {4 * tick} 0 0\ncpu0 1 2 3\n")
    assert cpu_seconds(str(stat)) == {"busy": 8.0, "steal": 4.0, "tick": 1 / tick}
    stat.write_text("cpu  1 2 3\n")  # a kernel too old to count steal
    assert cpu_seconds(str(stat)) is None
    assert cpu_seconds(str(tmp_path / "none")) is None
    a = {"busy": 10.0, "steal": 1.0, "tick": 0.01}
    assert cpu_delta(a, {"busy": 10.7, "steal": 1.3, "tick": 0.01}) == pytest.approx(
        {"busy": 0.7, "steal": 0.3, "tick": 0.01})
    assert cpu_delta(a, None) is None and cpu_delta(None, a) is None
    # this machine's, when it has /proc/stat: both only grow
    now = cpu_seconds()
    if now is not None:
        later = cpu_seconds()
        assert later is not None and later["busy"] >= now["busy"] and later["steal"] >= now["steal"]


def test_a_capture_carries_the_machines_cpu_time_over_its_run(tmp_path):
    """A command that computes for ~0.2 s: the machine's busy time over the run holds at least most of it (the
    kernel charges CPU time a tick at a time), and nothing of the META record is out of shape."""
    from iolens.capture.reader import read_capture

    out = tmp_path / "busy.iolens"
    r = iolens("profile", "-o", out, "--", sys.executable, "-c",
               "import time\nt = time.process_time()\nwhile time.process_time() - t < 0.2: pass", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    cap = read_capture(out)
    assert not cap.problems
    m = cap.meta["machine_cpu_s"]
    child = cap.meta["children_rusage"]["utime_s"] + cap.meta["children_rusage"]["stime_s"]
    assert child >= 0.2 and m["busy"] >= 0.5 * child, (m, child)
    assert m["steal"] >= 0 and m["tick"] == pytest.approx(1 / os.sysconf("SC_CLK_TCK"))


def test_a_garbled_machine_cpu_record_is_dropped_not_trusted():
    """Read from a capture file: a record out of shape is dropped (and said), so the step is taken as unstolen."""
    from helpers.capture import capture_bytes, fil, proc
    from iolens.capture.reader import decode
    from iolens.whatif.predict import step_model

    procs = [proc(100, ["gzip"], end=2.0, cpu=1.5, files=[fil("/data/r.fq", reads=10, read_size=65536,
                                                              read_time=0.1)])]
    good = decode(capture_bytes(procs, {"machine_cpu_s": {"busy": 1.0, "steal": 0.5, "tick": 0.01}}))
    assert good.meta["machine_cpu_s"]["steal"] == 0.5 and step_model(good).stolen_s > 0
    for bad in ({"busy": "1", "steal": 0.1, "tick": 0.01}, {"busy": float("inf"), "steal": 0.1, "tick": 0.01},
                [1, 2], {"steal": 0.5}, {"busy": -3.0, "steal": 0.5, "tick": 0.01}):
        cap = decode(capture_bytes(procs, {"machine_cpu_s": bad}))
        assert "machine_cpu_s" not in cap.meta and "'machine_cpu_s'" in " ".join(cap.problems), bad
        assert step_model(cap).stolen_s == 0.0


def test_steal_share_is_a_lower_bound_and_knows_nothing_of_older_or_garbled_captures():
    """/proc/stat counts a tick at a time per CPU: a tick per CPU comes off the stolen time and onto the whole."""
    from iolens.sysinfo import STEAL_MAX, steal_share, stolen_wait

    def share(busy, steal, tick=0.01, cpus=2):
        return steal_share({"cpus": cpus, "machine_cpu_s": {"busy": busy, "steal": steal, "tick": tick}})

    assert share(0.68, 0.32) == pytest.approx(0.3 / 1.02)
    assert share(0.68, 0.32, cpus=1) == pytest.approx(0.31 / 1.01)
    assert share(0.05, 0.02) == 0.0 and share(0.0, 0.02) == 0.0  # a tick per CPU: unsure
    assert steal_share({}) == 0.0 and share(0, 0) == 0.0
    assert share(0.0, 5.0) == STEAL_MAX
    # out of shape: no steal rather than the most (a missing busy, a negative one, a tick that is no tick)
    for bad in ({"steal": 0.5}, {"busy": -3, "steal": 0.5, "tick": 0.01}, {"busy": 10, "steal": 0, "tick": -5},
                {"busy": "1", "steal": 0.5, "tick": 0.01}, {"busy": 1, "steal": 0.5, "tick": 0.01, "x": 1}):
        assert steal_share({"cpus": 2, "machine_cpu_s": bad}) == 0.0, bad
    assert stolen_wait(1.0, 0.5) == pytest.approx(1.0) and stolen_wait(1.0, -1) == 0.0
    assert stolen_wait(1.0, 1.0) == pytest.approx(STEAL_MAX / (1 - STEAL_MAX))


def test_stolen_time_in_a_gap_is_not_waited_out():
    """100 ms of gaps, 40 ms of them on the CPU, no involuntary switch: with a fifth of the CPU time asked for
    stolen, the process waited 40 * 0.2 / 0.8 = 10 ms for it, so 10 of the 60 ms off the CPU are not replayed."""
    from iolens.whatif.timeline import PROCESS_OVERHEAD_NS, cpu_shares

    p = SimpleNamespace(finalized=True, utime_ns=40_000_000 + PROCESS_OVERHEAD_NS, utime_start_ns=0, stime_ns=0,
                        stime_start_ns=0, events=None, nivcsw=0, nvcsw=100_000)
    gap, th = np.array([50_000_000, 50_000_000]), np.array([0, 0])
    assert cpu_shares([p], [0], th, gap, 0, 0.0002).wait == [pytest.approx(1.0)]
    got = cpu_shares([p], [0], th, gap, 0, 0.0002, steal=0.2)
    assert got.share == [pytest.approx(0.4)] and got.wait == [pytest.approx(50 / 60)]
    # with preemption as well, both are taken out, never more than the time off the CPU
    p.nivcsw = 100
    assert cpu_shares([p], [0], th, gap, 0, 0.0002, steal=0.2).wait == [pytest.approx(30 / 60)]
    assert cpu_shares([p], [0], th, gap, 0, 0.0002, steal=0.8).wait == [pytest.approx(0.0)]


@pytest.fixture(scope="module")
def computing_capture(tmp_path_factory):
    """A traced step that writes, sleeps 0.3 s, computes ~0.1 s and writes again."""
    from iolens.capture.reader import read_capture

    d = tmp_path_factory.mktemp("steal")
    out = d / "step.iolens"
    r = iolens("profile", "--trace", "-o", out, "--", sys.executable, "-c",
               "import time\nopen('a', 'w').write('x')\ntime.sleep(0.3)\nt = time.process_time()\n"
               "while time.process_time() - t < 0.1: pass\nopen('b', 'w').write('y')", cwd=d)
    assert r.returncode == 0, r.stderr
    return read_capture(out)


def _with_steal(cap, share: float):
    """The capture as if `share` of the CPU time asked for had been stolen while it ran."""
    import copy

    c = copy.copy(cap)
    c.meta = dict(cap.meta, cpus=1, machine_cpu_s={"busy": 1.0 - share, "steal": share + 1e-9, "tick": 1e-9})
    return c


def test_the_plan_does_not_wait_out_the_recordings_steal(computing_capture):
    from iolens.whatif.plan import build_plan

    calm = build_plan(_with_steal(computing_capture, 0.0))
    stolen = build_plan(_with_steal(computing_capture, 0.5))
    py = [t for t, p in enumerate(calm.threads) if computing_capture.processes[p].argv[:1] == [sys.executable]
          or "python" in computing_capture.processes[p].exe]
    assert py, "the step's own thread is in the plan"
    # the same CPU burnt; of the 0.3 s off the CPU, what the step's >= 0.1 s of CPU waited for steal is not waited
    assert [stolen.cpu_share[t] for t in py] == pytest.approx([calm.cpu_share[t] for t in py])
    # (on a loaded machine the calm plan already takes most of that time as preemption, and so waits little)
    assert all(stolen.wait_share[t] <= max(0.0, calm.wait_share[t] - 0.2) + 1e-9 for t in py), \
        (calm.wait_share, stolen.wait_share)
    assert any("hypervisor took 50%" in n for n in stolen.notes)
    assert not any("hypervisor" in n for n in calm.notes)
    # waiting every gap out ("sleep") keeps the recording as it was
    assert build_plan(_with_steal(computing_capture, 0.5), gaps="sleep").wait_share == \
        build_plan(_with_steal(computing_capture, 0.0), gaps="sleep").wait_share


def test_the_prediction_takes_the_recordings_steal_out_of_the_compute(computing_capture):
    from iolens.whatif.calibration import CLASSES
    from iolens.whatif.predict import predict, step_model

    calm = step_model(_with_steal(computing_capture, 0.0))
    stolen = step_model(_with_steal(computing_capture, 0.5))
    assert calm.stolen_s == 0.0 and not any("hypervisor" in u for u in calm.unseen)
    # half the compute at most, and at most what >= 0.1 s of CPU waited at a steal share of one half
    assert 0.09 <= stolen.stolen_s <= 0.5 * calm.compute_s + 1e-9
    assert stolen.compute_s == pytest.approx(calm.compute_s - stolen.stolen_s)
    assert any("hypervisor took 50%" in u for u in stolen.unseen)
    same = dict.fromkeys(CLASSES, 1e-4)
    assert predict(stolen, same, same, "x").wall_s == pytest.approx(predict(calm, same, same, "x").wall_s
                                                                      - stolen.stolen_s)


def test_predict_says_where_the_recorded_wall_went_steal_included(computing_capture):
    """The first line of `predict` adds up: compute + storage I/O + profiler + steal = the recorded wall."""
    import io
    import re

    from rich.console import Console

    from iolens.render.whatif_text import render_predict
    from iolens.whatif.calibration import CLASSES
    from iolens.whatif.predict import predict, step_model

    m = step_model(_with_steal(computing_capture, 0.5))
    same = dict.fromkeys(CLASSES, 1e-4)
    buf = io.StringIO()
    render_predict(Console(file=buf, width=200), "step.iolens", m, [predict(m, same, same, "x")], "", "warm")
    head = buf.getvalue().splitlines()[0]
    parts = {k: float(v) for k, v in re.findall(r"(wall|compute|I/O|profiler|steal) ([0-9.]+) s", head)}
    assert set(parts) >= {"wall", "compute", "I/O", "steal"}, head
    assert parts["compute"] + parts["I/O"] + parts.get("profiler", 0) + parts["steal"] == pytest.approx(
        parts["wall"], abs=0.003)


def test_the_run_summary_warns_that_its_compute_time_holds_the_steal(computing_capture):
    """`iolens profile`'s end-of-run summary (and its JSON) says when the hypervisor took a share of the CPU time
    while the step ran: the compute time it shows includes that."""
    from iolens.analysis.summary import summarize

    warned = [p for p in summarize(_with_steal(computing_capture, 0.3)).problems if "hypervisor" in p]
    assert warned == ["the hypervisor took 30% of the CPU time asked for while the step was recorded (steal): the "
                      "compute time here includes it; profile again when the machine is quieter, or use replay or "
                      "predict, which take it out"]
    assert not [p for p in summarize(_with_steal(computing_capture, 0.0)).problems if "hypervisor" in p]


def test_the_report_says_how_much_of_the_recording_was_stolen(tmp_path):
    """`iolens report` carries the steal share in its JSON (null when the capture does not say) and notes it in
    the terminal and HTML reports from STEAL_NOTE on; a capture with no steal gets no note."""
    import json

    from helpers.capture import fil, proc, write_capture

    procs = [proc(100, ["gzip", "-c", "reads.fq"], end=2.0, cpu=1.5, files=[fil("/data/reads.fq", reads=10,
                                                                                  read_size=65536, read_time=0.1)])]
    shares = {}
    for name, cpu in (("stolen", {"busy": 1.46, "steal": 0.52, "tick": 0.01}),
                      ("quiet", {"busy": 1.5, "steal": 0.01, "tick": 0.01}), ("older", None)):
        cap = write_capture(tmp_path / f"{name}.iolens", procs, {"cpus": 2, **({"machine_cpu_s": cpu} if cpu else {})})
        r = iolens("report", cap, "--json", tmp_path / f"{name}.json", "--html", tmp_path / f"{name}.html")
        assert r.returncode == 0, r.stderr
        shares[name] = json.loads((tmp_path / f"{name}.json").read_text())["capture"]["steal_share"]
        noted = "the hypervisor took 25% of the CPU time" in " ".join(r.stdout.split())
        assert noted == (name == "stolen"), r.stdout
        assert ("(steal)" in (tmp_path / f"{name}.html").read_text()) == (name == "stolen")
    assert shares == {"stolen": pytest.approx(0.25), "quiet": 0.0, "older": None}
