"""iolens diff: compare two captures of the same command, per category and per file."""

from __future__ import annotations

import click

from iolens.output import FORCE_OPTION
from iolens.render.exports import export_options


@click.command()
@click.argument("capture_a", type=click.Path(path_type=str))
@click.argument("capture_b", type=click.Path(path_type=str))
@click.option("--set", "overrides", metavar="NAME=VALUE", multiple=True, help="Change a threshold (as in report).")
@click.option("--top", type=click.IntRange(min=1), default=15, show_default=True, help="Files to show.")
@FORCE_OPTION
@export_options("diff", also=("pipeline-diff",))
def diff(capture_a: str, capture_b: str, outputs: dict[str, str | None], overrides: tuple[str, ...], top: int,
         force: bool) -> None:
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

    if os.path.isdir(capture_a) and os.path.isdir(capture_b):
        from iolens.commands._pipeline_dir import diff_dirs

        return diff_dirs(capture_a, capture_b, outputs=outputs, overrides=list(overrides), force=force)
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
    if not exports.to_stdout(outputs):
        from iolens.render.diff_text import render_diff_text
        from iolens.render.terminal import console as terminal

        render_diff_text(d, terminal(), top=top)
    exit_if_partial(cap_a, cap_b)
