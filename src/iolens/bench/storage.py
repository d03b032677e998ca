"""Bench runs in the results store: a run with its job and host provenance, a result per (target, test).

Every result carries its own provenance (the issue's list): host, kernel, CPU, RAM; filesystem, mount options,
device model; free space; iolens version; time; cache mode; and the exact engine job of that test.
"""

from __future__ import annotations

from typing import Any

from iolens.bench.report import BenchReport
from iolens.store import ResultsStore

KIND = "bench"


def cache_mode(options: dict[str, Any]) -> str:
    if options.get("direct"):
        return "direct"
    if options.get("warm"):
        return "warm"
    return "evict+drop" if options.get("drop_caches") else "evict"


def run_provenance(report: BenchReport) -> dict[str, Any]:
    return {**report.host, "iolens_version": report.iolens_version, "engine_version": report.engine_version,
            "created": report.created, "cache_mode": cache_mode(report.options)}


def run_job(report: BenchReport) -> dict[str, Any]:
    return {"suites": report.suites, "targets": report.target_names(), "repeat": report.repeat,
            "options": report.options, "scale": report.scale}


class BenchStore:
    """Records one bench run: start (status running), then results and the final status."""

    def __init__(self, store: ResultsStore, label: str | None = None):
        self.store = store
        self.label = label

    def __call__(self, report: BenchReport, status: str) -> None:
        if status == "running":
            report.run_id = self.store.add_run(KIND, run_job(report), run_provenance(report), label=self.label,
                                               status="running")
            report.db = str(self.store.path)
            return
        if report.run_id is None:
            return
        if status == "complete":
            self.save_results(report)
        self.store.set_status(report.run_id, status)

    def save_results(self, report: BenchReport) -> None:
        assert report.run_id is not None  # recorded when the run started
        facts = {t.spec: t.facts() for t in report.targets}
        host = run_provenance(report)
        for row in report.rows:
            d = row.to_dict()
            job = d.pop("job")
            for k in ("target", "test", "cache_state"):
                d.pop(k)
            prov = {"host": host, "target": facts.get(row.target), "free_bytes": (facts.get(row.target) or {})
                    .get("free_bytes"), "iolens_version": report.iolens_version, "time": report.created,
                    "cache_mode": cache_mode(report.options), "job": job}
            self.store.add_result(report.run_id, row.test, d, target=row.target, cache_state=row.cache_state,
                                  provenance=prov)


def report_dict_from_store(run: dict[str, Any]) -> dict[str, Any]:
    """A stored bench run back in the shape of BenchReport.to_dict(), for `iolens results show`."""
    from iolens.bench.report import SCHEMA_VERSION, TAG

    prov = run.get("provenance") or {}
    job = run.get("job") or {}
    targets: dict[str, Any] = {}
    results = []
    for r in run.get("results", []):
        p = r.get("provenance") or {}
        if r.get("target") and r["target"] not in targets:
            targets[r["target"]] = p.get("target") or {"name": r["target"]}
        m = dict(r.get("metrics") or {})
        results.append({**m, "target": r.get("target"), "test": r.get("name"), "cache_state": r.get("cache_state"),
                        "job": p.get("job")})
    for name in job.get("targets", []):
        targets.setdefault(name, {"name": name})
    host = {k: prov.get(k) for k in ("host", "kernel", "cpu_model", "cpus", "mem_bytes")}
    return {
        "tag": TAG, "schema_version": list(SCHEMA_VERSION), "iolens_version": prov.get("iolens_version"),
        "engine_version": prov.get("engine_version"), "created": run.get("created"),
        "suite": (job.get("suites") or [None])[0] if len(job.get("suites") or []) == 1 else None,
        "suites": job.get("suites") or [], "repeat": job.get("repeat"), "run_id": run.get("id"), "db": None,
        "options": job.get("options") or {}, "scale": job.get("scale") or {}, "host": host,
        "targets": [targets[k] for k in (job.get("targets") or list(targets))if k in targets],
        "results": results, "warnings": [], "notes": [],
    }


def side_by_side(runs: list[dict[str, Any]]) -> dict[str, Any]:
    """Several stored bench runs (from one machine or imported from others) as one report whose targets are
    'run N host:target', so `render_bench` lays them out side by side.  Plain data; ValueError for a run that is
    not a bench run."""
    merged: dict[str, Any] | None = None
    for run in runs:
        if run.get("kind") != KIND:
            raise ValueError(f"run {run.get('id')} is a {run.get('kind')} run; only bench runs can be put side by side")
        doc = report_dict_from_store(run)
        label = f"run {run.get('id')} {run.get('host') or '?'}"
        rename = {t["name"]: f"{label}:{t['name']}" for t in doc["targets"]}
        for t in doc["targets"]:
            t["name"] = rename[t["name"]]
        for r in doc["results"]:
            r["target"] = rename.get(r["target"], f"{label}:{r['target']}")
        if merged is None:
            merged = {**doc, "run_id": None, "hosts": [doc["host"]]}
            continue
        merged["targets"] += doc["targets"]
        merged["results"] += doc["results"]
        merged["hosts"].append(doc["host"])
        merged["suites"] = list(dict.fromkeys(merged["suites"] + doc["suites"]))
        if merged.get("repeat") != doc.get("repeat"):
            merged["repeat"] = None
    if merged is None:
        raise ValueError("no runs to put side by side")
    return merged
