"""Compute gaps replayed as CPU: a gap's on-CPU share is burnt (and measured on the thread's CPU clock), the rest
waited out; a process's start-up CPU is burnt before its SPAWN; the shares come from the capture's CPU times."""

from __future__ import annotations

import os
import resource
from pathlib import Path

import numpy as np
import pytest

from conftest import iolens

pytestmark = pytest.mark.timeout(300)


def crafted(rows: list[tuple[int, int, int, int, int, int]], threads: list[int], nproc: int, **kw):
    """A plan from (op, thread, obj, offset, size, gap) rows, grouped by thread."""
    from iolens.whatif.engine import op_dtype
    from iolens.whatif.plan import Plan, ReplayFile

    ops = np.zeros(len(rows), dtype=op_dtype())
    arr = np.array(rows, dtype=np.int64)
    ops["op"], ops["thread"], ops["obj"], ops["offset"], ops["size"], ops["gap"] = arr.T
    return Plan([ReplayFile("/x", "x", created=True)], [0], threads, nproc, [0], 0, ops, 0.0, **kw)


def replay_cpu(plan, target: Path):
    """The replay and the CPU time the replayer used (user + system, from its rusage)."""
    from iolens.workspace.target import resolve
    from iolens.whatif.replay import replay_on

    r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    res = replay_on(plan, resolve(str(target)))
    r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    return res, (r1.ru_utime - r0.ru_utime) + (r1.ru_stime - r0.ru_stime)


def test_a_gap_with_known_cpu_is_replayed_as_cpu(tmp_path):
    from iolens.whatif.engine import op_codes

    c = op_codes()
    target = tmp_path / "t"
    target.mkdir()
    rows = [(c["START"], 0, 0, 0, 0, 0), (c["EXIT"], 0, 0, 0, 0, 300_000_000)]
    # all of the 300 ms gap on the CPU: 300 ms of CPU burnt, whatever the machine's load
    res, cpu = replay_cpu(crafted(rows, [0], 1, cpu_share=[1.0], wait_share=[1.0]), target)
    assert res.errors == 0 and res.wall_s >= 0.29
    assert 0.29 <= res.thread_cpu[0] < 0.33, res.thread_cpu
    assert cpu >= 0.28
    # none of it: slept, no CPU
    res, cpu = replay_cpu(crafted(rows, [0], 1, cpu_share=[0.0], wait_share=[1.0]), target)
    assert res.wall_s >= 0.29 and res.thread_cpu == [0.0]
    assert cpu < 0.1
    # half on the CPU, the other half preemption while recording (no real wait): 150 ms of CPU and nothing
    # waited after it; when this machine is busy the burn takes longer and the thread is late, as the step would be
    res, _cpu = replay_cpu(crafted(rows, [0], 1, cpu_share=[0.5], wait_share=[0.0]), target)
    assert 0.145 <= res.thread_cpu[0] < 0.18
    [th] = res.threads
    assert res.wall_s >= 0.145 and th["late"] == pytest.approx(max(0.0, th["end"] - 0.15), abs=0.01)
    # half on the CPU, half a real wait: 150 ms burnt, then the rest of the gap waited out
    res, _cpu = replay_cpu(crafted(rows, [0], 1, cpu_share=[0.5], wait_share=[1.0]), target)
    assert 0.145 <= res.thread_cpu[0] < 0.18 and res.wall_s >= 0.29
    assert list(target.iterdir()) == []


def test_process_start_cpu_is_burnt_before_the_spawn(tmp_path):
    from iolens.whatif.engine import op_codes

    c = op_codes()
    target = tmp_path / "t"
    target.mkdir()
    # process 0 starts process 1 after a 100 ms gap of which 80 ms were the child's start-up (fork, exec, loading)
    rows = [(c["START"], 0, 0, 0, 0, 0), (c["SPAWN"], 0, 1, 0, 80_000_000, 100_000_000), (c["WAIT"], 0, 1, 0, 0, 0),
            (c["START"], 1, 1, 0, 0, 0), (c["EXIT"], 1, 0, 0, 0, 1_000_000)]
    res, _cpu = replay_cpu(crafted(rows, [0, 1], 2, cpu_share=[0.0, 0.0], wait_share=[1.0, 1.0]), target)
    assert res.errors == 0 and res.dependency_timeouts == 0
    assert 0.079 <= res.thread_cpu[0] < 0.1 and res.thread_cpu[1] == 0.0
    assert res.wall_s >= 0.1


def test_cpu_shares_come_from_the_capture(tmp_path):
    from iolens.capture.reader import read_capture
    from iolens.whatif.engine import op_codes
    from iolens.whatif.plan import build_plan
    from iolens.whatif.timeline import on_cpu_gap_s

    c = op_codes()
    (tmp_path / "in.dat").write_bytes(os.urandom(200_000))
    busy = tmp_path / "busy.iolens"
    r = iolens("profile", "--trace", "-o", busy, "--", "sh", "-c", "cat in.dat > c1; i=0; while [ $i -lt 150000 ]; "
               "do i=$((i+1)); done; cat in.dat > c2", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    sleepy = tmp_path / "sleepy.iolens"
    r = iolens("profile", "--trace", "-o", sleepy, "--", "sh", "-c", "cat in.dat > c1; sleep 0.4; cat in.dat > c2",
               cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    cap = read_capture(busy)
    plan = build_plan(cap)
    sh = next(i for i, p in enumerate(cap.processes) if p.argv[:1] == ["sh"])
    sh_cpu = on_cpu_gap_s(cap.processes[sh], 400)
    assert sh_cpu > 0.05, "the shell's loop used CPU"
    # what the plan burns for the shell's threads is the shell's CPU outside its calls
    burn = sum(plan.cpu_share[t] * plan.ops["gap"][plan.ops["thread"] == t].sum() / 1e9
               for t, p in enumerate(plan.threads) if p == sh)
    assert burn == pytest.approx(sh_cpu, rel=0.02)
    # each process's start-up CPU rides on its SPAWN, never more than the gap that holds it
    spawns = plan.ops[plan.ops["op"] == c["SPAWN"]]
    assert len(spawns) >= 2 and (spawns["size"] > 0).all() and (spawns["size"] <= spawns["gap"]).all()
    # the sleeping shell's gaps are off the CPU: the 0.4 s sleep is waited, not burnt
    splan = build_plan(read_capture(sleepy))
    sleep_threads = [t for t, p in enumerate(splan.threads) if p == next(
        i for i, q in enumerate(read_capture(sleepy).processes) if q.argv[:1] == ["sleep"])]
    assert all(splan.cpu_share[t] < 0.1 for t in sleep_threads)
    # "sleep" mode keeps the old behaviour: nothing burnt, start-up included
    flat = build_plan(cap, gaps="sleep")
    assert flat.cpu_share == [0.0] * len(flat.threads) and (flat.ops["size"][flat.ops["op"] == c["SPAWN"]] == 0).all()
    # the replay burns the shell's CPU (within the clock's granularity), on any machine load
    target = tmp_path / "t"
    target.mkdir()
    res, _cpu = replay_cpu(plan, target)
    burnt = sum(res.thread_cpu[t] for t, p in enumerate(plan.threads) if p == sh)
    assert burnt >= 0.9 * sh_cpu


def test_cpu_of_threads_without_file_operations_is_burnt_by_burners():
    from iolens.whatif.timeline import burners

    # process 0: 0.5 s of CPU beyond its replayed gaps over a 0.25 s life: two threads, each all on the CPU;
    # process 1: 0.1 s over 1 s: one thread at 10%; process 2: below a millisecond, left out
    rows, gaps, procs, shares = burners([0.5, 0.1, 0.0005], [0, 0, 0], [250_000_000, 1_000_000_000, 10**9], 7, 0, 1)
    assert procs == [0, 0, 1] and shares == pytest.approx([1.0, 1.0, 0.1])
    assert list(gaps) == [0, 250_000_000, 0, 250_000_000, 0, 1_000_000_000]
    assert list(rows[:, 5]) == [7, 7, 8, 8, 9, 9] and list(rows[:, 4]) == [0, 1] * 3


@pytest.mark.skipif(not __import__("shutil").which("pigz"), reason="pigz is not installed")
def test_a_multithreaded_step_asks_the_cpus_for_what_it_used(tmp_path):
    """pigz compresses in worker threads that make no file operation: their CPU is burnt by burner threads."""
    from iolens.capture.reader import read_capture
    from iolens.whatif.engine import op_codes
    from iolens.whatif.plan import build_plan
    from iolens.whatif.timeline import on_cpu_gap_s

    (tmp_path / "in.dat").write_bytes(os.urandom(16 << 20))
    cap_path = tmp_path / "pigz.iolens"
    r = iolens("profile", "--trace", "-o", cap_path, "--", "pigz", "-p", "2", "-k", "in.dat", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    cap = read_capture(cap_path)
    plan = build_plan(cap)
    [pz] = [i for i, p in enumerate(cap.processes) if p.argv[:1] == ["pigz"]]
    cpu = on_cpu_gap_s(cap.processes[pz], 400)
    start = op_codes()["START"]  # a START's gap is waited out, not burnt (its size is burnt instead)
    burnt = sum(plan.cpu_share[t] * plan.ops["gap"][(plan.ops["thread"] == t) & (plan.ops["op"] != start)].sum() / 1e9
                for t, p in enumerate(plan.threads) if p == pz)
    assert cpu > 0.05 and burnt == pytest.approx(cpu, rel=0.02)
    assert len(plan.threads) == len(plan.cpu_share) == len(plan.wait_share) == len(plan.recorded)
    flat = build_plan(cap, gaps="sleep")
    assert len(flat.threads) <= len(plan.threads)


def test_a_thread_created_late_waits_for_its_creation_and_burns_none_of_it(cprog, tmp_path):
    """tests/native/late_thread.c: the main thread computes 100 ms, then starts a thread that writes a file.  Every
    thread's START is at its process's start; the time until a later thread's first op is its creation, waited out
    at its START and left out of the gaps the process's CPU is shared over.  Burnt, it ran beside the main thread's
    burn (samtools sort's 14 spill threads at once: replayed +33%)."""
    from iolens.capture.reader import read_capture
    from iolens.whatif.engine import op_codes
    from iolens.whatif.plan import build_plan

    cap_path = tmp_path / "late.iolens"
    r = iolens("profile", "-q", "--trace", "-o", cap_path, "--", cprog("late_thread"), tmp_path / "a",
               tmp_path / "b")
    assert r.returncode == 0, r.stderr
    plan = build_plan(read_capture(cap_path))
    ops, start, opened = plan.ops, op_codes()["START"], op_codes()["OPEN"]
    writers = [t for t in range(len(plan.threads)) if (ops["op"][ops["thread"] == t] == opened).any()]
    assert len(writers) == 2, writers  # the main thread, then the late one
    main, late = writers[0], writers[1:]
    mine = ops[ops["thread"] == late[0]]
    assert mine["op"][0] == start and mine["gap"][0] >= 80_000_000  # its creation, 100 ms in
    # the root's start-up CPU rides on its first thread's START only
    firsts = ops[ops["op"] == start]
    assert mine["size"][0] == 0 and firsts["size"][firsts["thread"] == main][0] > 0
    assert (mine["gap"][1:] < 20_000_000).all()
    target = tmp_path / "t"
    target.mkdir()
    res, _cpu = replay_cpu(plan, target)
    assert res.errors == 0 and res.wall_s >= 0.09
    assert res.thread_cpu[late[0]] < 0.01, res.thread_cpu  # none of the wait burnt
    # the main thread's 100 ms compute is (by it, or by a burner where it lies beyond its gaps)
    assert sum(res.thread_cpu) - res.thread_cpu[late[0]] >= 0.06, res.thread_cpu
    assert plan.threads[main] == plan.threads[late[0]]


def test_a_roots_start_up_cpu_is_burnt_in_its_start_gap(tmp_path):
    """A root's START gap (from the run's start to its first record: exec, dynamic loading) burns its start-up CPU
    (the op's size), not its share of the process's later gaps."""
    from iolens.whatif.engine import op_codes

    c = op_codes()
    target = tmp_path / "t"
    target.mkdir()
    rows = [(c["START"], 0, 0, 0, 60_000_000, 80_000_000), (c["EXIT"], 0, 0, 0, 0, 1_000_000)]
    res, _cpu = replay_cpu(crafted(rows, [0], 1, cpu_share=[0.0], wait_share=[1.0]), target)
    assert res.errors == 0 and res.dependency_timeouts == 0
    assert 0.059 <= res.thread_cpu[0] < 0.075, res.thread_cpu
    assert res.wall_s >= 0.08
    # the same START with no start-up CPU stays a wait
    rows[0] = (c["START"], 0, 0, 0, 0, 80_000_000)
    res, _cpu = replay_cpu(crafted(rows, [0], 1, cpu_share=[0.0], wait_share=[1.0]), target)
    assert res.thread_cpu == [0.0] and res.wall_s >= 0.08


def test_a_profiled_roots_start_up_rides_on_its_start(tmp_path):
    from iolens.capture.reader import read_capture
    from iolens.whatif.engine import op_codes
    from iolens.whatif.plan import build_plan
    from iolens.whatif.timeline import startup_cpu_ns

    c = op_codes()
    (tmp_path / "in.dat").write_bytes(os.urandom(100_000))
    cap_path = tmp_path / "cp.iolens"
    r = iolens("profile", "--trace", "-o", cap_path, "--", "cp", "in.dat", "out.dat", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    cap = read_capture(cap_path)
    plan = build_plan(cap)
    [root] = plan.roots
    start = plan.ops[(plan.ops["op"] == c["START"]) & (plan.ops["obj"] == root)]
    assert len(start) == 1 and start["gap"][0] > 0
    want = min(startup_cpu_ns(cap.processes[root], None), int(start["gap"][0]))
    assert want > 0 and int(start["size"][0]) == want
    # "sleep" mode burns nothing there
    flat = build_plan(cap, gaps="sleep")
    assert (flat.ops["size"][flat.ops["op"] == c["START"]] == 0).all()


def test_preemption_is_taken_out_at_the_given_cost_per_switch():
    """100 ms of gaps, 40 ms of them on the CPU, 100 involuntary switches: at 0.2 ms each, 20 of the 60 ms off
    the CPU were preemption (not replayed), the rest a real wait; at 3 ms each, all of it was."""
    from types import SimpleNamespace

    import numpy as np

    from iolens.whatif.timeline import PROCESS_OVERHEAD_NS, cpu_shares

    p = SimpleNamespace(finalized=True, utime_ns=40_000_000 + PROCESS_OVERHEAD_NS, utime_start_ns=0, stime_ns=0,
                        stime_start_ns=0, events=None, nivcsw=100, nvcsw=100_000)
    gap = np.array([50_000_000, 50_000_000])
    got = cpu_shares([p], [0], np.array([0, 0]), gap, 0, 0.0002)
    assert got.share == [pytest.approx(0.4)] and got.wait == [pytest.approx(40 / 60)]
    assert cpu_shares([p], [0], np.array([0, 0]), gap, 0, 0.003).wait == [pytest.approx(0.0)]
    # no cost per switch: only the switches' count share (100 of 100,100 involuntary) is taken as preemption
    assert cpu_shares([p], [0], np.array([0, 0]), gap, 0, 0.0).wait == [pytest.approx(1 - 100 / 100_100)]


def test_a_process_that_was_mostly_preempted_is_not_replayed_waiting():
    """100 ms of gaps, 40 ms on the CPU, 60 ms off it, 300 involuntary switches and 100 voluntary ones: at 0.2 ms
    a switch; of them 3/4 by the switches' count were preemption, whatever each one cost (a loaded
    machine's whole time slices): 45 of the 60 ms are not replayed as a wait.  With nearly every switch
    voluntary, the per-switch figure decides, as before."""
    from types import SimpleNamespace

    from iolens.whatif.timeline import PROCESS_OVERHEAD_NS, cpu_shares

    p = SimpleNamespace(finalized=True, utime_ns=40_000_000 + PROCESS_OVERHEAD_NS, utime_start_ns=0, stime_ns=0,
                        stime_start_ns=0, events=None, nivcsw=300, nvcsw=100)
    gap, th = np.array([50_000_000, 50_000_000]), np.array([0, 0])
    assert cpu_shares([p], [0], th, gap, 0, 0.00001).wait == [pytest.approx(15 / 60)]
    # one involuntary switch beside one voluntary one (a single long sleep): at most PREEMPT_MAX_S of it
    p.nivcsw, p.nvcsw = 1, 1
    assert cpu_shares([p], [0], th, gap, 0, 0.0).wait == [pytest.approx(1 - 0.010 / 0.060)]
    p.nivcsw, p.nvcsw = 300, 100
    p.nvcsw = 1_000_000
    assert cpu_shares([p], [0], th, gap, 0, 0.0001).wait == [pytest.approx(30 / 60, abs=0.001)]


def test_the_replayers_own_time_between_ops_comes_out_of_later_gaps(tmp_path):
    """20,000 stats recorded back to back, then a 30 ms gap: the replayer's own time between the stats (its loop,
    its clock reads) is not the step's, so what of it ran past their zero gaps is taken back from the 30 ms, and
    the replay ends where the recorded schedule does instead of that much later.  With --speed max nothing is."""
    from iolens.workspace.target import resolve
    from iolens.whatif.engine import log_dtype, op_codes
    from iolens.whatif.replay import replay_on

    c = op_codes()
    target = tmp_path / "t"
    target.mkdir()
    n, gap = 20_000, 30_000_000
    rows = ([(c["START"], 0, 0, 0, 0, 0), (c["OPEN"], 0, 0, 0, 0, 0)] + [(c["FSTAT"], 0, 0, 0, 0, 0)] * n
            + [(c["FSTAT"], 0, 0, 0, 0, gap), (c["CLOSE"], 0, 0, 0, 0, 0)])
    plan = crafted(rows, [0], 1, cpu_share=[0.0], wait_share=[1.0])
    log = tmp_path / "own.log"
    res = replay_on(plan, resolve(str(target)), log=str(log))
    assert res.errors == 0
    [th] = res.threads
    lg = np.fromfile(log, dtype=log_dtype())
    waited = (int(lg["start"][-2]) - int(lg["end"][-3])) / 1e9  # before the stat that followed the 30 ms gap
    # at least a clock read (tens of ns) per op ran past its zero gap, and at most the 30 ms were taken back
    assert n * 10e-9 < th["own"] <= gap / 1e9, th
    assert waited == pytest.approx(gap / 1e9 - th["own"], abs=0.002), (waited, th)
    # at full speed there are no gaps to take anything back from
    res = replay_on(plan, resolve(str(target)), speed="max")
    assert res.threads[0]["own"] == 0
    assert list(target.iterdir()) == []


def test_compute_is_burnt_as_the_work_the_capture_timed(tmp_path):
    """A capture keeps what a block of the replayer's burn cost the CPU while it was taken (`iolens-replay
    --probe`); the replay burns a gap's compute as that many blocks, however long they take now.  A capture whose
    CPU ran the block twice as fast did twice the work in the same CPU time: its 300 ms gap is twice the blocks,
    and about twice the CPU time here.  Without the figure the burn is 300 ms of CPU time, as before."""
    from iolens.native import probe_cpu
    from iolens.whatif.engine import op_codes

    c = op_codes()
    target = tmp_path / "t"
    target.mkdir()
    probe = probe_cpu()
    assert probe is not None
    _loop, per_block = probe
    rows = [(c["START"], 0, 0, 0, 0, 0), (c["EXIT"], 0, 0, 0, 0, 300_000_000)]
    same, _ = replay_cpu(crafted(rows, [0], 1, cpu_share=[1.0], wait_share=[1.0], cpu_ns_per_block=per_block),
                         target)
    fast, _ = replay_cpu(crafted(rows, [0], 1, cpu_share=[1.0], wait_share=[1.0],
                                 cpu_ns_per_block=per_block / 2), target)
    by_time, _ = replay_cpu(crafted(rows, [0], 1, cpu_share=[1.0], wait_share=[1.0]), target)
    blocks = same.raw["burn_blocks"]
    assert blocks == round(300_000_000 / per_block)
    assert fast.raw["burn_blocks"] == round(300_000_000 / (per_block / 2))
    assert by_time.raw["burn_blocks"] == 0 and by_time.cpu_ratio is None
    assert 0.2 <= same.thread_cpu[0] <= 0.6, same.thread_cpu  # the same work: about the same CPU time
    assert 1.4 <= fast.thread_cpu[0] / same.thread_cpu[0] <= 2.8, (fast.thread_cpu, same.thread_cpu)
    assert same.cpu_ratio == pytest.approx(same.thread_cpu[0] * 1e9 / blocks / per_block)
    assert list(target.iterdir()) == []


def test_a_traced_capture_keeps_the_cpus_speed_and_its_plan_burns_by_it(tmp_path):
    """`profile --trace` probes the CPU before and after the step (META cpu_probe, the replayer's burn loop); the
    plan takes the mean.  A counters-only capture has no probe; a capture without one is replayed by CPU time,
    and the plan says so."""
    from helpers.capture import traced_and_counted
    from iolens.sysinfo import cpu_probe_ns
    from iolens.whatif.engine import describe
    from iolens.whatif.plan import build_plan

    for trace, cap in traced_and_counted(tmp_path).items():
        probe = cap.meta.get("cpu_probe")
        if not trace:
            assert probe is None
            continue
        assert probe["loop"] == describe()["burn_loop"] and len(probe["ns_per_block"]) == 2
        assert all(0 < v < 1e6 for v in probe["ns_per_block"])
        plan = build_plan(cap)
        assert plan.cpu_ns_per_block == pytest.approx(sum(probe["ns_per_block"]) / 2)
        assert plan.job("/r/iolens-bench-x", "ops", speed="recorded", cache="warm")["cpu_ns_per_block"] > 0
        assert not any("CPU probe" in n for n in plan.notes)
        assert build_plan(cap, gaps="sleep").cpu_ns_per_block == 0
        del cap.meta["cpu_probe"]  # an earlier iolens's capture
        bare = build_plan(cap)
        assert bare.cpu_ns_per_block == 0 and any("no CPU probe" in n for n in bare.notes)
        assert "cpu_ns_per_block" not in bare.job("/r/iolens-bench-x", "ops", speed="recorded", cache="warm")
        assert cpu_probe_ns({"cpu_probe": {"loop": probe["loop"] + 1, "ns_per_block": [400.0]}},
                            probe["loop"]) is None  # another loop's figure is not comparable


def test_a_garbled_cpu_probe_is_dropped_not_trusted():
    """Read from a capture file: a cpu_probe out of shape is dropped (and said), so the replay burns by CPU time."""
    from helpers.capture import capture_bytes, fil, proc
    from iolens.capture.reader import decode
    from iolens.sysinfo import cpu_probe_ns

    procs = [proc(100, ["gzip"], end=2.0, cpu=1.5, files=[fil("/data/r.fq", reads=10, read_size=65536,
                                                              read_time=0.1)])]
    good = decode(capture_bytes(procs, {"cpu_probe": {"loop": 1, "ns_per_block": [400.0, 420.0]}}))
    assert cpu_probe_ns(good.meta, 1) == 410.0
    for bad in ({"loop": 1, "ns_per_block": []}, {"loop": 1, "ns_per_block": [0.0]}, {"loop": "1", "ns_per_block":
                [400.0]}, {"loop": 1, "ns_per_block": [float("inf")]}, {"loop": 1, "ns_per_block": [1.0, 2.0, 3.0]},
                {"loop": True, "ns_per_block": [400.0]}, [400.0], {"ns_per_block": [400.0]}):
        cap = decode(capture_bytes(procs, {"cpu_probe": bad}))
        assert "cpu_probe" not in cap.meta and "'cpu_probe'" in " ".join(cap.problems), bad
        assert cpu_probe_ns(cap.meta, 1) is None
