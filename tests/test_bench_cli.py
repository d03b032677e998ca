"""`iolens bench` end to end: every suite at a tiny size, checked against the filesystem, the JSON and the store."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from conftest import iolens
from helpers.waiting import wait_for

TINY = ["--size", "4M", "--files", "6", "--runtime", "0.1", "-q"]


@pytest.fixture(autouse=True)
def _db(tmp_path, monkeypatch):
    monkeypatch.setenv("IOLENS_DB", str(tmp_path / "results.sqlite"))


@pytest.fixture
def target(tmp_path) -> Path:
    d = tmp_path / "target"
    d.mkdir()
    return d


def bench_json(*args, cwd=None) -> dict:
    res = iolens("bench", *args, "--json", "-", cwd=cwd)
    assert res.returncode == 0, res.stderr
    return json.loads(res.stdout)


def leftovers(*dirs: Path) -> list[Path]:
    return [p for d in dirs for p in d.iterdir() if p.name.startswith("iolens-bench-")]


def test_classic_suite_json_store_and_cleanup(target, tmp_path):
    doc = bench_json(str(target), "--suite", "classic", "--threads", "1,2", *TINY)
    assert doc["tag"] == "iolens-bench" and doc["schema_version"][0] == 1
    for key in ("iolens_version", "engine_version", "created", "suite", "suites", "repeat", "run_id", "options",
                "scale", "host", "targets", "results", "warnings"):
        assert key in doc
    t = doc["targets"][0]
    for key in ("name", "path", "lab", "fstype", "mount_options", "device", "device_model", "device_class",
                "free_bytes", "total_bytes", "plausible_read_Bps"):
        assert key in t
    assert t["path"] == str(target.resolve()) and t["fstype"]
    tests = [r["test"] for r in doc["results"]]
    assert tests == ["seq-write t1", "seq-read t1", "files-create t1", "files-read t1",
                     "seq-write t2", "seq-read t2", "files-create t2", "files-read t2"]
    by = {r["test"]: r for r in doc["results"]}
    size = doc["scale"]["size"]
    assert by["seq-write t1"]["metrics"]["bytes"]["mean"] == size
    assert by["seq-write t2"]["metrics"]["bytes"]["mean"] == size  # total constant, split over threads
    assert by["files-create t2"]["metrics"]["ops"]["mean"] == 6
    assert by["files-create t1"]["metrics"]["bytes"]["mean"] == 6 * 500_000
    assert by["seq-write t1"]["cache_state"] == "synced"
    assert by["seq-read t1"]["cache_state"] in ("cold-evicted", "warm")
    for r in doc["results"]:
        assert set(r["metrics"]) >= {"throughput_Bps", "iops", "lat_p99_us", "cpu_user_s", "wall_s"}
        assert r["metrics"]["throughput_Bps"]["n"] == 1 or r["op"] in ("stat", "delete")
        assert r["job"]["phase"]["name"] == r["test"]
        assert len(r["threads_detail"]) == r["threads"]
    assert leftovers(target) == []
    assert list(target.iterdir()) == []
    # the run is in the store with its provenance
    db = sqlite3.connect(os.environ["IOLENS_DB"])
    run = db.execute("SELECT id, kind, status FROM runs").fetchall()
    assert run == [(doc["run_id"], "bench", "complete")]
    prov = json.loads(db.execute("SELECT provenance FROM results WHERE name = 'seq-read t1'").fetchone()[0])
    for key in ("host", "target", "free_bytes", "iolens_version", "time", "cache_mode", "job"):
        assert prov[key] is not None, key
    for key in ("host", "kernel", "cpu_model", "mem_bytes"):
        assert prov["host"][key], key
    assert "proactive_reclaim_idle_s" in prov["host"]  # None, or the idle age DAMON pages memory out at
    assert prov["target"]["fstype"] == t["fstype"] and "mount_options" in prov["target"]
    assert prov["job"]["phase"]["groups"][0]["op"] == "read"
    db.close()


@pytest.mark.parametrize("suite,expect", [
    ("random", ["randread qd1", "randread qd2", "randwrite qd1", "randwrite qd2"]),
    ("streams", ["streams-write n1", "streams-read n1", "streams-write n2", "streams-read n2"]),
    ("meta", ["meta-create t1", "meta-stat t1", "meta-delete t1", "meta-create t2", "meta-stat t2",
              "meta-delete t2"]),
    ("genomics", ["align", "sort-spill", "sort-merge", "index-load", "ref-lookup", "workdir-create",
                  "workdir-stat", "workdir-read", "workdir-delete"]),
])
def test_each_suite_runs_and_cleans_up(target, suite, expect):
    doc = bench_json(str(target), "--suite", suite, "--threads", "1,2", *TINY, "--no-store")
    assert [r["test"] for r in doc["results"]] == expect
    assert doc["run_id"] is None
    for r in doc["results"]:
        m = r["metrics"]
        assert m["ops"]["mean"] > 0, r["test"]
        assert m["wall_s"]["mean"] > 0
        assert r["cache_state"] in ("cold-direct", "cold-evicted", "warm", "synced", "buffered")
    assert list(target.iterdir()) == []


def test_genomics_patterns_move_the_right_bytes(target):
    doc = bench_json(str(target), "--suite", "genomics", *TINY, "--no-store")
    by = {r["test"]: r for r in doc["results"]}
    size = doc["scale"]["size"]
    align = by["align"]
    assert align["metrics"]["read_Bps"]["mean"] and align["metrics"]["write_Bps"]["mean"]
    assert align["metrics"]["bytes"]["mean"] == size // 4 + 3 * size // 4
    assert {g["op"] for g in align["threads_detail"]} == {"read", "write"}
    assert by["sort-spill"]["threads"] == 8 and by["sort-spill"]["metrics"]["bytes"]["mean"] == size
    assert by["sort-merge"]["metrics"]["bytes"]["mean"] == 2 * size  # every chunk read once, output written
    assert by["index-load"]["metrics"]["bytes"]["mean"] == size
    assert by["ref-lookup"]["op"] == "randread" and by["ref-lookup"]["bs"] == 4096
    assert by["workdir-create"]["metrics"]["ops"]["mean"] == 24


def test_genomics_across_two_targets(tmp_path):
    a, b = tmp_path / "a", tmp_path / "b"
    a.mkdir()
    b.mkdir()
    doc = bench_json(str(a), str(b), "--suite", "genomics", *TINY, "--no-store")
    tests = {(r["target"], r["test"]) for r in doc["results"]}
    assert (str(a), f"align to {b}") in tests and (str(b), f"align to {a}") in tests
    assert leftovers(a, b) == [] and list(a.iterdir()) == [] and list(b.iterdir()) == []


def test_repeat_gives_mean_and_sd_and_the_table_shows_targets(tmp_path):
    a, b = tmp_path / "a", tmp_path / "b"
    a.mkdir()
    b.mkdir()
    res = iolens("bench", str(a), str(b), "--suite", "random", "--threads", "1", "--repeat", "2", *TINY,
                 env={**os.environ, "COLUMNS": "200"})
    assert res.returncode == 0, res.stderr
    out = res.stdout
    assert str(a) in out and str(b) in out and "mean ± SD of 2 runs" in out
    assert "filesystem" in out and "mount options" in out and "device" in out
    assert "IOPS" in out and "±" in out
    store = iolens("results", "show", "--json", "1")
    run = json.loads(store.stdout)["runs"][0]
    m = run["results"][0]["metrics"]["metrics"]["iops"]
    assert m["n"] == 2 and m["sd"] is not None and len(m["values"]) == 2


def fstype(path: Path) -> str:
    return subprocess.run(["stat", "-f", "-c", "%T", str(path)], capture_output=True, text=True).stdout.strip()


def test_cache_state_is_reported_for_each_mode(target):
    base = [str(target), "--suite", "streams", "--threads", "1", *TINY, "--no-store"]
    states = {}
    for mode in ([], ["--warm"], ["--direct"]):
        doc = bench_json(*base, *mode)
        by = {r["test"]: r for r in doc["results"]}
        states[" ".join(mode)] = (by["streams-write n1"]["cache_state"], by["streams-read n1"]["cache_state"],
                                  by["streams-read n1"])
    assert states["--warm"][1] == "warm"
    direct_w, direct_r, row = states["--direct"]
    if row["job"]["phase"]["groups"][0]["direct"] and direct_r == "cold-direct":
        assert direct_w == "cold-direct"
    else:
        assert any("O_DIRECT" in n for n in row["notes"])
    w, r, row = states[""]
    assert w == "synced"
    if fstype(target) in ("tmpfs", "ramfs"):
        assert r == "warm" and any("pages are the storage" in n for n in row["notes"])
    else:
        assert r == "cold-evicted"
        assert row["metrics"]["resident_fraction"]["mean"] <= 0.05
        st = os.stat(target)
        if os.path.exists(f"/sys/dev/block/{os.major(st.st_dev)}:{os.minor(st.st_dev)}/stat"):
            # the device's own counters confirm the read was cold
            m = row["metrics"]
            assert m["device_read_bytes"]["mean"] >= 0.9 * m["bytes"]["mean"]


def test_tmpfs_reads_are_reported_warm(tmp_path):
    shm = Path("/dev/shm")
    if not shm.is_dir() or fstype(shm) != "tmpfs" or not os.access(shm, os.W_OK):
        pytest.skip("no writable tmpfs at /dev/shm")
    doc = bench_json(str(shm), "--suite", "streams", "--threads", "1", *TINY, "--no-store")
    read = next(r for r in doc["results"] if r["test"] == "streams-read n1")
    assert read["cache_state"] == "warm"
    assert doc["targets"][0]["device_class"] == "memory"
    assert any("tmpfs" in n for n in read["notes"])


def test_null_target_measures_the_engine_alone(tmp_path):
    doc = bench_json("null", "--suite", "random", "--threads", "1", *TINY, "--no-store")
    assert doc["targets"][0]["fstype"] == "null"
    assert all(r["cache_state"] == "none" for r in doc["results"])
    rr = doc["results"][0]
    assert rr["metrics"]["iops"]["mean"] > 100_000  # no I/O: millions of no-ops per second
    assert rr["metrics"]["lat_p50_us"]["mean"] < 5


def one_line_error(res, code: int = 5) -> str:
    assert res.returncode == code, (res.returncode, res.stderr)
    lines = res.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("iolens: error: "), res.stderr
    assert "Traceback" not in res.stderr
    return lines[0]


def test_bad_targets_are_one_line_errors(tmp_path):
    assert "no such directory" in one_line_error(iolens("bench", str(tmp_path / "absent"), *TINY))
    f = tmp_path / "file"
    f.write_text("x")
    assert "not a directory" in one_line_error(iolens("bench", str(f), *TINY))
    assert "character device" in one_line_error(iolens("bench", "/dev/null", *TINY))
    assert "not storage" in one_line_error(iolens("bench", "/proc", *TINY))
    blk = next((Path("/dev") / p.name for p in Path("/sys/class/block").iterdir()
                if (Path("/dev") / p.name).exists()), None) if Path("/sys/class/block").exists() else None
    if blk is not None:
        assert "block device" in one_line_error(iolens("bench", str(blk), *TINY))
    same = iolens("bench", str(tmp_path), str(tmp_path) + "/.", *TINY)
    assert "same directory" in one_line_error(same, 2)


def test_read_only_target_is_refused(tmp_path):
    ro = tmp_path / "ro"
    ro.mkdir()
    if os.geteuid() == 0:
        if subprocess.run(["mount", "-t", "tmpfs", "-o", "ro,size=1m", "tmpfs", str(ro)],
                          capture_output=True).returncode:
            pytest.skip("root, but cannot mount a read-only tmpfs here (no mount privilege)")
        try:
            assert "read-only" in one_line_error(iolens("bench", str(ro), *TINY))
        finally:
            subprocess.run(["umount", str(ro)], check=False)
    else:
        ro.chmod(0o555)
        try:
            assert "not writable" in one_line_error(iolens("bench", str(ro), *TINY))
        finally:
            ro.chmod(0o755)


def test_free_space_refusal_writes_nothing(target):
    msg = one_line_error(iolens("bench", str(target), "--size", "100T", "-q"))
    assert "needs" in msg and "free" in msg and "--size" in msg
    assert list(target.iterdir()) == []


def test_lab_targets_resolve_or_fail_in_one_line(tmp_path, monkeypatch):
    monkeypatch.setenv("IOLENS_LAB_DIR", str(tmp_path / "nolab"))  # a lab that is not up
    msg = one_line_error(iolens("bench", "lab:tmpfs", *TINY))
    assert msg.startswith("iolens: error: lab:tmpfs") and "iolens lab up" in msg
    assert "lab:no-such-target" in one_line_error(iolens("bench", "lab:no-such-target", *TINY), 2)


@pytest.mark.parametrize("sig,code", [(signal.SIGINT, 130), (signal.SIGTERM, 143)])
def test_interrupt_removes_the_benchmark_directory(target, sig, code):
    cmd = [sys.executable, "-m", "iolens", "bench", str(target), "--suite", "random", "--threads", "1",
           "--size", "4M", "--runtime", "30", "-q", "--no-store"]
    with subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                          start_new_session=True) as p:
        assert wait_for(lambda: leftovers(target) and any((d / "rand").exists() for d in leftovers(target))), \
            "the benchmark never started"
        time.sleep(0.3)
        if sig == signal.SIGINT:
            os.killpg(p.pid, sig)  # Ctrl-C reaches the whole foreground process group
        else:
            p.send_signal(sig)  # SIGTERM to iolens alone: it must stop the engine itself
        out, err = p.communicate(timeout=30)
    assert p.returncode == code, err
    assert leftovers(target) == [], "the iolens-bench-* directory was left behind"
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1
    assert "removed" in err


def test_random_suite_with_io_uring_queue_depth(target):
    res = iolens("bench", str(target), "--suite", "random", "--threads", "1,4", "--ioengine", "io_uring", *TINY,
                 "--no-store", "--json", "-")
    if res.returncode != 0 and "io_uring" in res.stderr:
        pytest.skip(f"io_uring is not available here: {res.stderr.strip()}")
    assert res.returncode == 0, res.stderr
    doc = json.loads(res.stdout)
    rows = {r["test"]: r for r in doc["results"]}
    assert rows["randread qd4"]["engine"] == "io_uring" and rows["randread qd4"]["iodepth"] == 4
    assert rows["randread qd4"]["threads"] == 1
    assert list(target.iterdir()) == []


@pytest.fixture
def toy_suite():
    """A suite added the way every suite is: one `register_suite` on its builder, nothing else."""
    from iolens.bench import suites

    @suites.register_suite("toy", "one small file written, then read back", content="zeros")
    def toy(spec, sc, opts, others):
        group = {"op": "write", "dir": 0, "file": "toy", "size": 64 << 10, "bs": 4096, "content": opts.content,
                 "sync": "fdatasync"}
        return [suites.Test("toy", "toy", [
            {"name": "toy-write", "evict_before": False, "report": True, "groups": [group]},
            {"name": "toy-read", "evict_before": True, "report": True,
             "groups": [{"op": "read", "dir": 0, "file": "toy", "size": 64 << 10, "bs": 4096}]},
            {"name": "toy (clean-up)", "evict_before": False, "report": False,
             "groups": [{"op": "remove", "dir": 0, "paths": ["toy.0"]}]},
        ], [spec], describe=f"{len(others)} other targets")]

    try:
        yield suites
    finally:
        suites.SUITES.pop("toy", None)


def test_a_suite_registered_in_one_place_is_offered_and_runs(toy_suite, target):
    from click.testing import CliRunner

    from iolens.cli import main

    sc = toy_suite.Scale(size=1 << 20, files=1, meta_files=1, runtime=0.1, bs=1 << 20)
    built = toy_suite.build("toy", str(target), sc, toy_suite.Options())
    assert built[0].reports == ["toy-write", "toy-read"]
    assert built[0].phases[0]["groups"][0]["content"] == "zeros"  # the suite's own default content
    res = CliRunner().invoke(main, ["bench", str(target), "--suite", "toy", "--suite", "meta", "--threads", "1",
                                    *TINY, "--no-store", "--json", "-"])
    assert res.exit_code == 0, res.output
    doc = json.loads(res.stdout)
    assert doc["suites"] == ["toy", "meta"]
    assert [r["test"] for r in doc["results"]][:2] == ["toy-write", "toy-read"]
    assert doc["results"][0]["metrics"]["bytes"]["mean"] == 64 << 10
    assert list(target.iterdir()) == []
    toy_suite.SUITES.pop("toy")
    res = CliRunner().invoke(main, ["bench", str(target), "--suite", "toy", "--no-store"])
    assert res.exit_code == 2 and "'toy' is not one of 'classic'" in res.output
