"""How close replay and predict come to real runs: step x target -> actual, replayed, predicted, error %.

Each step is profiled once (with --trace) on the root disk, then replayed and predicted on every target, and run
for real there.  Real runs and replays are interleaved (run i of every step and target, then replay i, ...), so
load from other work on the machine falls on both alike.  Per cell it prints the actual median with a 95%
confidence interval of the median (distribution-free, from order statistics), the replayed median, the
predicted time, their errors, and whether the error is inside the actual runs' own spread; then the mean absolute
error of replay and predict, and the fidelity of each step (the replay on the capture's own storage against the
original profiled run).  Targets: a directory on tmpfs, one on the root disk, and any `lab:NAME` given on the
command line (bring the lab up first; this script never starts it).

    python benchmarks/whatif_accuracy.py [--runs 7] [--scale 1] [--steps a,b] [lab:hdd ...]
"""

from __future__ import annotations

import argparse
import math
import os
import shutil
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

from iolens.bench.targets import resolve
from iolens.capture.record import Recording
from iolens.synth import fastq_text, synth
from iolens.whatif.plan import build_plan
from iolens.whatif.predict import calibrate, predict, step_model
from iolens.whatif.replay import replay_on

STEPS = {
    "minimap2-sam": ["minimap2", "-a", "-t", "2", "ref.fa", "reads_1.fq.gz", "-o", "out.sam"],
    "sort-spill": ["samtools", "sort", "-m", "1M", "-o", "sorted.bam", "in.sam"],
    "index": ["samtools", "index", "in.bam"],
    "gzip-fastq": ["sh", "-c", "gzip -1 -c reads.fq > reads.fq.gz"],
    "small-files": ["sh", "-c", "mkdir -p sf && i=0; while [ $i -lt 2000 ]; do echo $i > sf/f$i; i=$((i+1)); done; "
                    "ls sf > list && cat sf/* > all && rm -r sf"],
}
OUTPUTS = ["out.sam", "sorted.bam", "in.bam.bai", "reads.fq.gz", "list", "all", "sf"]


def prepare(work: Path, scale: float) -> None:
    s = synth(work / "syn", ref_bases=int(2_000_000 * scale), pairs=int(40_000 * scale), seed=3)
    shutil.copy(s.reference, work / "ref.fa")
    shutil.copy(s.reads1, work / "reads_1.fq.gz")
    (work / "reads.fq").write_bytes(fastq_text(int(40_000_000 * scale)))
    subprocess.run(["minimap2", "-a", "-t", "2", "ref.fa", "reads_1.fq.gz", "-o", "in.sam"], cwd=work, check=True,
                   capture_output=True)
    subprocess.run(["samtools", "sort", "-o", "in.bam", "in.sam"], cwd=work, check=True, capture_output=True)


def clean(work: Path) -> None:
    for name in OUTPUTS:
        p = work / name
        if p.is_dir():
            shutil.rmtree(p)
        elif p.exists():
            p.unlink()


def real_run(work: Path, argv: list[str]) -> float:
    clean(work)
    t = time.perf_counter()
    subprocess.run(argv, cwd=work, check=True, capture_output=True)
    return time.perf_counter() - t


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


def event_overhead_ns(runs: int = 5, n: int = 100_000) -> float:
    """The profiler's cost per traced event outside the recorded call: the slope of a profiled `dd bs=1` (one
    event per read and per write) over an unprofiled one, medians of `runs` each."""
    d = Path(tempfile.mkdtemp(prefix="whatif-ovh-"))
    argv = ["dd", "if=/dev/zero", f"of={d / 'out'}", "bs=1", f"count={n}", "status=none"]
    try:
        plain, prof, events = [], [], 0
        for _ in range(runs):
            t = time.perf_counter()
            subprocess.run(argv, check=True, capture_output=True)
            plain.append(time.perf_counter() - t)
            cap = Recording(argv, trace=True, cwd=str(d)).run().capture
            prof.append(float(cap.meta["wall_s"]))
            events = sum(len(p.events) for p in cap.processes if p.events is not None)
        return max(0.0, (statistics.median(prof) - statistics.median(plain)) / max(events, 1) * 1e9)
    finally:
        shutil.rmtree(d, ignore_errors=True)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=7, help="interleaved real runs and replays per cell (>= 6 for a "
                    "95%% interval of the median)")
    ap.add_argument("--scale", type=float, default=1.0)
    ap.add_argument("--steps", default=",".join(STEPS), help="comma-separated subset of: " + ", ".join(STEPS))
    ap.add_argument("--overhead-ns", type=float, default=None, help="the profiler's per-event cost (default: "
                    "measured)")
    ap.add_argument("labs", nargs="*")
    a = ap.parse_args()
    steps = {s: STEPS[s] for s in a.steps.split(",")}
    bases = [tempfile.mkdtemp(prefix="whatif-", dir="/dev/shm"), tempfile.mkdtemp(prefix="whatif-", dir="/var/tmp")]
    names = ["tmpfs", "rootdisk"] + a.labs
    works: list[Path] = []
    try:
        targets = [resolve(b) for b in bases] + [resolve(s) for s in a.labs]
        for t in targets:
            w = Path(tempfile.mkdtemp(prefix="whatif-work-", dir=t.path))
            prepare(w, a.scale)
            works.append(w)
        ovh = a.overhead_ns if a.overhead_ns is not None else event_overhead_ns()
        print(f"profiler cost per traced event: {ovh:.0f} ns (taken out of the recorded compute gaps); "
              f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs")
        home = 1  # profiled on the root disk
        caps, plans, models = {}, {}, {}
        for step, argv in steps.items():
            clean(works[home])
            caps[step] = Recording(argv, trace=True, cwd=str(works[home])).run().capture
            plans[step] = build_plan(caps[step], event_overhead_ns=int(ovh))
            models[step] = step_model(caps[step])
        actual: dict[tuple[str, str], list[float]] = {}
        replayed: dict[tuple[str, str], list[float]] = {}
        late: dict[tuple[str, str], list[float]] = {}
        for _ in range(a.runs):
            for step, argv in steps.items():
                for n, w, t in zip(names, works, targets):
                    actual.setdefault((step, n), []).append(real_run(w, argv))
                    clean(w)
                    r = replay_on(plans[step], t)
                    replayed.setdefault((step, n), []).append(r.wall_s)
                    late.setdefault((step, n), []).append(max((th["late"] for th in r.threads), default=0.0))
        cals = [calibrate(t, refresh=True) for t in targets]
        errs_r, errs_p = [], []
        print(f"{'step':<13} {'target':<9} {'actual (95% CI)':>24} {'replayed':>9} {'err':>7} {'predicted':>10} "
              f"{'err':>7} {'CI':>6} {'late':>6}")
        for step in steps:
            for i, n in enumerate(names):
                act, lo, hi = median_ci(actual[(step, n)])
                rep = statistics.median(replayed[(step, n)])
                pred = predict(models[step], cals[i], cals[home], n).wall_s
                er, ep = (rep - act) / act * 100, (pred - act) / act * 100
                errs_r.append(abs(er))
                errs_p.append(abs(ep))
                inside = "r" if lo <= rep <= hi else "-"
                inside += "p" if lo <= pred <= hi else "-"
                ci = f"{act:.3f}s [{lo:.3f}, {hi:.3f}]"
                lt = statistics.median(late[(step, n)])
                print(f"{step:<13} {n:<9} {ci:>24} {rep:>8.3f}s {er:>+6.1f}% {pred:>9.3f}s {ep:>+6.1f}% "
                      f"{inside:>6} {lt:>5.3f}s")
        print(f"mean absolute error: replay {statistics.mean(errs_r):.1f}%")
        print(f"mean absolute error: predict {statistics.mean(errs_p):.1f}%")
        print("CI: r/p when the replayed/predicted time lies inside the actual median's 95% interval; late: how far "
              "the replay's most delayed thread fell behind its recorded schedule (median)")
        print(f"{'fidelity':<13} {'original':>9} {'replayed':>9} {'fidelity':>9}  (replay on the capture's own "
              "storage vs the profiled run)")
        for step in steps:
            orig = plans[step].wall_s
            rep = statistics.median(replayed[(step, names[home])])
            print(f"{step:<13} {orig:>8.3f}s {rep:>8.3f}s {(rep / orig - 1) * 100:>+8.1f}%")
    finally:
        for b in bases:
            shutil.rmtree(b, ignore_errors=True)
        for w in works:
            shutil.rmtree(w, ignore_errors=True)


if __name__ == "__main__":
    main()
