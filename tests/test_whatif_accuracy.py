"""benchmarks/whatif_accuracy.py: each step is profiled several times, round-robin with the other steps and each
capture paired with a plain run, and the capture of median wall time is the one replayed and predicted (one capture
taken at a bad moment would spoil every cell of its step)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

pytestmark = pytest.mark.timeout(300)


def accuracy_module():
    bench = Path(__file__).resolve().parents[1] / "benchmarks"
    sys.path.insert(0, str(bench))
    try:
        spec = importlib.util.spec_from_file_location("whatif_accuracy", bench / "whatif_accuracy.py")
        assert spec and spec.loader
        mod = importlib.util.module_from_spec(spec)
        sys.modules["whatif_accuracy"] = mod  # its dataclasses look their module up there
        spec.loader.exec_module(mod)
        return mod
    finally:
        sys.path.remove(str(bench))


def test_median_index():
    m = accuracy_module()
    assert m.median_index([5.0, 1.0, 3.0]) == 2
    assert m.median_index([1.0, 9.0, 2.0]) == 2
    assert m.median_index([7.0]) == 0
    # an even count: the lower middle one, a capture that was taken
    assert m.median_index([4.0, 1.0, 3.0, 2.0]) == 3


def test_the_capture_of_median_wall_time_is_kept(tmp_path):
    """Three profiled runs that sleep 0.6, 0.05 and 0.25 s: the 0.25 s one is kept, every wall is returned; each
    capture is paired with a plain run (order alternating) and the steps take turns, so a slow minute of the
    machine does not fall on every capture of one step."""
    m = accuracy_module()
    # a's runs in turn: plain, profiled; profiled, plain; plain, profiled: only runs 1, 2 and 5 sleep
    a = ("n=$(cat n 2>/dev/null || echo 0); echo $((n+1)) > n; echo a >> order; "
         "case $n in 1) sleep 0.6;; 2) sleep 0.05;; 5) sleep 0.25;; esac")
    out = m.profile_steps({"a": ["sh", "-c", a], "b": ["sh", "-c", "echo b >> order"]}, tmp_path, 3)
    cap, walls, kept, plain = out["a"]
    assert len(walls) == 3 and kept == 2 and len(plain) == 3 and len(out["b"][1]) == 3
    assert walls[1] < walls[2] < walls[0] and walls[1] >= 0.05
    assert float(cap.meta["wall_s"]) == walls[2]
    assert max(plain) < 0.05  # the sleeps fell on the captures: the pairs alternate as said
    assert (tmp_path / "n").read_text().strip() == "6"
    assert (tmp_path / "order").read_text().split() == ["a", "a", "b", "b"] * 3


def test_preemption_is_measured_from_the_steps_own_runs(tmp_path):
    """The run delay per involuntary switch: a number of seconds, or None when no switch happened."""
    m = accuracy_module()
    busy = ["sh", "-c", "i=0; while [ $i -lt 20000 ]; do i=$((i+1)); done"]
    v = m.preempt_per_switch_s({"busy": busy}, tmp_path, runs=2)
    assert v is None or 0 <= v < 1.0


def test_each_round_can_replay_its_own_capture(tmp_path):
    """--capture-each-round: before its real runs a round profiles the step again on the home target, and that
    capture (here the one run that sleeps 0.3 s) is replayed beside the kept one, on the same targets."""
    from iolens.workspace.target import resolve
    from iolens.capture.record import Recording
    from iolens.whatif.plan import build_plan

    m = accuracy_module()
    work = tmp_path / "work"
    work.mkdir()
    step = ["sh", "-c", "n=$(cat n 2>/dev/null || echo 0); echo $((n+1)) > n; case $n in 1) sleep 0.3;; esac"]
    kept = build_plan(Recording(step, trace=True, cwd=str(work)).run().capture)  # run 0: no sleep
    seen: list[float] = []

    model = SimpleNamespace()

    def own(cap):
        seen.append(float(cap.meta["wall_s"]))
        return build_plan(cap), model

    cells = m.Cells(["a"], ["home"], 0, {}, {}, {}, {})
    m.run_round(cells, {"a": step}, [("home", work, resolve(str(tmp_path)))], {"a": kept}, None, own)
    assert len(seen) == 1 and seen[0] >= 0.3  # run 1, the round's capture, slept
    assert cells.own_models == {"a": [model]}
    # its prediction follows the CPU's speed in the round against its own capture's probe, taken minutes apart
    assert len(cells.cpu["a"]) == 1 and 0.5 < model.cpu_ratio < 2.0
    assert cells.actual[("a", "home")][0] < 0.25  # run 2, for real
    assert cells.replayed[("a", "home")][0] < 0.25  # the kept capture's replay
    assert cells.own[("a", "home")][0] >= 0.28  # the round's own capture's replay
    assert (work / "n").read_text().strip() == "3"


def test_each_round_rotates_the_order_of_a_cells_runs(tmp_path, monkeypatch):
    """What a run leaves on its storage is met by the next (the root disk's recently deleted inodes): over three
    rounds the real run, the replay and the round's own capture's replay each come first, second and third once,
    and each is preceded by each of the others at most once."""
    from iolens.workspace.target import resolve

    m = accuracy_module()
    order: list[str] = []
    kept, mine = SimpleNamespace(recorded=None), object()
    monkeypatch.setattr(m, "real_run", lambda w, argv, io=None: order.append("real") or 1.0)
    monkeypatch.setattr(m, "replay_on", lambda plan, t: order.append("replay" if plan is kept else "own")
                        or SimpleNamespace(wall_s=1.0, cpu_ratio=None, threads=[], thread_cpu={}))
    monkeypatch.setattr(m, "breakdown", lambda *a: {})
    monkeypatch.setattr(m, "Recording", lambda *a, **k: SimpleNamespace(run=lambda: SimpleNamespace(
        capture=SimpleNamespace(meta={}))))
    monkeypatch.setattr(m, "cpu_ratio", lambda probes, cap: 1.0)
    cells = m.Cells(["a"], ["home"], 0, {}, {}, {}, {})
    for k in range(3):
        m.run_round(cells, {"a": ["true"]}, [("home", tmp_path, resolve(str(tmp_path)))], {"a": kept}, None,
                    lambda cap: (mine, SimpleNamespace()), k)
    assert order == ["real", "replay", "own", "replay", "own", "real", "own", "real", "replay"]
    assert len(cells.actual[("a", "home")]) == len(cells.replayed[("a", "home")]) == 3
    assert m.cell_order([1, 2], 3) == [2, 1] and m.cell_order([], 1) == []


def test_a_skipped_cell_is_not_run(tmp_path):
    """--skip STEP@TARGET: the round runs and replays the step on the other targets only, and the cell is left out
    of the cells that ran (the report says it was not run)."""
    from iolens.workspace.target import resolve
    from iolens.whatif.plan import build_plan
    from iolens.capture.record import Recording

    m = accuracy_module()
    works = []
    for name in ("home", "far"):
        (tmp_path / name).mkdir()
        works.append((name, tmp_path / name, resolve(str(tmp_path / name))))
    step = ["sh", "-c", "echo x >> n"]
    plan = build_plan(Recording(step, trace=True, cwd=str(works[0][1])).run().capture)
    cells = m.Cells(["a"], ["home", "far"], 0, {}, {}, {}, {}, skip={("a", "far")})
    m.run_round(cells, {"a": step}, works, {"a": plan}, None)
    assert set(cells.actual) == set(cells.replayed) == {("a", "home")}
    assert not (tmp_path / "far" / "n").exists()
    assert cells.run() == [("a", 0, "home")]


def test_the_noise_floor_is_the_medians_own_spread():
    """A perfect prediction's error against the median of the real runs: 0 when the runs agree, larger as they
    spread, and the same for the same runs (a fixed seed)."""
    m = accuracy_module()
    assert m.noise_floor([1.0] * 5) == 0.0
    tight, wide = m.noise_floor([0.99, 1.0, 1.01, 1.0, 0.995]), m.noise_floor([0.8, 1.0, 1.2, 0.9, 1.1])
    assert 0 < tight < 1 < wide < 20
    assert m.noise_floor([0.8, 1.0, 1.2, 0.9, 1.1]) == wide


def test_a_real_runs_device_io_is_counted_where_there_is_a_device(tmp_path, capsys):
    """The benchmark keeps, per real run, what the work directory's block device read and wrote meanwhile
    (sysinfo.device_io, from /sys/dev/block); tmpfs has no device.  A cell whose runs spread says both ends."""
    import os
    import shutil
    import tempfile

    from iolens.sysinfo import device_io

    m = accuracy_module()
    assert device_io("/dev/shm") is None
    disk = Path(tempfile.mkdtemp(dir="/var/tmp"))
    try:
        before = device_io(disk)
        assert before is not None, "no block device under /var/tmp"
        io: list = []
        m.real_run(disk, ["sh", "-c", "head -c 3000000 /dev/urandom > out.sam && sync out.sam"], io)
        [(wall, read, written)] = io
        assert wall > 0 and read >= 0 and written >= 3_000_000
        assert device_io(disk)[1] >= before[1] + 3_000_000
        cells = m.Cells(["a"], ["disk"], 0, {}, {}, {}, {})
        cells.real_io[("a", "disk")] = [(0.1, 0, 4096), (0.4, 8_000_000, 0), (0.2, None, None)]
        m.spread_io(cells)
        out = capsys.readouterr().out
        assert "fastest 0.100 s (read 0.0 MB, wrote 0.0 MB), slowest 0.400 s (read 8.0 MB, wrote 0.0 MB)" in out
    finally:
        shutil.rmtree(disk, ignore_errors=True)
        os.sync()
