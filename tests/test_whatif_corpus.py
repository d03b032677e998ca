"""The held-out what-if corpus (benchmarks/whatif_corpus.toml) and its benchmark's short form; the cautions replay
and predict print for a step of a shape the corpus covered poorly; a burn by work that reads no CPU clock."""

from __future__ import annotations

import importlib.util
import json
import math
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from conftest import iolens, tool

pytestmark = pytest.mark.timeout(600)
BENCH = Path(__file__).resolve().parents[1] / "benchmarks"


def bench_module(name: str):
    sys.path.insert(0, str(BENCH))
    try:
        spec = importlib.util.spec_from_file_location(name, BENCH / f"{name}.py")
        assert spec and spec.loader
        mod = importlib.util.module_from_spec(spec)
        sys.modules[name] = mod  # its dataclasses look their module up there
        spec.loader.exec_module(mod)
        return mod
    finally:
        sys.path.remove(str(BENCH))


def test_the_corpus_is_split_once_with_its_date():
    steps = bench_module("whatif_steps")
    c = steps.load()
    assert len(c.steps) >= 16
    assert not set(c.tuning) & set(c.evaluation) and sorted(c.tuning + c.evaluation) == sorted(c.steps)
    assert len(c.evaluation) >= 8 and len(c.tuning) >= 8
    assert len(c.date) == 10 and c.date.startswith("20")
    # the six steps of whatif_accuracy.py are the corpus's, defined there only
    acc = bench_module("whatif_accuracy")
    assert list(acc.STEPS) == [n for n, s in c.steps.items() if s.accuracy] and len(acc.STEPS) == 6
    assert "sort-parallel" in c.tuning


def test_a_split_that_leaves_a_step_out_is_refused(tmp_path):
    steps = bench_module("whatif_steps")
    text = steps.CORPUS_FILE.read_text().replace('"cp-r", ', "", 1)
    bad = tmp_path / "corpus.toml"
    bad.write_text(text)
    with pytest.raises(ValueError, match="exactly one half"):
        steps.load(bad)


def test_the_short_form_runs_evaluation_steps_on_the_home_storage(tmp_path, capsys):
    """--short on three evaluation steps against a directory on the home storage: every cell has its real run, a
    finite replay error, a prediction inside its own interval, and the report gives the intervals' coverage."""
    for t in ("samtools", "minimap2", "tar", "gzip"):
        tool(t)
    corpus = bench_module("whatif_corpus")
    picked = ["gunzip", "index", "tar-create"]
    caches = "warm,cold" if os.geteuid() == 0 else "warm"
    out = tmp_path / "cells.json"
    doc = corpus.main(["--short", "--steps", ",".join(picked), "--caches", caches, "--home", str(tmp_path),
                       "--json", str(out)])
    text = capsys.readouterr().out
    cells = doc["cells"]
    assert sorted({c["step"] for c in cells}) == sorted(picked)
    assert len(cells) == len(picked) * len(caches.split(","))
    for c in cells:
        assert c["target"] == "home" and len(c["real_runs"]) == 1 and len(c["replays"]) == 1
        assert math.isfinite(c["replay_error"]) and c["real_median_s"] > 0
        assert c["low_s"] <= c["predict_s"] <= c["high_s"]
        assert c["inside"] == (c["low_s"] <= c["real_median_s"] <= c["high_s"])
    # the machine's minute when each step was captured and when each cell ran: the drift a replay cannot follow
    assert sorted(doc["meta"]["capture_load"]) == sorted(picked)
    assert all(v >= 0 for v in doc["meta"]["capture_load"].values()) and all(c["load"] >= 0 for c in cells)
    s = doc["summary"]
    assert s["interval_level"] == pytest.approx(0.8) and 0 <= s["interval_coverage"] <= 1
    assert "coverage: the 80% intervals held the real median" in text
    assert json.loads(out.read_text())["summary"]["cells"] == len(cells)
    assert [p.name for p in tmp_path.iterdir()] == ["cells.json"]  # its work directories are gone


def test_the_short_form_refuses_a_step_of_the_other_half(capsys):
    corpus = bench_module("whatif_corpus")
    with pytest.raises(SystemExit):
        corpus.main(["--short", "--steps", "sort-parallel"])
    assert "not in the evaluation half" in capsys.readouterr().err


def test_threads_side_by_side_get_a_caution_and_one_thread_none(cprog, tmp_path):
    """Two threads writing at once: replay and predict print a caution (and put it in their JSON); a single-
    threaded step of a few large calls gets none, unless the profiler's share of it is 5% or more."""
    exe = cprog("threads")
    cap = tmp_path / "threads.iolens"
    iolens("profile", "--trace", "-q", "-o", cap, "--", exe, tmp_path, "2", "3000", check=True, cwd=tmp_path)
    target = tmp_path / "t"
    target.mkdir()
    r = iolens("replay", cap, "--on", target, "--json", tmp_path / "r.json", check=True)
    assert "caution: threads of one process ran side by side" in " ".join(r.stdout.split())
    assert json.loads((tmp_path / "r.json").read_text())["cautions"]
    p = iolens("predict", cap, "--on", target, "--home", target, "--json", tmp_path / "p.json", check=True)
    assert "caution: threads of one process ran side by side" in " ".join(p.stdout.split())
    doc = json.loads((tmp_path / "p.json").read_text())
    assert doc["cautions"] and doc["interval_level"] == pytest.approx(0.8)
    assert all(t["level"] == pytest.approx(0.8) for t in doc["targets"])

    # one thread of few large calls: no caution; the same capture with the profiler's cost at 5% of its wall time
    # or more: the caution for that share, and none below it
    from iolens.capture.reader import read_capture
    from iolens.whatif.caveats import RECORDING_SHARE, SHORT_STEP_S, shape_cautions

    (tmp_path / "in.dat").write_bytes(b"x" * 20_000_000)
    one = tmp_path / "one.iolens"
    iolens("profile", "--trace", "-q", "-o", one, "--", "dd", "if=in.dat", "of=out.dat", "bs=1M", check=True,
           cwd=tmp_path)
    r = iolens("replay", one, "--on", target, check=True)
    c = read_capture(one)
    # a step this short is cautioned for that alone (SHORT_STEP_S)
    assert float(c.meta["wall_s"]) < SHORT_STEP_S
    assert " ".join(r.stdout.split()).count("caution:") == 1 and "starting processes" in " ".join(r.stdout.split())
    c.meta["wall_s"] = wall = SHORT_STEP_S * 1.01
    assert not shape_cautions(c)
    assert any("profiler's own cost" in x for x in shape_cautions(c, recording_s=RECORDING_SHARE * wall * 1.01))
    assert not shape_cautions(c, recording_s=RECORDING_SHARE * wall * 0.99)
    c.meta["wall_s"] = SHORT_STEP_S * 0.99
    assert len(shape_cautions(c)) == 1


def test_a_step_of_many_creates_gets_a_caution(tmp_path):
    """A shell creating MANY_CREATES files gets the caution for creates (each path counted once: appending to a
    file again is no second create); one file fewer gets none."""
    from iolens.capture.reader import read_capture
    from iolens.whatif.caveats import MANY_CREATES, SHORT_STEP_S, created_files, shape_cautions

    cap = tmp_path / "mk.iolens"
    n = MANY_CREATES - 1  # and the directory
    iolens("profile", "--trace", "-q", "-o", cap, "--", "sh", "-c",
           f"mkdir d && i=0; while [ $i -lt {n} ]; do echo $i > d/f$i; echo $i >> d/f$i; i=$((i+1)); done",
           check=True, cwd=tmp_path)
    c = read_capture(cap)
    assert created_files(c) == MANY_CREATES
    c.meta["wall_s"] = max(float(c.meta["wall_s"]), SHORT_STEP_S)  # the short step's caution apart
    assert any(f"created {MANY_CREATES:,} files" in x for x in shape_cautions(c))
    for p in c.processes:  # one file fewer
        p.files = [f for f in p.files if not f["path"].endswith("/d/f0")]
    assert created_files(c) == MANY_CREATES - 1 and not shape_cautions(c)


def test_a_short_burn_by_work_reads_no_cpu_clock(tmp_path):
    """5,000 burnt gaps of 20 us (by work: the plan gives a cost per block): the replayer reads the thread's CPU
    clock (a system call, 1.3-1.5 us on a VM; it read it twice a burn, which made each burnt gap that much longer
    than the step's) only around burns of 100 us or more, and still reports the CPU the burns took."""
    strace = tool("strace")
    from iolens.workspace.target import resolve
    from iolens.native import native_path, probe_cpu
    from iolens.whatif.engine import op_codes, op_dtype
    from iolens.whatif.plan import Plan, ReplayFile
    from iolens.whatif.replay import replay_on

    probe = probe_cpu()
    assert probe is not None
    c, n = op_codes(), 5000
    ops = np.zeros(n + 2, dtype=op_dtype())
    ops["op"] = [c["START"]] + [c["STAT"]] * n + [c["EXIT"]]
    ops["gap"][1:] = 20_000
    plan = Plan([ReplayFile("/x", "x", layout=4096)], [0], [0], 1, [0], 0, ops, 0.1, cpu_share=[1.0],
                wait_share=[1.0], cpu_ns_per_block=probe[1])
    log = tmp_path / "strace.txt"
    wrap = tmp_path / "engine.sh"
    wrap.write_text(f'#!/bin/sh\nexec {strace} -f -c -e trace=clock_gettime -o {log} '
                    f'{native_path("iolens-replay")} "$@"\n')
    wrap.chmod(0o755)
    target = tmp_path / "t"
    target.mkdir()
    os.environ["IOLENS_REPLAY_ENGINE"] = str(wrap)
    try:
        res = replay_on(plan, resolve(str(target)))
    finally:
        del os.environ["IOLENS_REPLAY_ENGINE"]
    assert log.exists()  # strace ran (it writes nothing more when no call was made)
    text = log.read_text()
    calls = sum(int(line.split()[3]) for line in text.splitlines() if line.strip().endswith("clock_gettime"))
    assert res.errors == 0
    assert calls < 500, text  # it made 10,000 and more, two a burn
    assert 0.05 < res.thread_cpu[0] < 0.3, res.thread_cpu  # 5,000 x 20 us of work, at this CPU's cost now


def test_the_corpus_inputs_are_deterministic(tmp_path):
    steps = bench_module("whatif_steps")
    c = steps.load()
    for d in ("a", "b"):
        (tmp_path / d).mkdir()
        steps.prepare(c, tmp_path / d, ["lines.txt", "in.tar", "data.bin"], 0.01)
    for name in ("lines.txt", "in.tar", "data.bin", "tree/d000/f00000.txt"):
        assert (tmp_path / "a" / name).read_bytes() == (tmp_path / "b" / name).read_bytes(), name
    assert subprocess.run(["tar", "tf", tmp_path / "a" / "in.tar"], capture_output=True, text=True,
                          check=True).stdout.startswith("tree")
