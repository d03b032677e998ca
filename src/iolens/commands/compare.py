"""iolens compare: run a command across storage placements and say, with statistics, which is faster."""

from __future__ import annotations

import os
import random
import signal
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING

import click

from iolens import __version__
from iolens.errors import UsageError
from iolens.output import FORCE_OPTION, check_outputs
from iolens.render.exports import export_options, write_exports

if TYPE_CHECKING:
    from iolens.compare.placements import Plan
    from iolens.compare.runner import RunRecord


def _split_list(values: tuple[str, ...]) -> list[str]:
    out: list[str] = []
    for v in values:
        out.extend(x.strip() for x in v.split(",") if x.strip())
    return out


def _locations(plan: Plan) -> dict[str, dict]:
    from iolens.sysinfo import mount_of

    out = {}
    for cfg in plan.configurations:
        for loc in [*cfg.inputs.values(), *cfg.places.values()]:
            if loc.raw in out:
                continue
            m = mount_of(loc.path) or {}
            out[loc.raw] = {"path": loc.path, "kind": loc.kind, "lab": loc.lab, "emulated": loc.emulated,
                            "mountpoint": m.get("mountpoint"), "fstype": m.get("fstype"), "source": m.get("source")}
    return out


def _budget(runs: str, precision: float | None, max_runs: int | None,
            max_time: str | None) -> tuple[bool, int, int, float | None]:
    """--runs N|auto, --max-runs, --max-time -> (auto, runs, max runs, max seconds), or a usage error."""
    from iolens.stats.sequential import FIRST_LOOK
    from iolens.units import duration_s

    auto = runs.strip().lower() == "auto"
    if auto and precision is not None:
        raise UsageError("--runs auto and --precision are two stopping rules; choose one")
    if not auto and not (runs.strip().isdigit() and int(runs) >= 2):
        raise UsageError(f"--runs {runs!r}: give a number of runs (at least 2) or auto")
    n = FIRST_LOOK if auto else int(runs)
    limit = max_runs if max_runs is not None else 40 if auto else 100
    if precision is not None and limit < n:
        raise UsageError(f"--max-runs {limit} is below --runs {n}")
    seconds = None
    if max_time is not None:
        seconds = duration_s(max_time)
        if seconds is None:
            raise UsageError(f"--max-time {max_time!r}: write a duration like 90s, 30m, 2h")
        if not auto:
            raise UsageError("--max-time applies to --runs auto; add it, or drop --max-time")
    return auto, n, limit, seconds


class _Terminate(KeyboardInterrupt):
    """SIGTERM/SIGHUP: handled like Ctrl-C, so every temporary directory is removed."""


def _raise_terminate(signum: int, _frame: object) -> None:
    raise _Terminate(signal.Signals(signum).name)


@click.command(short_help="Run a command in every placement, interleaved; compare them.",
               context_settings={"max_content_width": 110})
@click.argument("template")
@click.option("--input", "inputs", multiple=True, metavar="NAME=PATH[,PATH...]",
              help="An input file or directory for {NAME}; several paths = where the input may live (a dimension).")
@click.option("--place", "places", multiple=True, metavar="NAME=LOC[,LOC...]",
              help="Output/temp locations for {NAME}: directories (a fresh directory is made in each per run) "
                   "or a device like /dev/null. {NAME:file} is LOC/.../file, or the device itself.")
@click.option("--param", "params", multiple=True, metavar="NAME=V[,V...]",
              help="Literal values for {NAME} (one quoted word); {NAME!words} splices a value as several words, for "
                   "wrappers like 'nice -n 5'. In every value list, \\, is a comma inside a value.")
@click.option("--config", "configs", multiple=True, metavar="NAME:key=val,...",
              help="An explicit configuration instead of the matrix (keys declared with --input/--place/--param, "
                   "or strategy=direct|stage); \\, is a comma inside a value.")
@click.option("--strategy", "strategies", multiple=True, metavar="direct,stage",
              help="direct: inputs in place; stage: copy inputs to --scratch, run there, copy outputs back "
                   "(each step timed). Both = a dimension. [default: direct]")
@click.option("--scratch", type=click.Path(file_okay=False, exists=True, writable=True), default=None,
              help="Local scratch directory for --strategy stage. [default: the system temp directory]")
@click.option("--baseline", default=None, help="Configuration the others are compared with. [default: the first]")
@click.option("-r", "--runs", default="10", show_default=True, metavar="N|auto",
              help="Runs per configuration (with --precision: the minimum); auto: interleaved rounds until every "
                   "comparison is decided (faster, slower, or equivalent within --margin) or --max-runs/--max-time "
                   "is spent.")
@click.option("-w", "--warmup", type=click.IntRange(min=0), default=0, show_default=True,
              help="Uncounted rounds first.")
@click.option("--prepare", default=None, metavar="CMD",
              help="Shell command run (untimed) before every run; may use the template's placeholders.")
@click.option("--cache", type=click.Choice(["warm", "cold"]), default="warm", show_default=True,
              help="cold: evict the inputs from the page cache before every run.")
@click.option("--evict", type=click.Choice(["auto", "fadvise", "drop-caches"]), default="auto", show_default=True,
              help="How --cache cold evicts: drop-caches needs root; auto = drop-caches when allowed, else fadvise.")
@click.option("--precision", type=click.FloatRange(min=0, min_open=True), default=None, metavar="P",
              help="Keep running until each configuration's median has a 95% CI half-width <= P% (or --max-runs).")
@click.option("--max-runs", type=click.IntRange(min=2), default=None,
              help="Upper limit of runs per configuration with --precision or --runs auto. "
                   "[default: 100 with --precision, 40 with --runs auto]")
@click.option("--max-time", default=None, metavar="DURATION",
              help="With --runs auto: stop starting rounds after this long (90s, 30m, 2h).")
@click.option("--margin", type=click.FloatRange(min=0, min_open=True, max=100, max_open=True), default=5.0,
              show_default=True, metavar="PCT",
              help="Equivalence margin: \"no difference larger than PCT%\" when the runs show it.")
@click.option("--seed", type=int, default=None, help="Seed of the run order and the bootstrap. [default: random]")
@click.option("--profile", is_flag=True, help="Also capture every run with the iolens profiler and compare "
              "per-phase (child process) times and the I/O time breakdown.")
@click.option("--db", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="Results store. [default: $IOLENS_DB or ~/.local/share/iolens/results.sqlite]")
@click.option("--no-store", is_flag=True, help="Do not record the comparison in the results store.")
@click.option("--keep-outputs", is_flag=True, help="Keep the outputs of each configuration's last run.")
@click.option("--show-output", is_flag=True, help="Let the command's stdout and stderr through.")
@click.option("-q", "--quiet", is_flag=True, help="No progress line.")
@FORCE_OPTION
@export_options("compare")
def compare(template: str, inputs: tuple[str, ...], places: tuple[str, ...], params: tuple[str, ...],
            configs: tuple[str, ...], strategies: tuple[str, ...], scratch: str | None, baseline: str | None,
            runs: str, warmup: int, prepare: str | None, cache: str, evict: str, precision: float | None,
            max_runs: int | None, max_time: str | None, margin: float, seed: int | None, profile: bool,
            outputs: dict[str, str | None], db: Path | None, no_store: bool, keep_outputs: bool, show_output: bool,
            quiet: bool, force: bool) -> None:
    """Run TEMPLATE in every placement configuration, interleaved, and compare them with statistics.

    TEMPLATE is a shell command with {NAME} placeholders ({{ and }} for literal braces; {NAME!words} for a
    --param value spliced as several words, e.g. a wrapper 'taskset -c 0\\,1'). Each run's wall,
    user and sys time, peak RSS, exit status and bytes read/written (command and children) are recorded;
    failed runs are reported with their stderr and left out of the statistics.

    \b
    Example: where should minimap2 write?
      iolens compare 'minimap2 -ax sr {ref} {r1} {r2} -o {out:aln.sam}' \\
        --input ref=d/ref.fa --input r1=d/reads_1.fq.gz --input r2=d/reads_2.fq.gz \\
        --place out=/dev/null,d,/dev/shm --runs 10 --html out.html
    """
    from iolens.compare.placements import build_plan
    from iolens.compare.report import build_report
    from iolens.compare.runner import Runner, Settings, launcher_dir
    from iolens.compare.strategies import Workspace, reap_leftovers
    from iolens.render import exports
    from iolens.render.compare_text import render_compare
    from iolens.render.terminal import console as terminal
    from iolens.sysinfo import host_facts

    # parse and validate everything before running anything
    plan = build_plan(template, inputs=list(inputs), places=list(places), params=list(params),
                      strategies=_split_list(strategies) or None, configs=list(configs), baseline=baseline)
    check_outputs(exports.check("compare", outputs), force=force)
    if cache == "warm" and evict != "auto":
        raise UsageError("--evict only applies with --cache cold")
    if evict == "drop-caches" and os.geteuid() != 0:
        raise UsageError("--evict drop-caches needs root; use --evict fadvise")
    auto, n_runs, limit, max_s = _budget(runs, precision, max_runs, max_time)
    if not no_store:
        from iolens.store import check_before_writing

        check_before_writing(db)
    if seed is None:
        seed = random.SystemRandom().randrange(1, 2**31)
    settings = Settings(runs=n_runs, auto=auto, max_time=max_s, margin=margin / 100, warmup=warmup, cache=cache,
                        evict=evict, precision=precision, max_runs=limit, prepare=prepare, seed=seed,
                        show_output=show_output, profile=profile)
    console = terminal(stderr=True)
    profiler = None
    if profile:
        from iolens.compare.profiling import Profiler

        profiler = Profiler(warn=console.print)

    out_console = terminal()
    show_progress = not quiet and console.is_terminal
    started = time.strftime("%Y-%m-%dT%H:%M:%S%z")

    def progress(rec: RunRecord, planned: int) -> None:
        if show_progress:
            status = f"{rec.wall_s:.3g} s" if rec.ok else f"failed (exit {rec.exit_status})"
            from iolens.names import shown

            console.print(f"  [{rec.seq + 1}/{planned}] {shown(rec.config)}{' (warmup)' if rec.warmup else ''}: "
                          f"{status}",
                          end="\r" if rec.ok else "\n")

    reaped = reap_leftovers([loc for c in plan.configurations for loc in c.places.values()], scratch,
                            [launcher_dir()])
    if profile:
        from iolens.capture.record import reap_staging

        reaped += reap_staging()
    reaped.say(lambda line: click.echo(line, err=True))
    ws = Workspace(scratch, keep_outputs=keep_outputs)
    old = {s: signal.signal(s, _raise_terminate) for s in (signal.SIGTERM, signal.SIGHUP)}
    try:
        runner = Runner(plan, settings, ws, progress=progress, profiler=profiler)
        outcome = runner.run()
    finally:
        signal.signal(signal.SIGINT, signal.SIG_IGN)  # a second Ctrl-C must not stop the clean-up
        try:
            kept = ws.cleanup()
        finally:
            signal.signal(signal.SIGINT, signal.default_int_handler)
            for s, h in old.items():
                signal.signal(s, h)
    if show_progress:
        console.print(" " * 60, end="\r")

    provenance = {**host_facts(), "iolens_version": __version__, "started": started,
                  "finished": time.strftime("%Y-%m-%dT%H:%M:%S%z"), "locations": _locations(plan)}
    rep = build_report(plan, settings, outcome, provenance=provenance)

    if not no_store:
        from iolens.store import ResultsStore

        with ResultsStore(db) as store:
            job = {"command_template": rep["command_template"], "settings": rep["settings"], "baseline": plan.baseline,
                   "configurations": [c.name for c in plan.configurations]}
            run_id = store.add_run("compare", job, provenance, label=rep["command_template"][:80])
            for r in rep["results"]:
                metrics = {k: v for k, v in r.items() if k != "run_records"}
                metrics["runs_detail"] = r["run_records"]
                metrics["comparison"] = next((c for c in rep["comparisons"] if c["name"] == r["name"]), None)
                store.add_result(run_id, r["name"], metrics, target=" ".join(f"{k}={v}" for k, v in
                                                                            r["parameters"].items()),
                                 cache_state=settings.cache,
                                 provenance={"strategy": r["strategy"], "emulated": r["emulated"],
                                             "lab_targets": r["lab_targets"],
                                             "emulated_targets": r["emulated_targets"]})
            rep["store"] = {"db": str(store.path), "run_id": run_id}

    render_compare(rep, out_console)
    write_exports(out_console, "compare", outputs, rep, rep["store"], force=force)
    for root in kept:
        out_console.print(f"  outputs of the last run of each configuration kept in {root}")
    if any(r["failed_runs"] for r in rep["results"]):
        sys.exit(1)
