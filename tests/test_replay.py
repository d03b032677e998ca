"""iolens replay: order and gaps per thread, pipe ordering, the layout's confinement and removal, fio export."""

from __future__ import annotations

import os
import shlex
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from conftest import iolens

pytestmark = pytest.mark.timeout(300)


def profile(tmp_path: Path, name: str, argv: list[str], trace: bool = True) -> Path:
    out = tmp_path / f"{name}.iolens"
    r = iolens("profile", *(["--trace"] if trace else []), "-o", out, "--", *argv, cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    return out


@pytest.fixture
def known(tmp_path, cprog):
    (tmp_path / "in.dat").write_bytes(os.urandom(600_000))
    return profile(tmp_path, "known", [str(cprog("replay_known")), "in.dat", "out.dat"])


def replay_log(cap: Path, target: Path, speed: str = "recorded"):
    from iolens.workspace.target import resolve
    from iolens.capture.reader import read_capture
    from iolens.whatif.engine import log_dtype
    from iolens.whatif.plan import build_plan
    from iolens.whatif.replay import replay_on

    plan = build_plan(read_capture(cap))
    log = target.parent / f"{target.name}.log"
    res = replay_on(plan, resolve(str(target)), speed=speed, log=str(log))
    return plan, res, np.fromfile(log, dtype=log_dtype())


def test_replay_keeps_thread_order_and_gaps(known, tmp_path):
    from iolens.whatif.engine import op_codes

    c = op_codes()
    target = tmp_path / "t"
    target.mkdir()
    plan, res, log = replay_log(known, target)
    assert res.errors == 0 and res.dependency_timeouts == 0
    assert len(log) == len(plan.ops)
    assert (log["op"] == plan.ops["op"]).all() and (log["thread"] == plan.ops["thread"]).all()
    for th in np.unique(log["thread"]):
        mine = log[log["thread"] == th]
        assert (np.diff(mine["start"].astype(np.int64)) >= 0).all(), "a thread's ops ran out of order"
    writes = log[log["op"] == c["WRITE"]]
    reads = log[log["op"] == c["READ"]]
    assert len(writes) == 8 and len(reads) == 4
    # the program sleeps 30 ms before each write and 50 ms before each read: the replay keeps those gaps
    wgap = np.diff(writes["start"].astype(np.int64)) / 1e6
    rgap = np.diff(reads["start"].astype(np.int64)) / 1e6
    # every gap is kept (never shorter); a loaded machine may oversleep one, not the typical one
    assert (wgap > 27).all() and np.median(wgap) < 45 and (wgap < 90).all(), wgap
    assert (rgap > 46).all() and np.median(rgap) < 65 and (rgap < 110).all(), rgap
    assert abs(res.wall_s - plan.wall_s) / plan.wall_s < 0.25
    # with --speed max the gaps go
    _plan, fast, _log = replay_log(known, target, speed="max")
    assert fast.wall_s < 0.1
    # nothing left behind in the target, and the captured files untouched
    assert list(target.iterdir()) == []
    assert (tmp_path / "in.dat").stat().st_size == 600_000


def test_pipe_reader_cannot_run_ahead(tmp_path):
    from iolens.whatif.engine import op_codes

    c = op_codes()
    (tmp_path / "a").write_bytes(os.urandom(300_000))
    (tmp_path / "b").write_bytes(os.urandom(300_000))
    cap = profile(tmp_path, "pipe", ["sh", "-c", "(cat a; sleep 0.5; cat b) | cat > pout"])
    target = tmp_path / "t"
    target.mkdir()
    plan, res, log = replay_log(cap, target)
    assert res.dependency_timeouts == 0
    pr = log[log["op"] == c["PIPE_READ"]]
    pw = log[log["op"] == c["PIPE_WRITE"]]
    assert len(pr) and len(pw)
    # the reader's reads of b's bytes were blocked 0.5 s while recorded (time inside the read, not a gap):
    # only the dependency on the writer keeps the replayed reader from finishing early
    assert pr["end"].max() >= pw["start"].max()
    assert pr["end"].max() / 1e9 > 0.4
    assert res.wall_s > 0.45


def test_a_pipe_readers_end_of_file_waits_for_its_last_writer(tmp_path):
    """`(sleep 0.6; echo hi; sleep 0.8) | cat`: cat's last read met the end of the pipe only when the subshell's
    final `sleep` exited, 0.8 s after the only write.  The replay moves no data, so it waits for that image's end
    after the read: cat's replayed thread ends with the writer's, not 0.8 s early.  `sleep 4.5 | cat`: a read
    blocked longer than an EVENT's dur_ns holds (4.29 s) is recorded whole (dur_ms) and replayed the same way."""
    from iolens.capture.reader import read_capture

    for name, argv, at in (("eof", "(sleep 0.6; echo hi; sleep 0.8) | cat", 1.4), ("long", "sleep 4.5 | cat", 4.5)):
        cap = profile(tmp_path, name, ["sh", "-c", argv])
        if name == "long":
            cat = next(p for p in read_capture(cap).processes if p.argv[:1] == ["cat"])
            assert int(cat.events["dur_ns"].max()) >= 4.4e9, cat.events["dur_ns"]
        target = tmp_path / f"t-{name}"
        target.mkdir()
        plan, res, _log = replay_log(cap, target)
        assert res.dependency_timeouts == 0 and res.errors == 0
        reader = [i for i, p in enumerate(plan.threads) if read_capture(cap).processes[p].argv[:1] == ["cat"]]
        assert len(reader) == 1
        assert res.threads[reader[0]]["end"] > at - 0.1, (name, res.threads[reader[0]])


def test_no_trace_gives_one_line_and_predict_still_works(tmp_path):
    (tmp_path / "in.dat").write_bytes(os.urandom(100_000))
    cap = profile(tmp_path, "plain", ["sh", "-c", "cat in.dat > copy"], trace=False)
    target = tmp_path / "t"
    target.mkdir()
    r = iolens("replay", cap, "--on", target)
    assert r.returncode == 2
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and "--trace" in lines[0] and "Traceback" not in r.stderr
    env = dict(os.environ, IOLENS_DB=str(tmp_path / "results.db"), XDG_DATA_HOME=str(tmp_path / "data"))
    p = iolens("predict", cap, "--on", target, "--home", target, env=env)
    assert p.returncode == 0, p.stderr
    assert "predicted" in p.stdout and "cannot see" in p.stdout and "no trace" in p.stdout


def test_layout_removed_on_sigint(tmp_path):
    (tmp_path / "in.dat").write_bytes(os.urandom(200_000))
    cap = profile(tmp_path, "slow", ["sh", "-c", "cat in.dat > /dev/null; sleep 4; cat in.dat > c2"])
    target = tmp_path / "t"
    target.mkdir()
    env = dict(os.environ)
    proc = subprocess.Popen([sys.executable, "-m", "iolens", "replay", str(cap), "--on", str(target)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline and not any(p.name.startswith("iolens-bench-") for p in target.iterdir()):
        time.sleep(0.05)
    made = [p for p in target.iterdir() if p.name.startswith("iolens-bench-")]
    assert made, "the replay directory was never made"
    # the layout lives only inside the replay directory: the capture's own path, below it
    time.sleep(1.0)
    inside = [str(p.relative_to(made[0])) for p in made[0].rglob("in.dat")]
    assert inside and all(not s.startswith("/") for s in inside)
    proc.send_signal(signal.SIGINT)
    proc.communicate(timeout=30)
    assert proc.returncode != 0
    assert list(target.iterdir()) == []


@pytest.mark.skipif(shutil.which("fio") is None, reason="fio is not installed")
def test_fio_iolog_is_accepted_by_fio(known, tmp_path):
    log = tmp_path / "k.iolog"
    r = iolens("replay", known, "--fio-iolog", log)
    assert r.returncode == 0, r.stderr
    assert log.read_text().startswith("fio version 3 iolog\n")
    run = tmp_path / "fio"
    run.mkdir()
    for line in (tmp_path / "k.iolog.layout").read_text().splitlines():
        size, name = line.split(" ", 1)
        (run / name).write_bytes(os.urandom(int(size)))
    f = subprocess.run(["fio", f"--read_iolog={log}", "--name=replay", "--output-format=json"], cwd=run,
                       capture_output=True, text=True, timeout=120)
    assert f.returncode == 0, f.stderr + f.stdout
    import json

    job = json.loads(f.stdout[f.stdout.index("{"):])["jobs"][0]
    assert job["read"]["io_bytes"] == 512 * 1024
    assert job["write"]["io_bytes"] == 512 * 1024


def test_fio_names_are_flat_unambiguous_and_whole_words(tmp_path):
    """Names with a space or a newline ended the name in the iolog (fio: "bad iolog file action: b.fa"), and
    `col/a/b` and `col/a__b` were both written `col__a__b`: fio read one file for two."""
    for rel in ("col/a/b", "col/a__b"):
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
    names = ["a b.fa", "new\nline", "col/a/b", "col/a__b", "ü.fq", "x" * 250 + "/" + "y" * 200]
    (tmp_path / names[-1]).parent.mkdir()
    for i, n in enumerate(names):
        (tmp_path / n).write_bytes(b"z" * (100 + i))
    reads = "; ".join(f"cat {shlex.quote(n)} > /dev/null" for n in names)
    cap = profile(tmp_path, "names", ["sh", "-c", reads])
    log = tmp_path / "n.iolog"
    r = iolens("replay", cap, "--fio-iolog", log)
    assert r.returncode == 0, r.stderr
    layout = [ln.split(" ") for ln in (tmp_path / "n.iolog.layout").read_text().splitlines()]
    ours = {int(s): n for s, n in layout if 100 <= int(s) < 100 + len(names)}
    assert len(ours) == len(names) and len(set(ours.values())) == len(names), layout
    assert all(len(n) <= 255 and n.isascii() and not any(c.isspace() for c in n) for n in ours.values())
    run = tmp_path / "fio"
    run.mkdir()
    for s, n in layout:
        (run / n).write_bytes(os.urandom(int(s)))
    f = subprocess.run(["fio", f"--read_iolog={log}", "--name=replay", "--output-format=json"], cwd=run,
                       capture_output=True, text=True, timeout=120)
    assert f.returncode == 0 and "bad iolog" not in f.stderr, f.stderr + f.stdout
    import json

    job = json.loads(f.stdout[f.stdout.index("{"):])["jobs"][0]
    assert job["read"]["io_bytes"] >= sum(100 + i for i in range(len(names)))


def test_fio_iolog_keeps_the_order_between_processes(tmp_path):
    """The shell writes f, waits 0.3 s, then `cat` reads it: in the merged iolog the read comes after the write
    (each thread's times counted from when it began, not from 0, which put cat's read before the shell's write)."""
    cap = profile(tmp_path, "order", ["sh", "-c", "head -c 100000 /dev/zero > f; sleep 0.3; cat f > /dev/null"])
    log = tmp_path / "o.iolog"
    r = iolens("replay", cap, "--fio-iolog", log)
    assert r.returncode == 0, r.stderr
    acts = [ln.split() for ln in log.read_text().splitlines()[1:]]
    writes = [int(a[0]) for a in acts if a[1].endswith("%2Ff") and a[2] == "write"]
    reads = [int(a[0]) for a in acts if a[1].endswith("%2Ff") and a[2] == "read"]
    assert writes and reads and max(writes) + 250 <= min(reads), (writes, reads)


def test_layout_and_setup_are_not_timed(tmp_path):
    """The replayed wall time starts after the layout (and its writeback) and covers only the ops."""
    from iolens.workspace.target import resolve
    from iolens.whatif.engine import op_codes, op_dtype
    from iolens.whatif.plan import Plan, ReplayFile
    from iolens.whatif.replay import replay_on

    c = op_codes()
    files = [ReplayFile("/big", "big", layout=128 << 20)]
    rows = [(c["START"], 0, 0, 0, 0), (c["OPEN"], 0, 0, 0, 0), (c["READ"], 0, 0, 4096, 2_000_000),
            (c["CLOSE"], 0, 0, 0, 0)]
    ops = np.zeros(len(rows), dtype=op_dtype())
    arr = np.array(rows, dtype=np.int64)
    ops["op"], ops["obj"], ops["offset"], ops["size"], ops["gap"] = arr.T
    plan = Plan(files, [0], [0], 1, [0], 0, ops, 0.0)
    target = tmp_path / "t"
    target.mkdir()
    res = replay_on(plan, resolve(str(target)))
    assert res.errors == 0
    assert res.layout_s > 0 and res.setup_s >= 0
    # 128 MiB laid out and synced, against one 4 KiB read after a 2 ms gap
    assert res.wall_s < res.layout_s / 2, (res.wall_s, res.layout_s)
    assert 0.002 <= res.wall_s < 0.5
    [th] = res.threads
    assert set(th) == {"begin", "end", "gap", "late", "dep", "busy", "own"}
    assert th["gap"] >= 0.0015 and th["end"] <= res.wall_s + 1e-6
    assert list(target.iterdir()) == []


def test_profiler_overhead_comes_out_of_the_gaps(known, tmp_path):
    from iolens.capture.reader import read_capture
    from iolens.whatif.plan import TRACE_EVENT_OVERHEAD_NS, build_plan

    cap = read_capture(known)
    raw = build_plan(cap, event_overhead_ns=0, path_overhead_ns=None)
    assert raw.overhead_s == 0
    # 1 ms per event: shows in every gap that holds events
    big = build_plan(cap, event_overhead_ns=1_000_000, path_overhead_ns=None)
    assert (big.ops["gap"] <= raw.ops["gap"]).all() and (big.ops["gap"] >= 0).all()
    assert abs((int(raw.ops["gap"].sum()) - int(big.ops["gap"].sum())) / 1e9 - big.overhead_s) < 1e-9
    # every replayed op after the first of its thread had its own predecessor's recording in its gap
    per_thread_ops = np.bincount(raw.ops["thread"])
    assert big.overhead_s >= 1e-3 * (per_thread_ops[per_thread_ops > 1] - 1).sum() * 0.5
    # the default takes out a little, never more than 1 us per event
    dflt = build_plan(cap)
    assert 0 < dflt.overhead_s <= raw.ops["gap"].sum() / 1e9
    assert TRACE_EVENT_OVERHEAD_NS < 1000
    # the sleeps stay: the program's 30 ms and 50 ms gaps are far above the profiler's cost
    assert (int(raw.ops["gap"].sum()) - int(dflt.ops["gap"].sum())) / 1e9 < 0.01


def test_a_child_spawned_late_waits_for_its_spawn(tmp_path):
    """A child's thread waits for its spawn however long its parent computes first: the wait is given up only
    when every live thread is waiting (nothing can satisfy it).  Here the shell computes for about half a second
    before it starts its second `cat`, against a dependency time-out of a third of that: given up after that
    much of its own wait, the child ran ahead of its parent."""
    from iolens.workspace.target import resolve
    from iolens.capture.reader import read_capture
    from iolens.whatif.engine import log_dtype, op_codes
    from iolens.whatif.plan import build_plan
    from iolens.whatif.replay import replay_on

    c = op_codes()
    (tmp_path / "a").write_bytes(os.urandom(100_000))
    (tmp_path / "b").write_bytes(os.urandom(100_000))
    cap = profile(tmp_path, "late", ["sh", "-c", "cat a > /dev/null; i=0; while [ $i -lt 600000 ]; do "
                                     "i=$((i+1)); done; cat b > /dev/null"])
    plan = build_plan(read_capture(cap))
    starts = plan.ops[plan.ops["op"] == c["SPAWN"]]
    assert len(starts) == 2 and starts["gap"][1] > 0.2e9, starts["gap"]  # the loop, before the second spawn
    target = tmp_path / "t"
    target.mkdir()
    log = tmp_path / "late.log"
    res = replay_on(plan, resolve(str(target)), log=str(log), dependency_timeout_s=starts["gap"][1] / 3e9)
    assert res.errors == 0 and res.dependency_timeouts == 0
    lg = np.fromfile(log, dtype=log_dtype())
    spawns = lg[lg["op"] == c["SPAWN"]]
    reads = lg[lg["op"] == c["READ"]]
    second = reads[np.isin(reads["thread"], np.unique(lg["thread"][lg["thread"] != spawns["thread"][0]]))]
    # the SPAWN op releases its child within the op (native/replay/deps.c), so the child may begin before the
    # parent logs the op's end: it must not begin before the op does
    assert len(second)
    late = second[second["thread"] == second["thread"][np.argmax(second["start"])]]  # the second cat's reads
    assert late["start"].min() >= spawns["start"].max(), "a child ran before its spawn"


def test_events_that_name_a_path_can_cost_more_than_the_others(known):
    """path_overhead_ns is taken out per event that names a path (an open, a stat, an unlink), the plain figure
    per other event: with the plain figure 0, exactly the path events' cost comes out of the gaps."""
    from iolens import _format as F
    from iolens.capture.reader import read_capture
    from iolens.whatif.plan import build_plan
    from iolens.whatif.timeline import PATH_NAMING_OPS, PROCESS_OVERHEAD_NS, event_costs

    cap = read_capture(known)
    for p in cap.processes:  # the per-op figures alone, as for a capture without the recorder's own time
        if p.events is not None:
            p.events = p.events.copy()
            p.events["own_ns"] = 0
    names = [name for name, _cat in F.OPS]
    ops = np.concatenate([p.events["op"] for p in cap.processes if p.events is not None]).astype(np.int64)
    named = int(np.isin(ops, [names.index(n) for n in PATH_NAMING_OPS]).sum())
    assert 0 < named < len(ops)  # the program opens, stats and unlinks, and reads and writes
    costs = event_costs(7, 1000)
    assert costs[names.index("OPEN")] == 1000 and costs[names.index("READ")] == 7 and costs[-1] == 7
    assert (event_costs(7) == 7).all()
    raw = build_plan(cap, event_overhead_ns=0, path_overhead_ns=None)
    assert (build_plan(cap, event_overhead_ns=0, path_overhead_ns=0).ops["gap"] == raw.ops["gap"]).all()
    only_paths = build_plan(cap, event_overhead_ns=0, path_overhead_ns=1000)
    # each path event's 1 us comes out of the gap that holds it, where that gap is at least as long, and each
    # image's own cost before its first event
    images = sum(p.events is not None and len(p.events) > 0 for p in cap.processes)
    assert 0 < only_paths.overhead_s <= named * 1e-6 + images * PROCESS_OVERHEAD_NS / 1e9 + 1e-12
    assert only_paths.overhead_s > 0.5 * named * 1e-6
    assert (only_paths.ops["gap"] <= raw.ops["gap"]).all()
    both = build_plan(cap, event_overhead_ns=7, path_overhead_ns=1000)
    assert both.overhead_s > only_paths.overhead_s


def test_descriptor_table_is_sized_before_the_threads_start(tmp_path):
    """One replayer process holds the descriptors of every replayed process, and in a process with threads each
    growth of the kernel's descriptor table waits for an RCU grace period (8-18 ms here, at the 256th, 512th and
    1,024th descriptor): a shell creating 2,000 files stalled three times per replay, which the real shell, with
    its own small table, never did.  The replayer sizes the table for every handle while it has one thread, so
    it is already that large during the step's first compute gap, before any file is opened."""
    from iolens.whatif.engine import replay_path

    cap = profile(tmp_path, "many", ["sh", "-c", "sleep 1.5; i=0; while [ $i -lt 600 ]; do echo $i > f$i; "
                                     "i=$((i+1)); done"])
    target = tmp_path / "t"
    target.mkdir()
    proc = subprocess.Popen([sys.executable, "-m", "iolens", "replay", str(cap), "--on", str(target)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    engine = os.path.basename(replay_path())
    sizes = []
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and proc.poll() is None and not sizes:
        for st in Path("/proc").glob("[0-9]*/status"):
            try:
                text = st.read_text()
            except OSError:
                continue
            fields = dict(line.split(":\t", 1) for line in text.splitlines() if ":\t" in line)
            if fields.get("Name", "").strip() == engine[:15] and int(fields.get("PPid", "0")) == proc.pid \
                    and int(fields.get("Threads", "1")) > 1:
                sizes.append(int(fields["FDSize"]))
        time.sleep(0.01)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 0, err
    assert sizes, "the replayer was never seen running its threads"
    assert sizes[0] >= 600, sizes  # 64 when the table grows only as files are opened


def test_a_shell_redirects_files_closed_after_their_write(tmp_path):
    """`echo $i > f$i` in dash: open f (fd 3), dup it onto stdout, close fd 3, write through stdout, and dup2 the
    old stdout back, which closes f.  When that last close was not recorded as one, each write reopened its file
    after the close and the file stayed open to the end of the replay: a later `rm` unlinked open files, which s3fs
    turned into a rename to .fuse_hidden and an S3 copy (4-6 ms an unlink against 0.5 ms).  Every handle now ends
    with a close, so while the replay sits in the step's final sleep none of the files is open."""
    from iolens.capture.reader import read_capture
    from iolens.whatif.engine import op_codes, replay_path
    from iolens.whatif.plan import HANDLE_OPS, build_plan

    cap = profile(tmp_path, "redirects", ["sh", "-c", "i=0; while [ $i -lt 40 ]; do echo $i > f$i; i=$((i+1)); "
                                          "done; sleep 2"])
    code = op_codes()
    ops = build_plan(read_capture(cap)).ops
    handle_ops = np.isin(ops["op"], [code[n] for n in HANDLE_OPS])
    assert handle_ops.sum() >= 80  # 40 opens, 40 writes, and their closes
    for h in np.unique(ops["obj"][handle_ops]):  # every handle ends with a close
        seq = ops["op"][handle_ops & (ops["obj"] == h)]
        assert seq[-1] == code["CLOSE"], (h, seq)

    target = tmp_path / "t"
    target.mkdir()
    proc = subprocess.Popen([sys.executable, "-m", "iolens", "replay", str(cap), "--on", str(target)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    engine = os.path.basename(replay_path())[:15]
    most, seen = 0, False
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and proc.poll() is None:
        for st in Path("/proc").glob("[0-9]*/status"):
            try:
                fields = dict(line.split(":\t", 1) for line in st.read_text().splitlines() if ":\t" in line)
                if fields.get("Name", "").strip() != engine or int(fields.get("PPid", "0")) != proc.pid:
                    continue
                links = [os.readlink(fd) for fd in (st.parent / "fd").iterdir()]
            except OSError:
                continue
            seen = True
            most = max(most, sum(1 for ln in links if os.path.basename(ln).startswith("f")
                                 and os.path.basename(ln)[1:].isdigit()))
        time.sleep(0.02)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 0, err
    assert seen, "the replayer was never seen running"
    assert most <= 2, f"{most} of the 40 redirected files were open at once during the replay"


def test_a_redirect_replays_the_steps_descriptors_and_closes(tmp_path):
    """dash's `echo hi > f`: open f, dup it onto stdout, close the first descriptor, write through stdout, and
    close f by dup2-ing the old stdout back (recorded as f's close, then a DUP of no time).  The replayer makes the
    same calls on f, seen by the kernel (strace -y): an open, a copy of the descriptor, the copy's close before
    the write, and the last close after it.  Before, the copy was not made and the first close moved after the
    write: on s3fs, where each close of a written file is a flush, a replay of the small-file step made one flush
    per file where the step made two."""
    strace = shutil.which("strace")
    if strace is None:
        pytest.fail("strace is not installed (dev/apt-packages.txt lists it)")
    cap = profile(tmp_path, "redirect", ["sh", "-c", "echo hi > f; sleep 0.1"])
    target = tmp_path / "t"
    target.mkdir()
    log = tmp_path / "strace.log"
    res = subprocess.run([strace, "-f", "-y", "-e", "trace=openat2,fcntl,close,pwrite64", "-o", str(log),
                          sys.executable, "-m", "iolens", "replay", str(cap), "--on", str(target)],
                         capture_output=True, text=True, timeout=120)
    assert res.returncode == 0, res.stderr
    calls = [ln.split(None, 1)[1].split("(", 1)[0] for ln in log.read_text().splitlines()
             if "iolens-bench-" in ln and "/f>" in ln]
    assert calls == ["openat2", "fcntl", "close", "pwrite64", "close"], calls


def test_a_copy_is_replayed_as_a_copy(tmp_path):
    """`cat a b c > all` copies with copy_file_range: the replay reads each source and writes the destination in
    one copy_file_range (on btrfs that call costs 50 us for a small file where a pread and a pwrite cost a few;
    replayed as a write alone, the small-file step on btrfs-zstd came out 33% fast)."""
    from iolens.capture.reader import read_capture
    from iolens.whatif.engine import op_codes
    from iolens.whatif.plan import build_plan

    for i in range(3):
        (tmp_path / f"s{i}").write_bytes(os.urandom(5000 * (i + 1)))
    cap = profile(tmp_path, "cat", ["sh", "-c", "cat s0 s1 s2 > all"])
    code = op_codes()
    plan = build_plan(read_capture(cap))
    ops = plan.ops
    src, dst = np.nonzero(ops["op"] == code["COPY_FROM"])[0], np.nonzero(ops["op"] == code["COPY"])[0]
    assert len(src) == len(dst) >= 3 and (dst == src + 1).all()  # each source right before its copy
    assert sorted(int(s) for s in ops["size"][src] if s) == [5000, 10000, 15000]
    assert [plan.files[plan.handles[int(h)]].rel.rsplit("/", 1)[-1] for h in ops["obj"][dst]] == ["all"] * len(dst)

    target = tmp_path / "t"
    target.mkdir()
    _plan, res, log = replay_log(cap, target)
    assert res.errors == 0
    assert (log["op"] == code["COPY"]).sum() == len(dst) and (log["op"] == code["COPY_FROM"]).sum() == len(src)
    assert res.class_s["WRITE"] > 0 and not any(target.iterdir())


def test_files_are_opened_as_the_step_named_and_opened_them(tmp_path, monkeypatch):
    """The replayer names a file below the step's working directory from there (`in.dat`, not the 6-component
    name below the replay root: each component is a lookup, and a shell's 2,000 creates paid 1.3 us more each),
    and opens a file a process only read read-only and without O_CREAT (a creating, writable open takes the
    directory's lock: `cat` of 2,000 files paid 1.5 us more per file); a stat the step made through a descriptor
    (cat's fstat of each input) is one through the replayer's, with no lookup.  Seen by strace on the replayer."""
    from iolens.capture.reader import read_capture
    from iolens.whatif.engine import op_codes, replay_path
    from iolens.whatif.plan import build_plan

    strace = shutil.which("strace")
    if strace is None:
        pytest.fail("strace is not installed (dev/apt-packages.txt lists it)")
    work, other = tmp_path / "work", tmp_path / "other"
    work.mkdir()
    other.mkdir()
    (work / "in.dat").write_bytes(os.urandom(5000))
    (other / "x.dat").write_bytes(os.urandom(3000))
    cap = profile(work, "names", ["sh", "-c", f"mkdir -p sub && echo x > sub/made && cat in.dat sub/made > out.dat "
                                  f"&& cat {other / 'x.dat'} > /dev/null"])
    plan = build_plan(read_capture(cap))
    assert plan.cwd == str(work).strip("/")
    rel = {f.rel.rsplit("/", 1)[-1]: i for i, f in enumerate(plan.files)}
    ro = {plan.files[f].rel.rsplit("/", 1)[-1] for h, f in enumerate(plan.handles) if plan.read_only[h]}
    assert {"in.dat", "x.dat", "made"} <= ro and "out.dat" not in ro  # made: read-only in cat, not in the shell
    assert "made" in rel
    code = op_codes()
    fstats = plan.ops["obj"][plan.ops["op"] == code["FSTAT"]]
    assert {plan.files[plan.handles[int(h)]].rel.rsplit("/", 1)[-1] for h in fstats} >= {"in.dat", "made"}

    logs = tmp_path / "strace"
    logs.mkdir()
    wrapper = tmp_path / "engine.sh"
    wrapper.write_text(f'#!/bin/sh\nexec {strace} -f -qq -e trace=openat2,newfstatat,fstat,statx '
                       f'-o {logs}/log.$$ {replay_path()} "$@"\n')
    wrapper.chmod(0o755)
    monkeypatch.setenv("IOLENS_REPLAY_ENGINE", str(wrapper))
    target = tmp_path / "t"
    target.mkdir()
    _plan, res, _log = replay_log(cap, target)
    assert res.errors == 0
    calls = [ln for p in logs.iterdir() for ln in p.read_text().splitlines() if "openat2(" in ln]
    timed = [ln for ln in calls if "O_CREAT|O_TRUNC" not in ln or "out.dat" in ln]  # not the layout's writes

    def opens(name: str) -> list[str]:
        return [ln.split("flags=", 1)[1].split(",", 1)[0] for ln in timed if f', "{name}", ' in ln]

    assert opens("in.dat") == ["O_RDONLY|O_NOFOLLOW|O_CLOEXEC"], calls
    assert "O_RDWR|O_CREAT|O_NOFOLLOW|O_CLOEXEC" in opens("sub/made")  # the shell's create
    assert "O_RDONLY|O_NOFOLLOW|O_CLOEXEC" in opens("sub/made")  # cat's read
    assert opens("out.dat") and all("O_RDWR|O_CREAT" in f for f in opens("out.dat"))
    stats = [ln for p in logs.iterdir() for ln in p.read_text().splitlines() if "stat" in ln.split("(")[0]]
    assert not [ln for ln in stats if '"in.dat"' in ln or '"sub/made"' in ln], stats  # no lookup by name
    far = [ln for ln in timed if ln.endswith("x.dat") or "/other/x.dat\"" in ln]
    assert far and all(f'"{str(other / "x.dat").strip("/")}"' in ln for ln in far), far  # from the root


def test_the_recorders_own_time_comes_out_where_it_is_more(known):
    """Each event's recording cost is the per-op figure or the recorder's own time measured after it (the next
    event's own_ns), whichever is more; an older capture (own_ns 0) keeps the per-op figures."""
    from iolens.capture.reader import read_capture
    from iolens.whatif.plan import build_plan
    from iolens.whatif.timeline import before_first, own_after, recording_cost

    cap = read_capture(known)
    procs = [p for p in cap.processes if p.events is not None and len(p.events)]
    assert all((p.events["own_ns"][1:] > 0).any() for p in procs if len(p.events) > 1)  # recorded by this build
    for p in procs:
        p.events = p.events.copy()
        p.events["own_ns"] = 0
    old = build_plan(cap, event_overhead_ns=100, path_overhead_ns=100)
    ev = procs[0].events
    assert (own_after(ev) == 0).all() and (recording_cost(ev, 100) - before_first(ev) == 100).all()
    for p in procs:
        p.events["own_ns"] = 20_000  # 20 us after every event, above the per-op figure
    ev = procs[0].events
    per_thread_last = np.r_[ev["tid"][1:] != ev["tid"][:-1], True]  # this program's events are in time order
    # never more than the gap it sits in (some of this program's are shorter than 20 us)
    gap = ev["start_mono"][1:].astype(np.int64) - (ev["start_mono"][:-1] + ev["dur_ns"][:-1]).astype(np.int64)
    after = np.r_[np.minimum(20_000, np.maximum(gap, 0)), 0]
    assert (after[~per_thread_last] > 0).all() and (after == 20_000).mean() > 0.5
    assert (own_after(ev)[~per_thread_last] == after[~per_thread_last]).all()
    assert (own_after(ev)[per_thread_last] == 0).all()
    assert (recording_cost(ev, 100) - before_first(ev) == np.where(per_thread_last, 100, np.maximum(after, 100))).all()
    new = build_plan(cap, event_overhead_ns=100, path_overhead_ns=100)
    assert new.overhead_s > old.overhead_s
    assert (new.ops["gap"] <= old.ops["gap"]).all()
    raw = build_plan(cap, event_overhead_ns=0, path_overhead_ns=None)
    assert raw.overhead_s == 0  # no cost asked for: the gaps as recorded
    # a saturated figure (a recorder before the clamp, across a clock step back) is no figure: 4.3 s of profiler
    # time once took a whole step's compute out of a prediction
    for p in procs:
        p.events["own_ns"] = np.iinfo(np.uint32).max
    ev = procs[0].events
    assert (own_after(ev) == 0).all() and before_first(ev).max() < 1_000_000
    for p in procs:
        p.events["own_ns"] = 100_000_000  # 0.1 s: more than any gap of this program
    ev = procs[0].events
    assert (own_after(ev)[~per_thread_last] == np.maximum(gap, 0)[~per_thread_last[:-1]]).all()


def test_a_shell_reading_its_childs_output_is_spawned_first(tmp_path):
    """`x=$(cat a)`: the shell forks and at once blocks reading the child's pipe, so its read begins before the
    child's record does.  The spawn goes before that read (the fork came first); placed at the child's start it
    came after, and the replayed read waited for a writer that was never started until the dependency time-out."""
    from iolens.workspace.target import resolve
    from iolens.capture.reader import read_capture
    from iolens.whatif.engine import op_codes
    from iolens.whatif.plan import build_plan
    from iolens.whatif.replay import replay_on

    c = op_codes()
    (tmp_path / "a").write_text("hello\n" * 100)
    cap = profile(tmp_path, "subst", ["sh", "-c", 'x=$(cat a); echo "$x" > b'])
    plan = build_plan(read_capture(cap))
    shell = plan.ops[plan.ops["thread"] == 0]
    kinds = [int(o) for o in shell["op"] if o in (c["SPAWN"], c["PIPE_READ"])]
    assert kinds and kinds[0] == c["SPAWN"], kinds
    target = tmp_path / "t"
    target.mkdir()
    res = replay_on(plan, resolve(str(target)), dependency_timeout_s=1.0)
    assert res.dependency_timeouts == 0 and res.errors == 0 and res.wall_s < 0.9


@pytest.mark.parametrize("recorded, added", [
    (["OPEN", "DUP", "CLOSE", "WRITE", "CLOSE"], 0),  # dup2 over f recorded as f's close: nothing to add
    (["OPEN", "DUP", "CLOSE", "WRITE"], 1),  # a capture from before that: f's last close after its write
    (["OPEN", "DUP", "DUP", "WRITE"], 3),  # left to the exit: a close for each open and copy
    (["WRITE", "DUP", "DUP", "CLOSE"], 1),  # an inherited descriptor (no open) and two copies, one closed
])
def test_every_handle_ends_closed_whatever_the_trace_saw_of_its_closes(recorded, added):
    from iolens.whatif.engine import op_codes
    from iolens.whatif.handles import closes_after_use
    from iolens.whatif.plan import HANDLE_OPS
    from iolens.whatif.rows import OBJ, OP, SEQ, T

    code = op_codes()
    rows = np.zeros((len(recorded), SEQ + 1), dtype=np.int64)
    rows[:, T] = np.arange(len(recorded)) * 1000
    rows[:, OP] = [code[n] for n in recorded]
    rows[:, OBJ] = 7
    out = closes_after_use(rows, code, HANDLE_OPS)
    assert len(out) == len(rows) + added
    assert (out[len(rows):, OP] == code["CLOSE"]).all() and (out[len(rows):, T] >= rows[-1, T]).all()
    # replayed in time order as the replayer does (native/replay: an open or a copy counts, a close takes one back
    # and closes the descriptor at none; any other use opens it when it is not), no descriptor is left open
    refs, fd_open = 0, False
    for op in out[np.lexsort((out[:, SEQ], out[:, T])), OP]:
        if op == code["CLOSE"]:
            if fd_open:
                refs -= 1
                fd_open = refs > 0
                refs = max(refs, 0)
        else:
            refs += op in (code["OPEN"], code["DUP"])
            fd_open = True
    assert not fd_open, recorded
