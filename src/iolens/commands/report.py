"""iolens report: where a captured run's time went, which files and storage cost it, and what to change."""

from __future__ import annotations

import contextlib
import gc
import os
from collections.abc import Iterator

import click

from iolens.errors import UsageError
from iolens.names import shown
from iolens.output import FORCE_OPTION, check_outputs
from iolens.render.exports import export_options


def print_thresholds() -> None:
    from iolens.analysis.thresholds import TABLE
    from iolens.render.terminal import Col, FitTable, console

    t = FitTable([Col("threshold", "left"), Col("default"), Col("unit", "left"),
                  Col("meaning", "left", wrap=True)], show_edge=False, pad_edge=False)
    for name, (default, unit, doc) in TABLE.items():
        t.add_row(name, str(int(default)) if float(default).is_integer() else f"{default:g}", unit, doc)  # 16777216,
        # not 1.67772e+07: a value to copy into --set
    console().print(t)


@click.command(short_help="Turn a capture into answers: time, phases, files and advice.")
@click.argument("capture", required=False, type=click.Path(dir_okay=True, path_type=str))
@click.option("--sample", metavar="NAME", help="Sample name for --multiqc (default: the capture's file name).")
@click.option("--set", "overrides", metavar="NAME=VALUE", multiple=True,
              help="Change a threshold for this report (repeatable); --thresholds lists them.")
@click.option("--scale-to", type=click.FloatRange(min=0, min_open=True), metavar="N",
              help="The full input is N times the profiled one (a subsample's report): every advice states its "
                   "time at stake at that size.")
@click.option("--thresholds", "list_thresholds", is_flag=True,
              help="List the thresholds and their defaults, then exit.")
@click.option("--top", type=click.IntRange(min=1), default=10, show_default=True, help="Files in the terminal report.")
@click.option("-q", "--quiet", is_flag=True, help="Do not print the terminal report.")
@click.option("--snakemake-log", metavar="LOG", help="DIR mode: a Snakemake log; its jobs without a task are listed.")
@FORCE_OPTION
@export_options("report", also=("pipeline",))
def report(capture: str | None, outputs: dict[str, str | None], sample: str | None, overrides: tuple[str, ...],
           scale_to: float | None, list_thresholds: bool, top: int, quiet: bool, snakemake_log: str | None,
           force: bool) -> None:
    """Turn a capture into answers: time breakdown, phases, timeline, files, storage and advice.

    Prints the report in the terminal, and writes any of the other formats asked for.
    Any output PATH may be '-' for standard output (the terminal report is then not printed).

    Exit status: 0 for a whole capture; 3 when the capture is partial (cut short or
    damaged: the report is written from what came before the cut, says so, and its
    JSON has "partial": true) or cannot be read at all (nothing is written); 2 for a
    usage mistake.

    \b
    Examples:
      iolens report sort.iolens
      iolens report sort.iolens --html sort.html --json sort.json
      iolens report sort.iolens --set small_bytes=131072
      iolens report subsample.iolens --scale-to 50   (the full input is 50 times the subsample)
      iolens report pipeline-captures/ --html pipeline.html   (a capture directory: see `iolens wrap`)
    """
    if list_thresholds:
        print_thresholds()
        return
    if scale_to is not None:
        overrides = (*overrides, f"scale_to={scale_to}")
    if not capture:
        raise UsageError("no capture given; usage: iolens report CAPTURE [--html PATH] [--json PATH] ...")
    if os.path.isdir(capture):
        from iolens.commands._pipeline_dir import report_dir

        if sample:
            raise UsageError(f"--sample names the sample of one capture's --multiqc, and {shown(capture)} is a "
                             "capture directory (a pipeline run)")
        return report_dir(capture, outputs=outputs, overrides=list(overrides), top=top, quiet=quiet, force=force,
                          snakemake_log=snakemake_log)
    if snakemake_log:
        raise UsageError("--snakemake-log is for a capture directory (a pipeline run), and "
                         f"{shown(capture)} is one capture")
    from iolens.render import exports

    check_outputs(exports.check("report", outputs), force=force, inputs=[capture])
    from iolens.analysis.report import build_report
    from iolens.analysis.thresholds import with_overrides
    from iolens.capture.load import exit_if_partial, load_capture

    th = with_overrides(list(overrides))
    with _no_cycle_collection():
        cap = load_capture(capture)
        rep = build_report(cap, th)
        name = sample or os.path.basename(capture).rsplit(".iolens", 1)[0]
        exports.write("report", outputs, exports.Exported(rep, capture=cap, sample=name), force=force)
        if not quiet and not exports.to_stdout(outputs):
            from iolens.render.report_text import render_report_text
            from iolens.render.terminal import console as terminal

            console = terminal()
            render_report_text(rep, console, top=top)
        from iolens.cli import leave_at_exit

        leave_at_exit(rep, cap)  # all written: the process need not free them one by one
    exit_if_partial(cap)


@contextlib.contextmanager
def _no_cycle_collection() -> Iterator[None]:
    """Python's cycle collector paused while a report is read, built and written. A large capture's report is
    about a million small objects (a row per file, its lists and dicts), all plain data that never refers back to
    itself, so a full collection finds nothing, yet each walks them all: a quarter of the time of building the
    report of 100,000 files. Reference counting still frees everything as before."""
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()
