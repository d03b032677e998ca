"""The time-vs-cost front and the one-sentence verdict.

An option is dominated when another is at least as fast and at least as cheap, and strictly better in one of the
two.  The best value is the cheapest option per run (ties: the faster); it is always on the front.  Every faster
option on the front is then described by what it saves and what it costs more:
"gp2 is the best value; NVMe is 2% faster for 10% more".
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Point:
    name: str
    time_s: float
    cost: float


def dominated_by(points: list[Point]) -> dict[str, str | None]:
    """name -> the name of one option that dominates it (the cheapest such), or None when it is on the front."""
    out: dict[str, str | None] = {}
    for p in points:
        better = [q for q in points if q is not p and q.time_s <= p.time_s and q.cost <= p.cost
                  and (q.time_s < p.time_s or q.cost < p.cost)]
        out[p.name] = min(better, key=lambda q: (q.cost, q.time_s)).name if better else None
    return out


def front(points: list[Point]) -> list[Point]:
    """The non-dominated points, fastest first."""
    dom = dominated_by(points)
    return sorted((p for p in points if dom[p.name] is None), key=lambda p: (p.time_s, p.cost))


def best_value(points: list[Point]) -> Point:
    return min(points, key=lambda p: (p.cost, p.time_s))


def _pct(x: float) -> str:
    v = 100.0 * x
    return f"{v:.0f}%" if abs(v) >= 1 or v == 0 else f"{v:.1f}%"


def tradeoffs(points: list[Point]) -> list[dict]:
    """For each front option faster than the best value: how much faster, how much more, $ per 1% of time saved."""
    best = best_value(points)
    out = []
    for p in front(points):
        if p.time_s >= best.time_s:
            continue
        saved = (best.time_s - p.time_s) / best.time_s
        more = (p.cost - best.cost) / best.cost if best.cost else None
        out.append({"name": p.name, "faster": saved, "more": more,
                    "cost_per_pct_saved": (p.cost - best.cost) / (100.0 * saved) if saved else None})
    return out


def verdict(points: list[Point]) -> str:
    """The one sentence."""
    if not points:
        return "nothing to compare"
    best = best_value(points)
    if len(points) == 1:
        return f"{best.name} is the only option priced"
    parts = []
    for t in tradeoffs(points):
        more = "an unknown amount more" if t["more"] is None else (
            "the same price" if t["more"] == 0 else f"{_pct(t['more'])} more")
        parts.append(f"{t['name']} is {_pct(t['faster'])} faster for {more}")
    fastest = min(points, key=lambda p: (p.time_s, p.cost))
    if not parts:
        tail = " and the fastest" if fastest.name == best.name else ""
        return f"{best.name} is the best value{tail}"
    return f"{best.name} is the best value; " + ", ".join(parts)
