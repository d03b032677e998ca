"""The results store: one SQLite file for every command that keeps results (bench, compare, ...).

- Location: `--db`, else `IOLENS_DB`, else `$XDG_DATA_HOME/iolens/results.sqlite`
  (`~/.local/share/iolens/results.sqlite`).
- Versioned schema (`PRAGMA user_version`) with forward-only migrations listed
  in MIGRATIONS; a store written by a newer iolens is refused with a message.
- Safe for concurrent writers: WAL journal and a busy timeout.
- A damaged store (flipped bytes, truncated, not SQLite at all) is a one-line StoreError that says what to do.
  Opening runs SQLite's quick check; nothing is written before `verify()` (SQLite's full integrity check and every
  row as the readers expect it) passed, so a store that `list` or `export` calls damaged is never written to.  A
  command that will write opens the store with `write=True` before it runs anything, so it refuses at once.
- A run is stored `running` with its owner (pid, host, boot and start time of the process); a `running` run whose
  process is gone from this host is marked `interrupted` when the store is next opened (kill -9, power cut).

A *run* is one invocation (its job and provenance: host, kernel, CPU, RAM,
iolens version, time); a *result* is one measured thing inside it (a target
and pattern for bench, a configuration for compare) with its metrics as JSON.
"""

from __future__ import annotations

import functools
import json
import sqlite3
import time
from pathlib import Path
from typing import Any, Callable, TypeVar

from iolens.dirs import user_path
from iolens.errors import IolensError
from iolens.redact import redact_command, redact_record
from iolens.workdirs import owner_gone, process_identity

# Each entry: (version it produces, SQL statements).  Append only.
MIGRATIONS: list[tuple[int, list[str]]] = [
    (
        1,
        [
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
        ],
    ),
    (
        2,
        [
            "ALTER TABLE runs ADD COLUMN status TEXT NOT NULL DEFAULT 'complete'",
            "CREATE INDEX runs_kind ON runs(kind, created)",
        ],
    ),
    (
        3,
        [
            # JSON {pid, host, boot_id, pid_ns, start}: the process that keeps a `running` run up to date
            "ALTER TABLE runs ADD COLUMN owner TEXT",
        ],
    ),
]
SCHEMA_VERSION = MIGRATIONS[-1][0]

# `iolens results export --format json` writes {"tag", "schema_version", "runs": [run dicts as ResultsStore.run()]};
# `iolens results import` reads it back (parse_export).
RESULTS_TAG = "iolens-results"
RESULTS_SCHEMA = (1, 0)
ANOTHER_DB = "set IOLENS_DB (or --db, where a command has it) to another file"


class StoreError(IolensError):
    exit_code = 6


def check_before_writing(path: str | Path | None) -> None:
    """Refuses (StoreError, one line) a store that must not be written to: a command that will store its results
    calls this before it runs anything, so a damaged store costs the user no run."""
    ResultsStore(path, write=True).close()


def default_db_path() -> Path:
    return user_path("IOLENS_DB", "XDG_DATA_HOME", "results.sqlite")


def parse_export(data: bytes, source: str) -> list[dict[str, Any]]:
    """The runs of an `iolens results export` JSON file, checked; StoreError (one line) when it is not one."""
    hint = "give a file written by `iolens results export --format json`"
    try:
        doc = json.loads(data)
    except (UnicodeDecodeError, json.JSONDecodeError) as err:
        raise StoreError(f"{source} is not JSON ({err}); {hint}") from None
    if not isinstance(doc, dict) or doc.get("tag") != RESULTS_TAG:
        raise StoreError(f"{source} is not an iolens results export; {hint}")
    ver = doc.get("schema_version")
    if not (isinstance(ver, list) and ver and isinstance(ver[0], int)):
        raise StoreError(f"{source} has no schema_version; {hint}")
    if ver[0] > RESULTS_SCHEMA[0]:
        raise StoreError(f"{source} was exported by a newer iolens (results schema {ver[0]}, this iolens reads "
                         f"{RESULTS_SCHEMA[0]}); upgrade iolens")
    runs = doc.get("runs")
    if not isinstance(runs, list):
        raise StoreError(f"{source} has no list of runs; {hint}")
    for i, run in enumerate(runs):
        where = f"{source}: run {i + 1} of {len(runs)}"
        if not isinstance(run, dict):
            raise StoreError(f"{where} is not an object; {hint}")
        for key, typ in (("kind", str), ("created", str), ("job", dict), ("provenance", dict), ("results", list)):
            if not isinstance(run.get(key), typ):
                raise StoreError(f"{where} has no valid '{key}'; {hint}")
        for j, res in enumerate(run["results"]):
            if not (isinstance(res, dict) and isinstance(res.get("name"), str) and isinstance(res.get("metrics"),
                                                                                            dict)):
                raise StoreError(f"{where}: result {j + 1} needs a 'name' and 'metrics'; {hint}")
    return runs


def _now() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%S%z")


# What verify() checks of each row, as the readers read it: (table, text columns, text-or-null columns, JSON objects)
_ROW_SHAPES = [("runs", ("kind", "created", "status"), ("label", "iolens_version", "host"), ("job", "provenance")),
               ("results", ("name",), ("target", "cache_state"), ("metrics", "provenance"))]


def _utf8(*values: bytes | None) -> bool:
    try:
        for v in values:
            if v is not None:
                v.decode()
    except UnicodeDecodeError:
        return False
    return True


class _Damaged(ValueError):
    """A row that does not have the shape this iolens wrote."""


def _text(d: dict[str, Any], key: str, optional: bool = True) -> None:
    v = d.get(key)
    if not (isinstance(v, str) or (optional and v is None)):
        raise _Damaged(f"{key} of row {d.get('id')} is {type(v).__name__}, not text")


def _obj(d: dict[str, Any], key: str) -> None:
    try:
        d[key] = json.loads(d.get(key))  # type: ignore[arg-type]  # not text: caught below
    except (TypeError, ValueError) as err:
        raise _Damaged(f"{key} of row {d.get('id')} is not JSON ({err})") from None
    if not isinstance(d[key], dict):
        raise _Damaged(f"{key} of row {d.get('id')} is not a JSON object")


_T = TypeVar("_T")


def _guarded(method: Callable[..., _T]) -> Callable[..., _T]:
    """Turns what a damaged or unusable store raises into one StoreError line."""

    @functools.wraps(method)
    def wrapper(self: "ResultsStore", *args: Any, **kw: Any) -> _T:
        try:
            return method(self, *args, **kw)
        except (sqlite3.ProgrammingError, sqlite3.InterfaceError):
            raise
        except (sqlite3.DatabaseError, ValueError) as err:
            raise StoreError(self.problem(err)) from None

    return wrapper


class ResultsStore:
    def __init__(self, path: str | Path | None = None, *, write: bool = False):
        """write: the caller will write, so the store is verified now (before the caller runs anything)."""
        self.path = Path(path) if path else default_db_path()
        self.interrupted: set[int] = set()  # stale `running` runs, shown as interrupted even if not writable
        self.verified = False
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self.db = sqlite3.connect(self.path, timeout=30.0, isolation_level=None)
        except (OSError, sqlite3.Error) as err:
            raise StoreError(f"cannot open the results store {self.path}: {err}; {ANOTHER_DB}") from None
        self.db.row_factory = sqlite3.Row
        self.db.create_function("iolens_utf8", -1, _utf8, deterministic=True)
        try:
            self.db.execute("PRAGMA busy_timeout = 30000")
            self.db.execute("PRAGMA journal_mode = WAL")
            self.db.execute("PRAGMA foreign_keys = ON")
            self._check()
            if write:
                self.verify()
            self.migrate()
            self._mark_interrupted()
        except (sqlite3.DatabaseError, ValueError) as err:
            self.db.close()
            raise StoreError(self.problem(err)) from None
        except BaseException:
            self.db.close()
            raise

    def problem(self, err: Exception) -> str:
        """The one line for an error from SQLite or from a row that is not what iolens wrote."""
        text = " ".join(str(err).split())[:300] or type(err).__name__  # SQLite's check reports span lines
        if isinstance(err, sqlite3.OperationalError) and not any(
                w in text for w in ("malformed", "not a database", "decode", "no such", "corrupt")):
            return f"cannot use the results store {self.path}: {text}; {ANOTHER_DB}"
        return (f"{self.path} is not a usable iolens results store: it is damaged ({text}); move it aside and "
                f"iolens starts a new one (`sqlite3 {self.path.name} .recover` may save its runs), or {ANOTHER_DB}")

    def _check(self) -> None:
        """SQLite's own structure check: damage is found here, not halfway through a command."""
        rows = [r[0] for r in self.db.execute("PRAGMA quick_check(5)")]
        if rows != ["ok"]:
            raise sqlite3.DatabaseError("; ".join(map(str, rows)))

    def verify(self) -> None:
        """The check before the first write: SQLite's full integrity check (it also compares every index with its
        table, which quick_check skips) and every row's values as the readers expect them: text that decodes,
        JSON objects where iolens writes JSON.  Flipped bytes inside a row's text pass both of SQLite's checks;
        the readers would refuse the row, so the writers refuse the store.  About 30 ms for 3,000 results."""
        if self.verified:
            return
        rows = [r[0] for r in self.db.execute("PRAGMA integrity_check(5)")]
        if rows != ["ok"]:
            raise sqlite3.DatabaseError("; ".join(map(str, rows)))
        tables = {r[0] for r in self.db.execute("SELECT name FROM sqlite_schema WHERE type = 'table'")}
        for table, required, optional, objects in _ROW_SHAPES:
            if table not in tables:
                continue
            have = {r[1] for r in self.db.execute(f"PRAGMA table_info({table})")}
            conds = ["typeof(id) = 'integer'"]
            conds += [f"typeof({c}) = 'text'" for c in required if c in have]
            conds += [f"typeof({c}) IN ('text', 'null')" for c in optional if c in have]
            conds += [f"CASE WHEN json_valid({c}) THEN json_type({c}) END IS 'object'" for c in objects if c in have]
            text = [c for c in (*required, *optional, *objects) if c in have]
            conds.append(f"iolens_utf8({', '.join(f'CAST({c} AS BLOB)' for c in text)})")
            bad = self.db.execute(f"SELECT id FROM {table} WHERE NOT ({' AND '.join(conds)}) LIMIT 1").fetchone()
            if bad is not None:
                raise _Damaged(f"row {bad[0]} of {table} is not as iolens wrote it")
        self.verified = True

    def _mark_interrupted(self) -> None:
        """`running` runs whose process is gone from this host become `interrupted`."""
        if self.version < 3:
            return
        for row in self.db.execute("SELECT id, owner FROM runs WHERE status = 'running' AND owner IS NOT NULL"):
            try:
                owner = json.loads(row["owner"])
            except (TypeError, ValueError):
                continue
            if owner_gone(owner):
                self.interrupted.add(int(row["id"]))
        if self.interrupted:
            try:
                self.verify()
            except (sqlite3.DatabaseError, ValueError):  # damaged: shown as interrupted, never written
                return
        for rid in sorted(self.interrupted):
            try:
                self.db.execute("UPDATE runs SET status = 'interrupted' WHERE id = ? AND status = 'running'", (rid,))
            except sqlite3.OperationalError:  # a read-only store: shown as interrupted all the same
                break

    # -- schema ---------------------------------------------------------------
    @property
    def version(self) -> int:
        return int(self.db.execute("PRAGMA user_version").fetchone()[0])

    def migrate(self) -> None:
        have = self.version
        if have > SCHEMA_VERSION:
            raise StoreError(
                f"{self.path} was written by a newer iolens (store schema {have}, this iolens knows "
                f"{SCHEMA_VERSION}); upgrade iolens or use another --db"
            )
        if have == SCHEMA_VERSION:
            return
        self.verify()
        self.db.execute("BEGIN IMMEDIATE")
        try:
            have = self.version  # another writer may have migrated meanwhile
            for ver, statements in MIGRATIONS:
                if ver <= have:
                    continue
                for sql in statements:
                    self.db.execute(sql)
                self.db.execute(f"PRAGMA user_version = {ver}")
            self.db.execute("COMMIT")
        except BaseException:
            self.db.execute("ROLLBACK")
            raise

    # -- writing --------------------------------------------------------------
    @_guarded
    def add_run(self, kind: str, job: dict[str, Any], provenance: dict[str, Any], *, label: str | None = None,
                status: str = "complete", created: str | None = None) -> int:
        self.verify()
        owner = json.dumps(process_identity(), sort_keys=True) if status == "running" else None
        job, label = redact_record(job), redact_command(label) if label else label  # secrets never reach the file
        cur = self.db.execute(
            "INSERT INTO runs (kind, created, label, iolens_version, host, job, provenance, status, owner) "
            "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (kind, created or _now(), label, provenance.get("iolens_version"), provenance.get("host"),
             json.dumps(job, sort_keys=True, default=str), json.dumps(provenance, sort_keys=True, default=str),
             status, owner),
        )
        assert cur.lastrowid is not None
        return cur.lastrowid

    @_guarded
    def import_runs(self, runs: list[dict[str, Any]], source: str) -> tuple[list[int], list[int]]:
        """Adds runs exported from another store (`results_json`), keeping their time, host and provenance.

        All or nothing, in one transaction.  A run already present (same kind, time, host and job) is skipped, so
        importing the same file twice changes nothing.  Returns (new ids, ids of runs that were already here).
        """
        self.verify()
        added: list[int] = []
        present: list[int] = []
        self.db.execute("BEGIN IMMEDIATE")
        try:
            for run in runs:
                job = json.dumps(redact_record(run["job"]), sort_keys=True, default=str)  # as add_run stores it
                row = self.db.execute("SELECT id FROM runs WHERE kind = ? AND created = ? AND host IS ? AND job = ?",
                                      (run["kind"], run["created"], run.get("host"), job)).fetchone()
                if row is not None:
                    present.append(int(row[0]))
                    continue
                prov = {**run["provenance"], "host": run.get("host"), "iolens_version": run.get("iolens_version"),
                        "imported": {"from": source, "id": run.get("id")}}
                rid = self.add_run(run["kind"], run["job"], prov, label=run.get("label"),
                                   status=run.get("status") or "complete", created=run["created"])
                for res in run["results"]:
                    self.add_result(rid, res["name"], res["metrics"], target=res.get("target"),
                                    cache_state=res.get("cache_state"), provenance=res.get("provenance"))
                added.append(rid)
            self.db.execute("COMMIT")
        except BaseException:
            self.db.execute("ROLLBACK")
            raise
        return added, present

    @_guarded
    def set_status(self, run_id: int, status: str) -> None:
        self.verify()
        self.db.execute("UPDATE runs SET status = ? WHERE id = ?", (status, run_id))
        self.interrupted.discard(run_id)

    @_guarded
    def add_result(self, run_id: int, name: str, metrics: dict[str, Any], *, target: str | None = None,
                   cache_state: str | None = None, provenance: dict[str, Any] | None = None) -> int:
        self.verify()
        metrics = redact_record(metrics)
        cur = self.db.execute(
            "INSERT INTO results (run_id, target, name, cache_state, metrics, provenance) VALUES (?, ?, ?, ?, ?, ?)",
            (run_id, target, name, cache_state, json.dumps(metrics, sort_keys=True, default=str),
             json.dumps(provenance or {}, sort_keys=True, default=str)),
        )
        assert cur.lastrowid is not None
        return cur.lastrowid

    # -- reading --------------------------------------------------------------
    def _run_dict(self, row: sqlite3.Row) -> dict[str, Any]:
        d = dict(row)
        d.pop("owner", None)
        if not isinstance(d.get("id"), int):
            raise _Damaged(f"a run id is {d.get('id')!r}")
        for key in ("kind", "created", "status"):
            _text(d, key, optional=False)
        for key in ("label", "iolens_version", "host"):
            _text(d, key)
        _obj(d, "job")
        _obj(d, "provenance")
        d["job"] = redact_record(d["job"])  # rows written before the rules knew a form are shown redacted too
        if d.get("label"):
            d["label"] = redact_command(d["label"])
        if d["id"] in self.interrupted and d["status"] == "running":
            d["status"] = "interrupted"
        return d

    @_guarded
    def runs(self, kind: str | None = None, limit: int | None = None) -> list[dict[str, Any]]:
        sql = "SELECT * FROM runs" + (" WHERE kind = ?" if kind else "") + " ORDER BY id DESC"
        if limit:
            sql += f" LIMIT {int(limit)}"
        return [self._run_dict(r) for r in self.db.execute(sql, (kind,) if kind else ())]

    def reusable(self, kind: str, host: str, job: dict[str, Any], limit: int = 200) -> dict[str, Any] | None:
        """The metrics of the newest complete run of `kind` made on `host` whose job holds every item of `job`: a
        measurement of this machine to reuse (a calibration), or None."""
        for run in self.runs(kind=kind, limit=limit):
            if (run.get("host") == host and run["status"] == "complete"
                    and all(run["job"].get(k) == v for k, v in job.items())):
                res = self.results(run["id"])
                if res:
                    return dict(res[0]["metrics"])
        return None

    @_guarded
    def run(self, run_id: int) -> dict[str, Any]:
        row = self.db.execute("SELECT * FROM runs WHERE id = ?", (run_id,)).fetchone()
        if row is None:
            raise StoreError(f"no run {run_id} in {self.path}; `iolens results list` shows the runs")
        d = self._run_dict(row)
        d["results"] = self.results(run_id)
        return d

    @_guarded
    def results(self, run_id: int) -> list[dict[str, Any]]:
        out = []
        for r in self.db.execute("SELECT * FROM results WHERE run_id = ? ORDER BY id", (run_id,)):
            d = dict(r)
            _text(d, "name", optional=False)
            _text(d, "target")
            _text(d, "cache_state")
            _obj(d, "metrics")
            _obj(d, "provenance")
            d["metrics"] = redact_record(d["metrics"])
            out.append(d)
        return out

    def close(self) -> None:
        self.db.close()

    def __enter__(self) -> "ResultsStore":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
