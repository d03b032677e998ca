"""The results store behind `iolens results`: migration from an older schema, refusal of a newer one, concurrent
writers, and list/show/export."""

from __future__ import annotations

import csv
import io
import json
import os
import shutil
import sqlite3
import subprocess
import sys

import pytest

from conftest import datapath, iolens, unavailable
from iolens.store import SCHEMA_VERSION, ResultsStore


@pytest.fixture
def v1(tmp_path):
    db = tmp_path / "old.sqlite"
    shutil.copy(datapath("bench", "store-v1.sqlite"), db)
    return db


def test_v1_fixture_is_really_v1():
    db = sqlite3.connect(datapath("bench", "store-v1.sqlite"))
    assert db.execute("PRAGMA user_version").fetchone()[0] == 1
    cols = [r[1] for r in db.execute("PRAGMA table_info(runs)")]
    assert "status" not in cols
    db.close()


def test_v1_store_migrates_and_keeps_its_runs(v1):
    with ResultsStore(v1) as store:
        assert store.version == SCHEMA_VERSION
        runs = store.runs()
        assert [(r["id"], r["kind"], r["status"], r["label"]) for r in runs] == [(1, "bench", "complete",
                                                                                  "before-upgrade")]
        res = store.results(1)
        assert [r["name"] for r in res] == ["seq-write t1", "seq-read t1"]
        assert res[1]["cache_state"] == "cold-evicted"
        # and it takes new runs after the migration
        rid = store.add_run("bench", {"x": 1}, {"host": "new"})
        assert store.run(rid)["status"] == "complete"
    with ResultsStore(v1) as store:  # reopening a migrated store is a no-op
        assert store.version == SCHEMA_VERSION and len(store.runs()) == 2


def test_results_cli_over_a_migrated_store(v1):
    out = iolens("results", "list", "--db", v1, env={**os.environ, "COLUMNS": "200"})
    assert out.returncode == 0, out.stderr
    assert "bench" in out.stdout and "oldbox" in out.stdout and "before-upgrade" in out.stdout
    show = iolens("results", "show", "1", "--db", v1, env={**os.environ, "COLUMNS": "200"})
    assert show.returncode == 0, show.stderr
    assert "/scratch" in show.stdout and "seq-read t1" in show.stdout and "520 MB/s" in show.stdout
    assert "xfs" in show.stdout and "cold-evicted" in show.stdout
    exp = iolens("results", "export", "--db", v1, "--format", "json")
    doc = json.loads(exp.stdout)
    assert doc["tag"] == "iolens-results" and doc["schema_version"][0] == 1
    assert doc["runs"][0]["results"][0]["metrics"]["metrics"]["throughput_Bps"]["mean"] == 450e6
    rows = list(csv.DictReader(io.StringIO(iolens("results", "export", "--db", v1, "--format", "csv").stdout)))
    tp = [r for r in rows if r["name"] == "seq-read t1" and r["metric"] == "throughput_Bps"]
    assert len(tp) == 1 and float(tp[0]["mean"]) == 520e6 and tp[0]["fstype"] == "xfs"
    assert tp[0]["host"] == "oldbox" and tp[0]["unit"] == "B/s"


def test_newer_store_is_refused_in_one_line(tmp_path):
    db = tmp_path / "future.sqlite"
    con = sqlite3.connect(db)
    con.execute(f"PRAGMA user_version = {SCHEMA_VERSION + 5}")
    con.close()
    res = iolens("results", "list", "--db", db)
    assert res.returncode == 6
    assert res.stderr.strip().count("\n") == 0 and "newer iolens" in res.stderr


def test_missing_store_and_run_are_one_line_errors(tmp_path, v1):
    res = iolens("results", "list", "--db", tmp_path / "nothing.sqlite")
    assert res.returncode == 2 and "no results store" in res.stderr and "Traceback" not in res.stderr
    res = iolens("results", "show", "42", "--db", v1)
    assert res.returncode == 6 and "no run 42" in res.stderr and "Traceback" not in res.stderr


def test_garbage_file_is_not_a_store(tmp_path):
    db = tmp_path / "garbage.sqlite"
    db.write_bytes(b"this is not sqlite at all" * 100)
    res = iolens("results", "list", "--db", db)
    assert res.returncode == 6 and "not a usable iolens results store" in res.stderr


WRITER = """
import sys
from iolens.store import ResultsStore
with ResultsStore(sys.argv[1]) as s:
    for i in range(40):
        rid = s.add_run("bench", {"i": i}, {"host": sys.argv[2]})
        s.add_result(rid, "t", {"x": i}, target="/t")
"""


def test_concurrent_writers_lose_nothing(tmp_path):
    db = tmp_path / "shared.sqlite"
    procs = [subprocess.Popen([sys.executable, "-c", WRITER, str(db), f"w{k}"]) for k in range(3)]
    assert [p.wait(timeout=120) for p in procs] == [0, 0, 0]
    with ResultsStore(db) as store:
        runs = store.runs()
        assert len(runs) == 120
        assert sorted({r["host"] for r in runs}) == ["w0", "w1", "w2"]
        assert all(len(store.results(r["id"])) == 1 for r in runs)
        assert store.db.execute("PRAGMA journal_mode").fetchone()[0] == "wal"


def test_export_to_a_file_and_select_runs(tmp_path, v1):
    out = tmp_path / "export.csv"
    res = iolens("results", "export", "1", "--db", v1, "--format", "csv", "-o", out)
    assert res.returncode == 0 and "1 run(s)" in res.stderr
    rows = list(csv.DictReader(io.StringIO(out.read_text())))
    assert {r["run_id"] for r in rows} == {"1"}


def _export(db, path):
    res = iolens("results", "export", "--db", db, "--format", "json", "-o", path)
    assert res.returncode == 0, res.stderr
    return json.loads(path.read_text())


def test_import_another_machines_export_and_compare_side_by_side(tmp_path, v1):
    exported = _export(v1, tmp_path / "oldbox.json")
    # this machine: one bench run of its own, written through the store as `iolens bench` does
    here = tmp_path / "here.sqlite"
    with ResultsStore(here) as store:
        run = exported["runs"][0]
        rid = store.add_run("bench", run["job"], {**run["provenance"], "host": "newbox"}, label="after")
        for r in run["results"]:
            m = json.loads(json.dumps(r["metrics"]))
            m["metrics"]["throughput_Bps"]["mean"] *= 2  # the new machine is twice as fast
            store.add_result(rid, r["name"], m, target=r["target"], cache_state=r["cache_state"],
                             provenance=r["provenance"])
    res = iolens("results", "import", "--db", here, tmp_path / "oldbox.json")
    assert res.returncode == 0, res.stderr
    assert "1 run(s) imported as 2" in res.stderr
    with ResultsStore(here) as store:
        imported = store.run(2)
    original = exported["runs"][0]
    assert (imported["host"], imported["created"], imported["label"]) == ("oldbox", original["created"],
                                                                         "before-upgrade")
    assert imported["provenance"]["imported"] == {"from": "oldbox.json", "id": 1}
    assert [(r["name"], r["target"], r["cache_state"], r["metrics"]) for r in imported["results"]] == \
        [(r["name"], r["target"], r["cache_state"], r["metrics"]) for r in original["results"]]

    # importing the same file again adds nothing
    again = iolens("results", "import", "--db", here, tmp_path / "oldbox.json")
    assert again.returncode == 0 and "0 run(s) imported; 1 already here (2)" in again.stderr
    with ResultsStore(here) as store:
        assert len(store.runs()) == 2

    cmp = iolens("results", "compare", "1", "2", "--db", here, env={**os.environ, "COLUMNS": "240"})
    assert cmp.returncode == 0, cmp.stderr
    assert "newbox" in cmp.stdout and "oldbox" in cmp.stdout and "imported from oldbox.json" in cmp.stdout
    doc = json.loads(iolens("results", "compare", "1", "2", "--db", here, "--json").stdout)
    names = [t["name"] for t in doc["targets"]]
    assert names == ["run 1 newbox:/scratch", "run 2 oldbox:/scratch"]
    tp = {(r["target"], r["test"]): r["metrics"]["throughput_Bps"]["mean"] for r in doc["results"]}
    assert tp[("run 1 newbox:/scratch", "seq-read t1")] == 2 * tp[("run 2 oldbox:/scratch", "seq-read t1")] == 1040e6


def test_import_refuses_bad_files_whole_and_in_one_line(tmp_path, v1):
    good = tmp_path / "good.json"
    doc = _export(v1, good)
    db = tmp_path / "target.sqlite"
    bad_result = json.loads(json.dumps(doc))
    del bad_result["runs"][0]["results"][1]["metrics"]
    newer = {**doc, "schema_version": [9, 0]}
    cases = {"garbled.json": (b"{\"tag\": \"iolens-res", "is not JSON"),
             "other.json": (json.dumps({"tag": "iolens-report"}).encode(), "is not an iolens results export"),
             "newer.json": (json.dumps(newer).encode(), "newer iolens"),
             "badresult.json": (json.dumps(bad_result).encode(), "result 2 needs a 'name' and 'metrics'")}
    for name, (data, message) in cases.items():
        (tmp_path / name).write_bytes(data)
        # the good file comes first: nothing at all is imported when any file is bad
        res = iolens("results", "import", "--db", db, good, tmp_path / name)
        assert res.returncode == 6, (name, res.stderr)
        assert message in res.stderr and res.stderr.strip().count("\n") == 0, (name, res.stderr)
        assert not db.exists() or not ResultsStore(db).runs(), name
    res = iolens("results", "import", "--db", db, tmp_path / "missing.json")
    assert res.returncode == 2 and "cannot read" in res.stderr and "Traceback" not in res.stderr


def test_compare_refuses_runs_that_are_not_bench_runs(tmp_path):
    db = tmp_path / "s.sqlite"
    with ResultsStore(db) as store:
        store.add_run("compare", {"template": "x"}, {"host": "h"})
    res = iolens("results", "compare", "1", "--db", db)
    assert res.returncode == 2 and "run 1 is a compare run" in res.stderr


# ---- damaged stores: one line, never a traceback -----------------------------------------------------------------

def _filled_store(tmp_path, v1):
    """A current-schema store with a few bench runs and results (the v1 fixture, migrated, plus more)."""
    db = tmp_path / "filled.sqlite"
    shutil.copy(v1, db)
    with ResultsStore(db) as store:
        run = store.run(1)
        for k in range(3):
            rid = store.add_run("bench", run["job"], {**run["provenance"], "host": f"box{k}"}, label=f"l{k}")
            for r in run["results"]:
                store.add_result(rid, r["name"], r["metrics"], target=r["target"], cache_state=r["cache_state"],
                                 provenance=r["provenance"])
    return db.read_bytes()


def _one_line_store_error(res, what):
    assert res.returncode == 6, (what, res.returncode, res.stderr)
    assert "Traceback" not in res.stderr and res.stderr.strip().count("\n") == 0, (what, res.stderr)
    assert "not a usable iolens results store" in res.stderr and "move it aside" in res.stderr, (what, res.stderr)


def test_damaged_stores_give_one_line_that_says_what_to_do(tmp_path, v1):
    good = _filled_store(tmp_path, v1)
    page = 4096
    flipped_header = bytearray(good)
    flipped_header[0:4] = b"XQLi"
    btree = bytearray(good)  # page 2's b-tree header: its page type byte
    btree[page] = 0x77
    cells = bytearray(good)  # page 2's cell pointer array, pointing outside the page
    cells[page + 8:page + 12] = b"\xff\xf0\xff\xf0"
    json_text = bytearray(good)  # a row's JSON text: valid SQLite, not JSON any more
    at = bytes(json_text).find(b'"throughput_Bps"')
    assert at > 0
    json_text[at] = ord("{")
    mutants = {"flipped magic": bytes(flipped_header), "b-tree page type": bytes(btree),
               "cell pointers": bytes(cells), "JSON text": bytes(json_text),
               "truncated mid-page": good[:len(good) - page // 2], "truncated to the header": good[:100],
               "zeros": b"\0" * len(good)}
    for what, data in mutants.items():
        db = tmp_path / "m.sqlite"
        for f in tmp_path.glob("m.sqlite*"):
            f.unlink()
        db.write_bytes(data)
        results = [iolens("results", "list", "--db", db), iolens("results", "show", "2", "--db", db),
                   iolens("results", "export", "--db", db, "--format", "csv")]
        assert any(r.returncode == 6 for r in results), what
        for res in results:
            if res.returncode != 0:
                _one_line_store_error(res, what)


def test_randomly_mutated_stores_never_give_a_traceback(tmp_path, v1):
    """Byte flips, insertions and cuts anywhere: every command works or gives one line (6: the store is damaged; 2:
    what it still holds is refused, e.g. a kind that was flipped into another)."""
    import random

    from click.testing import CliRunner

    from iolens.cli import main

    good = _filled_store(tmp_path, v1)
    rng = random.Random(12)
    runner = CliRunner()
    failures = 0
    for i in range(120):
        data = bytearray(good)
        kind = i % 3
        if kind == 0:
            for _ in range(rng.randint(1, 8)):
                data[rng.randrange(len(data))] ^= 1 << rng.randrange(8)
        elif kind == 1:
            at = rng.randrange(len(data))
            data[at:at] = bytes(rng.randrange(256) for _ in range(rng.randint(1, 7)))
        else:
            del data[rng.randrange(100, len(data)):]
        db = tmp_path / f"r{i}.sqlite"
        db.write_bytes(bytes(data))
        for args in (["list"], ["show", "2"], ["show", "2", "--json"], ["export", "--format", "csv"],
                     ["compare", "1", "2", "--json"]):
            res = runner.invoke(main, ["results", *args, "--db", str(db)])
            assert not res.exception or isinstance(res.exception, SystemExit), (i, args, res.exception)
            assert res.exit_code in (0, 2, 6), (i, args, res.exit_code, res.output)
            if res.exit_code:
                assert res.output.startswith("iolens: error: ") and res.output.count("\n") == 1, res.output
            failures += res.exit_code == 6
    assert failures > 0  # the mutations did reach the store


# ---- runs whose process died -----------------------------------------------------------------------------------

OWNER = """
import sys, time
from iolens.store import ResultsStore
s = ResultsStore(sys.argv[1])
rid = s.add_run("bench", {"targets": ["/x"]}, {"host": "h"}, label="doomed", status="running")
print(rid, flush=True)
time.sleep(600)
"""


def test_a_run_whose_process_was_killed_is_marked_interrupted(tmp_path):
    db = tmp_path / "s.sqlite"
    with ResultsStore(db) as store:  # a run this (live) process owns stays running
        mine = store.add_run("bench", {"targets": []}, {"host": "h"}, status="running")
    proc = subprocess.Popen([sys.executable, "-c", OWNER, str(db)], stdout=subprocess.PIPE, text=True)
    try:
        doomed = int(proc.stdout.readline())
        with ResultsStore(db) as store:  # while its process lives, it is running
            assert store.run(doomed)["status"] == "running"
    finally:
        proc.kill()
        proc.wait(timeout=60)
        proc.stdout.close()
    out = iolens("results", "list", "--db", db, env={**os.environ, "COLUMNS": "200"})
    assert out.returncode == 0, out.stderr
    line = next(ln for ln in out.stdout.splitlines() if "doomed" in ln)
    assert "interrupted" in line
    with ResultsStore(db) as store:
        assert store.run(doomed)["status"] == "interrupted" and store.run(mine)["status"] == "running"
    raw = sqlite3.connect(db)  # written to the store, not only shown
    assert raw.execute("SELECT status FROM runs WHERE id = ?", (doomed,)).fetchone()[0] == "interrupted"
    raw.close()


def test_owners_that_cannot_be_judged_are_left_alone(tmp_path):
    """Another host's run (a shared store), a run from before owners were recorded, a reused pid."""
    from iolens.store import process_identity

    db = tmp_path / "s.sqlite"
    me = process_identity()
    with ResultsStore(db) as store:
        elsewhere = store.add_run("bench", {}, {"host": "h"}, status="running")
        legacy = store.add_run("bench", {}, {"host": "h"}, status="running")
        reused = store.add_run("bench", {}, {"host": "h"}, status="running")
        done = store.add_run("bench", {}, {"host": "h"}, status="complete")
        store.db.execute("UPDATE runs SET owner = ? WHERE id = ?", (json.dumps({**me, "host": "not-" + me["host"],
                                                                                "pid": 1 << 22}), elsewhere))
        store.db.execute("UPDATE runs SET owner = NULL WHERE id = ?", (legacy,))
        # this process's pid, but another start time: the pid was reused, the owner is gone
        store.db.execute("UPDATE runs SET owner = ? WHERE id = ?", (json.dumps({**me, "start": "1"}), reused))
    with ResultsStore(db) as store:
        status = {r["id"]: r["status"] for r in store.runs()}
    assert status == {elsewhere: "running", legacy: "running", reused: "interrupted", done: "complete"}


def test_read_only_store_shows_stale_runs_as_interrupted(tmp_path):
    db = tmp_path / "s.sqlite"
    proc = subprocess.Popen([sys.executable, "-c", OWNER, str(db)], stdout=subprocess.PIPE, text=True)
    doomed = int(proc.stdout.readline())
    proc.kill()
    proc.wait(timeout=60)
    proc.stdout.close()
    with ResultsStore(db):
        pass  # leave no WAL behind
    db.chmod(0o444)
    immutable = os.geteuid() == 0  # root writes read-only files: make it immutable instead
    if immutable and subprocess.run(["chattr", "+i", str(db)], capture_output=True).returncode != 0:
        unavailable(f"root ignores file modes and chattr +i does not work on {tmp_path}")
    try:
        with ResultsStore(db) as store:
            assert store.run(doomed)["status"] == "interrupted"
    finally:
        if immutable:
            subprocess.run(["chattr", "-i", str(db)], check=True)


@pytest.mark.slow
def test_kill_9_of_a_bench_leaves_a_run_the_next_open_marks_interrupted(tmp_path):
    import signal
    import time

    db = tmp_path / "s.sqlite"
    proc = subprocess.Popen([sys.executable, "-m", "iolens", "bench", "null", "--suite", "random", "--runtime", "60",
                             "--db", str(db), "-q"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            start_new_session=True)
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            if db.exists():
                with ResultsStore(db) as store:
                    if store.runs():
                        break
            time.sleep(0.2)
        else:
            pytest.fail("bench never stored its run")
        with ResultsStore(db) as store:
            assert [r["status"] for r in store.runs()] == ["running"]
    finally:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=60)
    out = iolens("results", "list", "--db", db, env={**os.environ, "COLUMNS": "200"})
    assert out.returncode == 0 and "interrupted" in out.stdout, out.stdout + out.stderr
    with ResultsStore(db) as store:
        assert [r["status"] for r in store.runs()] == ["interrupted"]
