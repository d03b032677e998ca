"""Parse, validate, then run: targets -> suites -> space check -> engine jobs (interleaved repeats) -> report.

Repeats are interleaved: repeat r runs every target before repeat r+1 starts, and the target order rotates each
repeat, so drift (thermal, background load, a filling cache) spreads over all targets instead of biasing one.
"""

from __future__ import annotations

import os
import time
from dataclasses import asdict
from typing import Any, Callable

from iolens import __version__
from iolens.bench import cache, engine, suites
from iolens.bench.report import BenchReport
from iolens.workspace.rails import Terminated, WorkDirs, check_space, reap_targets, signals_as_exceptions
from iolens.bench.suites import Options, Test
from iolens.workspace.target import Target, resolve_each
from iolens.errors import UsageError
from iolens.units import human_bytes
from iolens.sysinfo import host_facts

# on_progress(description, completed_weight, total_weight)
ProgressFn = Callable[[str, float, float], None]


class Job:
    """One engine invocation: the tests that share the same target dirs."""

    def __init__(self, targets: list[Target], tests: list[Test]):
        self.targets = targets
        self.tests = tests
        self.phases: list[tuple[Test, dict[str, Any]]] = [(t, p) for t in tests for p in t.phases]
        self.weights = [suites.estimate_seconds(p) for _t, p in self.phases]

    def engine_job(self, dirs: list[str], seed: int, drop_caches: bool) -> dict[str, Any]:
        return {"schema_version": list(engine.JOB_SCHEMA), "dirs": dirs, "seed": seed, "drop_caches": drop_caches,
                "device_stats": [t.dev_stat for t in self.targets if t.kind != "null"],
                "phases": [p for _t, p in self.phases]}


def plan(targets: list[Target], suite_names: list[str], opts: Options, scale: suites.Scale) -> list[Job]:
    jobs = []
    real = [t for t in targets if t.kind != "null"]
    for t in targets:
        own: list[Test] = []
        cross: list[Job] = []
        for s in suite_names:
            others = [o.spec for o in real if o is not t] if t.kind != "null" else []
            tests = suites.build(s, t.spec, scale, opts, others)
            if t.kind == "null":
                suites.nullify(tests)
            for test in tests:
                if len(test.targets) == 1:
                    own.append(test)
                else:
                    by_spec = {x.spec: x for x in targets}
                    cross.append(Job([by_spec[s2] for s2 in test.targets], [test]))
        if own:
            jobs.append(Job([t], own))
        jobs.extend(cross)
    return jobs


def check_plan(jobs: list[Job], what: str) -> None:
    """Free space and inodes, per target, at the peak of any job touching it (jobs run one at a time)."""
    need: dict[str, tuple[int, int]] = {}
    by_spec: dict[str, Target] = {}
    for job in jobs:
        for idx, (b, i) in suites.footprint(job.tests).items():
            t = job.targets[idx]
            by_spec[t.spec] = t
            pb, pi = need.get(t.spec, (0, 0))
            need[t.spec] = (max(pb, b), max(pi, i))
    for spec, (b, i) in need.items():
        check_space(by_spec[spec], b, i, what)


def content_caveats(jobs: list[Job], opts: Options) -> list[str]:
    """One line per compressing target that a suite fills with random content by choice (--content random, or the
    suite's default), which no compressor shrinks.  Random data a suite writes on purpose to stand for compressed
    files (genomics: gzipped reads, BGZF) is not a caveat."""
    hit: dict[str, tuple[Target, list[str]]] = {}
    writes = engine.op_names(io="write") | engine.op_names(io="mixed")
    for job in jobs:
        for test in job.tests:
            if (opts.content or suites.lookup(test.suite).content) != "random":
                continue
            for p in test.phases:
                for g in p["groups"]:
                    sized = g.get("size") or g.get("file_size") or any(g.get("sizes") or [])
                    t = job.targets[int(g.get("dir", 0) or 0)] if job.targets[0].kind != "null" else None
                    if t is None or not t.compression or g["op"] not in writes or g.get("content") != "random" \
                            or not sized:
                        continue
                    names = hit.setdefault(t.spec, (t, []))[1]
                    if test.suite not in names:
                        names.append(test.suite)
    return [f"{t.spec} compresses ({t.fstype or 'its filesystem'} compress={t.compression}) but the "
            f"{'+'.join(names)} suite wrote random content, which does not compress: this measures incompressible "
            "data; use --content fastq (or sam, or --template FILE) for genomics data" for t, names in hit.values()]


def run_bench(specs: list[str], suite_names: list[str], opts: Options, *, repeat: int = 1,
              on_progress: ProgressFn | None = None,
              store_run: Callable[[BenchReport, str], None] | None = None) -> BenchReport:
    """Runs the suites on the targets and returns the report (the caller renders and stores it).

    store_run(report, status) is called when the run starts ("running") and when it ends ("complete",
    "interrupted" or "failed"), so an interrupted run is recorded as such.
    """
    if not specs:
        raise UsageError("give at least one target directory (or lab:NAME, or null)")
    if repeat < 1:
        raise UsageError("--repeat must be at least 1")
    for s in suite_names:
        suites.lookup(s)  # an unknown suite fails here, before any target is touched
    desc = engine.describe()
    targets = resolve_each(specs)
    if opts.content and opts.content not in desc["contents"]:
        raise UsageError(f"unknown content {opts.content!r}; choose from {', '.join(desc['contents'])}")
    real = [t for t in targets if t.kind != "null"]
    scale = suites.default_scale(opts, [t.free_bytes for t in real if t.free_bytes is not None],
                                 [t.free_inodes for t in real])
    jobs = plan(targets, suite_names, opts, scale)
    check_plan(jobs, f"the {'+'.join(suite_names)} suite at --size {human_bytes(scale.size)}")

    report = BenchReport(
        created=time.strftime("%Y-%m-%dT%H:%M:%S%z"), iolens_version=__version__, suites=list(suite_names),
        repeat=repeat, options=asdict(opts), scale=asdict(scale), host=host_facts(),
        engine_version=desc.get("engine_version"), targets=targets)
    reaped = reap_targets(real)
    report.notes.extend(reaped.notes())
    report.warnings.extend(reaped.warnings())
    report.warnings.extend(content_caveats(jobs, opts))
    if opts.drop_caches and os.geteuid() != 0:
        report.warnings.append("--drop-caches needs root; files were evicted one by one instead")

    total = sum(sum(j.weights) for j in jobs) * repeat
    done = 0.0
    if store_run:
        store_run(report, "running")
    status = "failed"
    try:
        with signals_as_exceptions(), WorkDirs() as wd:
            dirs_of = {t.spec: str(wd.create(t)) for t in real}
            for r in range(repeat):
                order = jobs[r % len(jobs):] + jobs[: r % len(jobs)] if jobs else []
                for job in order:
                    done = _run_job(job, report, dirs_of, opts, r, done, total, on_progress, repeat)
            problems = wd.remove_all()
            report.warnings.extend(problems)
        status = "complete"
    except (KeyboardInterrupt, Terminated):
        status = "interrupted"
        raise
    finally:
        if store_run:
            store_run(report, status)
    return report


def _run_job(job: Job, report: BenchReport, dirs_of: dict[str, str], opts: Options, r: int, done: float,
             total: float, on_progress: ProgressFn | None, repeat: int) -> float:
    dirs = [dirs_of[t.spec] for t in job.targets if t.kind != "null"]
    ej = job.engine_job(dirs, opts.seed + r, opts.drop_caches)
    names = [t.spec for t in job.targets]
    base = done
    offsets = [base + sum(job.weights[:i]) for i in range(len(job.weights))]

    def progress(ev: dict[str, Any]) -> None:
        if on_progress is None:
            return
        i = int(ev.get("phase", 0))
        if not 0 <= i < len(job.phases):
            return
        _test, ph = job.phases[i]
        b, o, rt = suites.expected_work(ph)
        frac = max(ev.get("bytes", 0) / b if b else 0.0, ev.get("ops", 0) / o if o else 0.0,
                   ev.get("elapsed_s", 0.0) / rt if rt else 0.0)
        label = f"{' → '.join(names)}: {ph['name']}" + (f" (repeat {r + 1}/{repeat})" if repeat > 1 else "")
        on_progress(label, offsets[i] + min(1.0, frac) * job.weights[i], total)

    if on_progress:
        on_progress(f"{' → '.join(names)}: starting", base, total)
    result = engine.run_job(ej, on_progress=progress if on_progress else None, preexec=job.targets[0].preexec)
    if result.get("status") == "interrupted":
        raise KeyboardInterrupt
    engine.raise_for_error(result, [t.spec for t in job.targets if t.kind != "null"] or names)
    by_name = {p["name"]: p for p in result["phases"]}
    for test, ph in job.phases:
        if not ph.get("report", True):
            continue
        res = by_name.get(ph["name"])
        if res is None or not res["groups"]:
            continue
        owner = names[0]  # a cross-target test ("align to B") is listed under the target it reads from
        row = report.row(owner, ph["name"], group=test.name, suite=test.suite, phase_job=ph, dirs=dirs)
        tgt = job.targets[int(ph["groups"][0].get("dir", 0) or 0)] if job.targets[0].kind != "null" else \
            job.targets[0]
        row.add(res, tgt, cache.state_of(res, tgt, ph))
    return base + sum(job.weights)
