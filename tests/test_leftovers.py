"""Nothing leaks, a damaged store is never written.

- Work directories (`iolens.workdirs`): what a run killed with SIGKILL leaves (bench, compare --profile, replay) is
  removed by the next run of the command, which says so; a user's own directory of a similar name, or one whose
  owner still runs, is never touched; removal never follows a symlink or enters a mount.
- A results store that fails its check is refused, before anything runs, by every command that would write to it.
"""

from __future__ import annotations

import json
import os
import random
import shutil
import sqlite3
import subprocess
import sys
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

import pytest

from conftest import iolens, unavailable
from helpers.waiting import wait_for

from iolens import workdirs

pytestmark = pytest.mark.timeout(300)


def dead_pid() -> int:
    p = subprocess.Popen([sys.executable, "-c", "pass"])
    p.wait()
    return p.pid


def leftover(parent: Path, name: str, **marker) -> Path:
    d = parent / name
    d.mkdir()
    (d / "data").write_bytes(b"x" * 1000)
    workdirs.write_marker(d, {**workdirs.marker_of_this_process(), **marker})
    return d


# ---- the helper ------------------------------------------------------------------------------------------------

def test_reap_removes_only_what_killed_runs_of_ours_left(tmp_path):
    killed = leftover(tmp_path, "iolens-bench-killed", pid=dead_pid(), start=None)
    reused = leftover(tmp_path, "iolens-bench-reused", start="1")  # the pid lives on, as another process
    rebooted = leftover(tmp_path, "iolens-bench-rebooted", boot_id="an-earlier-boot")
    alive = leftover(tmp_path, "iolens-bench-alive")
    elsewhere = leftover(tmp_path, "iolens-bench-elsewhere", pid=dead_pid(), host="another-host")
    contained = leftover(tmp_path, "iolens-bench-contained", pid=dead_pid(), pid_ns="pid:[1]")
    mine = tmp_path / "iolens-bench-mine"  # a user's own directory of that name
    mine.mkdir()
    (mine / "precious.txt").write_text("keep")
    forged = tmp_path / "iolens-bench-forged"  # a marker that is not one
    forged.mkdir()
    (forged / workdirs.MARKER).write_text("not json")
    other = leftover(tmp_path, "iolens-compare-killed", pid=dead_pid(), start=None)  # another prefix

    reaped = workdirs.reap(tmp_path, "iolens-bench-")
    assert sorted(f.path for f in reaped.removed) == sorted([killed, reused, rebooted])
    assert not killed.exists() and not reused.exists() and not rebooted.exists()
    assert alive.exists() and elsewhere.exists() and contained.exists() and other.exists() and forged.exists()
    assert (mine / "precious.txt").read_text() == "keep"
    notes, warnings = reaped.notes(), reaped.warnings()
    assert notes[0].startswith("removed 3 leftover directories of iolens runs that were killed: ")
    assert str(killed) in notes[0] and str(reused) in notes[0]
    text = "\n".join(notes)
    assert f"{mine} is not an iolens work directory" in text and f"{forged} is not an iolens work directory" in text
    assert f"{elsewhere} belongs to an iolens run on another-host" in text
    assert f"{contained} belongs to an iolens run in another pid namespace" in text
    assert len(warnings) == 1 and warnings[0].startswith(f"{alive} belongs to an iolens run still running")
    # a second look finds nothing more to remove
    assert workdirs.reap(tmp_path, "iolens-bench-").removed == []


def test_another_users_leftover_is_left_alone(tmp_path):
    if os.geteuid() != 0:
        unavailable("giving a directory to another user needs root")
    theirs = leftover(tmp_path, "iolens-bench-theirs", pid=dead_pid(), start=None, uid=65534)
    os.chown(theirs, 65534, 65534)
    reaped = workdirs.reap(tmp_path, "iolens-bench-")
    assert reaped.removed == [] and theirs.exists()
    assert reaped.notes() == [f"{theirs} belongs to an iolens run of another user: left alone"]


def test_removal_never_follows_a_symlink(tmp_path):
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "keep.txt").write_text("keep")
    parent = tmp_path / "target"
    parent.mkdir()
    killed = leftover(parent, "iolens-bench-killed", pid=dead_pid(), start=None)
    (killed / "link").symlink_to(outside)
    (killed / "sub").mkdir()
    (killed / "sub" / "deeper").mkdir()
    (killed / "sub" / "deeper" / "f").write_text("x")
    (killed / "sub" / "file-link").symlink_to(outside / "keep.txt")
    (parent / "iolens-bench-a-link").symlink_to(outside)  # a symlink named like ours is not a directory of ours
    reaped = workdirs.reap(parent, "iolens-bench-")
    assert [f.path for f in reaped.removed] == [killed] and not killed.exists()
    assert (outside / "keep.txt").read_text() == "keep"
    assert (parent / "iolens-bench-a-link").is_symlink()


@contextmanager
def tmpfs(at: Path) -> Iterator[Path]:
    """A small tmpfs mounted at `at` (a new directory) for the block."""
    if os.geteuid() != 0 or shutil.which("mount") is None:
        unavailable("mounting a tmpfs needs root and mount(8)")
    at.mkdir()
    res = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1m", "iolens-test", str(at)], capture_output=True,
                         text=True)
    if res.returncode != 0:
        unavailable(f"cannot mount a tmpfs here: {res.stderr.strip()}")
    try:
        yield at
    finally:
        subprocess.run(["umount", str(at)], check=True)


def test_a_mount_inside_a_leftover_is_never_entered(tmp_path):
    killed = leftover(tmp_path, "iolens-bench-killed", pid=dead_pid(), start=None)
    with tmpfs(killed / "mnt") as mnt:
        (mnt / "theirs.txt").write_text("keep")
        reaped = workdirs.reap(tmp_path, "iolens-bench-")
        assert reaped.removed == [] and len(reaped.failed) == 1
        assert (mnt / "theirs.txt").read_text() == "keep"
        assert "a mount point in it; unmount it first" in reaped.warnings()[0]
    assert [f.path for f in workdirs.reap(tmp_path, "iolens-bench-").removed] == [killed]


def test_a_read_only_parent_is_skipped_quietly(tmp_path):
    with tmpfs(tmp_path / "ro") as ro:
        killed = leftover(ro, "iolens-bench-killed", pid=dead_pid(), start=None)
        subprocess.run(["mount", "-o", "remount,ro", str(ro)], check=True)
        reaped = workdirs.reap(ro, "iolens-bench-")
        assert reaped.removed == [] and reaped.notes() == [] and reaped.warnings() == []
        assert (killed / "data").exists()


def test_a_directory_made_is_marked_and_removed(tmp_path):
    with workdirs.temporary(tmp_path, "iolens-replay-") as d:
        m = workdirs.read_marker(d)
        assert m and m["pid"] == os.getpid() and m["uid"] == os.getuid() and m["start"]
        assert workdirs.owner_of(d).owner == "running"
        (d / "sub").mkdir()
        (d / "sub" / "f").write_text("x")
    assert list(tmp_path.iterdir()) == []


# ---- kill -9, then the next run --------------------------------------------------------------------------------

def marked_by(parent: Path, prefix: str, pid: int) -> list[Path]:
    """The `prefix*` directories in parent whose marker names pid."""
    return [d for d in workdirs.candidates(parent, prefix) if (workdirs.read_marker(d) or {}).get("pid") == pid]


def kill9_then_rerun(argv: list[str], places: list[tuple[Path, str]], started, env: dict[str, str],
                     tmp_path: Path) -> tuple[subprocess.CompletedProcess, int, int]:
    """Run A, kill it with SIGKILL once `started()` holds, check it left directories; run B to its end.
    Returns B's completed process and the pids of A and B."""
    cmd = [sys.executable, "-m", "iolens", *map(str, argv)]
    with open(tmp_path / "a.err", "w") as err:
        a = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=err, env=env)
        try:
            assert wait_for(lambda: a.poll() is None and started(a.pid), 60), (tmp_path / "a.err").read_text()
        finally:
            a.kill()
            a.wait()
    assert any(marked_by(p, prefix, a.pid) for p, prefix in places), "run A left nothing"
    b = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    out, err_b = b.communicate(timeout=240)
    res = subprocess.CompletedProcess(cmd, b.returncode, out, err_b)
    for p, prefix in places:
        assert marked_by(p, prefix, a.pid) == [] and marked_by(p, prefix, b.pid) == [], (p, prefix, res.stderr)
    return res, a.pid, b.pid


@pytest.fixture
def isolated(tmp_path):
    """An environment whose temp and staging directories are this test's own."""
    (tmp_path / "tmp").mkdir()
    (tmp_path / "stage").mkdir()
    return {**os.environ, "TMPDIR": str(tmp_path / "tmp"), "IOLENS_STAGING": str(tmp_path / "stage"),
            "IOLENS_DB": str(tmp_path / "results.sqlite")}


def users_own(parent: Path, prefix: str) -> tuple[Path, Path]:
    """A user's own directory named like ours (no marker) and one whose owner runs (this test)."""
    mine = parent / f"{prefix}mine"
    mine.mkdir()
    (mine / "notes.txt").write_text("mine")
    alive = leftover(parent, f"{prefix}alive")
    return mine, alive


def test_kill9_of_bench_is_tidied_by_the_next_bench(tmp_path, isolated):
    target = tmp_path / "target"
    target.mkdir()
    mine, alive = users_own(target, "iolens-bench-")
    argv = ["bench", target, "--suite", "random", "--threads", "1", "--size", "4M", "--runtime", "0.3", "-q",
            "--no-store", "--json", "-"]

    def started(pid):
        return any((d / "rand").exists() for d in marked_by(target, "iolens-bench-", pid))

    res, a, _b = kill9_then_rerun(argv, [(target, "iolens-bench-")], started, isolated, tmp_path)
    assert res.returncode == 0, res.stderr
    notes = json.loads(res.stdout)["notes"]
    said = [n for n in notes if n.startswith("removed 1 leftover directory of iolens runs that were killed: ")]
    assert len(said) == 1 and f"pid {a}," in said[0] and str(target / "iolens-bench-") in said[0]
    assert sorted(target.iterdir()) == sorted([mine, alive]) and (mine / "notes.txt").read_text() == "mine"
    assert any(f"{mine} is not an iolens work directory" in n for n in notes)


def test_kill9_of_compare_profile_is_tidied_by_the_next_compare(tmp_path, isolated):
    place = tmp_path / "place"
    place.mkdir()
    mine, alive = users_own(place, "iolens-compare-")
    stage = tmp_path / "stage"
    launcher = Path("/dev/shm") if os.access("/dev/shm", os.W_OK | os.X_OK) else tmp_path / "tmp"
    argv = ["compare", "sleep 1; echo {n} > {out:f}", "--place", f"out={place}", "--param", "n=1,2", "--runs", "2",
            "--profile",
            "--no-store", "-q"]
    places = [(place, "iolens-compare-"), (stage, "iolens-stage-"), (launcher, "iolens-compare-"),
              (tmp_path / "tmp", "iolens-")]

    def started(pid):
        return bool(marked_by(place, "iolens-compare-", pid) and marked_by(stage, "iolens-stage-", pid)
                    and marked_by(launcher, "iolens-compare-", pid))

    res, a, _b = kill9_then_rerun(argv, places, started, isolated, tmp_path)
    assert res.returncode == 0, res.stderr
    said = [ln for ln in res.stderr.splitlines() if "leftover director" in ln]
    assert len(said) == 1 and said[0].startswith("iolens: note: removed 3 leftover directories of iolens runs "
                                                 "that were killed: "), res.stderr
    assert said[0].count(f"pid {a},") == 3 and str(place) in said[0] and str(stage) in said[0]
    assert sorted(place.iterdir()) == sorted([mine, alive]) and (mine / "notes.txt").read_text() == "mine"
    assert list(stage.iterdir()) == []
    assert f"{alive} belongs to an iolens run still running" in res.stderr


def test_kill9_of_replay_is_tidied_by_the_next_replay(tmp_path, isolated):
    work = tmp_path / "work"
    work.mkdir()
    (work / "in.dat").write_bytes(os.urandom(200_000))
    cap = tmp_path / "slow.iolens"
    step = "cat in.dat > /dev/null; sleep 3; cat in.dat > c2"
    r = iolens("profile", "--trace", "-q", "-o", cap, "--", "sh", "-c", step, cwd=work, env=isolated)
    assert r.returncode == 0, r.stderr
    target = tmp_path / "target"
    target.mkdir()
    mine, alive = users_own(target, "iolens-bench-")
    jobs = tmp_path / "tmp"

    def started(pid):
        return bool(marked_by(target, "iolens-bench-", pid) and marked_by(jobs, "iolens-replay-", pid))

    res, a, _b = kill9_then_rerun(["replay", cap, "--on", target], [(target, "iolens-bench-"),
                                                                     (jobs, "iolens-replay-")],
                                  started, isolated, tmp_path)
    assert res.returncode == 0, res.stderr
    said = [ln for ln in res.stderr.splitlines() if "leftover director" in ln]
    assert len(said) == 1 and said[0].startswith("iolens: note: removed 2 leftover directories of iolens runs "
                                                 "that were killed: "), res.stderr
    assert said[0].count(f"pid {a},") == 2
    assert sorted(target.iterdir()) == sorted([mine, alive]) and list(jobs.iterdir()) == []


# ---- a damaged store is never written ----------------------------------------------------------------------------

def damaged_store(tmp_path: Path) -> Path:
    """A real store whose rows' JSON text has 20 flipped bytes: SQLite's own checks pass, the readers refuse it."""
    from iolens.store import ResultsStore

    db = tmp_path / "damaged.sqlite"
    with ResultsStore(db) as store:
        for i in range(40):
            rid = store.add_run("bench", {"targets": ["/x"], "i": i}, {"host": "h", "iolens_version": "0"})
            for j in range(5):
                store.add_result(rid, f"t{j}", {"throughput_Bps": 1e9 + i * j, "lat": [0.5] * 10}, target="/x")
    con = sqlite3.connect(db)
    con.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    con.close()
    data = bytearray(db.read_bytes())
    rng = random.Random(20)
    spots, at = [], data.find(b"0.5, ", 4096)  # digits inside the rows' JSON text, on pages past the first
    while at > 0:
        spots.append(at + 2)
        at = data.find(b"0.5, ", at + 1)
    for at in rng.sample(spots, 20):
        data[at] ^= 0xFF
    db.write_bytes(bytes(data))
    con = sqlite3.connect(db)
    assert [r[0] for r in con.execute("PRAGMA quick_check")] == ["ok"]  # what was checked before
    con.close()
    return db


def test_a_damaged_store_is_refused_before_anything_runs(tmp_path, isolated):
    db = damaged_store(tmp_path)
    before = db.read_bytes()
    listed = iolens("results", "list", "--db", db, env=isolated)
    assert listed.returncode == 6 and "damaged" in listed.stderr  # the readers call it damaged

    marker = tmp_path / "ran"
    target = tmp_path / "target"
    target.mkdir()
    engine = tmp_path / "engine"  # the bench engine, noting that it was given a job (--describe is no workload)
    real = subprocess.run([sys.executable, "-c", "from iolens.bench.engine import engine_path; print(engine_path())"],
                          capture_output=True, text=True, check=True).stdout.strip()
    engine.write_text(f"#!/bin/sh\n[ \"$1\" = --describe ] || touch {marker}\nexec {real} \"$@\"\n")
    engine.chmod(0o755)
    shims = tmp_path / "bin"  # gzip, noting that the codec measurement started it
    shims.mkdir()
    (shims / "gzip").write_text(f"#!/bin/sh\ntouch {marker}\nexec {shutil.which('gzip')} \"$@\"\n")
    (shims / "gzip").chmod(0o755)
    env = {**isolated, "IOLENS_BENCH_ENGINE": str(engine), "PATH": f"{shims}{os.pathsep}{os.environ['PATH']}"}
    (tmp_path / "reads.fq").write_bytes(b"@r\nACGT\n+\nIIII\n" * 1000)
    commands = {
        "compare": ["compare", f"touch {marker}; true {{x}}", "--param", "x=1,2", "--runs", "2", "-q"],
        "bench": ["bench", target, "--suite", "random", "--threads", "1", "--size", "4M", "--runtime", "0.1", "-q"],
        "compress": ["compress", tmp_path / "reads.fq", "--codecs", "gzip-cli:6", "--threads", "1", "-q"],
    }
    for name, argv in commands.items():
        res = iolens(*argv, "--db", db, env=env)
        assert res.returncode == 6, (name, res.returncode, res.stderr)
        lines = res.stderr.strip().splitlines()
        assert len(lines) == 1 and "Traceback" not in res.stderr, (name, res.stderr)
        assert "is not a usable iolens results store: it is damaged" in lines[0] and "move it aside" in lines[0]
        assert not marker.exists(), f"{name} ran its workload before refusing the store"
        assert db.read_bytes() == before, f"{name} wrote into the damaged store"
        assert list(target.iterdir()) == []
        # without the store the same command runs its workload, which the marker shows
        res = iolens(*argv, "--no-store", env=env)
        assert res.returncode == 0, (name, res.stderr)
        assert marker.exists(), f"{name}: the marker does not show its workload"
        marker.unlink()


def test_outputs_kept_for_the_user_are_never_reaped(tmp_path, isolated):
    place = tmp_path / "place"
    place.mkdir()
    argv = ["compare", "echo {n} > {out:f}", "--place", f"out={place}", "--param", "n=1,2", "--runs", "2",
            "--keep-outputs", "--no-store", "-q"]
    first = iolens(*argv, env=isolated)
    assert first.returncode == 0, first.stderr
    kept = workdirs.candidates(place, "iolens-compare-")
    assert len(kept) == 1 and not (kept[0] / workdirs.MARKER).exists()
    outputs = sorted(p.relative_to(kept[0]) for p in kept[0].rglob("f"))
    assert outputs
    second = iolens(*argv, env=isolated)
    assert second.returncode == 0, second.stderr
    assert sorted(p.relative_to(kept[0]) for p in kept[0].rglob("f")) == outputs
    assert "removed" not in second.stderr
