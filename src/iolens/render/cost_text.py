"""Terminal rendering of a cost report (report dict -> rich tables)."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

from rich.console import Console

from iolens.names import shown_text
from iolens.render.terminal import Col, FitTable
from iolens.units import human_seconds

PART_LABELS = {"storage": "storage", "provisioned": "IOPS/tput", "requests": "requests", "retrieval": "retrieval",
               "data": "data moved", "compute": "compute"}


def money(v: float | None) -> str:
    """Dollars with enough digits for fractions of a cent."""
    if v is None:
        return "-"
    a = abs(v)
    if a == 0:
        return "$0"
    if a >= 100:
        return f"${v:,.0f}"
    if a >= 1:
        return f"${v:.2f}"
    if a >= 0.01:
        return f"${v:.3f}"
    return f"${v:.{1 - math.floor(math.log10(a))}f}"  # two significant digits, never an exponent


def rel(v: float | None) -> str:
    return "-" if v is None else f"{100 * v:.0f}%"


def with_ci(value: str, ci: list[float] | None, fmt: Callable[[float], str]) -> str:
    """A value and, when the runs gave one, its 95% interval: "1.20 s [1.10 s, 1.31 s]"."""
    return value if ci is None else f"{value} [{fmt(ci[0])}, {fmt(ci[1])}]"


FRONT_KEY = {
    "best value": "the cheapest option, and among options costing the same, the fastest",
    "tied": "the runs cannot tell its time apart from the best value's",
    "on front": "on the Pareto front, where no other option is both faster and cheaper",
    "dominated": "another option is both faster and cheaper",
    "[low, high]": "the 95% interval of the median, from the runs' spread",
}


def front_key() -> str:
    """The words of the front column and the bracketed intervals, one footnote line."""
    return "; ".join(f"{k}: {v}" for k, v in FRONT_KEY.items())


def front_label(o: dict[str, Any]) -> str:
    if o["best_value"]:
        return "best value"
    if o["tied_with_best"]:
        return "tied with best on time" + ("" if o["on_front"] else f", dominated by {o['dominated_by']}")
    return "on front" if o["on_front"] else f"dominated by {o['dominated_by']}"


def _shares(o: dict[str, Any]) -> str:
    parts = [(k, v) for k, v in o["shares"].items() if v]
    parts.sort(key=lambda kv: -kv[1])
    return ", ".join(f"{PART_LABELS[k]} {100 * v:.0f}%" for k, v in parts[:3]) or "-"


def render_cost(rep: dict[str, Any], console: Console) -> None:
    src = rep["source"]
    title = "iolens cost" + (f": compare run {src['run_id']}" if src["run_id"] is not None else "")
    if src["command_template"]:
        title += f" ({src['command_template']})"
    console.print(shown_text(title, style="bold"))
    s = rep["settings"]
    held = "all month" if s["always"] else ("for the run" if s["held_for_s"] is None else s["held_for"])
    pr = rep["prices"]
    dated = f"retrieved {pr['retrieved']}" if pr["retrieved"] else f"as of {pr['as_of']}"
    console.print(f"  {s['runs_per_month']:g} runs per month, storage held {held}; prices {dated}"
                  f"{' (transcribed)' if pr['transcribed'] else ''}")
    # the answer (time, money, the front) stays; what it is made of gives way first
    t = FitTable([Col("option", "left", flex="middle"), Col("priced as", "left", wrap=True, drop=2),
                  Col("time", wrap=True), Col("$ per run", wrap=True, drop=3), Col("$ per month", wrap=True),
                  Col("time rel.", drop=4), Col("cost rel.", drop=5), Col("front", "left", wrap=True),
                  Col("largest parts", "left", wrap=True, drop=1)], show_edge=False, pad_edge=False,
                 title="Time and money per option, median [95% interval] (relative: to the fastest and to the "
                       "cheapest)", title_justify="left")
    for o in rep["options"]:
        priced = " + ".join(st["spec"] for st in o["storages"]) or "-"
        if o["instance"]:
            priced += f" on {o['instance']['type']}"
        front = front_label(o)
        t.add_row(shown_text(o["name"], style="bold" if o["best_value"] else ""), shown_text(priced),
                  with_ci(human_seconds(o["time_s"]), o["time_ci"], human_seconds),
                  with_ci(money(o["per_run"]), o["per_run_ci"], money),
                  with_ci(money(o["per_month"]), o["per_month_ci"], money), rel(o["time_rel"]), rel(o["cost_rel"]),
                  shown_text(front, style="green" if o["on_front"] else "dim"), _shares(o))
    console.print(t)
    console.print(shown_text(front_key(), style="dim"))
    console.print(shown_text(rep["verdict"], style="bold"))
    for w in rep["warnings"]:
        console.print(shown_text(f"warning: {w}", style="yellow"))
    for n in rep["notes"]:
        console.print(shown_text(f"note: {n}", style="dim"))


def render_charges(rep: dict[str, Any], console: Console) -> None:
    """Every charge of every option (--details)."""
    for o in rep["options"]:
        t = FitTable([Col("charge", "left", wrap=True), Col("quantity", wrap=True), Col("price", drop=2),
                      Col("per run", drop=3), Col("per month"), Col("basis", "left", wrap=True, drop=1)],
                     show_edge=False, pad_edge=False, title=shown_text(o["name"]), title_justify="left")
        for c in o["charges"]:
            t.add_row(shown_text(c["what"]), f"{c['quantity']:.4g} {c['unit']}", "tiered" if c["price"] is None else
                      f"{c['price']:g}", money(c["per_run"]), money(c["per_month"]), shown_text(c["basis"]))
        console.print(t)
