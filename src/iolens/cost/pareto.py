"""The time-vs-cost front and the one-sentence verdict, with the times' uncertainty.

Whether one option is faster than another is the decision of `stats.sequential` on their runs' times (the
ratio of geometric means and its Welch interval), at alpha 0.05 shared between all pairs (Bonferroni): an
option is faster only when the interval says so, and two options whose times it cannot tell apart are tied.
Options given as single figures (`--option NAME=SECONDS`) have no runs, so their times are compared as stated.

Cost is decided the same way: an option is cheaper than another only when their per-run costs at the ends of
their times' intervals (`Point.cost_range`) do not overlap; options given as single figures have exact costs.

An option is dominated when another is at least as fast (faster or tied) and at least as cheap (cheaper or tied),
and strictly better in one of the two.  The best value is the cheapest option per run; among the options tied with
it on cost, the one no other of them is faster than (then the cheaper at the medians).  It is always on the front.
Every option on the front that is faster than the best value is described by what it saves (with the interval)
and what it costs more: "gp2 is the best value; NVMe is 2% [1%, 3%] faster for 10% more"; options tied with the
best value on time are named as tied, with whether they cost more or are tied on cost too ("a and b are tied on
time and cost").
"""

from __future__ import annotations

from dataclasses import dataclass, field
from itertools import permutations

from iolens.stats.sequential import ALPHA, Decision, decide


@dataclass(frozen=True)
class Point:
    name: str
    time_s: float
    cost: float
    times: tuple[float, ...] | None = None  # the runs' times, when the option was measured
    cost_range: tuple[float, float] | None = None  # per-run cost at the ends of the time's interval
    time_range: tuple[float, float] | None = None  # that interval


@dataclass
class TimeOrder:
    """Which of two options is faster: by their runs when both have them, else by the stated times."""

    decisions: dict[tuple[str, str], Decision] = field(default_factory=dict)

    @classmethod
    def of(cls, points: list[Point], alpha: float = ALPHA) -> TimeOrder:
        measured = [p for p in points if p.times is not None and len(p.times) >= 2]
        pairs = max(1, len(measured) * (len(measured) - 1) // 2)
        return cls({(p.name, q.name): decide(p.name, p.times or (), q.name, q.times or (), alpha=alpha / pairs)
                    for p, q in permutations(measured, 2)})

    def cmp(self, p: Point, q: Point) -> int:
        """-1: p is faster than q; 1: slower; 0: tied."""
        d = self.decisions.get((p.name, q.name))
        if d is not None:
            return -1 if d.kind == "faster" else 1 if d.kind == "slower" else 0
        return (p.time_s > q.time_s) - (p.time_s < q.time_s)

    def faster_by(self, p: Point, q: Point) -> tuple[float, float | None, float | None]:
        """How much less time p takes than q: the estimate and, from runs, its interval."""
        d = self.decisions.get((p.name, q.name))
        if d is not None and d.ratio is not None and d.low is not None and d.high is not None:
            return 1 - d.ratio, 1 - d.high, 1 - d.low
        return (q.time_s - p.time_s) / q.time_s, None, None


def _cost_at(p: Point, t: float) -> float:
    """p's per-run cost had it taken t seconds: along the line through its costs at its time interval's ends."""
    if not p.cost_range or not p.time_range or p.time_range[1] == p.time_range[0]:
        return p.cost
    (t0, t1), (c0, c1) = p.time_range, p.cost_range
    return c0 + (c1 - c0) * (t - t0) / (t1 - t0)


def cost_cmp(p: Point, q: Point, order: TimeOrder | None = None) -> int:
    """-1: p is cheaper than q; 1: dearer; 0: tied on cost.  When the runs cannot tell their times apart, the two
    are priced at one common time (their prices decide); otherwise p is cheaper only when their cost intervals do
    not overlap."""
    if order is not None and (p.name, q.name) in order.decisions and order.cmp(p, q) == 0:
        t = (p.time_s + q.time_s) / 2
        cp, cq = _cost_at(p, t), _cost_at(q, t)
        return 0 if abs(cp - cq) <= 1e-9 * max(abs(cp), abs(cq), 1e-12) else (-1 if cp < cq else 1)
    pl, ph = sorted(p.cost_range or (p.cost, p.cost))
    ql, qh = sorted(q.cost_range or (q.cost, q.cost))
    return -1 if ph < ql else 1 if qh < pl else 0


def dominated_by(points: list[Point], order: TimeOrder | None = None) -> dict[str, str | None]:
    """name -> the name of one option that dominates it (the cheapest such), or None when it is on the front."""
    order = order or TimeOrder()
    out: dict[str, str | None] = {}
    for p in points:
        better = [q for q in points if q is not p and order.cmp(q, p) <= 0 and cost_cmp(q, p, order) <= 0
                  and (order.cmp(q, p) < 0 or cost_cmp(q, p, order) < 0)]
        out[p.name] = min(better, key=lambda q: (q.cost, q.time_s)).name if better else None
    return out


def front(points: list[Point], order: TimeOrder | None = None) -> list[Point]:
    """The non-dominated points, fastest first."""
    dom = dominated_by(points, order)
    return sorted((p for p in points if dom[p.name] is None), key=lambda p: (p.time_s, p.cost))


def best_value(points: list[Point], order: TimeOrder | None = None) -> Point:
    """The cheapest option; among those tied with it on cost, one that none of them is faster than."""
    order = order or TimeOrder()
    cheapest = min(points, key=lambda p: (p.cost, p.time_s))
    same = sorted((p for p in points if cost_cmp(p, cheapest, order) == 0), key=lambda p: (p.cost, p.time_s))
    return next((p for p in same if all(order.cmp(q, p) >= 0 for q in same)), cheapest)


def _pct(x: float) -> str:
    v = 100.0 * x
    return f"{v:.0f}%" if abs(v) >= 1 or v == 0 else f"{v:.1f}%"


def tradeoffs(points: list[Point], order: TimeOrder | None = None) -> list[dict]:
    """For each front option faster than the best value: how much faster (with its interval from runs), how much
    more, $ per 1% of time saved."""
    order = order or TimeOrder()
    best = best_value(points, order)
    out = []
    for p in front(points, order):
        if p is best or order.cmp(p, best) >= 0:
            continue
        saved, low, high = order.faster_by(p, best)
        more = (p.cost - best.cost) / best.cost if best.cost else None
        out.append({"name": p.name, "faster": saved, "faster_ci": None if low is None else [low, high],
                    "more": more, "cost_per_pct_saved": (p.cost - best.cost) / (100.0 * saved) if saved else None})
    return out


def tied(points: list[Point], order: TimeOrder | None = None) -> list[str]:
    """The options whose time cannot be told apart from the best value's."""
    order = order or TimeOrder()
    best = best_value(points, order)
    return [p.name for p in points if p is not best and order.cmp(p, best) == 0]


def verdict(points: list[Point], order: TimeOrder | None = None) -> str:
    """The one sentence."""
    if not points:
        return "nothing to compare"
    order = order or TimeOrder()
    best = best_value(points, order)
    if len(points) == 1:
        return f"{best.name} is the only option priced"
    parts = []
    by_name = {p.name: p for p in points}
    for t in tradeoffs(points, order):
        more = "an unknown amount more" if t["more"] is None else (
            "the same price" if t["more"] == 0 else f"{_pct(t['more'])} more")
        rng, best_rng = by_name[t["name"]].cost_range, best.cost_range
        if t["more"] and rng and best_rng and rng[0] <= best_rng[1]:
            more = f"about the same cost ({more} at the medians; the times' intervals overlap in $)"
        ci = "" if t["faster_ci"] is None else f" [{_pct(t['faster_ci'][0])}, {_pct(t['faster_ci'][1])}]"
        parts.append(f"{t['name']} is {_pct(t['faster'])}{ci} faster for {more}")
    same = tied(points, order)
    both = [n for n in same if cost_cmp(by_name[n], best, order) == 0]  # tied on time and on cost: either will do
    them = "them" if both else "it"
    dearer: dict[str, list[str]] = {}  # options tied on time that cost the same % more are named together
    for n in same:
        if n not in both:
            extra = (by_name[n].cost - best.cost) / best.cost if best.cost else None
            dearer.setdefault(f" and cost{{s}} {_pct(extra)} more" if extra else "", []).append(n)
    for more_text, names in dearer.items():
        one = len(names) == 1
        parts.append(f"{', '.join(names)} {'is' if one else 'are'} tied with {them} on time"
                     + more_text.format(s="s" if one else ""))
    fastest = not parts and not both and all(order.cmp(best, p) < 0 for p in points if p is not best)
    if both:
        gap = max(abs(by_name[n].cost - best.cost) / best.cost if best.cost else 0.0 for n in both)
        apart = f" (medians {_pct(gap)} apart in $)" if round(100 * gap, 1) else ""
        lead = (f"{best.name} and {', '.join(both)} are tied on time and on cost within their intervals: either is "
                f"the best value{apart}" if gap
                else f"{best.name} and {', '.join(both)} are tied on time and cost: either is the best value")
        return lead + ("; " + ", ".join(parts) if parts else "")
    if not parts:
        return f"{best.name} is the best value{' and the fastest' if fastest else ''}"
    return f"{best.name} is the best value; " + ", ".join(parts)
