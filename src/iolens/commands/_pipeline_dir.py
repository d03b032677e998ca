"""The DIR modes of `iolens report` and `iolens diff` (kept here so those commands change by a few lines)."""

from __future__ import annotations

import os
import sys
from typing import Any

import click

from iolens.errors import PARTIAL_EXIT
from iolens.output import check_outputs


def _files_in(path: str) -> list[str]:
    """The files of a capture directory: none is ever an output."""
    try:
        return [os.path.join(path, n) for n in os.listdir(path)]
    except OSError:
        return []


def report_dir(path: str, *, outputs: dict[str, str | None], overrides: list[str], top: int, quiet: bool,
               force: bool, snakemake_log: str | None = None, jobs: int | None = None) -> None:
    """`iolens report DIR`: the pipeline report; exit 3 when some task is partial or was not profiled."""
    from iolens.analysis.thresholds import with_overrides
    from iolens.pipeline.merge import build_pipeline
    from iolens.render import exports
    from iolens.render.pipeline import render_text
    from iolens.render.terminal import width

    check_outputs(exports.check("pipeline", outputs), force=force, inputs=_files_in(path))
    rep = build_pipeline(path, with_overrides(overrides), jobs=jobs, snakemake_log=snakemake_log)
    exports.write("pipeline", outputs, rep, force=force)
    if not quiet and not exports.to_stdout(outputs):
        click.echo(render_text(rep, top=top, width=width()), nl=False)
    exit_if_partial((path, rep))


def exit_if_partial(*runs: tuple[str, dict[str, Any]]) -> None:
    """Exit PARTIAL_EXIT, after a warning, when a task of a pipeline run read is partial or was not profiled: as
    for a single partial capture, the outputs were written from part of the run."""
    status = 0
    for path, rep in runs:
        t = rep["totals"]
        if t["partial"] or t["not_profiled"]:
            click.echo(f"iolens: warning: {path}: {t['partial']} partial task(s), {t['not_profiled']} not profiled",
                       err=True)
            status = PARTIAL_EXIT
    if status:
        sys.exit(status)


def diff_dirs(a: str, b: str, *, outputs: dict[str, str | None], overrides: list[str], force: bool, top: int = 15,
              quiet: bool = False, snakemake_logs: tuple[str | None, str | None] = (None, None)) -> None:
    """`iolens diff DIR1 DIR2`: two pipeline runs rule by rule, with `report DIR`'s options (a Snakemake log per
    run; --top: the rules with most time in either run); exit 3 as `report DIR` does."""
    from iolens.analysis.thresholds import with_overrides
    from iolens.pipeline.merge import build_pipeline
    from iolens.render import exports
    from iolens.render.pipeline import render_diff
    from iolens.render.terminal import width

    check_outputs(exports.check("pipeline-diff", outputs), force=force, inputs=_files_in(a) + _files_in(b))
    th = with_overrides(overrides)
    ra, rb = (build_pipeline(d, th, snakemake_log=log) for d, log in zip((a, b), snakemake_logs))
    exports.write("pipeline-diff", outputs, (ra, rb, a, b), force=force)
    if not quiet and not exports.to_stdout(outputs):
        click.echo(render_diff(*_top_rules(ra, rb, top), width()), nl=False)
    exit_if_partial((a, ra), (b, rb))


def _top_rules(ra: dict[str, Any], rb: dict[str, Any], top: int) -> tuple[dict[str, Any], dict[str, Any]]:
    """Both runs with only the `top` rules that took most time in either."""
    most: dict[str, float] = {}
    for r in ra["rules"] + rb["rules"]:
        most[r["rule"]] = max(most.get(r["rule"], 0.0), r.get("time_s") or 0.0)
    keep = set(sorted(most, key=lambda n: -most[n])[:top])
    return (dict(ra, rules=[r for r in ra["rules"] if r["rule"] in keep]),
            dict(rb, rules=[r for r in rb["rules"] if r["rule"] in keep]))
