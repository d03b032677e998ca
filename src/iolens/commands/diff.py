"""iolens diff: compare two captures of the same command, per category and per file."""

from __future__ import annotations

import click

from iolens.output import FORCE_OPTION
from iolens.render.exports import export_options


@click.command(short_help="Compare two captures of one command (two storages, or a fix).")
@click.argument("capture_a", type=click.Path(path_type=str), required=False)
@click.argument("capture_b", type=click.Path(path_type=str), required=False)
@click.option("--set", "overrides", metavar="NAME=VALUE", multiple=True, help="Change a threshold (as in report).")
@click.option("--thresholds", "list_thresholds", is_flag=True,
              help="List the thresholds and their defaults, then exit.")
@click.option("--top", type=click.IntRange(min=1), default=15, show_default=True,
              help="Files (two captures) or rules (two capture directories) to show.")
@click.option("-q", "--quiet", is_flag=True, help="Do not print the terminal comparison.")
@click.option("--snakemake-log", "snakemake_logs", metavar="LOG", multiple=True,
              help="DIR mode: the Snakemake log of each run, given twice (A's, then B's); as in `report DIR`.")
@FORCE_OPTION
@export_options("diff", also=("pipeline-diff",))
def diff(capture_a: str | None, capture_b: str | None, outputs: dict[str, str | None], overrides: tuple[str, ...],
         list_thresholds: bool, top: int, quiet: bool, snakemake_logs: tuple[str, ...], force: bool) -> None:
    """Compare two captures of the same command (two storages, or before and after a fix).

    Shows what changed in total, per time category and per file.  Files are matched by their path
    relative to each run's working directory, so runs in different directories pair up.

    Exit status: 0; 3 when a capture is partial (cut short or damaged: compared from what came before
    the damage) or cannot be read at all.

    \b
    Example:
      iolens diff on-nfs.iolens on-local.iolens
      iolens diff run1-captures/ run2-captures/      (two pipeline runs, rule by rule)
    """
    import os

    from iolens.errors import UsageError
    from iolens.names import shown

    if list_thresholds:
        from iolens.commands.report import print_thresholds

        print_thresholds()
        return
    if not capture_a or not capture_b:
        raise UsageError("give two captures (or two capture directories); usage: iolens diff A B [--json PATH] ...")
    if os.path.isdir(capture_a) and os.path.isdir(capture_b):
        from iolens.commands._pipeline_dir import diff_dirs

        if len(snakemake_logs) not in (0, 2):
            raise UsageError("--snakemake-log: give it twice, the first run's log and then the second's (or not "
                             "at all)")
        logs = (snakemake_logs[0], snakemake_logs[1]) if snakemake_logs else (None, None)
        return diff_dirs(capture_a, capture_b, outputs=outputs, overrides=list(overrides), force=force, top=top,
                         quiet=quiet, snakemake_logs=logs)
    if snakemake_logs:
        raise UsageError(f"--snakemake-log is for two capture directories (pipeline runs), and "
                         f"{shown(capture_a if not os.path.isdir(capture_a) else capture_b)} is one capture")
    from iolens.analysis.diff import diff_reports
    from iolens.analysis.report import build_report
    from iolens.analysis.thresholds import with_overrides
    from iolens.capture.load import exit_if_partial, load_capture
    from iolens.output import check_outputs
    from iolens.render import exports

    check_outputs(exports.check("diff", outputs), force=force, inputs=[capture_a, capture_b])
    th = with_overrides(list(overrides))
    cap_a, cap_b = load_capture(capture_a, doing="comparing"), load_capture(capture_b, doing="comparing")
    ra, rb = build_report(cap_a, th), build_report(cap_b, th)
    d = diff_reports(ra, rb)
    exports.write("diff", outputs, d, force=force)
    if not quiet and not exports.to_stdout(outputs):
        from iolens.render.diff_text import render_diff_text
        from iolens.render.terminal import console as terminal

        render_diff_text(d, terminal(), top=top)
    exit_if_partial(cap_a, cap_b)
