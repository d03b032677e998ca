"""Replay and predict on the held-out corpus (whatif_corpus.toml): steps they were never tuned on.

Each step of one half of the corpus (--half, default the evaluation half: accuracy is reported on it only; the
tuning half is for tuning) is profiled (--trace) on the home storage (a directory on the root disk), warm, with
its inputs made there synthetically (each step's at its own multiple of --scale, the corpus file's `scale`, so
that it takes about 0.3-3 s; steps of one multiple share a work directory).  Then, on every target (the home
storage and, with --lab, lab targets this script brings up in a temporary directory and takes down at the end:
default a throttled and bursting gp2, a throttled magnetic disk and a remote sshfs share, `netfs`) and in each
cache state (--caches: warm, the inputs
and programs read back before each run; cold, the page cache dropped), it runs the step for real and replays its
capture, --runs times each, interleaved (the order rotated by one each round), and predicts it from the target's
calibration in that cache state against the home storage's.  Per cell it prints the real runs' median and range,
the replay's median and error, the prediction with its interval (at its stated coverage, predict.INTERVAL_LEVEL)
and whether the interval holds the real median; then the median absolute errors, and the intervals' empirical
coverage against their stated level.  The load average at the start and the end is printed: figures taken on a
loaded machine are not a quiet machine's.

    python benchmarks/whatif_corpus.py [--half evaluation|tuning] [--steps a,b] [--scale 0.5] [--runs 3]
                                       [--caches warm,cold] [--lab [--lab-targets gp2,magnetic,netfs]]
                                       [--short] [--json FILE] [--rescore FILE]

--short: the first three steps of the half (or --steps), the home storage only, one real run and one replay per
cell, scale 0.05, no lab: a check that the whole path runs (the test suite runs it), not a measurement.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from iolens.workspace.target import resolve
from iolens.capture.record import Recording
from iolens.pagecache import drop_caches
from iolens.whatif.overhead import measure as profiler_cost
from iolens.whatif.plan import build_plan
from iolens.whatif.calibration import calibrate
from iolens.whatif.predict import INTERVAL_LEVEL, StepModel, cpu_ratio_now, predict, step_model
from iolens.whatif.replay import replay_on

sys.path.insert(0, str(Path(__file__).resolve().parent))
import whatif_steps  # noqa: E402
from whatif_accuracy import cell_order, hold_warm, lab_down, lab_up, median_index, pct, settle, warm_step  # noqa: E402

LAB_TARGETS = "gp2,magnetic,netfs"  # throttled and bursting (credits), throttled, remote
SHORT_STEPS = 3
# The default --scale.  0.25 left many cells at 0.1-0.4 s (process starts and the machine's noise); 0.75 made the
# tuning half's inputs and captures alone take 8 minutes and its rounds over 6 minutes each at load 5 (a cold find
# over 36,000 files: 13 s), past the 20-minute budget; at 0.5 the tuning half took 13 minutes at load 2-4.
DEFAULT_SCALE = 0.5


@dataclass
class Cell:
    step: str
    target: str
    cache: str
    real_s: list[float] = field(default_factory=list)
    replay_s: list[float] = field(default_factory=list)
    predict_s: float = float("nan")
    low_s: float = float("nan")
    high_s: float = float("nan")
    caution: bool = False  # replay or predict cautioned that the step's shape is one the corpus covered poorly
    load: list[float] = field(default_factory=list)  # the 1-minute load average after each round's runs

    def summary(self) -> dict[str, Any]:
        real = statistics.median(self.real_s) if self.real_s else float("nan")
        rep = statistics.median(self.replay_s) if self.replay_s else float("nan")
        return {"step": self.step, "target": self.target, "cache": self.cache, "real_median_s": real,
                "real_min_s": min(self.real_s, default=float("nan")),
                "real_max_s": max(self.real_s, default=float("nan")), "replay_s": rep,
                "replay_error": pct(rep, real) / 100, "predict_s": self.predict_s, "low_s": self.low_s,
                "high_s": self.high_s, "predict_error": pct(self.predict_s, real) / 100,
                "inside": bool(self.low_s <= real <= self.high_s), "caution": self.caution, "real_runs": self.real_s,
                "replays": self.replay_s, "load": statistics.median(self.load) if self.load else float("nan")}


def clean(work: Path, keep: set[str]) -> None:
    """Removes everything in `work` but the step's inputs: what earlier runs (or a failed one) left."""
    for p in work.iterdir():
        if p.name in keep:
            continue
        if p.is_dir() and not p.is_symlink():
            shutil.rmtree(p)
        else:
            p.unlink()


def ready(work: Path, argv: list[str], keep: set[str], cache: str) -> None:
    """The state a timed run starts from: outputs removed, writeback done, and the inputs and programs warm
    (warm) or the whole page cache dropped (cold)."""
    clean(work, keep)
    if cache == "warm":
        warm_step(work, argv)
        settle()
    elif not drop_caches():
        raise SystemExit("--caches cold needs root (to drop the page cache)")


def real_run(work: Path, argv: list[str], keep: set[str], cache: str) -> float:
    ready(work, argv, keep, cache)
    t = time.perf_counter()
    r = subprocess.run(argv, cwd=work, capture_output=True)
    wall = time.perf_counter() - t
    if r.returncode:
        raise SystemExit(f"{' '.join(argv)[:80]} failed in {work}: {r.stderr.decode(errors='replace').strip()[:300]}")
    return wall


def profile(work: Path, argv: list[str], keep: set[str], n: int) -> Any:
    """`n` warm captures on the home storage; the one of median wall time."""
    caps = []
    for _ in range(n):
        ready(work, argv, keep, "warm")
        r = Recording(argv, trace=True, cwd=str(work), stdio=subprocess.DEVNULL).run()
        if r.status:
            raise SystemExit(f"{' '.join(argv)[:80]} failed under the profiler (status {r.status}) in {work}")
        caps.append(r.capture)
    return caps[median_index([float(c.meta["wall_s"]) for c in caps])]


def report(cells: list[Cell], out: Any = sys.stdout) -> dict[str, Any]:
    """Prints every cell and the summary; returns both as plain data."""
    rows = [c.summary() for c in cells]
    print(f"\n{'step':<16} {'target':<9} {'cache':<5} {'real median [range]':>26} {'replay':>8} {'err':>7} "
          f"{'predict [' + format(INTERVAL_LEVEL, '.0%') + ' interval]':>30} {'err':>7} {'in':>3}", file=out)
    for r in rows:
        real = f"{r['real_median_s']:.3f} [{r['real_min_s']:.3f}, {r['real_max_s']:.3f}]"
        pred = f"{r['predict_s']:.3f} [{r['low_s']:.3f}, {r['high_s']:.3f}]"
        print(f"{r['step']:<16} {r['target']:<9} {r['cache']:<5} {real:>26} {r['replay_s']:>7.3f}s "
              f"{r['replay_error']:>+7.1%} {pred:>30} {r['predict_error']:>+7.1%} {'yes' if r['inside'] else 'no':>3}"
              f"{' (caution)' if r['caution'] else ''}",
              file=out)
    rep = [abs(r["replay_error"]) for r in rows if r["replay_error"] == r["replay_error"]]
    prd = [abs(r["predict_error"]) for r in rows if r["predict_error"] == r["predict_error"]]
    coverage = sum(r["inside"] for r in rows) / len(rows) if rows else float("nan")
    plain = [r for r in rows if not r["caution"]]
    marked = [r for r in rows if r["caution"]]

    def med(rs: list[dict[str, Any]], key: str) -> float:
        return statistics.median(abs(r[key]) for r in rs) if rs else float("nan")
    summary = {"cells": len(rows),
               "replay_median_abs_error": statistics.median(rep) if rep else float("nan"),
               "replay_worst_abs_error": max(rep, default=float("nan")),
               "predict_median_abs_error": statistics.median(prd) if prd else float("nan"),
               "predict_worst_abs_error": max(prd, default=float("nan")),
               "interval_level": INTERVAL_LEVEL, "interval_coverage": coverage,
               "replay_median_abs_error_uncautioned": med(plain, "replay_error"),
               "predict_median_abs_error_uncautioned": med(plain, "predict_error"),
               "replay_median_abs_error_cautioned": med(marked, "replay_error"),
               "predict_median_abs_error_cautioned": med(marked, "predict_error"), "cautioned_cells": len(marked)}
    print(f"replay: median absolute error {summary['replay_median_abs_error']:.1%} (worst "
          f"{summary['replay_worst_abs_error']:.1%}); predict: {summary['predict_median_abs_error']:.1%} (worst "
          f"{summary['predict_worst_abs_error']:.1%}); {len(rows)} cells", file=out)
    print(f"cells of steps with a caution: {summary['cautioned_cells']}, median absolute error replay "
          f"{summary['replay_median_abs_error_cautioned']:.1%}, predict "
          f"{summary['predict_median_abs_error_cautioned']:.1%}"
          f"; without a caution: replay {summary['replay_median_abs_error_uncautioned']:.1%}, predict "
          f"{summary['predict_median_abs_error_uncautioned']:.1%}", file=out)
    lo, hi = band_for(rows)
    print(f"coverage: the {INTERVAL_LEVEL:.0%} intervals held the real median in {coverage:.0%} of the cells "
          f"({sum(r['inside'] for r in rows)} of {len(rows)}); the band of real / predicted that holds "
          f"{INTERVAL_LEVEL:.0%} of these cells: ({lo:.2f}, {hi:.2f}) (predict.INTERVAL_RATIO; fit it on the tuning "
          "half only)", file=out)
    summary["band"] = [lo, hi]
    return {"cells": rows, "summary": summary}


def run_cells(corpus: whatif_steps.Corpus, names: list[str], labels: list[str], targets: list[Any],
              works: dict[tuple[str, int], Path], keep: set[str], caches: list[str], runs: int, plans: dict[str, Any],
              models: dict[str, Any], t0: float) -> tuple[list[Cell], dict[tuple[int, str], dict[str, float]]]:
    """Every cell (step, target, cache state): its prediction from the target's calibration in that cache state
    against the home storage's (targets[0]) warm, the state the captures were taken in (against the home storage
    cold, a cold cell on the home storage was predicted as the warm capture itself), then `runs` real runs and
    replays, interleaved round by round (a cell's two in an order rotated each round), each step in its work
    directory on that target (works[(step, target index)])."""
    cals = {(i, c): calibrate(t, cache=c, refresh=True) for i, t in enumerate(targets) for c in caches}
    grid = {(n, i, c): Cell(n, labels[i], c) for n in names for i in range(len(targets)) for c in caches}
    for (n, i, c), cell in grid.items():  # predicted before the runs: the calibrations are all it needs
        cell.caution = bool(plans[n].cautions or models[n].cautions)
        predicted(cell, models[n], cals[(i, c)], cals[(0, "warm")] if (0, "warm") in cals else cals[(0, c)])
    for k in range(runs):
        print(f"round {k + 1} of {runs} ({time.time() - t0:.0f} s)", file=sys.stderr, flush=True)
        for (n, i, c), cell in grid.items():
            s, w = corpus.steps[n], works[(n, i)]

            def real(cell: Cell = cell, s: Any = s, w: Path = w, c: str = c) -> None:
                cell.real_s.append(real_run(w, s.argv, keep, c))

            def rep(cell: Cell = cell, n: str = n, w: Path = w, i: int = i, c: str = c) -> None:
                clean(w, keep)
                settle()
                cell.replay_s.append(replay_on(plans[n], targets[i], cache=c).wall_s)

            for run in cell_order([real, rep], k):
                run()
            cell.load.append(os.getloadavg()[0])
            print(f"  {n} on {labels[i]}, {c}: real {cell.real_s[-1]:.3f} s, replay {cell.replay_s[-1]:.3f} s, "
                  f"predicted {cell.predict_s:.3f} s [{cell.low_s:.3f}, {cell.high_s:.3f}]", file=sys.stderr,
                  flush=True)
    return list(grid.values()), cals


def predicted(cell: Cell, model: Any, cal: dict[str, float], home: dict[str, float]) -> None:
    p = predict(model, cal, home, cell.target)
    cell.predict_s, cell.low_s, cell.high_s = p.wall_s, p.low_s, p.high_s


def rescore(path: str) -> dict[str, Any]:
    """The cells of an earlier run's JSON predicted again by this code from the models and calibrations it kept
    (the real runs and replays as measured): an interval fitted on the tuning half, applied to an evaluation run
    taken meanwhile."""
    doc = json.loads(Path(path).read_text())
    models = {n: StepModel(**m) for n, m in doc["models"].items()}
    cals = {tuple(k.split("|", 1)): v for k, v in doc["calibrations"].items()}
    labels = doc["meta"]["targets"]
    cells = []
    for r in doc["cells"]:
        cell = Cell(r["step"], r["target"], r["cache"], r["real_runs"], r["replays"], caution=r["caution"])
        predicted(cell, models[cell.step], cals[(str(labels.index(cell.target)), cell.cache)],
                  cals.get(("0", "warm"), cals[("0", cell.cache)]))
        cells.append(cell)
    print(f"rescored {path} (measured at load {doc['meta']['load_start'][0]:.1f} at the start, "
          f"{doc['meta']['load_end'][0]:.1f} at the end)")
    out = report(cells)
    out["meta"] = doc["meta"]
    return out


def band_for(rows: list[dict[str, Any]], level: float = INTERVAL_LEVEL) -> tuple[float, float]:
    """The band of real median over predicted time (as predict.INTERVAL_RATIO) that holds `level` of these cells: the
    (1 - level) / 2 and (1 + level) / 2 quantiles of each cell's ratio.  Fitted on the tuning half only."""
    import numpy as np

    ratio = [r["real_median_s"] / r["predict_s"] for r in rows
             if r["predict_s"] > 0 and r["real_median_s"] == r["real_median_s"]]
    if not ratio:
        return float("nan"), float("nan")
    return float(np.quantile(ratio, (1 - level) / 2)), float(np.quantile(ratio, (1 + level) / 2))


def main(argv: list[str] | None = None) -> dict[str, Any]:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--half", choices=["evaluation", "tuning"], default="evaluation")
    ap.add_argument("--steps", default=None, help="comma-separated steps of the half (default: all of it)")
    ap.add_argument("--scale", type=float, default=None, help="input sizes against the corpus file's (default "
                    f"{DEFAULT_SCALE}; --short 0.05)")
    ap.add_argument("--runs", type=int, default=None, help="real runs and replays per cell (default 3; --short 1)")
    ap.add_argument("--profiles", type=int, default=None, help="captures per step, the median kept (default 3; "
                    "--short 1)")
    ap.add_argument("--caches", default="warm,cold")
    ap.add_argument("--lab", action="store_true", help="also the lab targets, brought up here (root)")
    ap.add_argument("--lab-targets", default=LAB_TARGETS)
    ap.add_argument("--short", action="store_true", help="a check that the path runs: three steps, home only, one "
                    "run per cell, scale 0.05")
    ap.add_argument("--home", default="/var/tmp", help="a directory on the home storage (default: the root disk's "
                    "/var/tmp)")
    ap.add_argument("--json", default=None, help="also write the cells and the summary as JSON to FILE")
    ap.add_argument("--rescore", metavar="FILE", help="predict the cells of an earlier run's --json again with this "
                    "code (its measurements as they were), and report them")
    a = ap.parse_args(argv)
    if a.rescore:
        return rescore(a.rescore)
    corpus = whatif_steps.load()
    half = corpus.half(a.half)
    names = a.steps.split(",") if a.steps else half[:SHORT_STEPS] if a.short else half
    if bad := [n for n in names if n not in half]:
        ap.error(f"not in the {a.half} half: {', '.join(bad)} (the {a.half} half: {', '.join(half)})")
    names = [n for n in names if all(shutil.which(w) for w in corpus.steps[n].argv[:1])]
    scale = a.scale if a.scale is not None else 0.05 if a.short else DEFAULT_SCALE
    # each step's inputs at its own multiple of the scale (the file's `scale`: so that it lands in 0.3-3 s); the
    # short form, a check that the path runs, makes every step's at the one small scale
    factor = {n: 1.0 if a.short else corpus.steps[n].scale for n in names}
    runs = a.runs if a.runs is not None else 1 if a.short else 3
    nprof = a.profiles if a.profiles is not None else 1 if a.short else 3
    caches = a.caches.split(",")
    if a.short and a.lab:
        ap.error("--short runs on the home storage only")
    load0, t0 = os.getloadavg(), time.time()
    print(f"corpus split of {corpus.date}: the {a.half} half, steps {', '.join(names)}; scale {scale} (times "
          f"{', '.join(f'{f:g} for {n}' for n, f in factor.items() if f != 1) or 'nothing'}), {runs} runs per cell, "
          f"caches {', '.join(caches)}")
    print(f"load average at start {load0[0]:.1f} {load0[1]:.1f} {load0[2]:.1f} on {os.cpu_count()} CPUs")
    # SIGTERM between replays (a real run, a calibration) ends the run through the finally below, which takes the lab
    # down: by default it killed the interpreter and left the lab's disks and mounts up
    was = signal.signal(signal.SIGTERM, lambda signum, frame: sys.exit(128 + signum))
    stack = contextlib.ExitStack()
    base = Path(tempfile.mkdtemp(prefix="whatif-corpus-", dir=a.home))
    labels, specs, lab_dir = ["home"], [str(base)], None
    works: dict[tuple[str, int], Path] = {}
    cells: list[Cell] = []
    try:
        hold_warm(stack)
        if a.lab:
            lab_dir, up = lab_up(a.lab_targets.split(","))
            labels += up
            specs += [f"lab:{n}" for n in up]
        targets = [resolve(s) for s in specs]
        inputs = sorted({i for n in names for i in corpus.steps[n].inputs})
        keep = whatif_steps.kept(corpus, inputs)  # every step's inputs stay: steps of one scale share a directory
        for i, t in enumerate(targets):
            assert t.path is not None
            for f in sorted(set(factor.values())):
                w = Path(tempfile.mkdtemp(prefix="whatif-work-", dir=t.path))
                works |= {(n, i): w for n in names if factor[n] == f}
                whatif_steps.prepare(corpus, w, sorted({x for n in names if factor[n] == f
                                                        for x in corpus.steps[n].inputs}), scale * f)
        # one untimed run of every step on every target first, as whatif_accuracy.py's --warmup: the first run after
        # the inputs were made can pay what no later one does, and the capture, taken first, paid it: find-xargs
        # captured in 4.4 s against real runs warm of 0.4-1.2 s (tuning half, load 4-8)
        if not a.short:
            for (n, i), w in works.items():
                real_run(w, corpus.steps[n].argv, keep, "warm")
        cost = profiler_cost(pairs=3 if a.short else 9)
        print(f"profiler cost: {cost.event_ns:.0f} ns an event, {cost.path_ns:.0f} ns one naming a path")
        plans, models, capture_load = {}, {}, {}
        for n in names:
            s = corpus.steps[n]
            # and the machine's minute while it was captured: replays and real runs come in later ones
            cap, capture_load[n] = profile(works[(n, 0)], s.argv, keep, nprof), os.getloadavg()[0]
            plans[n] = build_plan(cap, event_overhead_ns=int(cost.event_ns), path_overhead_ns=int(cost.path_ns))
            models[n] = step_model(cap, int(cost.event_ns), int(cost.path_ns))
            models[n].cpu_ratio = cpu_ratio_now(cap) or 1.0
            print(f"{n}: captured {float(cap.meta['wall_s']):.3f} s ({s.shape})")
            for c in plans[n].cautions:
                print(f"{n}: caution: {c}")
        cells, cals = run_cells(corpus, names, labels, targets, works, keep, caches, runs, plans, models, t0)
        doc = report(cells)
        doc["models"] = {n: asdict(m) for n, m in models.items()}
        doc["calibrations"] = {f"{i}|{c}": v for (i, c), v in cals.items()}
        doc["meta"] = {"half": a.half, "split_date": corpus.date, "steps": names, "scale": scale,
                       "step_scales": factor, "runs": runs,
                       "caches": caches, "targets": labels, "load_start": list(load0), "capture_load": capture_load}
    finally:
        for w in set(works.values()):
            shutil.rmtree(w, ignore_errors=True)
        shutil.rmtree(base, ignore_errors=True)
        if lab_dir is not None:
            lab_down(lab_dir)
        stack.close()
        signal.signal(signal.SIGTERM, was)
        load1 = os.getloadavg()
        print(f"load average at end {load1[0]:.1f} {load1[1]:.1f} {load1[2]:.1f}; the run took "
              f"{time.time() - t0:.0f} s")
    doc["meta"]["load_end"] = list(load1)
    if a.json:
        Path(a.json).write_text(json.dumps(doc, indent=1, default=lambda x: asdict(x)))
    return doc


if __name__ == "__main__":
    main()
