"""The pipeline report: every task's summary folded into per-rule aggregates, as plain data.

`build_pipeline(dir)` streams the tasks through a pool of worker processes (one per core); each returns a small
summary and the parent folds it into its rule at once, so memory grows with the number of rules and files,
not with the task captures.  Per task it keeps one row (for the task table and the Gantt chart).
"""

from __future__ import annotations

import os
import shlex
from collections import defaultdict
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from iolens.errors import UsageError
from iolens.pipeline.scan import Task, scan

TAG = "iolens-pipeline"
SCHEMA = [2, 0]  # 2.0: the version's key is schema_version, as in every other iolens JSON
IO_CLASSES = ["tiny_read", "small_read", "streaming_read", "random_read", "tiny_write", "small_write",
              "streaming_write", "random_write", "metadata", "sync"]
LABELS = {"tiny_read": "tiny reads", "small_read": "small reads", "streaming_read": "streaming reads",
          "random_read": "random reads", "tiny_write": "tiny writes", "small_write": "small writes",
          "streaming_write": "streaming writes", "random_write": "random writes", "metadata": "metadata calls",
          "sync": "syncs"}
BOUND_SHARE = 0.25  # a rule is storage-bound when this share of its tasks' time is storage I/O
# ...and it is not tiny: at least this share of the pipeline's process time and this many seconds (a 6.6 ms
# `index` rule or a `uname` is all I/O and all irrelevant)
BOUND_MIN_SHARE = 0.02
BOUND_MIN_SECONDS = 0.05
QUIET_ADVICE = ("storage_not_bottleneck", "low_coverage")  # not a storage fix for a rule
TASK_KEYS = ("id", "rule", "names", "host", "start_real_ns", "wall_s", "exit_status", "partial", "io_s",
             "cpu_s", "bytes_read", "bytes_written", "processes", "problems", "breakdown", "temp_files", "temp_bytes",
             "unprofiled")


class RuleAgg:
    """One rule's (or process's) totals over its tasks; `add` folds one task summary in."""

    def __init__(self, name: str):
        self.name = name
        self.tasks = 0
        self.partial = 0
        self.failed = 0
        self.breakdown: dict[str, float] = defaultdict(float)
        self.sums: dict[str, float] = defaultdict(float)
        self.mounts: dict[tuple[str, str], dict[str, Any]] = {}
        self.files: dict[str, list[Any]] = {}
        self.advice: dict[str, dict[str, Any]] = {}
        self.reports: list[tuple[float, str]] = []  # (I/O time, what `iolens report` reads) of its worst tasks

    def add(self, s: dict[str, Any]) -> None:
        self.tasks += 1
        self.partial += bool(s.get("partial"))
        self.failed += s.get("exit_status") not in (0, None)
        for k, v in s["breakdown"].items():
            self.breakdown[k] += v
        for k in ("wall_s", "io_s", "cpu_s", "bytes_read", "bytes_written", "temp_files", "temp_bytes"):
            self.sums[k] += s.get(k) or 0
        for m in s["mounts"]:
            row = self.mounts.setdefault((m["mount"], m["fstype"]), {
                "mount": m["mount"], "fstype": m["fstype"], "storage": m["storage"], "bytes_read": 0,
                "bytes_written": 0, "time_s": 0.0, "temp_files": 0, "temp_bytes": 0, "breakdown": defaultdict(float)})
            for k in ("bytes_read", "bytes_written", "time_s", "temp_files", "temp_bytes"):
                row[k] += m[k]
            for k, v in m["breakdown"].items():
                row["breakdown"][k] += v
        for path, _mount, _fs, br, bw, t, temp in s["files"]:
            f = self.files.setdefault(path, [0, 0, 0.0, False])
            f[0] += br
            f[1] += bw
            f[2] += t
            f[3] = f[3] or temp
        if s.get("report"):
            self.reports = sorted([*self.reports, (s.get("io_s") or 0.0, s["report"])], key=lambda x: -x[0])[:3]
        for a in s["advice"]:
            agg = self.advice.setdefault(a["rule"], {"rule": a["rule"], "title": a["title"], "fix": a["fix"],
                                                     "tasks": 0, "time_at_stake_s": 0.0, "best": -1.0})
            agg["tasks"] += 1
            stake = a["time_at_stake_s"] or 0.0
            agg["time_at_stake_s"] += stake
            if stake > agg["best"]:
                agg.update(best=stake, title=a["title"], fix=a["fix"])

    def total_s(self) -> float:
        return sum(self.breakdown.values())

    def worst(self) -> tuple[str, dict[str, Any], float] | None:
        """The (I/O class, mount) that takes most of this rule's time."""
        best = None
        for m in self.mounts.values():
            for cls in IO_CLASSES:
                t = m["breakdown"].get(cls, 0.0)
                if best is None or t > best[2]:
                    best = (cls, m, t)
        return best if best and best[2] > 0 else None

    def result(self) -> dict[str, Any]:
        total = self.total_s()
        io_s = sum(self.breakdown.get(c, 0.0) for c in IO_CLASSES)
        share = io_s / total if total else 0.0
        mounts = sorted(self.mounts.values(), key=lambda m: -m["time_s"])
        for m in mounts:
            m["breakdown"] = dict(m["breakdown"])
        temps = sorted(((p, f) for p, f in self.files.items() if f[3]), key=lambda x: -x[1][1])
        advice = sorted(self.advice.values(), key=lambda a: -a["time_at_stake_s"])
        for a in advice:
            a.pop("best", None)
        return {
            "rule": self.name, "tasks": self.tasks, "partial_tasks": self.partial, "failed_tasks": self.failed,
            "time_s": total, "io_s": io_s, "io_share": share, "storage_bound": share >= BOUND_SHARE and io_s > 0,
            "time_at_stake_s": io_s, "breakdown": dict(self.breakdown), **{k: self.sums[k] for k in (
                "wall_s", "cpu_s", "bytes_read", "bytes_written", "temp_files", "temp_bytes")},
            "files": len(self.files),
            "storage": {
                "reads": [_brief(m, "bytes_read") for m in mounts if m["bytes_read"]],
                "writes": [_brief(m, "bytes_written") for m in mounts if m["bytes_written"]],
                "spills": [_brief(m, "temp_bytes") for m in mounts if m["temp_files"]],
            },
            "mounts": mounts,
            "temp_files_top": [{"path": p, "bytes_written": f[1], "time_s": f[2]} for p, f in temps[:10]],
            "advice": advice,
            "advice_line": self.advice_line(total, advice),
        }

    def advice_line(self, total: float, advice: list[dict[str, Any]]) -> str | None:
        w = self.worst()
        if w is None or not total:
            return None
        cls, m, t = w
        prep = "to" if cls.endswith("write") or cls == "sync" else "on" if cls == "metadata" else "from"
        fixes = [a for a in advice if a["rule"] not in QUIET_ADVICE]
        if fixes:
            fix = fixes[0]["fix"]
        else:
            see = " or ".join(f"`iolens report {shlex.quote(path)}`" for _io, path in self.reports[:2])
            fix = (f"no advice: nothing in its {self.tasks} task(s) has a fix iolens knows; see its tasks with most "
                   f"I/O: {see}" if see else f"no advice: nothing in its {self.tasks} task(s) has a fix iolens knows")
        return (f"rule {self.name}: {t / total:.0%} of its time is {LABELS[cls]} {prep} {m['mount']} on "
                f"{m['fstype']}; {fix}")


def _brief(m: dict[str, Any], key: str) -> dict[str, Any]:
    return {"mount": m["mount"], "fstype": m["fstype"], "storage": m["storage"], "bytes": m[key]}


def summaries(tasks: list[Task], thresholds: dict[str, float] | None, jobs: int | None,
              outputs: dict[str, Any] | None = None) -> Iterator[dict[str, Any]]:
    """Task summaries, computed in `jobs` worker processes (default: one per core), in any order."""
    from iolens.pipeline.task import summarize_safe

    jobs = jobs or len(os.sched_getaffinity(0))
    work = [(t, thresholds, outputs) for t in tasks]
    if jobs <= 1 or len(tasks) < 4:
        yield from map(summarize_safe, work)
        return
    import multiprocessing as mp

    ctx = mp.get_context("forkserver" if "forkserver" in mp.get_all_start_methods() else "spawn")
    with ctx.Pool(jobs) as pool:
        yield from pool.imap_unordered(summarize_safe, work, chunksize=max(1, min(32, len(work) // (jobs * 8))))


def fold(items: Iterable[dict[str, Any]], unprofiled: list[Task], root: str) -> dict[str, Any]:
    rules: dict[str, RuleAgg] = {}
    rows: list[dict[str, Any]] = []
    not_profiled = [{"id": t.id, "rule": t.info.get("rule") or "?", "names": t.names,
                     "why": t.info.get("why") or "no records: its environment lost the interposer, or it ran a "
                     "static binary"} for t in unprofiled]
    for s in items:
        if not s.get("profiled"):
            not_profiled.append({"id": s["id"], "rule": s["rule"], "names": s["names"],
                                 "why": "; ".join(s.get("problems") or []) or "no process records"})
            continue
        rules.setdefault(s["rule"], RuleAgg(s["rule"])).add(s)
        rows.append({k: s.get(k) for k in TASK_KEYS})
    rows.sort(key=lambda r: (r["start_real_ns"] or 0, r["id"]))
    rule_rows = sorted((r.result() for r in rules.values()), key=lambda r: -r["time_s"])
    whole = sum(r["time_s"] for r in rule_rows)
    for r in rule_rows:  # a tiny rule is never storage-bound, however much of its few milliseconds is I/O
        r["storage_bound"] = r["storage_bound"] and r["time_s"] >= max(BOUND_MIN_SECONDS, BOUND_MIN_SHARE * whole)
    hosts: dict[str, dict[str, Any]] = {}
    for r in rows:
        h = hosts.setdefault(r["host"] or "?", {"host": r["host"] or "?", "tasks": 0, "wall_s": 0.0, "io_s": 0.0,
                                                "cpu_s": 0.0, "bytes_read": 0, "bytes_written": 0})
        h["tasks"] += 1
        for k in ("wall_s", "io_s", "cpu_s", "bytes_read", "bytes_written"):
            h[k] += r[k] or 0
    bound = sorted((r for r in rule_rows if r["storage_bound"]), key=lambda r: -r["time_at_stake_s"])
    return {
        "tag": TAG, "schema_version": SCHEMA, "directory": root,
        "totals": {"tasks": len(rows), "not_profiled": len(not_profiled),
                   "partial": sum(bool(r["partial"]) for r in rows),
                   "rules": len(rule_rows), "time_s": sum(r["time_s"] for r in rule_rows),
                   "io_s": sum(r["io_s"] for r in rule_rows), "hosts": len(hosts)},
        "rules": rule_rows,
        "storage_bound": [{"rule": r["rule"], "time_at_stake_s": r["time_at_stake_s"], "io_share": r["io_share"],
                           "advice": r["advice_line"]} for r in bound],
        "tasks": rows, "not_profiled": not_profiled, "hosts": sorted(hosts.values(), key=lambda h: h["host"]),
    }


def build_pipeline(root: str | Path, thresholds: dict[str, float] | None = None, *, jobs: int | None = None,
                   snakemake_log: str | None = None) -> dict[str, Any]:
    """The pipeline report of a capture directory (see `scan` for its layout); with a Snakemake log, every job it
    lists is matched to a task by the outputs the task wrote, and a job with no task is listed as not profiled."""
    path = Path(root)
    if not path.is_dir():
        raise UsageError(f"{root}: not a capture directory")
    tasks, unprofiled = scan(path)
    if not tasks and not unprofiled:
        raise UsageError(f"{root}: no task captures in this directory (see `iolens wrap` to make some)")
    jobs_logged: list[dict[str, Any]] = []
    outputs = None
    if snakemake_log:
        from iolens.pipeline.expected import outputs_index, snakemake_jobs

        jobs_logged = snakemake_jobs(snakemake_log)
        outputs = outputs_index(jobs_logged)
    rep = fold(summaries(tasks, thresholds, jobs, outputs), unprofiled, str(root))
    seen = set()
    for t in rep["tasks"]:  # a job is known by its id (from the log) or its rule and wildcards (--target-jobs)
        sm = t["names"].get("snakemake") or {}
        seen |= {f"id:{sm.get('jobid')}", f"{sm.get('rule')}:{sorted((sm.get('wildcards') or {}).items())}"}
    for j in jobs_logged:
        keys = {f"id:{j['jobid']}", f"{j['rule']}:{sorted(j['wildcards'].items())}"}
        if j["outputs"] and not keys & seen:  # a target rule (no outputs) runs nothing
            rep["not_profiled"].append({"id": f"snakemake job {j['jobid']}", "rule": j["rule"],
                                        "names": {"snakemake": {k: j[k] for k in ("rule", "wildcards", "jobid")}},
                                        "why": "in the Snakemake log, but no task wrote its outputs with the "
                                               "interposer (stripped environment or static binary?)"})
    rep["totals"]["not_profiled"] = len(rep["not_profiled"])
    return rep

