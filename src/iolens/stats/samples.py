"""Pure statistics for `iolens compare`: plain numbers in, plain data out.

References:
- Mann-Whitney U: Mann & Whitney (1947), by `scipy.stats.mannwhitneyu` (exact null distribution for small
  samples without ties, else the normal approximation with tie and continuity corrections).
- Bootstrap: Efron & Tibshirani, *An Introduction to the Bootstrap* (1993), percentile interval, by
  `scipy.stats.bootstrap`.
- Outliers: Iglewicz & Hoaglin, *How to Detect and Handle Outliers* (1993): modified
  z-score 0.6745 (x - median) / MAD, outlier when |z| > 3.5; when MAD is 0 the mean absolute
  deviation scaled by 1.253314 is used instead (as IBM SPSS documents).
- Minimum detectable difference: two-sample normal power formula, alpha 0.05 two-sided, power 0.8.

The verdict sentence is the decision of `stats.sequential` (faster, slower, equivalent within the margin,
or undecided, on the ratio of geometric means).  Beside it, `outcome` keeps the rank reading of schema 1.1
(docs/compare.md, "The rank reading"): a difference is significant only when the U test (p < 0.05) and the
bootstrap interval of the difference of medians (excluding 0, on the side of the estimate) agree; "no
difference" when neither finds one; "inconclusive" when they disagree.  Intervals are shown as they are.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np
from scipy import stats as sps

from iolens.stats import sequential

Z_975 = 1.959963984540054  # standard normal quantiles
Z_80 = 0.8416212335729143
OUTLIER_Z = 3.5
OUTLIER_MIN_N = 5  # fewer values than this: no outliers are reported (the MAD of 3 values says little)
ALPHA = 0.05
BOOTSTRAP_RESAMPLES = 10_000


@dataclass
class Describe:
    n: int
    mean: float | None
    stddev: float | None
    median: float | None
    min: float | None
    max: float | None
    cv: float | None  # stddev / mean
    ci_low: float | None  # 95% bootstrap CI of the median
    ci_high: float | None
    ci_half_rel: float | None  # CI half-width / median

    def to_dict(self) -> dict:
        return asdict(self)


@dataclass
class Comparison:
    name: str
    baseline: str
    n: int
    n_baseline: int
    rel_diff: float | None  # (median - baseline median) / baseline median
    rel_ci_low: float | None
    rel_ci_high: float | None
    p_value: float | None
    significant: bool | None  # the test and the interval agree that there is a difference
    detectable: float | None  # smallest relative difference these runs could detect
    verdict: str
    ci_excludes_zero: bool | None = None  # the interval lies on one side of 0, the side of the estimate
    outcome: str | None = None  # "faster", "slower", "no difference" or "inconclusive"; None: too few runs
    decision: dict | None = None  # sequential.Decision: the verdict's kind, ratio, interval, runs and reason

    def to_dict(self) -> dict:
        return asdict(self)


def _rng(seed: int | None) -> np.random.Generator:
    return np.random.default_rng(0 if seed is None else seed)


def bootstrap_ci(x: Sequence[float] | np.ndarray, stat: Callable[..., Any] = np.median, *, level: float = 0.95,
                 resamples: int = BOOTSTRAP_RESAMPLES, seed: int | None = 0) -> tuple[float, float]:
    """Percentile bootstrap CI of `stat` (a numpy reduction taking axis=), by `scipy.stats.bootstrap`."""
    a = np.asarray(x, dtype=float)
    if a.size == 0:
        raise ValueError("bootstrap of an empty sample")
    if np.all(a == a[0]):
        return float(stat(a)), float(stat(a))  # every resample is the sample itself
    res = sps.bootstrap((a,), stat, n_resamples=resamples, vectorized=True, confidence_level=level,
                        method="percentile", rng=_rng(seed))
    return float(res.confidence_interval.low), float(res.confidence_interval.high)


def _rel_median_diff(base: np.ndarray, other: np.ndarray, axis: int = -1) -> np.ndarray:
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.median(other, axis=axis) / np.median(base, axis=axis) - 1


def bootstrap_rel_diff_ci(base: Sequence[float], other: Sequence[float], *, level: float = 0.95,
                          resamples: int = BOOTSTRAP_RESAMPLES, seed: int | None = 0) -> tuple[float, float]:
    """Percentile bootstrap CI of median(other)/median(base) - 1, both samples resampled independently
    (`scipy.stats.bootstrap` with unpaired samples); resamples with a zero base median are left out."""
    b = np.asarray(base, dtype=float)
    o = np.asarray(other, dtype=float)
    res = sps.bootstrap((b, o), _rel_median_diff, n_resamples=resamples, vectorized=True, paired=False,
                        confidence_level=level, method="percentile", rng=_rng(seed))
    rel = res.bootstrap_distribution
    rel = rel[np.isfinite(rel)]
    tail = (1 - level) / 2
    lo, hi = np.quantile(rel, [tail, 1 - tail])
    return float(lo), float(hi)


def describe(x: Sequence[float], *, seed: int | None = 0) -> Describe:
    a = np.asarray(x, dtype=float)
    n = int(a.size)
    if n == 0:
        return Describe(0, None, None, None, None, None, None, None, None, None)
    mean = float(a.mean())
    sd = float(a.std(ddof=1)) if n > 1 else None
    med = float(np.median(a))
    lo = hi = half = None
    if n > 1:
        lo, hi = bootstrap_ci(a, seed=seed)
        half = (hi - lo) / 2 / med if med else None
    return Describe(n, mean, sd, med, float(a.min()), float(a.max()),
                    sd / mean if sd is not None and mean else None, lo, hi, half)


def mann_whitney_u(x: Sequence[float], y: Sequence[float], *, method: str = "auto") -> tuple[float, float]:
    """Two-sided Mann-Whitney U test (`scipy.stats.mannwhitneyu`): (U of x, p-value).

    method: "exact" (no ties), "asymptotic" (tie-corrected normal with continuity correction),
    or "auto": exact when a sample has at most 8 values and there are no ties.
    """
    a = np.asarray(x, dtype=float)
    b = np.asarray(y, dtype=float)
    if a.size == 0 or b.size == 0:
        raise ValueError("Mann-Whitney U needs two non-empty samples")
    res = sps.mannwhitneyu(a, b, alternative="two-sided", method=method)
    p = float(res.pvalue)
    return float(res.statistic), 1.0 if math.isnan(p) else p


def modified_z_scores(x: Sequence[float]) -> list[float]:
    """0.6745 (x - median) / MAD; with MAD 0, (x - median) / (1.253314 mean |x - median|)."""
    a = np.asarray(x, dtype=float)
    if a.size == 0:
        return []
    med = np.median(a)
    dev = np.abs(a - med)
    mad = np.median(dev)
    if mad > 0:
        return [float(v) for v in 0.6745 * (a - med) / mad]
    meanad = dev.mean()
    if meanad > 0:
        return [float(v) for v in (a - med) / (1.253314 * meanad)]
    return [0.0] * int(a.size)


def outliers(x: Sequence[float], threshold: float = OUTLIER_Z) -> list[int]:
    """Indices of values whose |modified z-score| exceeds the threshold (none for fewer than 5 values)."""
    if len(x) < OUTLIER_MIN_N:
        return []
    return [i for i, z in enumerate(modified_z_scores(x)) if abs(z) > threshold]


def first_run_slow(x: Sequence[float]) -> bool:
    """The first (chronological) run is an outlier and slower than every other run."""
    if len(x) < 3:
        return False
    z = modified_z_scores(x)
    return z[0] > OUTLIER_Z and x[0] > max(x[1:])


def detectable_difference(base: Sequence[float], other: Sequence[float]) -> float | None:
    """Smallest relative difference of means detectable at alpha 0.05 (two-sided) with 80% power."""
    b = np.asarray(base, dtype=float)
    o = np.asarray(other, dtype=float)
    if b.size < 2 or o.size < 2:
        return None
    pooled = math.sqrt(((b.size - 1) * b.var(ddof=1) + (o.size - 1) * o.var(ddof=1)) / (b.size + o.size - 2))
    ref = float(np.median(b))
    if ref == 0:
        return None
    return (Z_975 + Z_80) * pooled * math.sqrt(1 / b.size + 1 / o.size) / ref


def decide(p: float, rel: float | None, lo: float, hi: float, alpha: float = ALPHA) -> tuple[str, bool]:
    """The verdict's rule: (outcome, whether the interval excludes 0 on the side of the estimate).

    "faster"/"slower" only when the test (p < alpha) and the interval agree; "no difference" when neither
    finds one; "inconclusive" when they disagree (one finds a difference, the other does not).
    """
    side = 1 if lo > 0 else -1 if hi < 0 else 0
    est = 0 if not rel else (1 if rel > 0 else -1)
    excludes = side != 0 and side == est
    test = p < alpha
    if test and excludes:
        return ("slower" if est > 0 else "faster"), True
    if not test and side == 0:
        return "no difference", False
    return "inconclusive", excludes


def compare(name: str, times: Sequence[float], baseline: str, base_times: Sequence[float], *,
            seed: int | None = 0, decision: sequential.Decision | None = None,
            margin: float = sequential.MARGIN) -> Comparison:
    """`name` against `baseline`: the decision's verdict (a fixed number of runs: one look at alpha 0.05, unless
    the adaptive rule's `decision` is given), and the rank reading: medians' difference with CI, U test."""
    n, nb = len(times), len(base_times)
    if decision is None:
        decision = sequential.decide(name, times, baseline, base_times, margin=margin)
    if n < 2 or nb < 2:
        return Comparison(name, baseline, n, nb, None, None, None, None, None, None, decision.sentence,
                          decision=decision.to_dict())
    mb, mo = float(np.median(base_times)), float(np.median(times))
    rel = mo / mb - 1 if mb else None
    lo, hi = bootstrap_rel_diff_ci(base_times, times, seed=seed)
    _u, p = mann_whitney_u(times, base_times)
    det = detectable_difference(base_times, times)
    outcome, excludes = decide(p, rel, lo, hi)
    return Comparison(name, baseline, n, nb, rel, lo, hi, p, outcome in ("faster", "slower"), det, decision.sentence,
                      ci_excludes_zero=excludes, outcome=outcome, decision=decision.to_dict())
