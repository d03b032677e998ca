"""iolens.stats.sequential: the decision against a hand computation, the spending, and adaptive stopping on
synthetic effects from seeded generators (a fake runner driving the same Stopper as `compare --runs auto`)."""

import math

import numpy as np
import pytest
from scipy import stats as sps

from iolens.stats import sequential as Q


def welch(a, b, level):
    """Welch's interval of mean(log a) - mean(log b), written out (Welch 1947)."""
    la, lb = np.log(a), np.log(b)
    va, vb = la.var(ddof=1) / la.size, lb.var(ddof=1) / lb.size
    df = (va + vb) ** 2 / (va ** 2 / (la.size - 1) + vb ** 2 / (lb.size - 1))
    half = sps.t.ppf(0.5 + level / 2, df) * math.sqrt(va + vb)
    d = la.mean() - lb.mean()
    return d - half, d + half


def lognormal(rng, median, cv, n):
    return median * np.exp(rng.normal(0, math.sqrt(math.log1p(cv * cv)), n))


def test_decision_interval_is_welchs_on_the_log_ratio():
    rng = np.random.default_rng(11)
    a, b = lognormal(rng, 10.0, 0.05, 12), lognormal(rng, 9.0, 0.08, 9)
    d = Q.decide("B", b, "A", a)
    lo, hi = welch(b, a, 0.95)
    assert d.kind == "faster" and d.level == 0.95
    assert d.low == pytest.approx(math.exp(lo), rel=1e-9) and d.high == pytest.approx(math.exp(hi), rel=1e-9)
    assert d.ratio == pytest.approx(math.exp(np.log(b).mean() - np.log(a).mean()), rel=1e-12)
    assert d.sentence == (f"B is faster than A by {100 * (1 - d.ratio):.1f}% [{100 * (1 - d.high):.1f}%, "
                          f"{100 * (1 - d.low):.1f}%] (9 vs 12 runs)")


def test_equivalence_is_two_one_sided_tests_at_the_margin():
    rng = np.random.default_rng(12)
    a, b = lognormal(rng, 10.0, 0.02, 20), lognormal(rng, 10.0, 0.02, 20)
    d = Q.decide("B", b, "A", a, margin=0.05)
    lo, hi = welch(b, a, 0.90)  # TOST at alpha 0.05 = the 90% interval inside the margin
    assert d.kind == "equivalent" and d.level == pytest.approx(0.9)
    assert -math.log(1.05) < lo and hi < math.log(1.05)
    assert d.low == pytest.approx(math.exp(lo), rel=1e-9)
    assert d.sentence.startswith("B vs A: no difference larger than 5% (20 runs each; ")
    # the same runs against a 1% margin cannot show it
    assert Q.decide("B", b, "A", a, margin=0.01).kind == "undecided"


def test_undecided_says_what_to_do():
    rng = np.random.default_rng(13)
    a, b = lognormal(rng, 10.0, 0.3, 6), lognormal(rng, 10.0, 0.3, 6)
    d = Q.decide("B", b, "A", a, adaptive=True)
    assert d.kind == "undecided" and d.spread is not None and d.spread > 0.1
    assert d.sentence.startswith(f"B vs A: undecided after 6 runs each: the spread is ±{100 * d.spread:.1f}%; "
                                 "run longer or quieter (")
    assert "use --runs auto" in Q.decide("B", b, "A", a).sentence


def test_identical_runs_are_equivalent_not_faster():
    d = Q.decide("B", [2.0, 2.0, 2.0], "A", [2.0, 2.0, 2.0])
    assert d.kind == "equivalent" and d.ratio == 1.0
    assert Q.decide("B", [2.0], "A", [2.0, 2.0]).sentence.startswith("B vs A: undecided: not enough successful runs")


def test_spending_and_schedule():
    assert Q.schedule(40) == [5, 8, 11, 17, 25, 38, 40]
    s = Q.schedule(40)
    assert s[0] == 5 and s[-1] == 40 and all(b > a for a, b in zip(s, s[1:]))
    assert Q.schedule(3) == [3]
    assert Q.pocock_spending(0) == 0 and Q.pocock_spending(1) == pytest.approx(0.05)
    shares = np.diff([0.0] + [Q.pocock_spending(n / 40) for n in s])
    assert all(shares > 0) and shares.sum() == pytest.approx(0.05)


class FakeRunner:
    """Seeded lognormal times per configuration, in the random order of each round."""

    def __init__(self, seed, medians, cv, outliers=0.0):
        self.rng = np.random.default_rng(seed)
        self.medians, self.cv, self.outliers = medians, cv, outliers
        self.times = {n: [] for n in medians}

    def round(self, names):
        for n in self.rng.permutation(names):
            t = float(lognormal(self.rng, self.medians[n], self.cv, 1)[0])
            if self.rng.random() < self.outliers:
                t *= 1.5
            self.times[str(n)].append(t)


def adaptive(seed, medians, cv, max_runs=40, margin=0.05, outliers=0.0):
    fake = FakeRunner(seed, medians, cv, outliers)
    stop = Q.Stopper(list(medians), "A", max_runs=max_runs, margin=margin)
    stop.run(fake.round, lambda: fake.times)
    return stop, fake


def test_a_ten_percent_effect_is_decided_faster_before_the_budget():
    stop, fake = adaptive(1, {"A": 10.0, "B": 9.0}, cv=0.05)
    d = stop.decisions["B"]
    assert d.kind == "faster" and d.high < 1
    assert len(fake.times["B"]) < 40 and stop.looks[-1] == len(fake.times["B"])
    assert d.alpha < 0.05  # an early look spends only its share
    assert d.n == len(fake.times["B"])


def test_an_a_a_run_is_decided_equivalent_at_five_percent():
    stop, fake = adaptive(2, {"A": 10.0, "B": 10.0}, cv=0.02)
    d = stop.decisions["B"]
    assert d.kind == "equivalent" and 1 / 1.05 < d.low and d.high < 1.05
    assert len(fake.times["A"]) < 40


def test_a_noisy_case_is_left_undecided_at_the_budget():
    stop, fake = adaptive(3, {"A": 10.0, "B": 10.3}, cv=0.4, max_runs=12)
    d = stop.decisions["B"]
    assert d.kind == "undecided" and len(fake.times["B"]) == 12 and stop.looks[-1] == 12
    assert d.sentence.startswith("B vs A: undecided after 12 runs each: the spread is ±")
    assert stop.spent == pytest.approx(0.05)


def test_a_decided_comparison_is_frozen_and_stops_running():
    # C is far slower and decided at the first look; B (3%) needs longer; C does not run after its look
    stop, fake = adaptive(4, {"A": 10.0, "B": 10.3, "C": 20.0}, cv=0.03)
    assert stop.decisions["C"].kind == "slower" and stop.decisions["C"].n == 5
    assert len(fake.times["C"]) == 5 and len(fake.times["A"]) == len(fake.times["B"]) > 5


def test_the_budget_in_time_ends_with_a_look():
    fake = FakeRunner(5, {"A": 10.0, "B": 10.0}, cv=0.3)
    stop = Q.Stopper(["A", "B"], "A", max_runs=40)
    stop.run(fake.round, lambda: fake.times, lambda: len(fake.times["A"]) >= 7)
    assert len(fake.times["A"]) == 7 and stop.looks == [5, 7] and stop.decisions["B"].n == 7
    assert stop.spent == pytest.approx(Q.pocock_spending(7 / 40))


def test_a_a_false_positives_stay_at_the_nominal_level():
    # 20 seeded A/A sequences with disturbed runs: a false "faster"/"slower" in at most 1 of them
    # (the rate is below 5%; benchmarks/compare_sequential.py measures it on 1000)
    calls = [adaptive(seed, {"A": 10.0, "B": 10.0}, cv=0.05, outliers=0.02)[0].decisions["B"].kind
             for seed in range(20)]
    assert sum(k in ("faster", "slower") for k in calls) <= 1
    assert all(k in Q.KINDS for k in calls)


def test_a_configuration_that_cannot_run_is_not_waited_for():
    fake = FakeRunner(6, {"A": 10.0, "B": 10.0, "C": 10.0}, cv=0.3)

    def run_round(names):
        fake.round([n for n in names if n != "C"])  # every run of C fails: it has no times
        stop.drop("C")

    stop = Q.Stopper(["A", "B", "C"], "A", max_runs=40)
    stop.run(run_round, lambda: fake.times)
    assert "C" not in stop.names and "C" not in stop.decisions and stop.decisions["B"].n == len(fake.times["B"])
    stop = Q.Stopper(["A", "B"], "A", max_runs=40)
    stop.drop("A")  # without the baseline nothing can be compared
    assert stop.names == ["A"] and stop.open() == [] and stop.active() == []
