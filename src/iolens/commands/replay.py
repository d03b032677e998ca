"""iolens replay: run a captured step's recorded I/O again, on other storage, without the step's data."""

from __future__ import annotations

import json

import click

from iolens.output import FORCE_OPTION


@click.command()
@click.argument("capture", type=click.Path(dir_okay=False, path_type=str))
@click.option("--on", "targets", metavar="TARGET", multiple=True, help="A directory or lab:NAME to replay on "
              "(repeatable).")
@click.option("--speed", type=click.Choice(["recorded", "max"]), default="recorded", show_default=True,
              help="Keep the recorded compute gaps between operations, or drop them (I/O only).")
@click.option("--cache", type=click.Choice(["warm", "cold"]), default="warm", show_default=True,
              help="Page cache state of the laid-out input files when the replay starts.")
@click.option("--fio-iolog", "fio_out", metavar="FILE", help="Also write the data operations as a fio iolog v3.")
@click.option("--json", "json_out", metavar="PATH", help="Write the results as JSON ('-' for stdout).")
@FORCE_OPTION
def replay(capture, targets, speed, cache, fio_out, json_out, force):
    """Replay a `--trace` capture's operations on storage targets.

    Every recorded process and thread runs its operations in recorded order, with the recorded compute gaps,
    process starts and waits, and pipe ordering.  The files the step reads are laid out first with their
    recorded sizes and synthetic content, in a new directory on each target that is removed afterwards.
    Operations on system files (/usr, /proc, ...) stay compute time.

    \b
    Example:
      iolens profile --trace -o sort.iolens -- samtools sort -m 1M in.sam -o out.bam
      iolens replay sort.iolens --on /scratch --on /mnt/nfs
    """
    from iolens.bench.targets import resolve
    from iolens.commands.report import load_capture
    from iolens.errors import UsageError
    from iolens.output import check_outputs, write_output
    from iolens.render.terminal import console as terminal
    from iolens.render.whatif_text import render_replay
    from iolens.store import ResultsStore, StoreError
    from iolens.whatif.overhead import defaults, for_capture
    from iolens.whatif.plan import build_plan, has_trace
    from iolens.whatif.replay import CLASSES, capture_devices, replay_on

    check_outputs({"--json": json_out, "--fio-iolog": fio_out}, force=force)
    if not targets and not fio_out:
        raise UsageError("give at least one --on TARGET (or --fio-iolog FILE)")
    cap = load_capture(capture)
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
    if fio_out:
        from iolens.whatif.fio import iolog, layout_list

        write_output(fio_out, iolog(plan), force=force, opt="--fio-iolog")
        write_output(f"{fio_out}.layout", layout_list(plan), force=True, opt="--fio-iolog")
    resolved = [resolve(t) for t in targets]
    home = capture_devices(cap, plan)
    results = []
    for t in resolved:
        results.append(replay_on(plan, t, speed=speed, cache=cache, home_devs=home))
    doc = {"tag": "iolens-replay", "schema_version": [1, 3], "capture": capture, "speed": speed, "cache": cache,
           "original_wall_s": plan.wall_s, "ops": int(len(plan.ops)), "skipped_ops": plan.skipped_ops,
           "profiler_overhead_s": plan.overhead_s, "unreplayed_cpu_s": plan.unreplayed_cpu_s,
           "recorded_threads": plan.recorded,
           "notes": plan.notes,
           "targets": [{"target": r.target, "wall_s": r.wall_s, "class_s": r.class_s, "ops": r.ops,
                        "errors": r.errors, "dependency_timeouts": r.dependency_timeouts,
                        "same_storage": r.same_storage, "fidelity": r.fidelity, "layout_s": r.layout_s,
                        "setup_s": r.setup_s, "threads": r.threads, "thread_cpu_s": r.thread_cpu}
                       for r in results]}
    if json_out:
        write_output(json_out, (json.dumps(doc, indent=2) + "\n").encode(), force=force, opt="--json")
    if json_out == "-":
        return
    render_replay(terminal(), capture, plan, results, CLASSES)
