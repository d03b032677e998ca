#!/usr/bin/env python3
"""Generates store-v1.sqlite: a results store as iolens wrote it at store schema 1 (before runs.status).

The schema below is frozen on purpose (it is history, not the current code).  Run from anywhere:
    python tests/data/bench/make_store_v1.py
"""

import json
import sqlite3
from pathlib import Path

OUT = Path(__file__).resolve().parent / "store-v1.sqlite"

V1 = [
    """CREATE TABLE runs (
        id INTEGER PRIMARY KEY,
        kind TEXT NOT NULL,
        created TEXT NOT NULL,
        label TEXT,
        iolens_version TEXT,
        host TEXT,
        job TEXT NOT NULL,
        provenance TEXT NOT NULL
    )""",
    """CREATE TABLE results (
        id INTEGER PRIMARY KEY,
        run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
        target TEXT,
        name TEXT NOT NULL,
        cache_state TEXT,
        metrics TEXT NOT NULL,
        provenance TEXT NOT NULL
    )""",
    "CREATE INDEX results_run ON results(run_id)",
]


def main() -> None:
    OUT.unlink(missing_ok=True)
    db = sqlite3.connect(OUT)
    for sql in V1:
        db.execute(sql)
    job = {"suites": ["classic"], "targets": ["/scratch"], "repeat": 1, "options": {}, "scale": {"size": 67108864}}
    prov = {"host": "oldbox", "kernel": "5.10.0", "cpu_model": "Old CPU", "cpus": 4, "mem_bytes": 8 << 30,
            "iolens_version": "0.0.9", "created": "2025-01-02T03:04:05+0000", "cache_mode": "evict"}
    db.execute("INSERT INTO runs (id, kind, created, label, iolens_version, host, job, provenance) "
               "VALUES (1, 'bench', '2025-01-02T03:04:05+0000', 'before-upgrade', '0.0.9', 'oldbox', ?, ?)",
               (json.dumps(job), json.dumps(prov)))
    target = {"name": "/scratch", "fstype": "xfs", "mount_options": "rw,noatime", "device_model": "OLD SSD",
              "device_class": "ssd", "free_bytes": 10 << 30}
    for name, op, primary, value, state in (("seq-write t1", "write", "throughput_Bps", 450e6, "synced"),
                                           ("seq-read t1", "read", "throughput_Bps", 520e6, "cold-evicted")):
        metrics = {"op": op, "threads": 1, "primary_metric": primary, "suite": "classic", "group": "seq t1",
                   "metrics": {primary: {"mean": value, "sd": None, "n": 1, "values": [value]},
                               "iops": {"mean": value / 1048576, "sd": None, "n": 1, "values": [value / 1048576]}}}
        db.execute("INSERT INTO results (run_id, target, name, cache_state, metrics, provenance) "
                   "VALUES (1, '/scratch', ?, ?, ?, ?)",
                   (name, state, json.dumps(metrics), json.dumps({"target": target, "cache_mode": "evict"})))
    db.execute("PRAGMA user_version = 1")
    db.commit()
    db.close()


if __name__ == "__main__":
    main()
