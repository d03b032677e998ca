"""iolens predict: a step's wall time on storage it never ran on, from its capture and a target calibration."""

from __future__ import annotations

import click

from iolens.output import FORCE_OPTION


@click.command()
@click.argument("capture", type=click.Path(path_type=str))  # the reader says what is wrong, in one line
@click.option("--on", "targets", metavar="TARGET", multiple=True, required=True,
              help="A directory or lab:NAME to predict for (repeatable).")
@click.option("--cache", type=click.Choice(["warm", "cold"]), default="warm", show_default=True,
              help="Page cache state assumed for the step's input files.")
@click.option("--home", metavar="DIR", help="A directory on the storage the capture was taken on (default: the "
              "capture's working directory, when it still exists); calibrated as the reference.")
@click.option("--recalibrate", is_flag=True, help="Measure the targets again instead of reusing stored "
              "calibrations.")
@click.option("--json", "json_out", metavar="PATH", help="Write the prediction as JSON ('-' for stdout).")
@FORCE_OPTION
def predict(capture, targets, cache, home, recalibrate, json_out, force):
    """Predict a captured step's wall time on other storage, without running it there.

    The step is modelled from the capture (compute time, and I/O by class: small and large reads and writes,
    syncs, metadata, and how much threads overlapped); each target and the capture's home storage are calibrated
    with a small run per class (stored in the results store and reused).  The prediction is the recorded time
    plus, per class, the op count times the change in per-op cost (compute unchanged).  Works without --trace,
    with a wider interval.

    \b
    Example:
      iolens predict sort.iolens --on /scratch --on lab:gp2
    """
    from iolens.bench.targets import resolve, resolve_each
    from iolens.commands.report import load_capture
    from iolens.errors import TargetError, UsageError
    from iolens.output import check_outputs, write_output
    from iolens.render.terminal import console as terminal
    from iolens.render.whatif_text import render_predict
    from iolens.store import ResultsStore
    from iolens.whatif.overhead import for_capture
    from iolens.whatif.plan import has_trace
    from iolens.whatif.predict import calibrate, cpu_ratio_now, home_dir, step_model, to_json
    from iolens.whatif.predict import predict as run_predict
    from iolens.whatif.replay import reap_leftovers

    check_outputs({"--json": json_out}, force=force, inputs=[capture])
    cap = load_capture(capture)
    resolved = resolve_each(targets)
    if home is not None and not home.strip():
        raise UsageError("--home was given an empty name; give a directory on the storage the capture was taken on")
    home_spec = home or home_dir(cap)
    try:
        home_target = resolve(home_spec) if home_spec else None
    except TargetError as err:
        raise TargetError(f"--home {err}" if home else f"the capture's home storage: {err}; give --home DIR") from None
    with ResultsStore(write=True) as store:  # it stores calibrations: a damaged store is refused before they run
        reap_leftovers(resolved + ([home_target] if home_target else [])).say(lambda line: click.echo(line, err=True))
        ev_ns, path_ns, cost_note = (for_capture(cap.meta.get("host"), store, refresh=recalibrate)
                                      if has_trace(cap) else (0, 0, ""))
        model = step_model(cap, ev_ns, path_ns)
        model.cpu_ratio = cpu_ratio_now(cap) or 1.0
        ref = calibrate(home_target, cache=cache, store=store, refresh=recalibrate) if home_target else None
        preds = [run_predict(model, calibrate(t, cache=cache, store=store, refresh=recalibrate), ref, t.spec)
                 for t in resolved]
    if json_out:
        write_output(json_out, to_json(model, preds, cache).encode(), force=force, opt="--json")
    if json_out == "-":
        return
    render_predict(terminal(), capture, model, preds, cost_note, cache)
