"""Bench results as plain data: one row per (target, reported phase), with every repeat's values.

`BenchReport.to_dict()` is the JSON document (tag `iolens-bench`, schema [1, 1], documented in docs/bench.md);
the renderers and the results store read the same rows.
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass, field
from typing import Any

from iolens.bench import cache
from iolens.bench.metrics import METRIC_KEYS, from_phase, primary_metric
from iolens.workspace.target import Target

TAG = "iolens-bench"
SCHEMA_VERSION = (1, 1)


def summarize(values: list[float | None]) -> dict[str, Any]:
    vals = [float(v) for v in values if v is not None]
    return {
        "mean": statistics.fmean(vals) if vals else None,
        "sd": statistics.stdev(vals) if len(vals) > 1 else None,
        "n": len(vals),
        "values": vals,
    }


@dataclass
class ResultRow:
    target: str
    test: str                 # the reported phase, e.g. "seq-read t4"
    group: str                # the test it belongs to, e.g. "seq t4"
    suite: str
    op: str
    threads: int
    bs: int | None
    content: str | None
    primary: str
    engine: str = "psync"
    iodepth: int = 1
    emulated: bool = False    # measured on a lab target that emulates storage (docs/lab.md)
    values: dict[str, list[float | None]] = field(default_factory=lambda: {k: [] for k in METRIC_KEYS})
    states: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    series: dict[str, list[int]] | None = None
    threads_detail: list[dict[str, Any]] | None = None
    job: dict[str, Any] | None = None

    @property
    def cache_state(self) -> str:
        uniq = list(dict.fromkeys(self.states))
        return uniq[0] if len(uniq) == 1 else ("/".join(uniq) if uniq else "unknown")

    def metrics(self) -> dict[str, dict[str, Any]]:
        return {k: summarize(self.values[k]) for k in METRIC_KEYS}

    def add(self, ph: dict[str, Any], t: Target, state: str) -> None:
        m = from_phase(ph)
        for k in METRIC_KEYS:
            self.values[k].append(m.get(k))
        self.states.append(state)
        sent = (self.job or {}).get("phase")
        for w in cache.plausibility(self.test, t, ph, state, m, sent):
            if w not in self.warnings:
                self.warnings.append(w)
        for note in cache.notes_for(ph, state, t, sent) + cache.burst_notes(self.test, t, ph, state, m):
            if note not in self.notes:
                self.notes.append(note)
        if self.series is None:
            g = ph["groups"]
            n = max(len(x["series_bytes"]) for x in g)
            self.series = {
                "bytes": [sum(x["series_bytes"][i] for x in g if i < len(x["series_bytes"])) for i in range(n)],
                "ops": [sum(x["series_ops"][i] for x in g if i < len(x["series_ops"])) for i in range(n)],
            }
            self.threads_detail = [
                {"group": gi, "op": x["op"], **th} for gi, x in enumerate(g) for th in x["per_thread"]
            ]

    def to_dict(self) -> dict[str, Any]:
        return {
            "target": self.target,
            "emulated": self.emulated,
            "test": self.test,
            "group": self.group,
            "suite": self.suite,
            "op": self.op,
            "threads": self.threads,
            "engine": self.engine,
            "iodepth": self.iodepth,
            "bs": self.bs,
            "content": self.content,
            "primary_metric": self.primary,
            "cache_state": self.cache_state,
            "warnings": list(self.warnings),
            "notes": list(self.notes),
            "metrics": self.metrics(),
            "series": self.series,
            "threads_detail": self.threads_detail,
            "job": self.job,
        }


@dataclass
class BenchReport:
    created: str
    iolens_version: str
    suites: list[str]
    repeat: int
    options: dict[str, Any]
    scale: dict[str, Any]
    host: dict[str, Any]
    engine_version: str | None
    targets: list[Target]
    rows: list[ResultRow] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    run_id: int | None = None
    db: str | None = None
    _index: dict[tuple[str, str], ResultRow] = field(default_factory=dict, repr=False)

    def row(self, target: str, test: str, *, group: str, suite: str, phase_job: dict[str, Any],
            dirs: list[str]) -> ResultRow:
        key = (target, test)
        if key not in self._index:
            g0 = phase_job["groups"][0]
            r = ResultRow(target=target, test=test, group=group, suite=suite, op=g0["op"],
                          threads=int(g0.get("threads", 1)), bs=g0.get("bs"), content=g0.get("content"),
                          primary=primary_metric(phase_job["groups"]), engine=g0.get("engine", "psync"),
                          iodepth=int(g0.get("iodepth", 1)),
                          emulated=any(t.emulated for t in self.targets if t.spec == target),
                          job={"dirs": dirs, "phase": phase_job})
            self._index[key] = r
            self.rows.append(r)
        return self._index[key]

    def target_names(self) -> list[str]:
        return [t.spec for t in self.targets]

    def to_dict(self) -> dict[str, Any]:
        return {
            "tag": TAG,
            "schema_version": list(SCHEMA_VERSION),
            "iolens_version": self.iolens_version,
            "engine_version": self.engine_version,
            "created": self.created,
            "suite": self.suites[0] if len(self.suites) == 1 else None,
            "suites": list(self.suites),
            "repeat": self.repeat,
            "run_id": self.run_id,
            "db": self.db,
            "options": self.options,
            "scale": self.scale,
            "host": self.host,
            "targets": [t.facts() for t in self.targets],
            "results": [r.to_dict() for r in self.rows],
            "warnings": list(self.warnings),
            "notes": list(self.notes),
        }
