"""How close replay and predict come to real runs: step x target -> actual, replayed, predicted, error %.

First every step runs once, untimed, on every target (--warmup), so no capture pays a first run's costs (caches,
a new directory's metadata).  Then each step is profiled --profiles times (with --trace, default 3) on tmpfs
(--home), round-robin over the steps, each capture paired with a plain run, and the capture whose wall time is the
median is kept (one capture taken at a bad moment would spoil every cell of its step; the walls of all, and of the
plain runs alongside, are printed, and the kept one's steal: the hypervisor's share of the CPU time asked for,
which the plan takes out; the steal over the rounds is printed after them); what one involuntary context switch
cost the steps is measured (run delay per switch, from /proc) and given to the replay.  The capture is then
replayed and predicted on every target, and the step run for real there.
Real runs and replays are interleaved (run i of every step and target, then replay i, ...), so load from other work
on the machine falls on both alike.  Predictions take as reference the capture's storage calibrated, as every
target, after the real runs.  Per cell it prints the actual median with a 95% confidence interval of the median
(distribution-free, from order statistics), the replayed median (compute gaps burnt as CPU for their on-CPU share;
and, for comparison, all slept), the predicted time, their errors, and whether each is inside the actual runs' own
spread; then the mean absolute error of each mode, where each replay's time went against the recording
(per-thread busy, gaps, CPU burnt, late, waits), the fidelity of each step (the replay on the capture's own
storage against the original profiled run, and how far the machine's speed drifted between the captures and the
rounds), what a replay of a million operations costs, and the load average
at the start and the end.  With --capture-each-round every round also profiles each step again on the home target
and replays and predicts that capture on every target, beside the kept one: the machine's speed moves between the
captures and the rounds (the drift above), and captures from the same minutes as the real runs show how much of
an error is that drift.  Cache state: warm.  The step's inputs and programs are read back before every capture
and real run, as the replay's freshly laid-out files are warm.  Where the kernel pages out idle memory by itself
(DAMON, which cloud VMs run), that reclaim is turned off for the run and on again at the end (root; printed at
the start): it also takes the filesystems' own metadata (block bitmaps, inode tables), which nothing can read
back, so a real run on a throttled disk paid for reading it at 100 IOPS and the replay right after it did not
(samtools sort on magnetic, by hand: 2.6-3.3 s real with 0.1-0.7 MB read from the disk, against 2.45-2.58 s and
nothing read with the reclaim off).

Targets: a directory on tmpfs, one on the root disk, and with --lab the lab targets (--lab-targets), brought up by
this script in a temporary lab directory (`iolens lab up --dir D --only ...`, root needed) and taken down at the end.

    python benchmarks/whatif_accuracy.py [--runs 6] [--profiles 3] [--scale 1] [--steps a,b] [--warmup 1]
                                         [--home rootdisk|tmpfs] [--lab [--lab-targets a,b]]
                                         [--capture-each-round] [--no-sleep-replay] [--cost-ops N]
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import math
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any


from iolens.workspace.target import resolve
from iolens.capture.record import Recording
from iolens.pagecache import proactive_reclaim, reclaim_paused, warm
from iolens.whatif.overhead import measure as profiler_cost
from iolens.native import probe_cpu
from iolens.whatif.engine import recorded_block_ns
from iolens.whatif.plan import build_plan
from iolens.whatif.calibration import calibrate
from iolens.whatif.predict import predict, step_model
from iolens.whatif.replay import replay_on
from iolens.sysinfo import cpu_delta, cpu_seconds, device_io, steal_share
from iolens.whatif.timeline import PREEMPT_S, breakdown

sys.path.insert(0, str(Path(__file__).resolve().parent))
from replay_cost import measure as replay_cost  # noqa: E402
from replay_cost import report as report_cost  # noqa: E402
import whatif_steps  # noqa: E402

LAB_TARGETS = "magnetic,st1,gp2,s3,s3-remote,btrfs-zstd"
IOLENS = [sys.executable, "-m", "iolens"]  # this interpreter's iolens, whatever is on PATH

CORPUS = whatif_steps.load()  # the steps are the held-out corpus's six marked `accuracy`: one definition
STEPS = {n: s.argv for n, s in CORPUS.steps.items() if s.accuracy}
OUTPUTS = sorted({o for s in CORPUS.steps.values() if s.accuracy for o in s.outputs})


def prepare(work: Path, scale: float) -> None:
    whatif_steps.prepare(CORPUS, work, sorted({i for s in CORPUS.steps.values() if s.accuracy for i in s.inputs}),
                         scale)


def clean(work: Path) -> None:
    for name in OUTPUTS:
        p = work / name
        if p.is_dir():
            shutil.rmtree(p)
        elif p.exists():
            p.unlink()


@functools.cache
def programs(argv: tuple[str, ...]) -> list[str]:
    """The executables a step runs (for `sh -c`, every word of the script that names one) and their shared
    libraries, as `ldd` lists them (once per step)."""
    words = [argv[0], *re.findall(r"[\w.+-]+", argv[-1])] if argv[0] == "sh" else argv[:1]
    exes = sorted({p for w in words if (p := shutil.which(w))})
    libs: set[str] = set()
    for exe in exes:
        out = subprocess.run(["ldd", exe], capture_output=True, text=True).stdout
        libs.update(m.group(1) for m in re.finditer(r"(/\S+) \(0x", out))
    return exes + sorted(libs)


def warm_step(work: Path, argv: list[str]) -> None:
    """Brings the step's inputs (every file under `work`, and its inodes) and programs back into the page cache,
    as the replay's freshly laid-out files are: where the kernel pages out idle memory by itself (DAMON) and it
    cannot be turned off (hold_warm), inputs last read a round ago are partly gone, and the real run would read
    them from the storage (and a throttled disk's 100 IOPS) while the replay does not."""
    warm([str(work), *programs(tuple(argv))])


def settle() -> None:
    """Writes back what earlier runs left dirty (sync(2) waits for it), before every timed real run and replay: a
    real run's outputs stay until the next clean and are written back meanwhile, a replay's directory is removed
    at once and its dirty pages dropped, so without this the real runs on a throttled disk paid for their
    predecessors' writeback and the replays did not (gzip on magnetic at --scale 1: 0.96 s real against 0.35 s
    run alone)."""
    os.sync()


def ready(work: Path, argv: list[str]) -> None:
    """The state every timed run starts from: the outputs removed, inputs and programs warm, writeback done."""
    clean(work)
    warm_step(work, argv)
    settle()


def real_run(work: Path, argv: list[str], io: list | None = None) -> float:
    """One timed real run from the ready state; with `io`, appends (wall, bytes read, bytes written) of the work
    directory's block device during it (None on tmpfs and FUSE)."""
    ready(work, argv)
    d0 = device_io(work)
    t = time.perf_counter()
    subprocess.run(argv, cwd=work, check=True, capture_output=True)
    wall = time.perf_counter() - t
    d1 = device_io(work)
    if io is not None:
        io.append((wall, d1[0] - d0[0], d1[1] - d0[1]) if d0 and d1 else (wall, None, None))
    return wall


def run_round(cells: Cells, steps: dict[str, list[str]], places: list, plans: dict, sleeps: dict | None,
              own: Callable[[Any], tuple[Any, Any]] | None = None, k: int = 0) -> None:
    """Round `k`: each step on each (name, work directory, target), run for real, replayed and (with `sleeps`)
    replayed with every gap slept, interleaved, each from settled writeback.  With `own` (a capture -> its plan
    and model), the step is first profiled again on the home target and that capture replayed too.  A cell's runs
    go in an order rotated by one each round (cell_order), so that what one run leaves behind for the next on the
    same storage is paid by each kind of run alike."""
    for step, argv in steps.items():
        mine = None
        probe = probe_cpu()  # the CPU's speed this round, for the predictions (as `iolens predict` probes it)
        cells.cpu.setdefault(step, []).append(probe[1] if probe else float("nan"))
        if own is not None:
            w = places[cells.home][1]
            ready(w, argv)
            cap = Recording(argv, trace=True, cwd=str(w), stdio=subprocess.DEVNULL).run().capture
            mine, model = own(cap)
            model.cpu_ratio = cpu_ratio([cells.cpu[step][-1]], cap)
            cells.own_models.setdefault(step, []).append(model)
        for n, w, t in places:
            if (step, n) in cells.skip:
                continue

            def real(step: str = step, n: str = n, w: Path = w) -> None:
                cells.actual.setdefault((step, n), []).append(
                    real_run(w, argv, cells.real_io.setdefault((step, n), [])))

            def replay(into: dict, plan: Any, step: str = step, n: str = n, w: Path = w, t: Any = t) -> Any:
                clean(w)
                settle()
                r = replay_on(plan, t)
                into.setdefault((step, n), []).append(r.wall_s)
                return r

            def replayed(step: str = step, n: str = n) -> None:
                r = replay(cells.replayed, plans[step])
                if r.cpu_ratio is not None:
                    cells.replay_cpu.setdefault(step, []).append(r.cpu_ratio)
                cells.parts.setdefault((step, n), []).append(breakdown(plans[step].recorded, r.threads,
                                                                       r.thread_cpu))

            runs: list[Callable[[], Any]] = [real, replayed]
            if sleeps is not None:
                runs.append(functools.partial(replay, cells.slept, sleeps[step]))
            if mine is not None:
                runs.append(functools.partial(replay, cells.own, mine))
            for run in cell_order(runs, k):
                run()


def cell_order(runs: list, k: int) -> list:
    """The runs of one cell in round `k`: rotated left by k.  Each run's storage still holds what the one before
    it did (the root disk's journal-less ext4 walks past every inode deleted in the last minute on each create,
    "What the machine does by itself"); in a fixed order the replay always came right after the real run and paid
    for its 2,000 deletes, and the real run never paid for the replay's. Rotated, over a multiple of len(runs)
    rounds every kind of run comes first, second, ... equally often."""
    i = k % len(runs) if runs else 0
    return runs[i:] + runs[:i]


def run_rounds(runs: int, cells: Cells, steps: dict[str, list[str]], places: list, plans: dict,
               sleeps: dict | None, own: Callable[[Any], tuple[Any, Any]] | None, t_start: float) -> None:
    """The rounds (run_round, after saying the order of a cell's runs), then how much of the CPU time the machine
    asked for meanwhile its hypervisor took (steal): the captures' own is printed beside their walls."""
    kinds = ["real", "replay"] + ["gaps slept"] * (sleeps is not None) + ["own capture"] * (own is not None)
    print(f"order: each cell's runs ({', '.join(kinds)}) rotated by one each round; {runs} rounds "
          + ("balance it" if runs % len(kinds) == 0 else f"do not balance it (a multiple of {len(kinds)} would)"))
    before = cpu_seconds()
    for k in range(runs):
        print(f"round {k + 1} of {runs} ({time.time() - t_start:.0f} s)", file=sys.stderr, flush=True)
        run_round(cells, steps, places, plans, sleeps, own, k)
    rounds = cpu_delta(before, cpu_seconds())
    print("steal over the rounds (the hypervisor's share of the CPU time asked for): "
          + (f"{steal_share({'machine_cpu_s': rounds}):.1%}" if rounds else "not known here"))


def cpu_ratio(probes: list[float], cap: Any) -> float:
    """The median of `probes` (ns a burn block) over the capture's own probe: the CPU's speed then against
    while the capture was taken (predict.cpu_ratio_now, from probes already taken); 1 when either is missing."""
    then = recorded_block_ns(cap.meta)
    now = [p for p in probes if p == p]  # not NaN
    return statistics.median(now) / then if now and then else 1.0


def median_index(walls: list[float]) -> int:
    """The index of the median wall time (the lower of the two middle ones for an even count: a capture that was
    taken, not an average of two)."""
    order = sorted(range(len(walls)), key=lambda i: walls[i])
    return order[(len(walls) - 1) // 2]


def profile_steps(steps: dict[str, list[str]], work: Path, n: int) -> dict[str, tuple[Any, list[float], int,
                                                                                     list[float]]]:
    """Profiles every step n times in `work` (outputs removed before each), round-robin over the steps and each
    capture paired with a plain run (order alternating), so a slow minute of the machine does not fall on all the
    captures of one step, and the plain runs show what the machine gave at the time.  Keeps each step's capture of
    median wall time: per step the capture, every capture's wall time, the kept one's index, the plain walls."""
    caps: dict[str, list] = {s: [] for s in steps}
    plain: dict[str, list[float]] = {s: [] for s in steps}
    for i in range(n):
        for step, argv in steps.items():
            for profiled in ((False, True) if i % 2 == 0 else (True, False)):
                if not profiled:
                    plain[step].append(real_run(work, argv))
                    continue
                ready(work, argv)
                # stdout and stderr as no file, as in the real runs (pipes): a shell's copies of a stdout that is a
                # file (this script's log) were replayed on the target, where the real runs had none
                caps[step].append(Recording(argv, trace=True, cwd=str(work), stdio=subprocess.DEVNULL).run().capture)
    out = {}
    for step in steps:
        walls = [float(c.meta["wall_s"]) for c in caps[step]]
        k = median_index(walls)
        out[step] = (caps[step][k], walls, k, plain[step])
    return out


def median_ci(xs: list[float], level: float = 0.95) -> tuple[float, float, float]:
    """The median and a distribution-free confidence interval for it: the order statistics x(k), x(n-k+1) with the
    largest k whose binomial coverage 1 - 2 P(Bin(n, 1/2) < k) is still at least `level` (Hollander & Wolfe,
    Nonparametric Statistical Methods, 3.6).  With fewer than 6 runs no such k exists: the range is returned."""
    s = sorted(xs)
    n = len(s)
    k = 1
    for j in range(1, n // 2 + 1):
        tail = sum(math.comb(n, i) for i in range(j)) / 2 ** n
        if 1 - 2 * tail >= level:
            k = j
    return statistics.median(s), s[k - 1], s[n - k]


def preempt_per_switch_s(steps: dict[str, list[str]], work: Path, runs: int = 3) -> float | None:
    """What one involuntary context switch cost the steps here, now: the run delay (time runnable, waiting for a
    CPU: /proc/PID/schedstat) over the involuntary switches (/proc/PID/status) of each step's main thread, read
    from the exited process before it is reaped, summed over `runs` plain runs of every step.  None when there
    were none (or /proc does not tell)."""
    delay = switches = 0
    for argv in steps.values():
        for _ in range(runs):
            clean(work)
            proc = subprocess.Popen(argv, cwd=work, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            try:
                os.waitid(os.P_PID, proc.pid, os.WEXITED | os.WNOWAIT)
                d = int(Path(f"/proc/{proc.pid}/schedstat").read_text().split()[1])
                status = Path(f"/proc/{proc.pid}/status").read_text()
                n = int(status.split("nonvoluntary_ctxt_switches:")[1].split()[0])
            except (OSError, IndexError, ValueError):
                d = n = 0
            finally:
                proc.wait()
            delay, switches = delay + d, switches + n
    clean(work)
    return delay / switches / 1e9 if switches else None


def lab_up(names: list[str]) -> tuple[Path, list[str]]:
    """A lab of its own under a temporary directory; the targets that came up."""
    d = Path(tempfile.mkdtemp(prefix="whatif-lab-")) / "lab"
    r = subprocess.run([*IOLENS, "lab", "up", "--dir", str(d), "--only", ",".join(names)], capture_output=True,
                       text=True)
    if r.returncode:
        print(f"lab up: {(r.stdout + r.stderr).strip()}")
    os.environ["IOLENS_LAB_DIR"] = str(d)
    up = []
    for n in names:
        try:
            resolve(f"lab:{n}")
            up.append(n)
        except Exception as err:  # a target that failed to come up is reported, the others still run
            print(f"lab:{n} is not available: {err}")
    return d, up


def lab_down(d: Path) -> None:
    r = subprocess.run([*IOLENS, "lab", "down", "--dir", str(d)], capture_output=True, text=True)
    if r.returncode:
        print(f"lab down: {(r.stdout + r.stderr).strip()}")
    shutil.rmtree(d.parent, ignore_errors=True)


def pct(x: float, ref: float) -> float:
    return (x - ref) / ref * 100 if ref else float("nan")


@dataclass
class Cells:
    """Per (step, target): the real runs, the replays (gaps as CPU, and all slept) and each replay's breakdown."""

    steps: list[str]
    names: list[str]
    home: int
    actual: dict[tuple[str, str], list[float]]
    replayed: dict[tuple[str, str], list[float]]
    slept: dict[tuple[str, str], list[float]]
    parts: dict[tuple[str, str], list[dict[str, float]]]
    plain_at_capture: dict[str, list[float]] = field(default_factory=dict)  # step -> plain runs beside its captures
    # --capture-each-round: per (step, target) the replays of each round's own capture; per step its models
    own: dict[tuple[str, str], list[float]] = field(default_factory=dict)
    own_models: dict[str, list[Any]] = field(default_factory=dict)
    skip: set[tuple[str, str]] = field(default_factory=set)  # cells not run (--skip)
    # per step, per round: what a block of the replayer's burn cost the CPU just before the step's runs (ns), and
    # what it cost in the step's replays against the capture's probe (TargetReplay.cpu_ratio)
    cpu: dict[str, list[float]] = field(default_factory=dict)
    # per cell, each real run's (wall, bytes its device read, wrote while it ran) (None, None off a block device)
    real_io: dict[tuple[str, str], list[tuple]] = field(default_factory=dict)
    replay_cpu: dict[str, list[float]] = field(default_factory=dict)

    def run(self) -> list[tuple[str, int, str]]:
        """The cells that ran: (step, target index, target name)."""
        return [(s, i, n) for s in self.steps for i, n in enumerate(self.names) if (s, n) not in self.skip]


def noise_floor(xs: list[float], draws: int = 2000) -> float:
    """The mean absolute error (%) a perfect prediction would still show against the median of these real runs:
    the median's own spread, from a bootstrap of the runs (fixed seed)."""
    import numpy as np

    a = np.asarray(xs)
    med = np.median(np.random.default_rng(1).choice(a, size=(draws, len(a))), axis=1)
    return float(np.mean(np.abs(med / np.median(a) - 1)) * 100)


def own_errors(c: Cells, cals: list[dict[str, float]], errs: dict[str, list[float]]) -> None:
    """--capture-each-round: per cell, the replay and the prediction of each round's own capture (medians over
    the rounds) against the same real runs, so the captures come from the same minutes as the runs."""
    print(f"\n{'step':<13} {'target':<10} {'actual':>8} {'replayed':>9} {'err':>7} {'predicted':>10} {'err':>7}  "
          "(each round's own capture)")
    errs["replay, each round's own capture"] = []
    errs["predict, each round's own capture"] = []
    for step, i, n in c.run():
        act = statistics.median(c.actual[(step, n)])
        rep = statistics.median(c.own[(step, n)])
        pred = statistics.median(predict(m, cals[i], cals[c.home], n).wall_s for m in c.own_models[step])
        errs["replay, each round's own capture"].append(abs(pct(rep, act)))
        errs["predict, each round's own capture"].append(abs(pct(pred, act)))
        print(f"{step:<13} {n:<10} {act:>7.3f}s {rep:>8.3f}s {pct(rep, act):>+6.1f}% {pred:>9.3f}s "
              f"{pct(pred, act):>+6.1f}%")


def report(c: Cells, plans: dict[str, Any], models: dict[str, Any], cals: list[dict[str, float]]) -> None:
    """The table, the mean absolute errors, the breakdown and the fidelity.  `cals`: each target calibrated after
    the real runs (the capture's storage among them, the predictions' reference)."""
    errs: dict[str, list[float]] = {"replay": [], "replay (all gaps slept)": [], "predict": [],
                                    "a perfect prediction, against these real runs' medians (bootstrap)": []}
    print(f"\n{'step':<13} {'target':<10} {'actual (95% CI)':>24} {'replayed':>9} {'err':>7} {'slept':>8} "
          f"{'err':>7} {'predicted':>10} {'err':>7} {'CI':>4}")
    for step, i, n in c.run():
        act, lo, hi = median_ci(c.actual[(step, n)])
        rep = statistics.median(c.replayed[(step, n)])
        slp = statistics.median(c.slept[(step, n)]) if c.slept else float("nan")
        pred = predict(models[step], cals[i], cals[c.home], n).wall_s
        er, es, ep = pct(rep, act), pct(slp, act), pct(pred, act)
        errs["replay"].append(abs(er))
        errs["predict"].append(abs(ep))
        errs["a perfect prediction, against these real runs' medians (bootstrap)"].append(
            noise_floor(c.actual[(step, n)]))
        if c.slept:
            errs["replay (all gaps slept)"].append(abs(es))
        inside = ("r" if lo <= rep <= hi else "-") + ("p" if lo <= pred <= hi else "-")
        ci = f"{act:.3f}s [{lo:.3f}, {hi:.3f}]"
        slept = f"{slp:>7.3f}s {es:>+6.1f}%" if c.slept else f"{'-':>8} {'-':>7}"  # --no-sleep-replay
        print(f"{step:<13} {n:<10} {ci:>24} {rep:>8.3f}s {er:>+6.1f}% {slept} "
              f"{pred:>9.3f}s {ep:>+6.1f}% {inside:>4}")
    if c.own:
        own_errors(c, cals, errs)
    for mode, e in errs.items():
        if e:
            print(f"mean absolute error: {mode} {statistics.mean(e):.1f}% (worst {max(e):.1f}%, {len(e)} cells)")
    for step, n in sorted(c.skip):
        print(f"not run (--skip): {step} on {n}")
    print("CI: r/p when the replayed/predicted time lies inside the actual median's 95% interval")
    print("\nwhere the time went, recorded run (rec) against replay (rep), seconds summed over threads, medians: "
          "busy in replayed calls; gap in compute gaps (cpu: burnt of it); late: behind schedule (a burn slowed by "
          "other work); dep: waiting for pipes and children; end: the last thread's end")
    print(f"{'step':<13} {'target':<10} {'busy rec':>9} {'rep':>7} {'gap rec':>8} {'rep':>7} {'cpu':>6} "
          f"{'late':>6} {'dep rec':>8} {'rep':>7} {'end rec':>8} {'rep':>7}")
    for step, _i, n in c.run():
        m = {k: statistics.median(b[k] for b in c.parts[(step, n)]) for k in c.parts[(step, n)][0]}
        print(f"{step:<13} {n:<10} {m['rec_busy']:>9.3f} {m['rep_busy']:>7.3f} {m['rec_gap']:>8.3f} "
              f"{m['rep_gap']:>7.3f} {m['rep_cpu']:>6.3f} {m['rep_late']:>6.3f} {m['rec_dep']:>8.3f} "
              f"{m['rep_dep']:>7.3f} {m['rec_end']:>8.3f} {m['rep_end']:>7.3f}")
    print(f"\n{'fidelity':<13} {'original':>9} {'replayed':>9} {'fidelity':>9} {'burners CPU':>12} {'drift':>7} "
          f"{'CPU':>7} {'in rep':>7}  (replay on the capture's own storage vs the profiled run; drift: the real runs "
          "there in the rounds vs the plain runs beside the captures, medians: how far the machine moved; CPU: "
          "the burn work's cost in the rounds' probes, and in the replays, vs the capture's probe: the part of "
          "the drift the CPU's speed shows, which the replays and predictions follow)")
    for step in c.steps:
        orig = plans[step].wall_s
        rep = statistics.median(c.replayed[(step, c.names[c.home])])
        beside = c.plain_at_capture.get(step)
        drift = pct(statistics.median(c.actual[(step, c.names[c.home])]), statistics.median(beside)) if beside \
            else float("nan")
        cpu = (models[step].cpu_ratio - 1) * 100
        in_rep = (statistics.median(c.replay_cpu[step]) - 1) * 100 if c.replay_cpu.get(step) else float("nan")
        print(f"{step:<13} {orig:>8.3f}s {rep:>8.3f}s {pct(rep, orig):>+8.1f}% "
              f"{plans[step].unreplayed_cpu_s:>11.3f}s {drift:>+6.1f}% {cpu:>+6.1f}% {in_rep:>+6.1f}%")
    spread_io(c)


def spread_io(c: Cells) -> None:
    """The cells whose real runs spread (the slowest 1.5x the fastest or more): what the work directory's block
    device read and wrote during the fastest and the slowest, to tell a run that read evicted inputs back or met
    writeback from one that computed slower."""
    def run(x: tuple) -> str:
        return f"{x[0]:.3f} s" + (f" (read {x[1] / 1e6:.1f} MB, wrote {x[2] / 1e6:.1f} MB)" if x[1] is not None
                                  else " (no block device)")

    def wall(x: tuple) -> float:
        return x[0]

    spread = [(k, v) for k, v in c.real_io.items() if v and max(v, key=wall)[0] >= 1.5 * min(v, key=wall)[0]]
    if spread:
        print("\nreal runs that spread (the slowest 1.5x the fastest or more), and their device's I/O during them")
    for (step, n), v in spread:
        print(f"{step:<13} {n:<10} fastest {run(min(v, key=wall))}, slowest {run(max(v, key=wall))}")


def hold_warm(stack: contextlib.ExitStack) -> None:
    """Turns the kernel's own reclaim of idle memory off until `stack` closes, and prints the cache state."""
    idle = proactive_reclaim()
    paused = stack.enter_context(reclaim_paused())
    print("cache: warm; inputs and programs read back before every capture and real run, and what earlier runs left "
          "dirty written back (sync) before every capture, real run and replay" + (
              "" if idle is None else
              f"; the kernel's reclaim of memory idle {idle:.0f} s (DAMON) turned off for the run" if paused else
              f"; the kernel pages out memory idle {idle:.0f} s by itself here (DAMON) and it could not be turned "
              "off (not root): the filesystems' metadata is not warm"))


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=6, help="interleaved real runs and replays per cell (>= 6 for a "
                    "95%% interval of the median; fewer give the range)")
    ap.add_argument("--profiles", type=int, default=3, help="profiled runs per step; the capture of median wall "
                    "time is replayed and predicted (default 3)")
    ap.add_argument("--scale", type=float, default=1.0)
    ap.add_argument("--steps", default=",".join(STEPS), help="comma-separated subset of: " + ", ".join(STEPS))
    ap.add_argument("--overhead-ns", type=float, default=None, help="the profiler's per-event cost (default: "
                    "measured)")
    ap.add_argument("--path-overhead-ns", type=float, default=None, help="the profiler's cost per event that "
                    "names a path (default: measured)")
    ap.add_argument("--preempt-ms", type=float, default=None, help="the time one involuntary context switch is "
                    "taken to have cost while profiling (default: measured on the steps)")
    ap.add_argument("--warmup", type=int, default=1, help="untimed real runs of every step on every target "
                    "before the captures (default 1)")
    ap.add_argument("--home", choices=["rootdisk", "tmpfs"], default="tmpfs", help="the target the steps are "
                    "profiled on (default: tmpfs; a capture taken on the root disk here holds its create cost of the "
                    "moment, which moves tenfold within minutes: docs/whatif.md)")
    ap.add_argument("--lab", action="store_true", help="also run on lab targets brought up here (root needed)")
    ap.add_argument("--lab-targets", default=LAB_TARGETS)
    ap.add_argument("--no-sleep-replay", action="store_true", help="skip the comparison replay with every gap slept")
    ap.add_argument("--capture-each-round", action="store_true", help="also profile every step again on the "
                    "home target in each round and replay and predict that capture beside the kept one (the "
                    "captures then come from the same minutes as the real runs they are compared with)")
    ap.add_argument("--skip", action="append", default=[], metavar="STEP@TARGET", help="a cell not to run "
                    "(repeatable; reported as not run): small-files@s3-remote takes ~4 min a run")
    ap.add_argument("--cost-ops", type=int, default=1_000_000, help="operations of the replay-cost step (0: skip)")
    a = ap.parse_args()
    if a.profiles < 1 or a.runs < 1:
        ap.error("--profiles and --runs must be at least 1")
    steps = {s: STEPS[s] for s in a.steps.split(",") if s != "pigz-fastq" or shutil.which("pigz")}
    load0 = os.getloadavg()
    t_start = time.time()
    print(f"load average at start {load0[0]:.1f} {load0[1]:.1f} {load0[2]:.1f} on {os.cpu_count()} CPUs")
    stack = contextlib.ExitStack()
    bases = [tempfile.mkdtemp(prefix="whatif-", dir="/dev/shm"), tempfile.mkdtemp(prefix="whatif-", dir="/var/tmp")]
    names = ["tmpfs", "rootdisk"]
    specs = list(bases)
    lab_dir = None
    works: list[Path] = []
    try:
        hold_warm(stack)
        if a.lab:
            lab_dir, up = lab_up(a.lab_targets.split(","))
            names += up
            specs += [f"lab:{n}" for n in up]
        targets = [resolve(s) for s in specs]
        for t in targets:
            assert t.path is not None
            w = Path(tempfile.mkdtemp(prefix="whatif-work-", dir=t.path))
            works.append(w)
            prepare(w, a.scale)
        cost = None if a.overhead_ns is not None and a.path_overhead_ns is not None else profiler_cost()
        ovh = a.overhead_ns if cost is None or a.overhead_ns is not None else cost.event_ns
        named = a.path_overhead_ns if cost is None or a.path_overhead_ns is not None else cost.path_ns
        print(f"profiler cost per traced event: {ovh:.0f} ns, and {named:.0f} ns for one that names a path (an "
              "open, a stat, an unlink; taken out of the recorded compute gaps)" + (
                  f"; measured in {cost.pairs} interleaved pairs, the path figure's interquartile range "
                  f"{cost.spread:.0%} of it" if cost is not None else ""))
        home = names.index(a.home)  # where the captures are taken
        skip = {tuple(x.split("@", 1)) for x in a.skip}
        if bad := [x for x in skip if len(x) != 2 or x[0] not in steps or x[1] not in names or x[1] == a.home]:
            raise SystemExit(f"--skip: no such cell, or the home target: {bad}")
        for _ in range(a.warmup):  # no capture pays a first run's costs
            for step, argv in steps.items():
                for n, w in zip(names, works):
                    if (step, n) not in skip:
                        real_run(w, argv)
        plans, sleeps, models = {}, {}, {}
        profiled = profile_steps(steps, works[home], a.profiles)
        caps = {step: v[0] for step, v in profiled.items()}
        pre = a.preempt_ms / 1e3 if a.preempt_ms is not None else preempt_per_switch_s(steps, works[home])
        print("time one involuntary context switch cost (run delay per switch of the steps' main threads): "
              + (f"{pre * 1e3:.3f} ms" if pre is not None else f"not measured here, {PREEMPT_S * 1e3:.3f} ms assumed"))
        def plan_of(cap: Any) -> Any:
            return build_plan(cap, event_overhead_ns=int(ovh), path_overhead_ns=int(named),
                              preempt_s=pre if pre is not None else PREEMPT_S)

        for step in steps:
            _c, cap_walls, kept, plain = profiled[step]
            print(f"{step}: capture walls " + ", ".join(f"{x:.3f}" for x in cap_walls) + f" s; kept "
                  f"{cap_walls[kept]:.3f} s (the median), steal {steal_share(caps[step].meta):.1%}; plain runs "
                  "alongside " + ", ".join(f"{x:.3f}" for x in plain) + " s")
            plans[step] = plan_of(caps[step])
            sleeps[step] = build_plan(caps[step], event_overhead_ns=int(ovh), path_overhead_ns=int(named),
                                      gaps="sleep")
            models[step] = step_model(caps[step], int(ovh), int(named))  # the plans' recording costs
            for n in plans[step].notes:
                print(f"{step}: {n}")
        own = (lambda cap: (plan_of(cap), step_model(cap, int(ovh), int(named)))) if a.capture_each_round else None
        cells = Cells(list(steps), names, home, {}, {}, {}, {}, {step: v[3] for step, v in profiled.items()},
                      skip=skip)
        run_rounds(a.runs, cells, steps, list(zip(names, works, targets)), plans,
                   None if a.no_sleep_replay else sleeps, own, t_start)
        cals = [calibrate(t, refresh=True) for t in targets]
        for step, m in models.items():  # each prediction as `iolens predict` would give it in the rounds
            m.cpu_ratio = cpu_ratio(cells.cpu[step], caps[step])
        report(cells, plans, models, cals)
        if a.cost_ops:
            print()
            report_cost(replay_cost(a.cost_ops, bases[0], runs=3))
    finally:
        for w in works:
            shutil.rmtree(w, ignore_errors=True)
        for b in bases:
            shutil.rmtree(b, ignore_errors=True)
        if lab_dir is not None:
            lab_down(lab_dir)
        stack.close()
        load1 = os.getloadavg()
        print(f"load average at end {load1[0]:.1f} {load1[1]:.1f} {load1[2]:.1f}; the run took "
              f"{time.time() - t_start:.0f} s")


if __name__ == "__main__":
    main()
