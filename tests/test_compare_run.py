"""iolens compare end to end with small shell commands: runs, strategies, failures, clean-up, outputs."""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from conftest import iolens
from iolens.store import ResultsStore


def compare(tmp_path, *args, json_name="r.json", **kw):
    """Run iolens compare with a JSON report; returns (completed process, report or None)."""
    out = tmp_path / json_name
    res = iolens("compare", *args, "--json", out, "--db", tmp_path / "results.sqlite", "--seed", "7", **kw)
    rep = json.loads(out.read_text()) if out.exists() else None
    return res, rep


def leftovers(*dirs: Path) -> list[str]:
    return [str(p) for d in dirs for p in Path(d).glob("iolens-compare-*")]


def test_direct_matrix_runs_interleaved_and_leaves_nothing_behind(tmp_path):
    a, b = tmp_path / "a", tmp_path / "b"
    a.mkdir()
    b.mkdir()
    (a / "x.txt").write_text("mine")  # same name as the command's output: must survive
    res, rep = compare(tmp_path, "head -c {n} /dev/zero > {out:x.txt}", "--place", f"out={a},{b}",
                       "--param", "n=1000,300000", "--runs", "4")
    assert res.returncode == 0, res.stderr
    assert [r["name"] for r in rep["results"]] == [f"n=1000 out={a}", f"n=1000 out={b}", f"n=300000 out={a}",
                                                   f"n=300000 out={b}"]
    for r in rep["results"]:
        assert r["ok_runs"] == 4 and len(r["times"]) == 4 and r["exit_codes"] == [0] * 4
        assert all(t > 0 for t in r["times"]) and r["min"] <= r["median"] <= r["max"]
        n = int(r["parameters"]["n"])
        # kernel counters of the command and its children: head wrote n bytes
        assert r["io"]["wchar"] >= n
        assert r["io"]["max_rss_bytes"] > 100_000
    # randomized rounds: every round has each configuration once, and the order changes between rounds
    recs = sorted((x for r in rep["results"] for x in r["run_records"]), key=lambda x: x["seq"])
    rounds = [[x["config"] for x in recs if x["round"] == k] for k in range(4)]
    assert all(sorted(r) == sorted(rounds[0]) for r in rounds)
    assert len({tuple(r) for r in rounds}) > 1
    assert (a / "x.txt").read_text() == "mine"
    assert leftovers(a, b) == []
    assert len(rep["comparisons"]) == 3 and all(c["verdict"] for c in rep["comparisons"])
    # stored in the shared results store
    with ResultsStore(tmp_path / "results.sqlite") as store:
        runs = store.runs(kind="compare")
        assert len(runs) == 1 and rep["store"]["run_id"] == runs[0]["id"]
        results = store.results(runs[0]["id"])
        assert [x["name"] for x in results] == [r["name"] for r in rep["results"]]
        assert results[0]["metrics"]["times"] == rep["results"][0]["times"]
    assert "Wall time per run" in res.stdout


def test_stage_copies_in_and_out_and_times_each_step(tmp_path):
    src = tmp_path / "src"
    dest = tmp_path / "dest"
    scratch = tmp_path / "scratch"
    for d in (src, dest, scratch):
        d.mkdir()
    big = src / "in.bin"
    big.write_bytes(os.urandom(8 << 20))
    cmd = "echo {in} > {out:seen.txt}; cat {in} {in} > {out:doubled.bin}"
    res, rep = compare(tmp_path, cmd, "--input", f"in={big}", "--place", f"out={dest}",
                       "--strategy", "direct,stage", "--scratch", scratch, "--runs", "3", "--keep-outputs")
    assert res.returncode == 0, res.stderr
    direct, stage = rep["results"]
    assert (direct["name"], stage["name"]) == ("direct", "stage")
    assert direct["phases"] is None
    ph = stage["phases"]
    assert ph["copy_in_bytes"] == 8 << 20
    assert 16 << 20 < ph["copy_out_bytes"] < (16 << 20) + 4096  # doubled.bin and seen.txt
    assert ph["copy_in_s"] > 0 and ph["copy_out_s"] > 0 and ph["run_s"] > 0
    for x in stage["run_records"]:
        assert x["wall_s"] == pytest.approx(x["copy_in_s"] + x["run_s"] + x["copy_out_s"])
    # the kept outputs: the staged run saw its private copy in scratch, and the outputs were copied back
    kept = {p.name: p for p in dest.glob("iolens-compare-*/*")}
    assert len(kept) == 2
    seen = {name: (p / "seen.txt").read_text().strip() for name, p in kept.items()}
    stage_seen = seen[next(n for n in seen if n.startswith("c1-"))]
    assert stage_seen.startswith(str(scratch) + "/iolens-compare-") and stage_seen.endswith("/in.bin")
    assert seen[next(n for n in seen if n.startswith("c0-"))] == str(big)
    for p in kept.values():
        assert (p / "doubled.bin").read_bytes() == big.read_bytes() * 2
    assert leftovers(scratch) == []
    assert "Staged: median time per step" in res.stdout
    shutil.rmtree(next(dest.glob("iolens-compare-*")))


def test_failing_configuration_is_reported_with_stderr_never_averaged(tmp_path):
    res, rep = compare(tmp_path, "echo 'cannot open {code}.bam: No space left' >&2; exit {code}",
                       "--param", "code=0,3", "--runs", "5")
    assert res.returncode == 1
    good, bad = rep["results"]
    assert good["ok_runs"] == 5 and bad["ok_runs"] == 0
    assert bad["times"] == [] and bad["mean"] is None and bad["median"] is None
    assert bad["runs"] == 3  # stopped after its first three runs all failed
    assert bad["failures"][0]["exit_status"] == 3
    assert "cannot open 3.bam: No space left" in bad["failures"][0]["stderr_tail"]
    assert any("3: 3 of 3 runs failed (last: exit 3: cannot open 3.bam: No space left)" in w for w in rep["warnings"])
    assert any("stopped after its first 3 runs all failed" in w for w in rep["warnings"])
    assert "not enough successful runs" in rep["comparisons"][0]["verdict"]
    assert "warning: 3: 3 of 3 runs failed" in res.stdout


def test_some_failing_runs_are_left_out_of_the_statistics(tmp_path):
    counter = tmp_path / "n"
    counter.write_text("0")
    # every third run of configuration b fails
    cmd = ("n=$(cat {c}); echo $((n+1)) > {c}; if [ {k} = b ] && [ $((n % 3)) = 2 ]; then echo boom >&2; exit 9; fi; "
           "sleep 0.01")
    res, rep = compare(tmp_path, cmd, "--input", f"c={counter}", "--param", "k=a,b", "--runs", "6")
    b = rep["results"][1]
    assert b["failed_runs"] >= 1 and b["ok_runs"] + b["failed_runs"] == 6
    assert len(b["times"]) == b["ok_runs"]
    assert res.returncode == 1


def test_refuses_to_overwrite_and_runs_nothing(tmp_path):
    marker = tmp_path / "ran"
    existing = tmp_path / "r.json"
    existing.write_text("keep me")
    res = iolens("compare", f"touch {marker}; true {{t}}", "--param", "t=1,2", "--json", existing, "--no-store")
    assert res.returncode == 2
    assert res.stderr.strip() == (f"iolens: error: --json {existing} already exists; choose another name or remove "
                                  "it, or pass --force to overwrite")
    assert existing.read_text() == "keep me" and not marker.exists()
    html = tmp_path / "r.html"
    html.write_text("mine")
    res = iolens("compare", "true {t}", "--param", "t=1,2", "--html", html, "--no-store")
    assert res.returncode == 2 and "already exists" in res.stderr and html.read_text() == "mine"


@pytest.mark.parametrize("sig,code", [(signal.SIGINT, 130), (signal.SIGTERM, 130)])
def test_interrupt_stops_the_command_and_removes_temp_dirs(tmp_path, sig, code):
    place = tmp_path / "place"
    scratch = tmp_path / "scratch"
    place.mkdir()
    scratch.mkdir()
    inp = tmp_path / "in.txt"
    inp.write_text("data")
    pidfile = tmp_path / "pid"
    cmd = f"echo $$ > {pidfile}; cat {{in}} > {{out:x}}; sleep 60 {{t}}"
    env = dict(os.environ, PYTHONUNBUFFERED="1")
    proc = subprocess.Popen([sys.executable, "-m", "iolens", "compare", cmd, "--input", f"in={inp}",
                             "--place", f"out={place}", "--param", "t=1,2", "--strategy", "stage",
                             "--scratch", str(scratch), "--no-store"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    try:
        deadline = time.monotonic() + 30
        while not (pidfile.exists() and pidfile.read_text().strip()) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert pidfile.exists(), "the command never started"
        child = int(pidfile.read_text())
        assert leftovers(place) and leftovers(scratch)
        proc.send_signal(sig)
        out, err = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == code, err
    assert "iolens: interrupted" in err
    assert "Traceback" not in err
    assert leftovers(place) == [] and leftovers(scratch) == []
    with pytest.raises(ProcessLookupError):
        os.kill(child, 0)


def test_cold_cache_evicts_inputs_and_records_the_state(tmp_path):
    inp = tmp_path / "in.bin"
    inp.write_bytes(os.urandom(4 << 20))
    res, rep = compare(tmp_path, "cat {in} > /dev/null; true {t}", "--input", f"in={inp}", "--param", "t=1,2",
                       "--runs", "3", "--cache", "cold", "--evict", "fadvise")
    assert res.returncode == 0, res.stderr
    assert rep["settings"]["evict_methods"] == ["fadvise"]
    for r in rep["results"]:
        assert r["cache"]["mode"] == "cold" and r["cache"]["methods"] == ["fadvise"]
        for x in r["run_records"]:
            assert x["cache_mode"] == "cold" and x["cache_method"] == "fadvise"
            assert x["inputs_resident"] is not None and x["inputs_resident"] < 0.1
    res, rep = compare(tmp_path, "cat {in} > /dev/null; true {t}", "--input", f"in={inp}", "--param", "t=1,2",
                       "--runs", "3", json_name="warm.json")
    later = sorted((x for r in rep["results"] for x in r["run_records"]), key=lambda x: x["seq"])[1:]
    assert all(x["inputs_resident"] > 0.9 and x["cache_method"] is None for x in later)


def test_precision_runs_until_precise_or_max(tmp_path):
    res, rep = compare(tmp_path, "sleep {s}", "--param", "s=0.02,0.04", "--runs", "3", "--precision", "0.0001",
                       "--max-runs", "6")
    assert res.returncode == 0, res.stderr
    assert all(r["runs"] == 6 for r in rep["results"])  # the target is unreachable: stops at --max-runs
    assert rep["precision_reached"] == {"0.02": False, "0.04": False}
    assert any("--precision 0.0001% not reached" in w for w in rep["warnings"])
    res, rep = compare(tmp_path, "sleep {s}", "--param", "s=0.2,0.3", "--runs", "3", "--precision", "60",
                       "--max-runs", "6", json_name="loose.json")
    assert all(r["runs"] == 3 for r in rep["results"]) and all(rep["precision_reached"].values())


def test_runs_auto_stops_when_every_comparison_is_decided(tmp_path):
    res, rep = compare(tmp_path, "sleep {s}", "--param", "s=0.01", "--config", "a:s=0.01", "--config", "b:s=0.01",
                       "--config", "c:s=0.3", "--runs", "auto", "--max-runs", "8")
    assert res.returncode == 0, res.stderr
    s = rep["settings"]
    assert s["auto"] is True and s["max_runs"] == 8 and s["margin_pct"] == 5 and s["alpha"] == 0.05
    assert rep["looks"][0] == 5 and rep["looks"][-1] <= 8
    for c in rep["comparisons"]:
        d = c["decision"]
        assert d["kind"] in ("faster", "slower", "equivalent", "undecided") and c["verdict"].startswith(
            d["sentence"])
        r = next(x for x in rep["results"] if x["name"] == c["name"])
        assert d["n"] == r["ok_runs"] and d["n"] in rep["looks"]  # frozen at the look that decided it
        if d["kind"] == "undecided":
            assert d["n"] == 8 and "run longer or quieter" in d["sentence"]
    assert "runs until each comparison is decided (up to 8; margin ±5%)" in " ".join(res.stdout.split())


@pytest.mark.parametrize("args,message", [
    (["--runs", "auto", "--precision", "2"], "--runs auto and --precision are two stopping rules; choose one"),
    (["--runs", "many"], "--runs 'many': give a number of runs (at least 2) or auto"),
    (["--runs", "4", "--max-time", "1m"], "--max-time applies to --runs auto; add it, or drop --max-time"),
    (["--runs", "auto", "--max-time", "soon"], "--max-time 'soon': write a duration like 90s, 30m, 2h"),
])
def test_runs_auto_usage_errors_are_one_line(tmp_path, args, message):
    res = iolens("compare", "true {t}", "--param", "t=1,2", "--no-store", *args)
    assert res.returncode == 2 and message in res.stderr and "Traceback" not in res.stderr


def test_user_and_sys_cpu_per_run_beside_wall_time(tmp_path):
    burn = "i=0; while [ $i -lt {n} ]; do i=$((i+1)); done"
    res, rep = compare(tmp_path, burn, "--param", "n=1,200000", "--runs", "2", "--html", tmp_path / "p.html",
                       env=dict(os.environ, COLUMNS="160"))
    assert res.returncode == 0, res.stderr
    idle, busy = rep["results"]
    for r in (idle, busy):
        assert len(r["user_times"]) == len(r["system_times"]) == r["ok_runs"] == 2
        recs = [x for x in r["run_records"] if x["ok"] and not x["warmup"]]
        assert r["user_times"] == [x["user_s"] for x in recs] and r["system_times"] == [x["sys_s"] for x in recs]
        assert r["user"] == pytest.approx(sum(r["user_times"]) / 2)
    # the shell's loop is CPU work: it shows as user time of the command, beside its wall time
    assert min(busy["user_times"]) > max(idle["user_times"])
    assert min(busy["user_times"]) <= min(busy["times"]) * 1.05 + 0.01
    head = next(line for line in res.stdout.splitlines() if "median" in line and "configuration" in line)
    assert "user" in head and "sys" in head
    page = (tmp_path / "p.html").read_text()
    assert "<th>median</th><th>user (mean)</th><th>sys (mean)</th>" in page


def test_prepare_sees_the_runs_placeholders(tmp_path):
    place = tmp_path / "p"
    place.mkdir()
    res, rep = compare(tmp_path, "test -f {out:ready} && echo {t}", "--place", f"out={place}", "--param", "t=1,2",
                       "--prepare", "touch {out:ready}", "--runs", "2")
    assert res.returncode == 0, res.stderr
    assert all(r["ok_runs"] == 2 for r in rep["results"])
    res = iolens("compare", "true {t}", "--param", "t=1,2", "--prepare", "exit 4", "--no-store")
    assert res.returncode == 1 and "--prepare failed with exit status 4" in res.stderr


def test_json_has_hyperfine_field_names_and_types(tmp_path):
    res, rep = compare(tmp_path, "true {t}", "--param", "t=1,2", "--runs", "2")
    assert rep["tag"] == "iolens-compare" and rep["schema_version"] == [1, 2]
    hf = shutil.which("hyperfine")
    if hf is None:
        pytest.skip("hyperfine is not installed (Debian package hyperfine)")
    ref = tmp_path / "hf.json"
    subprocess.run([hf, "-N", "--runs", "2", "--export-json", str(ref), "true"], check=True, capture_output=True)
    theirs = json.loads(ref.read_text())["results"][0]
    ours = rep["results"][0]
    shared = [k for k in theirs if k in ours]
    assert {"command", "mean", "stddev", "median", "user", "system", "min", "max", "times", "exit_codes"} <= set(shared)
    for k in shared:
        if theirs[k] is not None and ours[k] is not None:
            assert type(ours[k]) is type(theirs[k]) or {type(ours[k]), type(theirs[k])} <= {int, float}, k


def test_profile_compares_phases_and_io_breakdown(tmp_path):
    inp = tmp_path / "in.txt"
    inp.write_bytes(b"line\n" * 200_000)
    place = tmp_path / "p"
    place.mkdir()
    res, rep = compare(tmp_path, "cat {in} | sort > {out:sorted.txt}", "--input", f"in={inp}",
                       "--place", f"out=/dev/null,{place}", "--runs", "2", "--profile")
    assert res.returncode == 0, res.stderr
    for r in rep["results"]:
        prof = r["profile"]
        assert prof["runs"] == 2
        assert {"cat", "sort"} <= set(prof["phases"])
        assert prof["phases"]["sort"]["wall_s"] > 0
        assert prof["io"]["bytes_read"] >= 1_000_000
        assert {"read_s", "write_s", "compute_s"} <= set(prof["io"])
    assert "Profiled (medians): own time per phase" in res.stdout


def test_html_has_box_plots_with_every_point_and_no_network(tmp_path):
    html = tmp_path / "r.html"
    src = tmp_path / "in.txt"
    src.write_text("x" * 1000)
    res, _rep = compare(tmp_path, "cat {in} > {out:o}", "--input", f"in={src}", "--place", f"out=/dev/null,{tmp_path}",
                        "--strategy", "direct,stage", "--runs", "3", "--html", html)
    assert res.returncode == 0, res.stderr
    page = html.read_text()
    # a box per configuration (a bar from the first to the third quartile), every run a point over it
    assert page.count('"base":[') == 4 and page.count('"mode":"markers"') >= 8
    assert '"name":"copy-in"' in page and '"name":"copy-out"' in page
    # plotly.js (its basic bundle) is inline: no script, stylesheet or font is loaded from anywhere
    assert not re.search(r"<script[^>]*\ssrc=", page) and not re.search(r"<link[^>]*\shref=", page)
    assert "plotly.js (basic - minified) v" in page and 1_000_000 < len(page.encode()) < 1_500_000


def test_peak_rss_is_the_commands_own_not_iolens(tmp_path):
    res, rep = compare(tmp_path, '[ {n} = 0 ] || python3 -c "x = bytearray({n})"', "--param", "n=0,120000000",
                       "--runs", "2")
    assert res.returncode == 0, res.stderr
    small, big = (r["io"]["max_rss_bytes"] for r in rep["results"])
    assert small < 8 << 20  # a shell, not the Python process that launched it
    assert big > 120_000_000
