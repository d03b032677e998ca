"""Terminal rendering of `replay` and `predict` results: fitted tables (render/terminal.py), prose folded at the
console's width.  The numbers come from iolens.whatif; nothing here computes them.  What is said beside the
numbers (what a column means, notes on a target, what the model cannot see) is made once here
(`replay_words`, `predict_words`) for the terminal and the JSON alike."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from rich.console import Console
from rich.text import Text

from iolens.analysis.breakdown import LABELS
from iolens.names import shown
from iolens.render.compare_text import key_line
from iolens.render.terminal import Col, FitTable, fold

if TYPE_CHECKING:
    from iolens.whatif.plan import Plan
    from iolens.whatif.predict import Prediction, StepModel
    from iolens.whatif.replay import TargetReplay

STYLE: dict[str, Any] = {"show_edge": False, "pad_edge": False, "title_justify": "left", "title_style": "bold"}
TOP_CLASSES = 3  # the classes listed under a prediction, largest first
CPU_RATIO_NOTE = 0.05  # a replay's CPU this much slower or faster than while recording is said
# A model class (whatif/calibration.py) in the report's words (analysis/breakdown.py's LABELS); the metadata kinds
# are "metadata (create)" and so on, and the classes the report has no category for are said here.
AS_REPORT = {"read_small": "small_read", "read_large": "streaming_read", "read_random": "random_read",
             "write_small": "small_write", "write_large": "streaming_write", "sync": "sync", "meta": "metadata"}
OWN_LABELS = {"copy_small": "small copies", "cold_list": "cold directory listings",
              "cold_inode": "cold file lookups", "cold_read": "cold first reads", "none": "none"}
# replay's class columns (whatif/replay.py's CLASSES), said under its table
REPLAY_KEY = {"READ": "time in reads", "WRITE": "time in writes",
              "META": f"time in {LABELS['metadata']} calls (open, close, stat, create, remove, list)",
              "SYNC": "time in syncs (fsync, fdatasync)",
              "STREAM": f"time {LABELS['pipe_wait']} and sockets to or from other processes"}
# What a prediction's reference (Prediction.reference) means, said under the table.
REFERENCES = {"home storage calibration": "each target's calibration is compared with the home storage's (the same "
                                          "operations timed on both): the difference is what the step's I/O would "
                                          "gain or lose there",
              "recorded per-op times": "each target's calibration is compared with the step's own recorded time per "
                                       "operation (no calibration of the home storage): the difference is what the "
                                       "step's I/O would gain or lose there"}


FIDELITY = ("the replay's wall time against the original run's, on the storage the capture was taken on (+3.0%: "
            "the replay took 3% longer); near 0 means the replay reproduces the step")
NO_FIDELITY = ("fidelity (how close the replay's wall time comes to the original run's) needs a target on the storage "
               "the capture was taken on")


def replay_words(results: Sequence[TargetReplay], classes: Sequence[str]) -> dict[str, Any]:
    """What replay says beside its numbers: `terms`, what its class columns and fidelity mean ({name: meaning}),
    and `target_notes`, what is worth knowing about particular targets (a CPU slower or faster than while
    recording, ordering dependencies given up, no target for a fidelity)."""
    notes = []
    for r in results:
        if r.cpu_ratio is not None and abs(r.cpu_ratio - 1) >= CPU_RATIO_NOTE:
            notes.append(f"{r.target}: the CPU ran the step's compute {abs(r.cpu_ratio - 1) * 100:.0f}% "
                         f"{'slower' if r.cpu_ratio > 1 else 'faster'} than while it was recorded (the compute is "
                         "replayed as work, so its time follows)")
        if r.dependency_timeouts:
            notes.append(f"{r.target}: {r.dependency_timeouts} ordering dependencies could not be met from the trace "
                         "and were given up after 10 s")
    if results and not any(r.same_storage for r in results):
        notes.append(NO_FIDELITY)
    return {"terms": {**{c: REPLAY_KEY.get(c, "") for c in classes}, "fidelity": FIDELITY}, "target_notes": notes}


def predict_words(model: StepModel, preds: Sequence[Prediction], cost_note: str, cache: str) -> dict[str, Any]:
    """What predict says beside its numbers: `terms`, what each target was compared with ({reference: meaning});
    `notes`, this CPU against the recording's and the profiler's cost taken out; `cannot_see`, what the model
    cannot see, the page cache state assumed last."""
    notes = []
    if abs(model.cpu_ratio - 1) >= CPU_RATIO_NOTE:
        notes.append(f"this CPU runs the replayer's burn work {abs(model.cpu_ratio - 1) * 100:.0f}% "
                     f"{'slower' if model.cpu_ratio > 1 else 'faster'} now than while the step was recorded: its "
                     f"compute is taken as {model.compute_s * model.cpu_ratio:.3f} s")
    if cost_note:
        notes.append(cost_note)
    refs = dict.fromkeys(p.reference for p in preds)
    return {"terms": {ref: REFERENCES.get(ref, f"each target against: {ref}") for ref in refs}, "notes": notes,
            "cannot_see": [*model.unseen, f"the page cache state: assumed {cache} for the inputs (--cache)"]}


def class_label(cls: str) -> str:
    """A model class as the report names its I/O classes: "small writes", not write_small."""
    if cls in AS_REPORT:
        return LABELS[AS_REPORT[cls]]
    if cls.startswith("meta_"):
        return f"{LABELS['metadata']} ({cls.removeprefix('meta_')})"
    return OWN_LABELS.get(cls, cls.replace("_", " "))


def _s(x: float) -> str:
    return f"{x:.3f} s"


def _prose(con: Console, text: str, indent: int = 0) -> None:
    """A line of prose (a name in it shown as it is), folded at the console's width under its own indent."""
    pad = " " * indent
    for line in fold(pad + shown(text), con.width, pad):
        con.print(Text(line), soft_wrap=True)


def _count(n: int, one: str, many: str | None = None) -> str:
    return f"{n:,} {one if n == 1 else many or one + 's'}"


def render_replay(con: Console, capture: str, plan: Plan, results: Sequence[TargetReplay],
                  classes: Sequence[str]) -> None:
    _prose(con, f"{capture}: {_count(len(plan.ops), 'operation')} in {_count(len(plan.threads), 'thread')} of "
                f"{_count(plan.processes, 'process', 'processes')}; original wall {plan.wall_s:.3f} s "
                f"({plan.skipped_ops:,} ops on system files, seeks and mmaps kept as compute)")
    for n in plan.notes:
        _prose(con, f"note: {n}")
    for c in plan.cautions:
        _prose(con, f"caution: {c}")
    if not results:
        return
    t = FitTable([Col("target", "left", flex="left"), Col("replayed"), *(Col(c, drop=2) for c in classes),
                  Col("fidelity", drop=1)], title="Replayed time (I/O time by class, summed over threads)", **STYLE)
    for r in results:
        t.add_row(r.target, _s(r.wall_s), *(_s(r.class_s[c]) for c in classes),
                  f"{r.fidelity * 100:+.1f}%" if r.fidelity is not None else "-")
    con.print(t)
    words = replay_words(results, classes)
    _prose(con, key_line({c: words["terms"][c] for c in classes}))
    if any(r.fidelity is not None for r in results):
        _prose(con, f"fidelity: {words['terms']['fidelity']}")
    for n in words["target_notes"]:
        _prose(con, n if n == NO_FIDELITY else f"note: {n}")


def render_predict(con: Console, capture: str, model: StepModel, preds: Sequence[Prediction], cost_note: str,
                   cache: str) -> None:
    rec = f" + profiler {model.recording_s:.3f} s" if model.recording_s >= 0.0005 else ""
    rec += f" + steal {model.stolen_s:.3f} s" if model.stolen_s >= 0.0005 else ""
    _prose(con, f"{capture}: wall {model.wall_s:.3f} s = compute {model.compute_s:.3f} s + storage I/O "
                f"{model.io_wall_s:.3f} s{rec}")
    _prose(con, f"({'from the trace' if model.traced else 'from counters, no trace'}; threads overlapped "
                f"{model.overlap:.2f}x)", 2)
    words = predict_words(model, preds, cost_note, cache)
    for n in words["notes"]:
        _prose(con, f"({n})" if n != cost_note else n, 2)
    t = FitTable([Col("target", "left", flex="left"), Col("predicted"),
                  Col(f"{preds[0].level:.0%} interval" if preds else "interval"), Col("I/O share", drop=2),
                  Col("I/O change", drop=1), Col("dominant class", "left")], title="Predicted wall time", **STYLE)
    for p in preds:
        t.add_row(p.target, _s(p.wall_s), f"{p.low_s:.3f}-{p.high_s:.3f} s", f"{p.io_share * 100:.0f}%",
                  f"{round(p.io_delta_s, 3) + 0.0:+.3f} s", class_label(p.dominant))  # + 0.0: never "-0.000"
    con.print(t)
    for p in preds:
        top = sorted(p.class_s.items(), key=lambda kv: -kv[1])[:TOP_CLASSES]
        if top:
            _prose(con, f"{p.target}, largest classes: "
                        + ", ".join(f"{class_label(c)} {_s(sec)}" for c, sec in top), 2)
    for meaning in words["terms"].values():
        _prose(con, meaning)
    for c in model.cautions:
        _prose(con, f"caution: {c}")
    con.print("the model cannot see:")
    for u in words["cannot_see"]:
        _prose(con, f"- {u}", 2)
