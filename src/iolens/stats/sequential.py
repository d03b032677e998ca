"""The decision of a comparison, and when adaptive runs (`--runs auto`) may stop: pure, data in, a plain verdict out.

One comparison is the ratio of two configurations' times, estimated on the log scale: the difference of mean
log times (the ratio of geometric means), with Welch's t interval (Welch 1947, by `scipy.stats.ttest_ind` with
`equal_var=False`).  At a look that may spend `alpha`:

- **faster / slower**: the two-sided (1 - alpha) interval of the ratio excludes 1;
- **equivalent**: two one-sided tests at the margin (Schuirmann 1987), each at level alpha: the (1 - 2 alpha)
  interval lies inside [1 / (1 + margin), 1 + margin];
- **undecided**: neither.

Adaptive runs look at the data after rounds 5, 8, 11, 17, 25, 38, ... up to `--max-runs` (and when `--max-time` is
spent).  The error rate across looks is held by alpha spending (Lan & DeMets 1983, "Discrete sequential
boundaries for clinical trials", Biometrika 70:659) with the Pocock-type function
alpha * ln(1 + (e - 1) t), t = rounds / max rounds (Kim & DeMets 1987): each look spends the increase of the
function since the previous look, and by the Bonferroni inequality the chance of any false call over every
look, of either kind, is at most the total, alpha.  (The exact boundaries of Lan and DeMets, from the joint
distribution of the looks, would be less conservative; the Bonferroni bound needs no normality across looks.)
A fixed number of runs is one look that spends all of alpha.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field

import numpy as np
from scipy import stats as sps

ALPHA = 0.05
MARGIN = 0.05  # equivalence margin: no difference larger than 5%
FIRST_LOOK = 5  # rounds before the first look of --runs auto
GROWTH = 1.5  # each look after ~1.5 times as many rounds as the one before
KINDS = ("faster", "slower", "equivalent", "undecided")
MORE_RUNS = {False: "use --runs auto, or more runs, or a quieter machine",  # what an undecided verdict asks for,
             True: "run longer or quieter"}  # with a fixed number of runs and with --runs auto


@dataclass
class Decision:
    name: str
    baseline: str
    kind: str  # faster | slower | equivalent | undecided
    ratio: float | None  # geometric mean of name's times / baseline's
    low: float | None  # the interval of the ratio that decided (undecided: the two-sided one)
    high: float | None
    level: float | None  # its confidence level
    n: int
    n_baseline: int
    alpha: float  # what this look could spend
    margin: float
    spread: float | None  # pooled SD of log times: the runs' typical relative scatter
    reason: str  # why, in words a user can act on
    sentence: str  # the verdict

    def to_dict(self) -> dict:
        return asdict(self)


def pocock_spending(t: float, alpha: float = ALPHA) -> float:
    """Lan-DeMets alpha spending with the Pocock-type function alpha ln(1 + (e - 1) t), t in [0, 1]."""
    t = min(max(t, 0.0), 1.0)
    return alpha * math.log(1 + (math.e - 1) * t)


def schedule(max_runs: int, first: int = FIRST_LOOK, growth: float = GROWTH) -> list[int]:
    """The rounds after which adaptive runs look: first, x1.5 each time, and always max_runs."""
    out: list[int] = []
    n = float(min(first, max_runs))
    while round(n) < max_runs:
        if not out or round(n) > out[-1]:
            out.append(int(round(n)))
        n *= growth
    return [*out, max_runs]


def pct(v: float) -> str:
    """A relative difference's size as a percentage: "5.2%", "116%"."""
    v = abs(v) * 100
    return f"{v:.1f}%" if v < 100 else f"{v:.0f}%"


def signed_pct(v: float) -> str:
    """A relative difference as a signed percentage: "+5.2%", "-0.4%"."""
    text = pct(v)
    return ("-" if v < 0 and text.strip("0.%") else "+") + text


def _runs(n: int, nb: int) -> str:
    return f"{n} runs each" if n == nb else f"{n} vs {nb} runs"


def _intervals(lb: np.ndarray, lo: np.ndarray) -> Callable[[float], tuple[float, float]]:
    """Welch's t interval of mean(lo) - mean(lb), at a level given later; exact when neither sample varies."""
    d = float(lo.mean() - lb.mean())
    if lb.var() == 0 and lo.var() == 0:
        return lambda _level: (d, d)
    res = sps.ttest_ind(lo, lb, equal_var=False)

    def at(level: float) -> tuple[float, float]:
        ci = res.confidence_interval(confidence_level=level)
        return float(ci.low), float(ci.high)

    return at


def decide(name: str, times: Sequence[float], baseline: str, base_times: Sequence[float], *,
           alpha: float = ALPHA, margin: float = MARGIN, adaptive: bool = False) -> Decision:
    """The verdict of `name` against `baseline` at one look that may spend `alpha` (see the module's rule)."""
    n, nb = len(times), len(base_times)
    if n < 2 or nb < 2:
        reason = f"not enough successful runs to compare ({n} and {nb}; at least 2 each)"
        return Decision(name, baseline, "undecided", None, None, None, None, n, nb, alpha, margin, None, reason,
                        f"{name} vs {baseline}: undecided: {reason}")
    lb = np.log(np.maximum(np.asarray(base_times, dtype=float), 1e-12))
    lo = np.log(np.maximum(np.asarray(times, dtype=float), 1e-12))
    d = float(lo.mean() - lb.mean())
    ratio = math.exp(d)
    spread = math.sqrt(((n - 1) * lo.var(ddof=1) + (nb - 1) * lb.var(ddof=1)) / (n + nb - 2))
    runs = _runs(n, nb)
    interval = _intervals(lb, lo)
    two = interval(1 - alpha)
    bound = math.log1p(margin)
    if two[0] > 0 or two[1] < 0:
        kind = "slower" if d > 0 else "faster"
        low, high = math.exp(two[0]), math.exp(two[1])
        lo_pct, hi_pct = sorted((abs(low - 1), abs(high - 1)))
        within = (f", within the {100 * margin:g}% margin" if -bound < two[0] and two[1] < bound else "")
        reason = f"the {100 * (1 - alpha):.4g}% interval of the ratio excludes 1"
        sentence = (f"{name} is {kind} than {baseline} by {pct(ratio - 1)} [{pct(lo_pct)}, {pct(hi_pct)}]"
                    f"{within} ({runs})")
        return Decision(name, baseline, kind, ratio, low, high, 1 - alpha, n, nb, alpha, margin, spread, reason,
                        sentence)
    one = interval(1 - 2 * alpha)
    if -bound < one[0] and one[1] < bound:
        low, high = math.exp(one[0]), math.exp(one[1])
        reason = (f"both one-sided tests at the {100 * margin:g}% margin reject (the {100 * (1 - 2 * alpha):.4g}% "
                  "interval lies inside it)")
        sentence = (f"{name} vs {baseline}: no difference larger than {100 * margin:g}% ({runs}; "
                    f"{signed_pct(ratio - 1)} [{signed_pct(low - 1)}, {signed_pct(high - 1)}])")
        return Decision(name, baseline, "equivalent", ratio, low, high, 1 - 2 * alpha, n, nb, alpha, margin,
                        spread, reason, sentence)
    low, high = math.exp(two[0]), math.exp(two[1])
    todo = MORE_RUNS[adaptive]
    reason = (f"the interval [{signed_pct(low - 1)}, {signed_pct(high - 1)}] neither excludes 0 nor fits inside "
              f"±{100 * margin:g}%")
    sentence = (f"{name} vs {baseline}: undecided after {runs}: the spread is ±{pct(spread)}; {todo} "
                f"({signed_pct(ratio - 1)} [{signed_pct(low - 1)}, {signed_pct(high - 1)}])")
    return Decision(name, baseline, "undecided", ratio, low, high, 1 - alpha, n, nb, alpha, margin, spread, reason,
                    sentence)


@dataclass
class Stopper:
    """The stopping rule of `--runs auto` for every configuration against the baseline.

    Look after the scheduled rounds (and at the budget), spend this look's share of alpha, and freeze each
    comparison the first time it is decided; the run stops when every comparison is decided or the budget
    is spent.
    """

    names: list[str]
    baseline: str
    max_runs: int
    alpha: float = ALPHA
    margin: float = MARGIN
    looks: list[int] = field(default_factory=list)  # the rounds at which it looked
    decisions: dict[str, Decision] = field(default_factory=dict)  # frozen when decided, else the latest
    spent: float = 0.0

    def due(self, rounds: int) -> bool:
        return rounds in schedule(self.max_runs)

    def open(self) -> list[str]:
        return [n for n in self.names if n != self.baseline
                and (n not in self.decisions or self.decisions[n].kind == "undecided")]

    def active(self) -> list[str]:
        """Configurations still to run: the undecided ones and, while any is undecided, the baseline."""
        todo = self.open()
        return [n for n in self.names if n in todo or (todo and n == self.baseline)]

    def drop(self, name: str) -> None:
        """A configuration that cannot run (every run failed): no longer waited for; without the baseline, none is."""
        self.names = [n for n in self.names if n != name and name != self.baseline] or [self.baseline]

    def look(self, rounds: int, times: dict[str, list[float]]) -> None:
        total = pocock_spending(rounds / self.max_runs, self.alpha)
        alpha, self.spent = total - self.spent, total
        self.looks.append(rounds)
        for n in self.open():
            self.decisions[n] = decide(n, times[n], self.baseline, times[self.baseline], alpha=alpha,
                                       margin=self.margin, adaptive=True)

    def run(self, run_round: Callable[[list[str]], None], times: Callable[[], dict[str, list[float]]],
            out_of_time: Callable[[], bool] = lambda: False) -> None:
        """Run rounds (run_round(names)) until every comparison is decided or the budget is spent."""
        rounds = 0
        while True:
            run_round(self.active())
            rounds += 1
            final = rounds >= self.max_runs or out_of_time()
            if final or self.due(rounds):
                self.look(rounds, times())
            if final or (self.looks and not self.open()):
                return
