#!/usr/bin/env python3
"""How `iolens compare --runs auto` decides: the false-positive rate, the power and the runs it takes, simulated.

    python benchmarks/compare_sequential.py [--seeds 1000] [--max-runs 40] [--margin 5] [--cvs 2,5,10]

Each sequence is two configurations whose times are lognormal with the given CV, B's median `effect` slower or
faster than A's, and now and then (2% of runs) a run 1.3-2x slower (a disturbed run).  Sequences are run through
the stopping rule `compare` uses (iolens.stats.sequential.Stopper: interleaved rounds, alpha spending over the
looks, frozen decisions), seeded 0..seeds-1.  For the A/A rows a false positive is any "faster" or "slower"; for
the others, power is the share decided in the right direction, and "equivalent" of a 10% effect at a 5% margin
would be an error too.
"""

from __future__ import annotations

import argparse
import math
import sys

import numpy as np

from iolens.stats.sequential import Stopper

OUTLIER_P = 0.02


def sequence(seed: int, effect: float, cv: float, max_runs: int, margin: float) -> tuple[str, int]:
    """One simulated compare of A (baseline) and B: (B's decision, rounds run)."""
    rng = np.random.default_rng(seed)
    sigma = math.sqrt(math.log1p(cv * cv))  # lognormal with this CV
    medians = {"A": 10.0, "B": 10.0 * (1 + effect)}
    times: dict[str, list[float]] = {"A": [], "B": []}

    def run_round(names: list[str]) -> None:
        for n in rng.permutation(names):  # the round's random order, as compare interleaves
            t = medians[n] * math.exp(rng.normal(0, sigma))
            if rng.random() < OUTLIER_P:
                t *= rng.uniform(1.3, 2.0)
            times[str(n)].append(t)

    stop = Stopper(["A", "B"], "A", max_runs=max_runs, margin=margin)
    stop.run(run_round, lambda: times)
    return stop.decisions["B"].kind, len(times["B"])


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--seeds", type=int, default=1000)
    ap.add_argument("--max-runs", type=int, default=40)
    ap.add_argument("--margin", type=float, default=5.0, help="equivalence margin, percent")
    ap.add_argument("--cvs", default="2,5,10", help="CVs of the noise, percent, comma-separated")
    ap.add_argument("--effects", default="0,5,-10,10", help="B vs A, percent, comma-separated")
    a = ap.parse_args(argv)
    print(f"{a.seeds} seeded sequences per row, max {a.max_runs} runs, margin ±{a.margin:g}%, alpha 0.05, "
          f"{OUTLIER_P:.0%} disturbed runs (1.3-2x)")
    print(f"{'effect':>7} {'CV':>4} {'faster':>7} {'slower':>7} {'equiv':>7} {'undec':>7} {'mean runs':>9}  reading")
    for cv in (float(x) / 100 for x in a.cvs.split(",")):
        for eff in (float(x) / 100 for x in a.effects.split(",")):
            kinds: dict[str, int] = {"faster": 0, "slower": 0, "equivalent": 0, "undecided": 0}
            used = 0
            for seed in range(a.seeds):
                kind, runs = sequence(seed, eff, cv, a.max_runs, a.margin / 100)
                kinds[kind] += 1
                used += runs
            share = {k: v / a.seeds for k, v in kinds.items()}
            if eff == 0:
                fp = share["faster"] + share["slower"]
                se = math.sqrt(fp * (1 - fp) / a.seeds)
                reading = f"false positives {fp:.1%} ± {se:.1%} (SE)"
            else:
                right = share["slower" if eff > 0 else "faster"]
                reading = f"power {right:.1%}"
            print(f"{eff:>+7.0%} {cv:>4.0%} {share['faster']:>7.1%} {share['slower']:>7.1%} "
                  f"{share['equivalent']:>7.1%} {share['undecided']:>7.1%} {used / a.seeds:>9.1f}  {reading}",
                  flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
