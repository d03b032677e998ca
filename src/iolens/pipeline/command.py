"""The DIR modes of `iolens report` and `iolens diff` (kept here so those commands change by a few lines)."""

from __future__ import annotations

import os
import sys
from typing import Any

import click

from iolens.errors import PARTIAL_EXIT
from iolens.output import check_outputs, write_output


def _files_in(path: str) -> list[str]:
    """The files of a capture directory: none is ever an output."""
    try:
        return [os.path.join(path, n) for n in os.listdir(path)]
    except OSError:
        return []


def report_dir(path: str, *, html_out: str | None, json_out: str | None, overrides: list[str], top: int,
               quiet: bool, force: bool, snakemake_log: str | None = None, jobs: int | None = None) -> None:
    """`iolens report DIR`: the pipeline report; exit 3 when some task is partial or was not profiled."""
    from iolens.analysis.thresholds import with_overrides
    from iolens.pipeline.merge import build_pipeline
    from iolens.pipeline.render import render_html, render_json, render_text

    check_outputs({"--html": html_out, "--json": json_out}, force=force, inputs=_files_in(path))
    rep = build_pipeline(path, with_overrides(overrides), jobs=jobs, snakemake_log=snakemake_log)
    if json_out:
        write_output(json_out, render_json(rep), force=force, opt="--json")
    if html_out:
        write_output(html_out, render_html(rep), force=force, opt="--html")
    if not quiet and "-" not in (html_out, json_out):
        click.echo(render_text(rep, top=top), nl=False)
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


def diff_dirs(a: str, b: str, *, json_out: str | None, overrides: list[str], force: bool) -> None:
    """`iolens diff DIR1 DIR2`: two pipeline runs rule by rule; exit 3 as `report DIR` does."""
    import json

    from iolens.analysis.thresholds import with_overrides
    from iolens.pipeline.merge import build_pipeline
    from iolens.pipeline.render import render_diff

    check_outputs({"--json": json_out}, force=force, inputs=_files_in(a) + _files_in(b))
    th = with_overrides(overrides)
    ra, rb = build_pipeline(a, th), build_pipeline(b, th)
    if json_out:
        pairs: dict[str, Any] = {}
        for side, rep in (("a", ra), ("b", rb)):
            for r in rep["rules"]:
                pairs.setdefault(r["rule"], {"rule": r["rule"], "a": None, "b": None})[side] = {
                    k: r[k] for k in ("tasks", "time_s", "io_s", "io_share", "bytes_read", "bytes_written")}
        doc = {"tag": "iolens-pipeline-diff", "schema": [1, 0], "a": a, "b": b, "rules": list(pairs.values())}
        write_output(json_out, (json.dumps(doc, indent=1) + "\n").encode(), force=force, opt="--json")
    if json_out != "-":
        click.echo(render_diff(ra, rb), nl=False)
    exit_if_partial((a, ra), (b, rb))
