"""The native bench engine, checked against the filesystem's own view: sizes, counts, names, and what is left."""

from __future__ import annotations

import errno
import json
import os
import signal
import subprocess
import time
from pathlib import Path

import numpy as np
import pytest

from iolens.bench import engine

MiB = 1 << 20


@pytest.fixture
def work(tmp_path) -> Path:
    d = tmp_path / "iolens-bench-test"
    d.mkdir()
    return d


def run(work: Path, *phases: dict, **job) -> dict:
    j = {"dirs": [str(work)], "phases": list(phases), **job}
    return engine.run_job(j)


def phase(name: str, *groups: dict, evict: bool = False) -> dict:
    return {"name": name, "evict_before": evict, "groups": [{"dir": 0, **g} for g in groups]}


def ok(res: dict) -> dict:
    assert res["status"] == "ok", res.get("error")
    return res


def g0(res: dict, i: int = 0) -> dict:
    return res["phases"][i]["groups"][0]


def test_describe_lists_the_vocabulary():
    d = engine.describe()
    assert d["job_schema"][0] == engine.JOB_SCHEMA[0]
    assert {"write", "read", "randread", "randwrite", "randrw", "create", "readfiles", "stat", "delete",
            "remove"} <= set(d["ops"])
    assert set(d["contents"]) == {"random", "zeros", "fastq", "sam", "template"}
    assert d["histogram"]["max_relative_error"] <= 0.01


def test_histogram_quantiles_within_one_percent():
    rng = np.random.default_rng(7)
    vals = np.concatenate([rng.lognormal(9, 1.2, 40_000), rng.integers(1, 200, 5_000)]).astype(np.int64)
    out = subprocess.run([engine.engine_path(), "--hist-selftest"], input=" ".join(map(str, vals)),
                         capture_output=True, text=True, check=True).stdout
    got = json.loads(out)
    assert got["count"] == len(vals)
    s = np.sort(vals)
    for q, v in got["quantiles"].items():
        exact = s[int(np.ceil(float(q) * len(s))) - 1]  # nearest rank, as the engine defines it
        assert abs(v - exact) <= 0.01 * exact + 0.5, (q, v, exact)


@pytest.mark.parametrize("layout", ["per_thread", "shared"])
def test_seq_write_then_read_sizes_and_timing(work, layout):
    size, bs, threads = 3 * MiB + 4096, 256 * 1024, 3
    res = ok(run(work, phase("w", {"op": "write", "file": "big", "layout": layout, "threads": threads,
                                   "size": size, "bs": bs, "sync": "fdatasync"}),
                 phase("r", {"op": "read", "file": "big", "layout": layout, "threads": threads, "size": size,
                             "bs": bs}, evict=True)))
    files = sorted(p.name for p in work.iterdir())
    if layout == "shared":
        assert files == ["big"] and (work / "big").stat().st_size == threads * size
    else:
        assert files == [f"big.{t}" for t in range(threads)]
        assert all((work / f).stat().st_size == size for f in files)
    w, r = g0(res, 0), g0(res, 1)
    for g in (w, r):
        assert g["bytes"] == threads * size
        assert g["ops"] == threads * -(-size // bs)
        assert sum(g["series_bytes"]) == g["bytes"] and sum(g["series_ops"]) == g["ops"]
        assert g["latency_ns"]["count"] == g["ops"]
        assert g["latency_ns"]["min"] <= g["latency_ns"]["p50"] <= g["latency_ns"]["p99"] <= g["latency_ns"]["max"]
        assert len(g["per_thread"]) == threads
        for t in g["per_thread"]:
            assert t["bytes"] == size
            assert t["start_s"] <= t["first_done_s"] <= t["last_done_s"] <= t["end_s"]
    assert w["syncs"] == threads and w["sync"] == "fdatasync"
    cache = res["phases"][1]["cache"]
    assert cache["evicted"] and cache["evicted_files"] == (1 if layout == "shared" else threads)
    assert cache["checked_bytes"] == threads * size


def test_eviction_empties_the_page_cache_on_a_disk(work):
    fs = subprocess.run(["stat", "-f", "-c", "%T", str(work)], capture_output=True, text=True).stdout.strip()
    if fs in ("tmpfs", "ramfs"):
        pytest.skip(f"{work} is on {fs}: its pages are the storage and cannot be evicted")
    res = ok(run(work, phase("w", {"op": "write", "file": "f", "size": 8 * MiB, "bs": MiB, "sync": "fsync"}),
                 phase("r", {"op": "read", "file": "f", "size": 8 * MiB, "bs": MiB}, evict=True),
                 phase("warm", {"op": "read", "file": "f", "size": 8 * MiB, "bs": MiB}, evict=True)))
    assert res["phases"][1]["cache"]["resident_fraction"] <= 0.05
    assert res["phases"][1]["cache"]["evict_requested"] is True


def device_stat(path: Path) -> str | None:
    st = os.stat(path)
    p = Path(f"/sys/dev/block/{os.major(st.st_dev)}:{os.minor(st.st_dev)}/stat")
    return str(p) if p.exists() else None


def test_device_counters_show_what_the_device_moved(work):
    dev = device_stat(work)
    if dev is None:
        pytest.skip(f"{work} has no block device of its own (tmpfs or similar): nothing to count")
    size = 32 * MiB
    res = ok(run(work, phase("w", {"op": "write", "file": "f", "size": size, "bs": MiB, "sync": "fdatasync"}),
                 phase("cold", {"op": "read", "file": "f", "size": size, "bs": MiB}, evict=True),
                 phase("warm", {"op": "read", "file": "f", "size": size, "bs": MiB}),
                 device_stats=[dev]))
    w, cold, warm = (p["devices"][0] for p in res["phases"])
    # the whole device is counted, so other programs can only add
    assert w["write_bytes"] >= size and w["write_ios"] > 0
    assert cold["read_bytes"] >= 0.9 * size and cold["read_ios"] > 0
    assert warm["read_bytes"] < 0.5 * size  # served by the page cache
    # no device to watch: null, and the run is unchanged
    res = ok(run(work, phase("r", {"op": "read", "file": "f", "size": size, "bs": MiB}), device_stats=[None]))
    assert res["phases"][0]["devices"] == [None]
    assert ok(run(work, phase("r", {"op": "read", "file": "f", "size": MiB, "bs": MiB})))["phases"][0]["devices"] \
        == [None]
    bad = run(work, phase("r", {"op": "read", "file": "f", "size": MiB, "bs": MiB}), device_stats=["/etc/passwd"])
    assert bad["status"] == "error" and "/sys/" in bad["error"]["message"]


def test_random_io_stays_inside_the_file(work):
    fsize = 2 * MiB
    res = ok(run(work,
                 phase("rw", {"op": "randwrite", "file": "r", "layout": "shared", "file_size": fsize, "bs": 4096,
                              "ops": 500, "threads": 2, "prepare": True, "content": "zeros"}),
                 phase("rr", {"op": "randread", "file": "r", "layout": "shared", "file_size": fsize, "bs": 4096,
                              "ops": 300, "threads": 2}),
                 phase("mix", {"op": "randrw", "file": "r", "layout": "shared", "file_size": fsize, "bs": 4096,
                               "ops": 200, "read_share": 0.7})))
    assert (work / "r").stat().st_size == fsize  # random writes never extend the file
    assert g0(res, 0)["ops"] == 1000 and g0(res, 0)["bytes"] == 1000 * 4096
    assert g0(res, 1)["ops"] == 600
    assert g0(res, 2)["ops"] == 200


def test_runtime_limit_stops_a_phase(work):
    t0 = time.monotonic()
    res = ok(run(work, phase("rr", {"op": "randread", "file": "r", "layout": "shared", "file_size": MiB,
                                    "bs": 4096, "runtime_s": 0.3, "prepare": True})))
    assert 0.25 < g0(res)["wall_s"] < 3.0  # stops at 0.3 s; slack for a loaded machine
    assert g0(res)["ops"] > 100
    assert time.monotonic() - t0 < 10


def test_loop_rereads_a_file_until_the_time_is_up(work):
    f = {"op": "read", "file": "s", "layout": "shared", "size": MiB, "bs": 256 * 1024}
    res = ok(run(work, phase("lay", {"op": "write", "file": "s", "layout": "shared", "size": MiB, "bs": MiB}),
                 phase("once", {**f, "runtime_s": 0.3}),
                 phase("loop", {**f, "runtime_s": 0.3, "loop": True})))
    once, looped = g0(res, 1), g0(res, 2)
    assert once["bytes"] == MiB and once["ops"] == 4  # size first: one pass, runtime unused
    assert looped["bytes"] > 4 * MiB and looped["bytes"] % (256 * 1024) == 0 and looped["wall_s"] >= 0.29
    assert (work / "s").stat().st_size == MiB  # reading in a loop never grows the file


def test_small_files_create_read_stat_delete(work):
    n, fan, sizes = 37, 4, [0, 100, 5000, 70000]
    common = {"prefix": "sf", "count": n, "fanout": fan, "threads": 3}
    res = ok(run(work,
                 phase("c", {"op": "create", "sizes": sizes, "bs": 4096, **common}),
                 phase("r", {"op": "readfiles", "bs": 4096, **common}, evict=True),
                 phase("s", {"op": "stat", **common})))
    dirs = sorted(p.name for p in (work / "sf").iterdir())
    assert dirs == [f"d{d:04d}" for d in range(fan)]
    found = {p.name: p.stat().st_size for p in (work / "sf").rglob("f*")}
    assert len(found) == n
    expect = sum(sizes[i % len(sizes)] for i in range(n))
    assert sum(found.values()) == expect
    for i in range(n):
        assert (work / "sf" / f"d{i % fan:04d}" / f"f{i:08d}").stat().st_size == sizes[i % len(sizes)]
    assert g0(res, 0)["ops"] == n and g0(res, 0)["bytes"] == expect and g0(res, 0)["dirs_made"] == fan
    assert g0(res, 1)["ops"] == n and g0(res, 1)["bytes"] == expect
    assert g0(res, 2)["ops"] == n and g0(res, 2)["bytes"] == 0
    res = ok(run(work, phase("d", {"op": "delete", **common})))
    assert g0(res)["ops"] == n and g0(res)["dirs_removed"] == fan + 1
    assert list(work.iterdir()) == []


def test_remove_takes_files_and_trees_without_following_symlinks(work, tmp_path):
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "keep").write_text("precious")
    ok(run(work, phase("c", {"op": "create", "prefix": "t", "count": 5, "fanout": 2, "size": 10}),
           phase("w", {"op": "write", "file": "x", "size": 4096, "bs": 4096})))
    (work / "t" / "link").symlink_to(outside)
    res = ok(run(work, {"name": "rm", "groups": [{"op": "remove", "dir": 0, "paths": ["t", "x.0", "absent"]}]}))
    assert res["phases"] == [] or all(not p["groups"] for p in res["phases"])
    assert list(work.iterdir()) == []
    assert (outside / "keep").read_text() == "precious"


def test_symlinks_are_refused_not_followed(work, tmp_path):
    victim = tmp_path / "victim"
    victim.write_bytes(b"do not touch")
    (work / "data.0").symlink_to(victim)
    res = run(work, phase("w", {"op": "write", "file": "data", "size": 8192, "bs": 4096}))
    assert res["status"] == "error" and res["error"]["errno"] == errno.ELOOP
    assert victim.read_bytes() == b"do not touch"
    # a symlinked directory in the middle of a path, and as a small-file prefix
    outdir = tmp_path / "outdir"
    outdir.mkdir()
    (work / "sub").symlink_to(outdir)
    res = run(work, phase("w", {"op": "write", "file": "sub/f", "size": 4096, "bs": 4096}))
    assert res["status"] == "error" and res["error"]["errno"] == errno.ELOOP
    (work / "sf").symlink_to(outdir)
    res = run(work, phase("c", {"op": "create", "prefix": "sf", "count": 3, "size": 1}))
    assert res["status"] == "error"
    assert list(outdir.iterdir()) == []


def test_engine_only_works_in_iolens_bench_dirs(tmp_path):
    res = engine.run_job({"dirs": [str(tmp_path)], "phases": [phase("w", {"op": "write", "size": 1, "bs": 1})]})
    assert res["status"] == "error" and "iolens-bench-" in res["error"]["message"]
    assert list(tmp_path.iterdir()) == []


def test_null_engine_touches_nothing(work):
    res = ok(engine.run_job({"dirs": [], "phases": [
        {"name": "n", "groups": [{"op": "randread", "engine": "null", "file_size": 1 << 30, "bs": 4096,
                                  "ops": 100_000},
                                 {"op": "create", "engine": "null", "count": 1000, "size": 10}]}]}))
    g = res["phases"][0]["groups"]
    assert g[0]["ops"] == 100_000 and g[0]["bytes"] == 100_000 * 4096
    assert g[1]["ops"] == 1000 and g[1]["dir"] is None
    assert g[0]["latency_ns"]["p50"] < 10_000  # a no-op takes well under 10 µs
    assert list(work.iterdir()) == []


@pytest.mark.parametrize("job,msg", [
    ({"phases": []}, "schema_version"),
    ({"schema_version": [9, 0], "phases": []}, "not supported"),
    ({"schema_version": [1, 0], "dirs": [], "phases": [{"name": "x", "groups": [{"op": "fly"}]}]}, "unknown op"),
    ({"schema_version": [1, 0], "dirs": [], "phases": [{"name": "x", "groups": [{"op": "write", "engine": "null"}]}]},
     "needs size"),
    ({"schema_version": [1, 0], "dirs": [], "phases": [{"name": "x", "groups": [
        {"op": "write", "engine": "null", "size": 1, "files": ["a"]}]}]}, "op read only"),
    ({"schema_version": [1, 1], "dirs": [], "device_stats": ["/sys/x"], "phases": []}, "one entry"),
    ({"schema_version": [1, 1], "dirs": [], "device_stats": {}, "phases": []}, "one entry"),
])
def test_bad_jobs_are_errors_with_a_message(job, msg):
    p = subprocess.run([engine.engine_path()], input=json.dumps(job), capture_output=True, text=True)
    assert p.returncode == 2
    res = json.loads(p.stdout)
    assert res["status"] == "error" and msg in res["error"]["message"]


def test_garbage_input_is_an_error_not_a_crash():
    p = subprocess.run([engine.engine_path()], input="{not json", capture_output=True, text=True)
    assert p.returncode == 2 and json.loads(p.stdout)["status"] == "error"


def test_sigint_stops_between_operations(work):
    job = {"schema_version": [1, 0], "dirs": [str(work)], "phases": [
        phase("rr", {"op": "randread", "file": "r", "layout": "shared", "file_size": MiB, "bs": 4096,
                     "runtime_s": 60, "prepare": True, "threads": 2})]}
    jobfile = work.parent / "job.json"
    jobfile.write_text(json.dumps(job))
    with subprocess.Popen([engine.engine_path(), str(jobfile)], stdout=subprocess.PIPE, text=True) as p:
        time.sleep(0.5)
        p.send_signal(signal.SIGINT)
        out, _ = p.communicate(timeout=10)
    assert p.returncode == 130
    res = json.loads(out)
    assert res["status"] == "interrupted"
    assert res["phases"][0]["groups"][0]["ops"] > 0


def test_direct_io_is_used_or_its_refusal_reported(work):
    res = ok(run(work, phase("w", {"op": "write", "file": "d", "size": MiB, "bs": 65536, "direct": True,
                                   "sync": "fsync"}),
                 phase("r", {"op": "read", "file": "d", "size": MiB, "bs": 65536, "direct": True}, evict=True)))
    for i in (0, 1):
        g = g0(res, i)
        assert g["direct_requested"] and g["direct_used"] != g["direct_refused"]
    assert (work / "d.0").stat().st_size == MiB


def test_full_filesystem_is_reported_as_enospc(tmp_path):
    if os.geteuid() != 0:
        pytest.skip("needs root to mount a tiny tmpfs")
    mnt = tmp_path / "mnt"
    mnt.mkdir()
    if subprocess.run(["mount", "-t", "tmpfs", "-o", "size=2m", "tmpfs", str(mnt)], capture_output=True).returncode:
        pytest.skip("cannot mount tmpfs here (no mount privilege in this container)")
    try:
        work = mnt / "iolens-bench-full"
        work.mkdir()
        res = run(work, phase("w", {"op": "write", "file": "f", "size": 8 * MiB, "bs": 65536}))
        assert res["status"] == "error" and res["error"]["errno"] == errno.ENOSPC
        from iolens.errors import TargetError

        with pytest.raises(TargetError, match="is full"):
            engine.raise_for_error(res, ["/mnt/small"])
    finally:
        subprocess.run(["umount", str(mnt)], check=False)


def test_progress_lines_reach_the_callback(work):
    seen = []
    engine.run_job({"dirs": [str(work)], "phases": [
        phase("rr", {"op": "randread", "file": "r", "layout": "shared", "file_size": MiB, "bs": 4096,
                     "runtime_s": 0.6, "prepare": True})]}, on_progress=seen.append)
    assert seen and seen[-1]["phase"] == 0 and seen[-1]["ops"] > 0
    assert all(a["ops"] <= b["ops"] for a, b in zip(seen, seen[1:]))


def test_io_uring_engine_keeps_iodepth_in_flight(work):
    res = run(work, phase("rw", {"op": "randwrite", "engine": "io_uring", "iodepth": 8, "file": "u",
                                 "layout": "shared", "file_size": MiB, "bs": 4096, "ops": 400, "prepare": True,
                                 "sync": "fdatasync"}))
    if res["status"] == "error" and res["error"]["op"] == "io_uring_setup":
        pytest.skip(f"io_uring is not available here: {res['error']['strerror']}")
    ok(res)
    g = g0(res)
    assert g["engine"] == "io_uring" and g["iodepth"] == 8
    assert g["ops"] == 400 and g["bytes"] == 400 * 4096 and g["syncs"] == 1
    assert (work / "u").stat().st_size == MiB
    res = ok(run(work, phase("w", {"op": "write", "engine": "io_uring", "iodepth": 4, "file": "s",
                                   "size": MiB + 1000, "bs": 65536}),
                 phase("r", {"op": "read", "engine": "io_uring", "iodepth": 4, "file": "s", "bs": 65536},
                       evict=True)))
    assert (work / "s.0").stat().st_size == MiB + 1000
    assert g0(res, 0)["bytes"] == MiB + 1000 and g0(res, 1)["bytes"] == MiB + 1000
    assert g0(res, 1)["ops"] == 17


def test_drop_caches_is_done_as_root_and_reported_otherwise(work):
    res = ok(run(work, phase("w", {"op": "write", "file": "f", "size": MiB, "bs": MiB, "sync": "fsync"}),
                 phase("r", {"op": "read", "file": "f", "size": MiB, "bs": MiB}, evict=True), drop_caches=True))
    cache = res["phases"][1]["cache"]
    assert cache["drop_requested"] is True and cache["evicted"] is True
    assert cache["dropped"] != bool(cache["drop_error"])  # either it happened or the reason is given
    if os.geteuid() != 0:
        assert cache["dropped"] is False and cache["drop_error"]
