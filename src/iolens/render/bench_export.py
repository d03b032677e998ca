"""Exporters for bench reports and stored results: each returns bytes.  The metric columns come from one list
(iolens.bench.metrics.METRICS)."""

from __future__ import annotations

import json
from typing import Any, Iterator

from iolens.bench.metrics import METRICS
from iolens.render.csvsafe import csv_bytes
from iolens.store import RESULTS_SCHEMA, RESULTS_TAG

CSV_FIELDS = ["run_id", "kind", "created", "label", "host", "iolens_version", "status", "target", "name",
              "cache_state", "fstype", "device_model", "metric", "unit", "mean", "sd", "n"]


def bench_json(doc: dict[str, Any]) -> bytes:
    return (json.dumps(doc, indent=2, sort_keys=False, default=str) + "\n").encode()


def results_json(runs: list[dict[str, Any]]) -> bytes:
    doc = {"tag": RESULTS_TAG, "schema_version": list(RESULTS_SCHEMA), "runs": runs}
    return (json.dumps(doc, indent=2, default=str) + "\n").encode()


def _metric_rows(metrics: dict[str, Any]) -> list[tuple[str, str, Any, Any, Any]]:
    """(metric, unit, mean, sd, n): bench metrics in METRICS order, then anything else numeric."""
    units = {k: u for k, u, _ in METRICS}
    out = []
    nested = metrics.get("metrics")
    inner: dict[str, Any] = nested if isinstance(nested, dict) else metrics
    keys = [k for k, _u, _d in METRICS if k in inner] + sorted(k for k in inner if k not in units)
    for k in keys:
        v = inner[k]
        if isinstance(v, dict) and "mean" in v:
            out.append((k, units.get(k, ""), v.get("mean"), v.get("sd"), v.get("n")))
        elif isinstance(v, (int, float)) and not isinstance(v, bool):
            out.append((k, units.get(k, ""), v, None, 1))
    return out


def results_csv(runs: list[dict[str, Any]]) -> bytes:
    """One row per (run, result, metric): easy to pivot, and two machines' exports concatenate."""
    return csv_bytes(CSV_FIELDS, ([row.get(k) for k in CSV_FIELDS] for row in _rows(runs)))


def _rows(runs: list[dict[str, Any]]) -> Iterator[dict[str, Any]]:
    for run in runs:
        for res in run.get("results", []):
            tgt = (res.get("provenance") or {}).get("target") or {}
            for metric, unit, mean, sd, n in _metric_rows(res.get("metrics") or {}):
                yield {"run_id": run.get("id"), "kind": run.get("kind"), "created": run.get("created"),
                       "label": run.get("label"), "host": run.get("host"),
                       "iolens_version": run.get("iolens_version"), "status": run.get("status"),
                       "target": res.get("target"), "name": res.get("name"),
                       "cache_state": res.get("cache_state"), "fstype": tgt.get("fstype"),
                       "device_model": tgt.get("device_model"), "metric": metric, "unit": unit,
                       "mean": mean, "sd": sd, "n": n}
