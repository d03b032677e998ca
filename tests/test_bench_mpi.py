"""iolens bench --clients under OpenMPI: aggregates against the files written, the neighbour mapping, a failing rank.

The MPI runs need Debian's openmpi-bin and mpi4py; each test starts a few ranks with --oversubscribe."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from conftest import unavailable
from iolens.bench import engine, mpi
from iolens.bench.multi_aggregate import shared_file_size

HAVE_MPI = shutil.which("mpirun") is not None
try:
    import mpi4py  # noqa: F401
except ImportError:
    HAVE_MPI = False


@pytest.fixture
def _mpi():
    if not HAVE_MPI:
        unavailable("needs mpirun (Debian openmpi-bin) and mpi4py (dev/setup installs both)")


needs_mpi = pytest.mark.usefixtures("_mpi")

IOLENS = [sys.executable, "-m", "iolens"]


def _env(tmp_path: Path) -> dict[str, str]:
    env = dict(os.environ, IOLENS_DB=str(tmp_path / "db.sqlite"), COLUMNS="200")
    for k in mpi.LAUNCHER_ENV:
        env.pop(k, None)
    return env


def _leftovers(d: Path) -> list[str]:
    return sorted(p.name for p in d.iterdir() if p.name.startswith("iolens-bench-"))


# ---- pure parts ----------------------------------------------------------------------------------------------

def _ph(lag: float, end: float, nbytes: int, series: list[int]) -> dict:
    return {"name": "w", "start_lag_s": lag, "wall_s": end, "stonewall_s": 1.0,
            "groups": [{"op": "write", "bytes": nbytes, "ops": nbytes // 10, "series_bytes": series,
                        "series_ops": [s // 10 for s in series],
                        "per_thread": [{"start_s": 0.0, "end_s": end, "bytes": nbytes, "ops": nbytes // 10}]}]}


def test_aggregate_first_and_last_done():
    # rank 0 ends at 1.0 s having written 100; rank 1 runs 0..2 s at a steady 50/s (100 in all)
    a = mpi.aggregate("t", [_ph(0.0, 1.0, 100, [100]), _ph(0.0, 2.0, 100, [50, 50])], ["h0", "h1"], ["x", "x"])
    assert a.bytes == 200 and a.first_done_s == 1.0 and a.last_done_s == 2.0
    assert a.first_done_bytes == pytest.approx(150)   # 100 + rank 1's 50 by then
    assert a.first_done_Bps == pytest.approx(150) and a.last_done_Bps == pytest.approx(100)
    assert [c.throughput_Bps for c in a.clients] == [pytest.approx(100), pytest.approx(50)]
    assert a.spread["min"] == pytest.approx(50) and a.spread["max"] == pytest.approx(100)


def test_the_shared_file_size_is_asked_again_until_another_clients_last_block_shows(tmp_path):
    """A FUSE or network client may answer stat from its attribute cache for a moment (GlusterFS showed the strided
    file one 128 KiB block short); a size that catches up is taken, one that stays short is reported as it is."""
    f = tmp_path / "shared"
    f.write_bytes(b"x" * 4096)
    with ThreadPoolExecutor(1) as pool:
        later = pool.submit(lambda: (time.sleep(0.4), f.write_bytes(b"x" * 8192)))
        assert mpi.settled_size(str(f), 8192) == 8192
        later.result()
    f.write_bytes(b"x" * 4096)
    assert mpi.settled_size(str(f), 8192, wait=0.3) == 4096


def test_launch_command_adds_root_flags_only_for_root():
    cmd = mpi.launch_command(4, "mpirun", ["bench", "/x", "--clients", "4"])
    assert cmd[:4] == ["mpirun", "-n", "4", "--oversubscribe"]
    assert ("--allow-run-as-root" in cmd) == (os.geteuid() == 0)
    assert mpi.launch_command(2, "srun", ["bench"])[:4] == ["srun", "-n", "2", "--mpi=pmix"]


def test_shared_file_size_of_each_layout():
    # segmented: writer w starts at w * size; strided: writer w's k-th block is block k * W + w
    assert shared_file_size("shared", [10, 4, 0], 10, 2) == 14
    assert shared_file_size("shared", [10, 4, 7], 10, 2) == 27
    assert shared_file_size("strided", [4, 4, 4], 100, 2) == 12      # 2 blocks each: the last is writer 2's
    assert shared_file_size("strided", [6, 2, 2], 100, 2) == 14      # writer 0's third block is block 6
    assert shared_file_size("strided", [5, 0, 0], 100, 2) == 13      # a partial last block: block 6, 1 byte
    assert shared_file_size("strided", [0, 0, 0], 100, 2) == 0


@pytest.mark.timeout(60)
@pytest.mark.parametrize("threads", [1, 2])
def test_strided_layout_gives_each_writer_every_nth_block(tmp_path, threads):
    # three processes (the engines of three ranks) write one file at once, each from a template of its own byte;
    # block i must hold writer (i mod W)'s byte, W = 3 * threads writers in all
    ranks, bs, blocks = 3, 64 << 10, 5
    work = tmp_path / "iolens-bench-strided"
    work.mkdir()
    (work / "shared").touch()  # in a multi-client phase the caller makes the file, the engines never truncate it
    start = time.time() + 0.5

    def rank(r: int) -> dict:
        tmpl = tmp_path / f"stamp{r}"
        tmpl.write_bytes(bytes([65 + r]) * 4096)
        g = {"op": "write", "dir": 0, "file": "shared", "layout": "strided", "segment": r * threads,
             "writers": ranks * threads, "threads": threads, "size": blocks * bs, "bs": bs,
             "content": "template", "template": str(tmpl)}
        return engine.run_job({"schema_version": mpi.JOB_SCHEMA, "dirs": [str(work)],
                               "phases": [{"name": "w", "start_at": start, "groups": [g]}]})

    with ThreadPoolExecutor(ranks) as ex:
        results = list(ex.map(rank, range(ranks)))
    assert all(res["status"] == "ok" for res in results), results
    data = (work / "shared").read_bytes()
    writers = ranks * threads
    assert len(data) == writers * blocks * bs == shared_file_size("strided", [blocks * bs] * writers, 0, bs)
    for i in range(writers * blocks):
        owner_rank = (i % writers) // threads
        assert data[i * bs:(i + 1) * bs] == bytes([65 + owner_rank]) * bs, f"block {i}"


def test_strided_writers_must_cover_every_thread(tmp_path):
    work = tmp_path / "iolens-bench-x"
    work.mkdir()
    g = {"op": "write", "dir": 0, "file": "s", "layout": "strided", "segment": 2, "writers": 3, "threads": 2,
         "size": 4096, "bs": 4096}
    res = engine.run_job({"schema_version": mpi.JOB_SCHEMA, "dirs": [str(work)],
                          "phases": [{"name": "w", "groups": [g]}]})
    assert res["status"] == "error" and "writers must cover" in res["error"]["message"]


# ---- under OpenMPI ----------------------------------------------------------------------------------------------

@needs_mpi
@pytest.mark.timeout(90)
def test_aggregate_is_the_ranks_work_and_the_files_written(tmp_path):
    out = tmp_path / "r.json"
    target = tmp_path / "t"
    target.mkdir()
    p = subprocess.run(IOLENS + ["bench", str(target), "--clients", "3", "--suite", "streams", "--size", "4G",
                                 "--bs", "1M", "--runtime", "0.4", "--json", str(out), "-q"],
                       capture_output=True, text=True, env=_env(tmp_path), timeout=80)
    assert p.returncode == 0, p.stderr
    doc = json.loads(out.read_text())
    assert doc["tag"] == "iolens-bench-multi" and doc["clients"] == 3 and len(doc["hosts"]) == 3
    by = {r["phase"]: r for r in doc["results"]}
    w = by["file-per-client write"]
    assert w["stonewall_s"] == 0.4
    assert all(c["bytes"] < 4 << 30 and c["stonewalled"] for c in w["clients"])  # the stonewall stopped them
    assert [c["files_bytes"] for c in w["clients"]] == [c["bytes"] for c in w["clients"]]  # st_size of its file
    assert w["bytes"] == sum(c["files_bytes"] for c in w["clients"])
    assert w["last_done_Bps"] == pytest.approx(w["bytes"] / w["last_done_s"])
    assert max(c["done_s"] for c in w["clients"]) == pytest.approx(w["last_done_s"])
    assert min(c["done_s"] for c in w["clients"]) == pytest.approx(w["first_done_s"])
    assert w["first_done_bytes"] <= w["bytes"]
    assert not doc["warnings"]
    assert _leftovers(target) == []
    assert doc["run_id"] is not None


@needs_mpi
@pytest.mark.timeout(90)
def test_each_rank_reads_its_neighbours_data(tmp_path):
    out = tmp_path / "r.json"
    target = tmp_path / "t"
    target.mkdir()
    p = subprocess.run(IOLENS + ["bench", str(target), "--clients", "3", "--suite", "streams", "--size", "4G",
                                 "--runtime", "0.3", "--json", str(out), "-q", "--no-store"],
                       capture_output=True, text=True, env=_env(tmp_path), timeout=80)
    assert p.returncode == 0, p.stderr
    # rank 0 prints the table; mpirun gives it a pseudo-terminal, but this output is a pipe: no escapes, 200 columns
    assert "\x1b" not in p.stdout and "file-per-client write" in p.stdout, p.stdout
    assert max(len(line) for line in p.stdout.splitlines()) <= 200
    by = {r["phase"]: r for r in json.loads(out.read_text())["results"]}
    for name in ("file-per-client", "shared-file"):
        wrote = [c["bytes"] for c in by[f"{name} write"]["clients"]]
        read = [c["bytes"] for c in by[f"{name} read (neighbour)"]["clients"]]
        rd = by[f"{name} read (neighbour)"]
        assert [c["reads_rank"] for c in rd["clients"]] == [1, 2, 0]
        # rank r reads the whole MiB blocks rank (r+1) % N wrote, unless the stonewall stopped the read first
        for r, c in enumerate(rd["clients"]):
            whole = (wrote[(r + 1) % 3] // (1 << 20)) * (1 << 20)
            assert 0 < read[r] <= whole
            assert read[r] == whole or c["stonewalled"]


@needs_mpi
@pytest.mark.timeout(90)
def test_a_failing_rank_fails_the_run_naming_it_and_every_file_goes(tmp_path):
    good = tmp_path / "good"
    good.mkdir()
    bad = tmp_path / "missing"
    env = _env(tmp_path)
    env.update(OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
    common = ["bench", "--clients", "3", "--suite", "streams", "--runtime", "0.2", "--size", "8M", "-q"]
    # MPMD: ranks 0 and 1 get a good target, rank 2 one that does not exist
    cmd = ["mpirun", "--oversubscribe", "-n", "2"] + IOLENS + common[:1] + [str(good)] + common[1:] + \
        [":", "-n", "1"] + IOLENS + common[:1] + [str(bad)] + common[1:]
    p = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=80)
    assert p.returncode != 0
    errors = [ln for ln in p.stderr.splitlines() if ln.startswith("iolens: error:")]
    assert len(errors) == 1, p.stderr
    assert "rank 2 of 3" in errors[0] and "no such directory" in errors[0]
    assert _leftovers(good) == []


@needs_mpi
@pytest.mark.timeout(90)
def test_a_rank_failing_mid_run_removes_every_file(tmp_path):
    # rank 1's target is full from the start: a 1 MiB tmpfs is not available unprivileged, so use a read-only dir
    good = tmp_path / "good"
    good.mkdir()
    ro = tmp_path / "ro"
    ro.mkdir()
    if os.geteuid() == 0:  # root writes into read-only directories: a 1 MiB tmpfs is full instead
        subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", str(ro)], check=True)
    else:
        ro.chmod(0o500)
    env = _env(tmp_path)
    common = ["--clients", "2", "--suite", "streams", "--runtime", "0.2", "--size", "8M", "-q"]
    root = ["--allow-run-as-root"] if os.geteuid() == 0 else []
    cmd = ["mpirun", *root, "--oversubscribe", "-n", "1"] + IOLENS + ["bench", str(good)] + common + \
        [":", "-n", "1"] + IOLENS + ["bench", str(ro)] + common
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=80)
    finally:
        if os.geteuid() == 0:
            subprocess.run(["umount", "-l", str(ro)], check=False)
    assert p.returncode != 0 and "rank 1 of 2" in p.stderr
    assert _leftovers(good) == []


@needs_mpi
@pytest.mark.timeout(90)
def test_the_genomics_suite_scales_out(tmp_path):
    out = tmp_path / "r.json"
    target = tmp_path / "t"
    target.mkdir()
    p = subprocess.run(IOLENS + ["bench", str(target), "--clients", "2", "--suite", "genomics", "--size", "64M",
                                 "--files", "16", "--runtime", "0.2", "--json", str(out), "-q", "--no-store"],
                       capture_output=True, text=True, env=_env(tmp_path), timeout=80)
    assert p.returncode == 0, p.stderr
    by = {r["phase"]: r for r in json.loads(out.read_text())["results"]}
    assert {"align", "sort-spill", "sort-merge", "workdir-create"} <= set(by)
    for r in by.values():
        assert len(r["clients"]) == 2 and r["bytes"] + r["ops_done"] > 0
    assert _leftovers(target) == []


@needs_mpi
@pytest.mark.timeout(90)
def test_shared_files_segmented_and_strided_hold_what_the_ranks_wrote(tmp_path):
    out = tmp_path / "r.json"
    target = tmp_path / "t"
    target.mkdir()
    p = subprocess.run(IOLENS + ["bench", str(target), "--clients", "3", "--suite", "streams", "--size", "64M",
                                 "--bs", "1M", "--runtime", "0.4", "--json", str(out), "-q", "--no-store"],
                       capture_output=True, text=True, env=_env(tmp_path), timeout=80)
    assert p.returncode == 0, p.stderr
    doc = json.loads(out.read_text())
    by = {r["phase"]: r for r in doc["results"]}
    per = doc["bytes_per_thread"]
    for layout, name in (("shared", "shared-file"), ("strided", "strided-file")):
        w = by[f"{name} write"]
        wrote = [int(c["bytes"]) for c in w["clients"]]  # one thread per client: the writers in rank order
        assert w["shared_file_bytes"] == shared_file_size(layout, wrote, per, 1 << 20) == w["shared_file_expected"]
        assert w["shared_file_bytes"] > 0 and w["bytes"] == sum(wrote)
        rd = by[f"{name} read (neighbour)"]
        assert [c["reads_rank"] for c in rd["clients"]] == [1, 2, 0]
        for r, c in enumerate(rd["clients"]):
            whole = (wrote[(r + 1) % 3] // (1 << 20)) * (1 << 20)
            assert 0 < c["bytes"] <= whole and (c["bytes"] == whole or c["stonewalled"])
    assert not doc["warnings"]
    assert _leftovers(target) == []


@needs_mpi
@pytest.mark.timeout(90)
def test_metadata_in_one_shared_directory_and_one_per_client(tmp_path):
    out = tmp_path / "r.json"
    target = tmp_path / "t"
    target.mkdir()
    p = subprocess.run(IOLENS + ["bench", str(target), "--clients", "3", "--suite", "meta", "--files", "400",
                                 "--runtime", "5", "--json", str(out), "-q", "--no-store"],
                       capture_output=True, text=True, env=_env(tmp_path), timeout=80)
    assert p.returncode == 0, p.stderr
    doc = json.loads(out.read_text())
    by = {r["phase"]: r for r in doc["results"]}
    for prefix, test in (("meta", "meta"), ("meta-shared", "meta-shared-dir")):
        made, statted, deleted = (by[f"{prefix}-{op}"] for op in ("create", "stat", "delete"))
        assert made["test"] == test
        # 400 files per client, well inside the stonewall: every rank made, stat'ed and deleted all of its own
        assert [c["ops"] for c in made["clients"]] == [400, 400, 400]
        for ph in (statted, deleted):
            assert [c["ops"] for c in ph["clients"]] == [c["ops"] for c in made["clients"]]
        assert made["ops_done"] == statted["ops_done"] == deleted["ops_done"] == 1200
    assert by["meta-shared-delete"]["entries_left"] == 0  # the shared directory is gone, with every file in it
    assert by["meta-delete"]["entries_left"] is None
    assert not doc["warnings"]
    assert _leftovers(target) == []
