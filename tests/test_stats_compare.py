"""iolens.stats.samples against values computed independently (scipy, hand calculation, theory)."""

import math

import numpy as np
import pytest
from scipy import stats as sps

from iolens.stats import samples as S


# -- Mann-Whitney U against scipy ------------------------------------------------------------------------------

MWU_CASES = [
    ([1.1, 2.2, 3.3, 4.4], [5.5, 6.6, 7.7]),  # exact, complete separation
    ([4.87, 4.91, 4.85, 4.88, 4.90], [4.97, 4.95, 5.01, 4.93, 4.99]),  # exact, small
    ([3.0, 1.0, 4.0, 1.5, 9.0, 2.6], [5.0, 3.5, 8.9, 7.9, 3.2, 8.4]),  # exact, overlapping
    (list(np.linspace(1.0, 2.0, 12)), list(np.linspace(1.3, 2.4, 15))),  # asymptotic, no ties
    ([1, 2, 2, 3, 3, 3, 4, 5, 5, 6], [2, 3, 4, 4, 5, 6, 6, 7, 7, 8, 9]),  # ties: asymptotic with tie correction
    ([1.0, 1.0, 2.0], [1.0, 3.0, 3.0, 4.0]),  # ties in small samples: asymptotic
]


@pytest.mark.parametrize("x,y", MWU_CASES)
def test_mann_whitney_matches_scipy_auto(x, y):
    u, p = S.mann_whitney_u(x, y)
    ref = sps.mannwhitneyu(x, y, alternative="two-sided", method="auto")
    assert u == pytest.approx(ref.statistic)
    assert p == pytest.approx(ref.pvalue, rel=1e-9)


@pytest.mark.parametrize("method", ["exact", "asymptotic"])
def test_mann_whitney_matches_scipy_forced_method(method):
    rng = np.random.default_rng(7)
    for n1, n2 in [(3, 5), (8, 8), (7, 12), (20, 20)]:
        x = rng.normal(10, 1, n1)
        y = rng.normal(10.6, 1, n2)
        u, p = S.mann_whitney_u(x, y, method=method)
        ref = sps.mannwhitneyu(x, y, alternative="two-sided", method=method)
        assert u == pytest.approx(ref.statistic)
        assert p == pytest.approx(ref.pvalue, rel=1e-9)


def test_mann_whitney_exact_small_case_by_hand():
    # 2 vs 2, complete separation: U = 0 has 1 arrangement of C(4,2) = 6; two-sided p = 2/6
    u, p = S.mann_whitney_u([1, 2], [3, 4], method="exact")
    assert u == 0
    assert p == pytest.approx(1 / 3)


# -- bootstrap ---------------------------------------------------------------------------------------------------

def test_bootstrap_two_point_sample_known_distribution():
    # Resampling {0, 1} twice: the median (mean of the two draws) is 0, 0.5 or 1 with probability 1/4, 1/2, 1/4,
    # so the 2.5% and 97.5% quantiles are exactly 0 and 1.
    lo, hi = S.bootstrap_ci([0.0, 1.0], resamples=4000, seed=3)
    assert (lo, hi) == (0.0, 1.0)


def test_bootstrap_constant_sample_is_degenerate():
    assert S.bootstrap_ci([5.0] * 7) == (5.0, 5.0)


def test_bootstrap_mean_matches_normal_theory():
    # For a large sample the percentile CI of the mean approaches mean +- 1.96 s / sqrt(n).
    x = np.random.default_rng(11).normal(100.0, 10.0, 400)
    lo, hi = S.bootstrap_ci(x, stat=np.mean, resamples=20_000, seed=5)
    half = 1.959964 * x.std(ddof=1) / math.sqrt(x.size)
    assert lo == pytest.approx(x.mean() - half, abs=0.08 * half)
    assert hi == pytest.approx(x.mean() + half, abs=0.08 * half)


def test_bootstrap_median_matches_scipy_percentile():
    x = np.random.default_rng(2).lognormal(1.0, 0.2, 30)
    lo, hi = S.bootstrap_ci(x, resamples=20_000, seed=1)
    ref = sps.bootstrap((x,), np.median, method="percentile", n_resamples=20_000, random_state=9,
                        vectorized=True).confidence_interval
    width = ref.high - ref.low
    assert lo == pytest.approx(ref.low, abs=0.1 * width)
    assert hi == pytest.approx(ref.high, abs=0.1 * width)


def test_bootstrap_rel_diff_contains_true_ratio():
    rng = np.random.default_rng(4)
    base = rng.normal(10.0, 0.1, 30)
    other = rng.normal(9.0, 0.1, 30)
    lo, hi = S.bootstrap_rel_diff_ci(base, other)
    assert lo < -0.1 < hi
    assert hi - lo < 0.03


# -- MAD outliers on a fixed sample ------------------------------------------------------------------------------

def test_modified_z_scores_fixed_sample_by_hand():
    x = [2.0, 2.1, 2.2, 2.3, 2.4, 9.0]
    # median 2.25; |x - median| = .25 .15 .05 .05 .15 6.75 -> MAD = 0.15
    z = S.modified_z_scores(x)
    expected = [0.6745 * (v - 2.25) / 0.15 for v in x]
    assert z == pytest.approx(expected)
    assert z[-1] == pytest.approx(30.3525)
    assert S.outliers(x) == [5]


def test_outliers_reported_on_both_sides_and_mad_zero_fallback():
    x = [10.0, 10.0, 10.0, 10.0, 10.0, 12.0]  # MAD 0: mean absolute deviation 1/3 * 1.253314
    z = S.modified_z_scores(x)
    assert z[-1] == pytest.approx(2.0 / (1.253314 * (2.0 / 6)))
    assert S.outliers(x) == [5]
    y = [1.0, 5.0, 5.1, 5.2, 5.3, 5.4]
    assert S.outliers(y) == [0]
    assert S.outliers([3.0, 3.0, 3.0]) == []
    assert S.outliers([2.0, 2.1, 9.0]) == []  # too few values to call anything an outlier


def test_first_run_slow():
    assert S.first_run_slow([9.0, 4.1, 4.0, 4.2, 4.1, 4.0])
    assert not S.first_run_slow([4.1, 9.0, 4.0, 4.2, 4.1])
    assert not S.first_run_slow([4.1, 4.0, 4.2, 4.1])


# -- describe, detectable difference, verdict --------------------------------------------------------------------

def test_describe_matches_numpy():
    x = [4.87, 4.91, 4.85, 4.88, 4.90, 4.86]
    d = S.describe(x)
    assert d.n == 6
    assert d.mean == pytest.approx(np.mean(x))
    assert d.stddev == pytest.approx(np.std(x, ddof=1))
    assert d.median == pytest.approx(4.875)
    assert (d.min, d.max) == (4.85, 4.91)
    assert d.cv == pytest.approx(np.std(x, ddof=1) / np.mean(x))
    assert d.ci_low <= d.median <= d.ci_high
    assert S.describe([]).mean is None
    one = S.describe([3.0])
    assert one.stddev is None and one.ci_low is None and one.median == 3.0


def test_detectable_difference_formula():
    b = [10.0, 10.2, 9.8, 10.1, 9.9]
    o = [10.0, 10.3, 9.7, 10.1, 9.9]
    s = math.sqrt((np.var(b, ddof=1) * 4 + np.var(o, ddof=1) * 4) / 8)
    expected = (1.959964 + 0.841621) * s * math.sqrt(2 / 5) / 10.0
    assert S.detectable_difference(b, o) == pytest.approx(expected, rel=1e-5)


def test_verdict_significant_faster():
    rng = np.random.default_rng(1)
    base = rng.normal(4.97, 0.03, 20)
    fast = rng.normal(4.87, 0.02, 20)
    c = S.compare("/dev/null", fast, "same-disk", base)
    assert c.significant
    assert c.rel_diff < 0
    assert c.rel_ci_low < c.rel_diff < c.rel_ci_high
    assert c.verdict.startswith("/dev/null is faster than same-disk by 2.0% [")
    assert c.verdict.endswith("], within the 5% margin (20 runs each)")
    slow = S.compare("same-disk", base, "/dev/null", fast)
    assert slow.verdict.startswith("same-disk is slower than /dev/null by ")


def test_verdict_no_difference_within_the_margin():
    rng = np.random.default_rng(2)
    a = rng.normal(10.0, 0.3, 10)
    b = rng.normal(10.0, 0.3, 10)
    c = S.compare("a", a, "b", b)
    assert not c.significant and c.decision["kind"] == "equivalent"
    assert c.verdict.startswith("a vs b: no difference larger than 5% (10 runs each; +0.2% [-")
    assert 0.01 < c.detectable < 0.1


def test_verdict_needs_two_runs_each():
    c = S.compare("a", [1.0], "b", [1.0, 2.0])
    assert c.p_value is None and "not enough successful runs" in c.verdict


# -- the rank reading (outcome): significant only when the U test and the interval agree; the verdict's words ---

def test_verdict_rule_test_and_interval_agree_on_a_difference():
    c = S.compare("B", [1.1, 1.11, 1.09, 1.12, 1.08, 1.1, 1.11, 1.09, 1.1, 1.1], "A",
                  [1.0, 1.01, 0.99, 1.02, 0.98, 1.0, 1.01, 0.99, 1.0, 1.0], seed=3)
    assert c.outcome == "slower" and c.significant and c.ci_excludes_zero
    assert c.p_value < S.ALPHA and 0 < c.rel_ci_low < c.rel_diff < c.rel_ci_high
    assert c.verdict == "B is slower than A by 10.0% [8.9%, 11.1%] (10 runs each)"


def test_verdict_rule_neither_finds_a_difference():
    c = S.compare("B", [1.02, 1.18, 0.92, 1.08, 1.04, 0.96, 1.01, 1.12, 0.88, 0.99], "A",
                  [1.0, 1.2, 0.9, 1.1, 1.05, 0.95, 1.0, 1.15, 0.85, 1.0], seed=3)
    assert c.outcome == "no difference" and not c.significant and not c.ci_excludes_zero
    assert c.p_value >= S.ALPHA and c.rel_ci_low < 0 < c.rel_ci_high
    assert c.verdict == ("B vs A: undecided after 10 runs each: the spread is ±9.8%; use --runs auto, or more runs, "
                         "or a quieter machine (+0.2% [-8.7%, +9.8%])")


def test_verdict_rule_test_significant_but_interval_includes_zero_is_inconclusive():
    # the "11.0% ± 13.0% slower (p = 0.050)" case: the U test finds a difference, the interval reaches 0
    c = S.compare("B", [1.0, 1.5, 1.5, 1.5, 1.5, 1.5, 1.6, 1.6, 1.6, 1.6], "A",
                  [1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.5, 1.5, 1.5, 1.5], seed=3)
    assert c.p_value < S.ALPHA and c.rel_ci_low <= 0 <= c.rel_ci_high
    assert c.outcome == "inconclusive" and c.significant is False and c.ci_excludes_zero is False
    # the verdict reads the ratio of geometric means, whose interval excludes 1
    assert c.decision["kind"] == "slower" and c.decision["low"] > 1
    assert c.verdict == "B is slower than A by 25.7% [6.1%, 48.9%] (10 runs each)"


def test_verdict_rule_interval_excludes_zero_but_test_cannot_is_inconclusive():
    # three runs each: the exact two-sided U test cannot go below p = 0.1, the percentile interval excludes 0
    c = S.compare("B", [1.1, 1.11, 1.12], "A", [1.0, 1.01, 1.02], seed=3)
    assert c.p_value == pytest.approx(0.1) and c.rel_ci_low > 0
    assert c.outcome == "inconclusive" and c.significant is False and c.ci_excludes_zero is True
    assert c.verdict.startswith("B is slower than A by 9.9% [") and c.verdict.endswith("(3 runs each)")


def test_verdict_shows_an_asymmetric_interval_as_it_is():
    # a few very slow runs: the interval of the difference is far from symmetric around the estimate
    base = [1.0, 1.02, 0.98, 1.01, 0.99, 1.0, 1.03, 0.97]
    other = [1.9, 2.0, 1.95, 2.05, 8.0, 8.5, 1.97, 7.9]
    c = S.compare("B", other, "A", base, seed=3)
    assert c.outcome == "slower" and c.significant
    assert c.rel_ci_high - c.rel_diff > 3 * (c.rel_diff - c.rel_ci_low)  # asymmetric
    assert "±" not in c.verdict
    lo, hi = c.decision["low"] - 1, c.decision["high"] - 1
    assert hi - (c.decision["ratio"] - 1) > (c.decision["ratio"] - 1) - lo  # the ratio's interval, as it is
    assert c.verdict == f"B is slower than A by 236% [{100 * lo:.1f}%, {100 * hi:.0f}%] (8 runs each)"


@pytest.mark.parametrize("p,lo,hi,rel,outcome", [
    (0.01, 0.05, 0.2, 0.1, "slower"),
    (0.01, -0.2, -0.05, -0.1, "faster"),
    (0.3, -0.1, 0.1, 0.01, "no difference"),
    (0.01, -0.01, 0.2, 0.1, "inconclusive"),
    (0.3, 0.05, 0.2, 0.1, "inconclusive"),
    (0.01, 0.05, 0.2, -0.01, "inconclusive"),  # the interval and the estimate are on different sides
])
def test_decide_is_one_rule(p, lo, hi, rel, outcome):
    assert S.decide(p, rel, lo, hi)[0] == outcome
