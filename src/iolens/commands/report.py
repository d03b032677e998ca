"""iolens report: where a captured run's time went, which files and storage cost it, and what to change."""

from __future__ import annotations

import os

import click

from iolens.errors import UsageError
from iolens.output import FORCE_OPTION, check_outputs, write_output


def print_thresholds() -> None:
    from iolens.analysis.thresholds import TABLE

    w = max(len(k) for k in TABLE)
    for name, (default, unit, doc) in TABLE.items():
        click.echo(f"{name:<{w}}  {default:>12g} {unit:<9} {doc}")


@click.command()
@click.argument("capture", required=False, type=click.Path(dir_okay=True, path_type=str))
@click.option("--html", "html_out", metavar="PATH", help="Write a self-contained HTML report (works offline).")
@click.option("--json", "json_out", metavar="PATH", help="Write the report as JSON ('-' for stdout).")
@click.option("--csv", "csv_out", metavar="PATH",
              help="Write the per-file table as CSV ('-' for stdout): UTF-8, and a name that is not UTF-8 keeps its "
                   "bytes (read with errors='surrogateescape'); control characters in names are spelled out as in "
                   "the terminal (\\e, \\n, \\x07).")
@click.option("--chrome-trace", "trace_out", metavar="PATH",
              help="Write a --trace capture's operations as Chrome/Perfetto trace JSON.")
@click.option("--multiqc", "mqc_out", metavar="PATH",
              help="Write MultiQC custom content (name it *_mqc.json).")
@click.option("--sample", metavar="NAME", help="Sample name for --multiqc (default: the capture's file name).")
@click.option("--set", "overrides", metavar="NAME=VALUE", multiple=True,
              help="Change a threshold for this report (repeatable); --thresholds lists them.")
@click.option("--thresholds", "list_thresholds", is_flag=True,
              help="List the thresholds and their defaults, then exit.")
@click.option("--top", type=click.IntRange(min=1), default=10, show_default=True, help="Files in the terminal report.")
@click.option("-q", "--quiet", is_flag=True, help="Do not print the terminal report.")
@click.option("--snakemake-log", metavar="LOG", help="DIR mode: a Snakemake log; its jobs without a task are listed.")
@FORCE_OPTION
def report(capture, html_out, json_out, csv_out, trace_out, mqc_out, sample, overrides, list_thresholds, top, quiet,
           snakemake_log, force):
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
      iolens report pipeline-captures/ --html pipeline.html   (a capture directory: see `iolens wrap`)
    """
    if list_thresholds:
        print_thresholds()
        return
    if not capture:
        raise UsageError("no capture given; usage: iolens report CAPTURE [--html PATH] [--json PATH] ...")
    if os.path.isdir(capture):
        from iolens.pipeline.command import report_dir

        return report_dir(capture, html_out=html_out, json_out=json_out, overrides=list(overrides), top=top,
                          quiet=quiet, force=force, snakemake_log=snakemake_log)
    named = {"--html": html_out, "--json": json_out, "--csv": csv_out, "--chrome-trace": trace_out,
             "--multiqc": mqc_out}
    check_outputs(named, force=force, inputs=[capture])
    outs = [o for o in named.values() if o]
    from iolens.analysis.report import build_report
    from iolens.analysis.thresholds import with_overrides

    from iolens.capture.load import exit_if_partial, load_capture

    th = with_overrides(list(overrides))
    cap = load_capture(capture)
    if trace_out:
        from iolens.render.chrome_trace import render_chrome_trace

        write_output(trace_out, render_chrome_trace(cap), force=force, opt="--chrome-trace")
    rep = build_report(cap, th)
    if json_out:
        from iolens.render.report_json import render_json

        write_output(json_out, render_json(rep), force=force, opt="--json")
    if csv_out:
        from iolens.render.report_csv import render_csv

        write_output(csv_out, render_csv(rep), force=force, opt="--csv")
    if mqc_out:
        from iolens.render.multiqc import render_multiqc

        name = sample or os.path.basename(capture).rsplit(".iolens", 1)[0]
        write_output(mqc_out, render_multiqc(rep, name), force=force, opt="--multiqc")
    if html_out:
        from iolens.render.report_html import render_html

        write_output(html_out, render_html(rep), force=force, opt="--html")
    if not quiet and "-" not in outs:
        from iolens.render.report_text import render_report_text
        from iolens.render.terminal import console as terminal

        console = terminal()
        render_report_text(rep, console, top=top)
    exit_if_partial(cap)
