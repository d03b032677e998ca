"""HTML export of a cost report: the time-vs-cost scatter with the Pareto front, the table, every charge.

One self-contained file in the style of the compare page: the charts' library is inlined (render/plotting.py),
nothing is fetched.
"""

from __future__ import annotations

from typing import Any

import plotly.graph_objects as go

from iolens.render.compare_html import CSS, unbroken
from iolens.render.cost_text import PART_LABELS, front_key, front_label, money, rel, with_ci
from iolens.render.htmlsafe import esc
from iolens.cost.prices import named
from iolens.render.plotting import CSS as CHART_CSS
from iolens.render.plotting import (elided, category_axis, chart, labels, money_axis, script_tag, shortened,
                                    time_unit)
from iolens.units import human_seconds

EXTRA_CSS = """
.best { font-weight: 600; } .dominated { color: #888; }
details { margin: 0.4em 0; } summary { cursor: pointer; }
"""


def _bars(group: list[dict[str, Any]], key: str, ci: str, div: float = 1.0) -> dict[str, Any]:
    """The 95% interval of each point as it is (asymmetric); none for options without runs."""
    return dict(type="data", symmetric=False, color="#999", thickness=1,
                array=[0.0 if o[ci] is None else (o[ci][1] - o[key]) / div for o in group],
                arrayminus=[0.0 if o[ci] is None else (o[key] - o[ci][0]) / div for o in group])


def front_figure(rep: dict[str, Any]) -> go.Figure:
    opts = rep["options"]
    fig = go.Figure()
    div, unit = time_unit([o["time_s"] for o in opts])
    names = dict(zip([o["name"] for o in opts], labels([o["name"] for o in opts], 24)))
    front = sorted((o for o in opts if o["on_front"]), key=lambda o: o["time_s"])
    fig.add_trace(go.Scatter(x=[o["time_s"] / div for o in front], y=[o["per_run"] for o in front], mode="lines",
                             line=dict(color="#2ca02c", dash="dot", width=2), name="Pareto front",
                             hoverinfo="skip"))
    for group, symbol, color, name in (
            ([o for o in opts if o["best_value"]], "star", "#1a6d1a", "best value"),
            ([o for o in opts if o["on_front"] and not o["best_value"]], "circle", "#1f77b4", "on the front"),
            ([o for o in opts if not o["on_front"]], "circle-open", "#888888", "dominated")):
        if not group:
            continue
        fig.add_trace(go.Scatter(
            x=[o["time_s"] / div for o in group], y=[o["per_run"] for o in group], mode="markers+text", name=name,
            error_x=_bars(group, "time_s", "time_ci", div), error_y=_bars(group, "per_run", "per_run_ci"),
            text=[names[o["name"]] for o in group], textposition="top center", cliponaxis=False,
            textfont=dict(size=10),
            marker=dict(symbol=symbol, size=16 if symbol == "star" else 12, color=color, line=dict(width=1.5)),
            hovertext=[f"{esc(o['name'])}: {human_seconds(o['time_s'])}, {money(o['per_run'])} per run, "
                       f"{money(o['per_month'])} per month" + ("" if o["on_front"] else
                                                               f" (dominated by {esc(o['dominated_by'])})")
                       for o in group], hoverinfo="text"))
    top = max(((o["per_run_ci"][1] if o["per_run_ci"] else o["per_run"]) or 0.0) for o in opts) if opts else 0.0
    yaxis = money_axis([o["per_run"] for o in opts])
    if top > 0:  # room above the dearest option for its label
        yaxis["range"] = [0, 1.3 * top]
    fig.update_layout(xaxis_title=f"wall time per run ({unit})", yaxis_title="$ per run", yaxis=yaxis)
    # from zero, with room right of the slowest option for its label (at 390 px a label is a third of the plot)
    right = max((o["time_ci"][1] if o["time_ci"] else o["time_s"]) for o in opts) / div if opts else 1.0
    fig.update_xaxes(range=[0, 1.5 * right] if right > 0 else None, rangemode="tozero")
    return fig


def parts_figure(rep: dict[str, Any]) -> go.Figure:
    opts = rep["options"]
    fig = go.Figure()
    colors = ["#3182bd", "#9ecae1", "#fdae6b", "#e6550d", "#a1d99b", "#756bb1"]
    for i, part in enumerate(PART_LABELS):
        ys = [o["parts"][part] for o in opts]
        if not any(ys):
            continue
        fig.add_trace(go.Bar(x=labels([o["name"] for o in opts]), y=ys, name=PART_LABELS[part],
                             marker_color=colors[i]))
    fig.update_layout(barmode="stack", yaxis_title="$ per run", xaxis=category_axis(labels([o["name"] for o in opts])),
                      yaxis=money_axis([sum(v or 0.0 for v in o["parts"].values()) for o in opts]))
    return fig


def _table(rep: dict[str, Any]) -> str:
    head = ["option", "priced as", "time [95% interval]", "$ per run", "$ per month", "time rel. to fastest",
            "cost rel. to cheapest", "front"] + [PART_LABELS[p] for p in PART_LABELS]
    tips = {"time [95% interval]": "median wall time per run; in brackets the range the true median lies in, "
                                   "with 95% confidence",
            "front": "best value, tied, on the Pareto front or dominated: see below the table"}
    tips.update({PART_LABELS[p]: "share of the cost per run" for p in PART_LABELS})
    out = ['<div class="scrollx"><table><tr>' + "".join(
        f'<th title="{esc(tips[h])}">{esc(h)}</th>' if h in tips else f"<th>{esc(h)}</th>" for h in head) + "</tr>"]
    for o in rep["options"]:
        priced = " + ".join(st["spec"] for st in o["storages"]) or "-"
        if o["instance"]:
            priced += f" on {o['instance']['type']}"
        front = front_label(o)
        cls = "best" if o["best_value"] else ("" if o["on_front"] else "dominated")
        cells = [o["name"], priced, with_ci(human_seconds(o["time_s"]), o["time_ci"], human_seconds),
                 with_ci(money(o["per_run"]), o["per_run_ci"], money),
                 with_ci(money(o["per_month"]), o["per_month_ci"], money),
                 rel(o["time_rel"]), rel(o["cost_rel"]), front]
        cells += [("-" if o["shares"][p] is None else f"{100 * o['shares'][p]:.0f}%") for p in PART_LABELS]
        out.append(f'<tr class="{cls}">' + f"<td>{esc(cells[0])}</td><td>{esc(cells[1])}</td>"
                   + "".join(f"<td>{esc(unbroken(v))}</td>" for v in cells[2:]) + "</tr>")
    out.append("</table></div>")
    parts = ", ".join(PART_LABELS.values())
    out.append(f'<p class="meta">{esc(front_key())}; {esc(parts)}: each part\'s share of the cost per run</p>')
    return "\n".join(out)


def _charges(rep: dict[str, Any]) -> str:
    out = []
    for o in rep["options"]:
        rows = "".join(
            "<tr>" + "".join(f"<td>{esc(v)}</td>" for v in (
                c["what"], f"{c['quantity']:.4g} {c['unit']}", "tiered" if c["price"] is None else f"{c['price']:g}",
                money(c["per_run"]), money(c["per_month"]), c["basis"])) + "</tr>" for c in o["charges"])
        out.append(f"<details><summary>{esc(o['name'])}: {esc(money(o['per_run']))} per run</summary>"
                   '<div class="scrollx"><table><tr><th>charge</th><th>quantity</th><th>price</th><th>per run</th>'
                   "<th>per month</th>"
                   f"<th>basis</th></tr>{rows}</table></div></details>")
    return "\n".join(out)


def short_verdict(rep: dict[str, Any]) -> str:
    """The verdict with the options' names shortened as on the charts (a long common path made it a dozen lines
    on a phone)."""
    text = rep["verdict"]
    full = [o["name"] for o in rep["options"]]
    for name, short in sorted(zip(full, shortened(full)), key=lambda p: -len(p[0])):
        text = text.replace(name, short)
    return text


def render_html(rep: dict[str, Any]) -> bytes:
    names = elided([o["name"] for o in rep["options"]])
    divs = [chart(front_figure(rep), title="Time vs cost per run (down and left is better)", height=480,
                  how="each point is an option, with its 95% interval as whiskers; the Pareto front joins the options "
                      "no other option beats on both time and cost; dominated: another option is both faster and "
                      "cheaper" + names),
            chart(parts_figure(rep), title="What each run pays for", height=420,
                  how="IOPS/tput: provisioned IOPS and throughput; data moved: transfer charges" + names)]
    src, s, pr = rep["source"], rep["settings"], rep["prices"]
    what = (f"compare run {src['run_id']}: <code>{esc(src['command_template'])}</code>" if src["run_id"] is not None
            else "stated figures")
    held = "all month" if s["always"] else ("for the run" if s["held_for_s"] is None else esc(s["held_for"]))
    dated = f"retrieved {esc(pr['retrieved'])}" if pr["retrieved"] else f"as of {esc(pr['as_of'])}"
    meta = (f"{s['runs_per_month']:g} runs per month, storage held {held}; prices {dated}"
            f"{' (transcribed from the pricing pages)' if pr['transcribed'] else ''}, from {esc(named(pr['file']))}")
    warnings = "\n".join(f'<p class="warn">warning: {esc(w)}</p>' for w in rep["warnings"])
    notes = "\n".join(f'<p class="meta">note: {esc(n)}</p>' for n in rep["notes"])
    page = f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1"><title>iolens cost</title>
<style>{CSS}{EXTRA_CSS}{CHART_CSS}</style>{script_tag()}</head>
<body>
<h1>iolens cost: {what}</h1>
<p class="meta">{meta}</p>
<p class="verdict sig" title="{esc(rep['verdict'])}; {esc(front_key())}">{esc(short_verdict(rep))}</p>
{warnings}
{''.join(divs)}
<h2>Options</h2>
{_table(rep)}
<h2>Every charge</h2>
{_charges(rep)}
{notes}
</body></html>
"""
    return page.encode()
