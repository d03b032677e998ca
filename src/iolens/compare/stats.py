"""Pure statistics for `iolens compare`: plain numbers in, plain data out.

References:
- Mann-Whitney U: Mann & Whitney (1947); exact null distribution by the recurrence of
  their paper, normal approximation with tie and continuity corrections (as in scipy's
  `mannwhitneyu(method="auto")`, which the tests check against).
- Bootstrap: Efron & Tibshirani, *An Introduction to the Bootstrap* (1993), percentile interval.
- Outliers: Iglewicz & Hoaglin, *How to Detect and Handle Outliers* (1993): modified
  z-score 0.6745 (x - median) / MAD, outlier when |z| > 3.5; when MAD is 0 the mean absolute
  deviation scaled by 1.253314 is used instead (as IBM SPSS documents).
- Minimum detectable difference: two-sample normal power formula, alpha 0.05 two-sided, power 0.8.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from functools import lru_cache
from typing import Sequence

import numpy as np

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
    significant: bool | None
    detectable: float | None  # smallest relative difference these runs could detect
    verdict: str

    def to_dict(self) -> dict:
        return asdict(self)


def _rng(seed: int | None) -> np.random.Generator:
    return np.random.default_rng(0 if seed is None else seed)


def bootstrap_ci(x: Sequence[float], stat=np.median, *, level: float = 0.95, resamples: int = BOOTSTRAP_RESAMPLES,
                 seed: int | None = 0) -> tuple[float, float]:
    """Percentile bootstrap CI of `stat` (a numpy reduction taking axis=)."""
    a = np.asarray(x, dtype=float)
    if a.size == 0:
        raise ValueError("bootstrap of an empty sample")
    idx = _rng(seed).integers(0, a.size, size=(resamples, a.size))
    stats = stat(a[idx], axis=1)
    tail = (1 - level) / 2
    lo, hi = np.quantile(stats, [tail, 1 - tail])
    return float(lo), float(hi)


def bootstrap_rel_diff_ci(base: Sequence[float], other: Sequence[float], *, level: float = 0.95,
                          resamples: int = BOOTSTRAP_RESAMPLES, seed: int | None = 0) -> tuple[float, float]:
    """Percentile bootstrap CI of median(other)/median(base) - 1, both samples resampled independently."""
    b = np.asarray(base, dtype=float)
    o = np.asarray(other, dtype=float)
    rng = _rng(seed)
    mb = np.median(b[rng.integers(0, b.size, size=(resamples, b.size))], axis=1)
    mo = np.median(o[rng.integers(0, o.size, size=(resamples, o.size))], axis=1)
    with np.errstate(divide="ignore", invalid="ignore"):
        rel = mo / mb - 1
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


def _rankdata(a: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Average ranks (1-based) and the sizes of the tie groups."""
    order = np.argsort(a, kind="mergesort")
    s = a[order]
    ranks = np.empty(a.size, dtype=float)
    ties = []
    i = 0
    while i < s.size:
        j = i
        while j + 1 < s.size and s[j + 1] == s[i]:
            j += 1
        ranks[order[i : j + 1]] = (i + j) / 2 + 1
        ties.append(j - i + 1)
        i = j + 1
    return ranks, np.asarray(ties, dtype=float)


@lru_cache(maxsize=256)
def _u_counts(n1: int, n2: int) -> tuple[int, ...]:
    """Number of arrangements giving each U = 0..n1*n2 (Mann & Whitney's recurrence)."""
    # f(n1, n2, u) = f(n1-1, n2, u-n2) + f(n1, n2-1, u)
    table = {}

    def f(a: int, b: int) -> list[int]:
        key = (a, b)
        if key in table:
            return table[key]
        if a == 0 or b == 0:
            res = [1]
        else:
            left = f(a - 1, b)  # largest value from sample 1: contributes b to U
            right = f(a, b - 1)
            res = [0] * (a * b + 1)
            for u, c in enumerate(left):
                res[u + b] += c
            for u, c in enumerate(right):
                res[u] += c
        table[key] = res
        return res

    return tuple(f(n1, n2))


def _norm_sf(z: float) -> float:
    return 0.5 * math.erfc(z / math.sqrt(2))


def mann_whitney_u(x: Sequence[float], y: Sequence[float], *, method: str = "auto") -> tuple[float, float]:
    """Two-sided Mann-Whitney U test: (U of x, p-value).

    method: "exact" (no ties), "asymptotic" (tie-corrected normal with continuity correction),
    or "auto": exact when a sample has at most 8 values and there are no ties.
    """
    a = np.asarray(x, dtype=float)
    b = np.asarray(y, dtype=float)
    n1, n2 = a.size, b.size
    if n1 == 0 or n2 == 0:
        raise ValueError("Mann-Whitney U needs two non-empty samples")
    ranks, ties = _rankdata(np.concatenate([a, b]))
    u1 = float(ranks[:n1].sum() - n1 * (n1 + 1) / 2)
    has_ties = bool((ties > 1).any())
    if method == "auto":
        method = "exact" if (min(n1, n2) <= 8 and not has_ties) else "asymptotic"
    u_big = max(u1, n1 * n2 - u1)
    if method == "exact":
        counts = _u_counts(n1, n2)
        total = sum(counts)
        # P(U >= u_big), doubled, capped at 1
        k = int(round(u_big))
        p = 2 * sum(counts[k:]) / total
        return u1, min(1.0, p)
    n = n1 + n2
    mu = n1 * n2 / 2
    var = n1 * n2 / 12 * ((n + 1) - float((ties**3 - ties).sum()) / (n * (n - 1)))
    if var <= 0:
        return u1, 1.0
    z = (u_big - mu - 0.5) / math.sqrt(var)
    return u1, min(1.0, 2 * _norm_sf(z))


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


def format_p(p: float) -> str:
    if p < 0.001:
        return "p < 0.001"
    return f"p = {p:.3f}" if p < 0.1 else f"p = {p:.2f}"


def _pct(v: float) -> str:
    v = abs(v) * 100
    return f"{v:.2f}%" if v < 1 else f"{v:.1f}%"


def _runs_phrase(n: int, nb: int) -> str:
    return f"{n} runs each" if n == nb else f"{n} vs {nb} runs"


def compare(name: str, times: Sequence[float], baseline: str, base_times: Sequence[float], *,
            seed: int | None = 0) -> Comparison:
    """`name` against `baseline`: relative difference of medians with CI, U test, verdict in words."""
    n, nb = len(times), len(base_times)
    if n < 2 or nb < 2:
        return Comparison(name, baseline, n, nb, None, None, None, None, None, None,
                          f"not enough successful runs to compare {name} with {baseline} "
                          f"({n} and {nb}; at least 2 each)")
    mb, mo = float(np.median(base_times)), float(np.median(times))
    rel = mo / mb - 1 if mb else None
    lo, hi = bootstrap_rel_diff_ci(base_times, times, seed=seed)
    _u, p = mann_whitney_u(times, base_times)
    det = detectable_difference(base_times, times)
    sig = p < ALPHA
    if sig and rel is not None and rel != 0:
        half = (hi - lo) / 2
        word = "faster" if rel < 0 else "slower"
        verdict = (f"{name} is {_pct(rel)} ± {_pct(half)} {word} than {baseline} "
                   f"({format_p(p)}, {_runs_phrase(n, nb)})")
    else:
        tail = f"; the smallest difference these runs could detect is {_pct(det)}" if det is not None else ""
        verdict = (f"{name} vs {baseline}: no significant difference ({format_p(p)}, "
                   f"{_runs_phrase(n, nb)}){tail}")
        sig = False
    return Comparison(name, baseline, n, nb, rel, lo, hi, p, sig, det, verdict)
