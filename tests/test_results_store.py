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

from conftest import datapath, iolens
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
