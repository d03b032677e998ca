"""iolens predict: a step's wall time on storage it never ran on, from its capture and a target calibration."""

from __future__ import annotations

import click

from iolens.output import FORCE_OPTION
from iolens.render.exports import export_options


@click.command(short_help="Predict a step's wall time on other storage, without running it.")
@click.argument("capture", type=click.Path(path_type=str))  # the reader says what is wrong, in one line
@click.option("--on", "targets", metavar="TARGET", multiple=True, required=True,
              help="A directory or lab:NAME to predict for (repeatable).")
@click.option("--cache", type=click.Choice(["warm", "cold"]), default="warm", show_default=True,
              help="Page cache state assumed for the step's input files.")
@click.option("--home", metavar="DIR", help="A directory on the storage the capture was taken on (default: the "
              "capture's working directory, when it still exists); calibrated as the reference.")
@click.option("--recalibrate", is_flag=True, help="Measure the targets again instead of reusing stored "
              "calibrations.")
@FORCE_OPTION
@export_options("predict")
def predict(capture: str, targets: tuple[str, ...], cache: str, home: str | None, recalibrate: bool,
            outputs: dict[str, str | None], force: bool) -> None:
    """Predict a captured step's wall time on other storage, without running it there.

    The step is modelled from the capture (compute time, and I/O by class: small and large reads and writes,
    syncs, metadata, and how much threads overlapped); each target and the capture's home storage are calibrated
    with a small run per class (stored in the results store and reused).  The prediction is the recorded time
    plus, per class, the op count times the change in per-op cost (compute unchanged).  Works without --trace,
    with a wider interval.

    Exit status: 0; 3 when the capture is partial (predicted from what came before the damage, and the
    prediction says so) or cannot be read.

    \b
    Example:
      iolens predict sort.iolens --on /scratch --on lab:gp2
    """
    from iolens.workspace.target import resolve, resolve_each
    from iolens.capture.load import exit_if_partial, load_capture
    from iolens.errors import TargetError, UsageError
    from iolens.output import check_outputs
    from iolens.render import exports
    from iolens.render.terminal import console as terminal
    from iolens.render.whatif_text import predict_words, render_predict
    from iolens.store import ResultsStore
    from iolens.whatif.overhead import for_capture
    from iolens.whatif.plan import has_trace
    from iolens.whatif.calibration import calibrate
    from iolens.whatif.predict import cpu_ratio_now, home_dir, prediction_doc, step_model
    from iolens.whatif.predict import predict as run_predict
    from iolens.whatif.replay import reap_leftovers

    check_outputs(exports.check("predict", outputs), force=force, inputs=[capture])
    cap = load_capture(capture, doing="predicting from")
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
    doc = prediction_doc(model, preds, cache)
    doc.update(predict_words(model, preds, cost_note, cache))  # the words the terminal says beside the numbers
    exports.write("predict", outputs, doc, force=force)
    if not exports.to_stdout(outputs):
        render_predict(terminal(), capture, model, preds, cost_note, cache)
    exit_if_partial(cap)
