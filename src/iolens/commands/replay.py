"""iolens replay: run a captured step's recorded I/O again, on other storage, without the step's data."""

from __future__ import annotations

import click

from iolens.output import FORCE_OPTION
from iolens.render.exports import export_options
from iolens.units import human_bytes

LOUD_LAYOUT = 1 << 30  # a layout this large is announced before it is written


@click.command()
@click.argument("capture", type=click.Path(path_type=str))  # the reader says what is wrong, in one line
@click.option("--on", "targets", metavar="TARGET", multiple=True, help="A directory or lab:NAME to replay on "
              "(repeatable).")
@click.option("--speed", type=click.Choice(["recorded", "max"]), default="recorded", show_default=True,
              help="Keep the recorded compute gaps between operations, or drop them (I/O only).")
@click.option("--cache", type=click.Choice(["warm", "cold"]), default="warm", show_default=True,
              help="Page cache state when the replay starts; cold drops the whole page cache after the layout "
              "(root; else only the laid-out files' pages).")
@FORCE_OPTION
@export_options("replay")
def replay(capture: str, targets: tuple[str, ...], speed: str, cache: str, outputs: dict[str, str | None],
           force: bool) -> None:
    """Replay a `--trace` capture's operations on storage targets.

    Every recorded process and thread runs its operations in recorded order, with the recorded compute gaps,
    process starts and waits, and pipe ordering.  The files the step reads are laid out first with their
    recorded sizes and synthetic content, in a new directory on each target that is removed afterwards.
    Operations on system files (/usr, /proc, ...) stay compute time.

    Exit status: 0; 3 when the capture is partial (what came before the damage is replayed, without a
    fidelity) or cannot be read; 4 when the replay itself failed on a target.

    \b
    Example:
      iolens profile --trace -o sort.iolens -- samtools sort -m 1M in.sam -o out.bam
      iolens replay sort.iolens --on /scratch --on /mnt/nfs
    """
    from iolens.workspace.target import resolve_each
    from iolens.capture.load import exit_if_partial, load_capture
    from iolens.errors import CaptureError, TargetError, UsageError
    from iolens.output import check_outputs
    from iolens.render import exports
    from iolens.render.terminal import console as terminal
    from iolens.render.whatif_text import render_replay, replay_words
    from iolens.store import ResultsStore, StoreError
    from iolens.whatif.overhead import defaults, for_capture
    from iolens.whatif.plan import build_plan, has_trace
    from iolens.whatif.replay import CLASSES, ReplayError, capture_devices, preflight, reap_leftovers, replay_on

    fio_out = outputs["fio-iolog"]
    if fio_out == "-":
        raise UsageError("--fio-iolog needs a file name: it also writes FILE.layout, the files to lay out first")
    check_outputs(exports.check("replay", outputs), force=force, inputs=[capture])
    if not targets and not fio_out:
        raise UsageError("give at least one --on TARGET (or --fio-iolog FILE)")
    resolved = resolve_each(targets)  # a bad target is said before the capture is read
    cap = load_capture(capture, doing="replaying")
    if not has_trace(cap) and cap.problems:  # partial: status 3, as every command that reads it gives
        lost = ("it was recorded without --trace" if cap.meta.get("trace") is False
                else "no trace is left before the damage")
        raise CaptureError(f"{capture}: {lost}, so there is nothing to replay; profile the step again with --trace "
                           "to replay it")
    if not has_trace(cap) and cap.meta.get("trace"):
        if not cap.problems and all(p.finalized for p in cap.processes):
            raise UsageError(f"{capture}: the step made no file operation the trace records (no open, read, write "
                             "or stat of a file): there is nothing to replay")
        raise UsageError(f"{capture} was recorded with --trace, but no trace is left in it (damaged, cut short, or "
                         "the step was stopped before it was saved); profile the step again to replay it")
    if has_trace(cap):
        try:
            with ResultsStore() as store:
                ev_ns, path_ns, cost_note = for_capture(cap.meta.get("host"), store)
        except StoreError as err:  # a replay needs no store: the defaults, and why
            ev_ns, path_ns, cost_note = defaults(str(err))
        plan = build_plan(cap, event_overhead_ns=ev_ns, path_overhead_ns=path_ns)
        plan.notes.append(cost_note)
    else:
        plan = build_plan(cap)  # the one-line error for a capture without --trace
    exports.write("replay", {"fio-iolog": fio_out}, exports.Exported(None, plan=plan), force=force)  # before the runs
    home = capture_devices(cap, plan)
    if cap.problems:  # a partial capture: what came before the cut, against the whole run's wall time
        plan.notes.append("the capture is partial: only what came before the damage is replayed, so no fidelity "
                          "is given")
    if speed == "max":  # the I/O alone, against the whole step: a fidelity would only say how much was compute
        plan.notes.append("--speed max drops the compute gaps, so no fidelity is given")
    reap_leftovers(resolved).say(lambda line: click.echo(line, err=True))  # what killed runs left, and its space
    for t in resolved:  # every target is checked before the first replay starts
        preflight(plan, t)
    results, failed = [], []
    for t in resolved:
        if plan.layout_bytes >= LOUD_LAYOUT:  # minutes of writing with nothing on the screen look like a hang
            click.echo(f"iolens: laying out {human_bytes(plan.layout_bytes)} of the step's input files on {t.spec} "
                       "(their recorded sizes) before the replay", err=True)
        try:
            results.append(replay_on(plan, t, speed=speed, cache=cache, home_devs=home))
        except (TargetError, ReplayError) as err:  # the other targets' results are still worth having
            if len(resolved) == 1:
                raise
            failed.append({"target": t.spec, "error": str(err)})
    for r in results if cap.problems or speed == "max" else []:
        r.fidelity = None
    if any(r.cold == "fadvise" for r in results):
        plan.notes.append("--cache cold without root dropped the laid-out files' pages only: their inodes and "
                          "directories stayed cached, so a step that walks many files replays faster than its cold "
                          "runs; replay as root to drop the whole page cache")
    doc = {"tag": "iolens-replay", "schema_version": [1, 7], "capture": capture, "speed": speed, "cache": cache,
           "original_wall_s": plan.wall_s, "ops": int(len(plan.ops)), "skipped_ops": plan.skipped_ops,
           "profiler_overhead_s": plan.overhead_s, "unreplayed_cpu_s": plan.unreplayed_cpu_s,
           "recorded_threads": plan.recorded,
           "notes": plan.notes, "cautions": plan.cautions,
           "targets": [{"target": r.target, "wall_s": r.wall_s, "class_s": r.class_s, "ops": r.ops,
                        "errors": r.errors, "first_error": r.first_error,
                        "dependency_timeouts": r.dependency_timeouts,
                        "same_storage": r.same_storage, "fidelity": r.fidelity, "layout_s": r.layout_s,
                        "setup_s": r.setup_s, "threads": r.threads, "thread_cpu_s": r.thread_cpu,
                        "cpu_ratio": r.cpu_ratio, "cold": r.cold}
                       for r in results], "failed": failed, **replay_words(results, CLASSES)}
    exports.write("replay", {"json": outputs["json"]}, exports.Exported(doc, plan=plan), force=force)
    if not exports.to_stdout(outputs):
        render_replay(terminal(), capture, plan, results, CLASSES)
    problems = [f"{f['target']}: {f['error']}" for f in failed] + [
        f"{r.target}: {r.errors:,} of the replayed operations failed (first: {r.first_error or 'unknown'}), so its "
        "times are not the step's; free space or permissions on the target, then replay again"
        for r in results if r.errors]
    if problems:
        raise ReplayError("; ".join(problems))
    exit_if_partial(cap)
