"""HTML export of `iolens compress`: ratio-vs-speed scatters (compress and decompress) with the Pareto front
marked, the storage-effective table and the recommendations.  One self-contained file: the charts' library is
inlined (render/plotting.py), nothing is fetched when the page is opened; every string from the user goes through
htmlsafe.esc.
"""

from __future__ import annotations

import math

from typing import Any

import plotly.graph_objects as go

from iolens.render.compress_text import TERMS, recommendation_line, terms
from iolens.render.htmlsafe import esc
from iolens.render.plotting import CSS as CHART_CSS
from iolens.render.plotting import chart, script_tag
from iolens.units import human_bytes

PALETTE = ["#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22",
           "#17becf", "#393b79", "#637939", "#8c6d31", "#843c39", "#7b4173", "#3182bd", "#e6550d", "#31a354"]
CSS = """
body { font-family: system-ui, sans-serif; margin: 1.5em 2em; color: #222; max-width: 1200px; }
h1 { font-size: 1.35em; } h2 { font-size: 1.1em; margin-top: 1.6em; }
table { border-collapse: collapse; font-size: 0.9em; }
th, td { padding: 0.25em 0.7em; white-space: nowrap; border-bottom: 1px solid #ddd; text-align: right; }
th:first-child, td:first-child { text-align: left; } td:last-child { white-space: normal; min-width: 16em; }
.warn { color: #9a5b00; } .meta { color: #666; font-size: 0.9em; }
@media (max-width: 600px) {  /* a table of sentences: each row a card, each cell a line led by its header */
  table.cards, table.cards tbody, table.cards tr, table.cards td { display: block; }
  table.cards thead { display: none; }
  table.cards tr { border: 1px solid #ddd; border-radius: 6px; margin: 0.6em 0; padding: 0.3em 0.6em; }
  table.cards td { white-space: normal; text-align: left; border: 0; padding: 0.1em 0; min-width: 0;
                   overflow-wrap: anywhere; }
  table.cards td::before { content: attr(data-label) ": "; color: #666; }
}
"""


MIB = 1 << 20
HOW = ("each point is a codec at a level (codec:level; ×N: N threads, also drawn as a diamond); up is smaller "
       "files, right is faster; the dotted Pareto front joins the points no other point beats on both")


def pareto(points: list[tuple[float, float]]) -> list[int]:
    """Indices of the points no other point beats on both speed (x) and ratio (y), by speed."""
    order = sorted(range(len(points)), key=lambda i: (-points[i][0], -points[i][1]))
    front, best_y = [], float("-inf")
    for i in order:
        if points[i][1] > best_y:
            front.append(i)
            best_y = points[i][1]
    return sorted(front, key=lambda i: points[i][0])


def scatter(inp: dict[str, Any], key: str) -> go.Figure:
    """Ratio against speed, one colour per codec, every point labelled codec:level (diamonds: more than one
    thread), the Pareto front dotted."""
    rows = [r for r in inp["rows"] if r["ratio"] and r[key]]
    fig = go.Figure()
    codecs = list(dict.fromkeys(r["codec"] for r in rows))
    for ci, codec in enumerate(codecs):
        mine = [r for r in rows if r["codec"] == codec]
        fig.add_trace(go.Scatter(
            x=[r[key] / MIB for r in mine], y=[r["ratio"] for r in mine], mode="markers+text", name=esc(codec),
            marker=dict(color=PALETTE[ci % len(PALETTE)], size=9, symbol=["circle" if r["threads"] == 1 else
                                                                          "diamond" for r in mine]),
            text=[esc(_point(r)) for r in mine], textposition="top center", textfont=dict(size=10), cliponaxis=False,
            hovertemplate="%{text}<br>%{x:.1f} MiB/s, ratio %{y:.3f}<extra></extra>"))
    pts = [(r[key], r["ratio"]) for r in rows]
    front = [rows[i] for i in pareto(pts)]
    fig.add_trace(go.Scatter(x=[r[key] / MIB for r in front], y=[r["ratio"] for r in front], mode="lines",
                             name="Pareto front", line=dict(color="#222", dash="dot"), hoverinfo="skip"))
    fig.update_layout(xaxis_title="MiB/s of uncompressed data (log scale)", yaxis_title="ratio (original / compressed)")
    # ticks chosen here: plotly's own on a log axis add one-digit labels ("2", "5", "9") that collide with their
    # neighbours at a narrow width
    ticks = log_ticks([r[key] / MIB for r in rows])
    fig.update_xaxes(type="log", tickmode="array", tickvals=ticks, ticktext=[f"{v:g}" for v in ticks])
    return fig


def log_ticks(values: list[float], most: int = 5) -> list[float]:
    """At most `most` round values (1, 2, 5 times a power of ten; powers of ten only when those are too many)
    within the span of `values`; in a narrow span, 1–9 or 1–9.5 in halves times a power of ten, where those give
    three ticks or more and the coarser steps only two (225–1040 MiB/s: 300, 500, 700, 900, not 500 and 1000
    with the left third of the axis bare)."""
    pos = [v for v in values if v > 0]
    if not pos:
        return []
    lo, hi = min(pos), max(pos)
    span = range(math.floor(math.log10(lo)) - 1, math.ceil(math.log10(hi)) + 1)
    two: list[float] = []
    for steps in ((1, 2, 5), (1, 2, 3, 4, 5, 6, 7, 8, 9), tuple(m / 2 for m in range(2, 20))):
        ticks = [m * 10.0 ** k for k in span for m in steps if lo <= m * 10.0 ** k <= hi]
        if len(ticks) > most:
            powers = [t for t in ticks if math.log10(t).is_integer()]
            ticks = powers if len(powers) >= 2 else ticks[::math.ceil(len(ticks) / most)]
        if len(ticks) >= 3:
            return ticks
        two = two or (ticks if len(ticks) == 2 else [])
    return two or [round(lo, 3 - math.floor(math.log10(lo)))]


def _point(r: dict[str, Any]) -> str:
    return f"{r['codec']}:{r['level']}" + ("" if r["threads"] == 1 else f" ×{r['threads']}")


def _table(head: list[str], rows: list[list[Any]], *, cards: bool = False) -> str:
    """A table in a box that scrolls sideways; with `cards`, on a narrow screen each row is a card instead, its
    cells one under the other, each led by its header."""
    h = "".join(f'<th title="{esc(TERMS[c])}">{esc(c)}</th>' if c in TERMS else f"<th>{esc(c)}</th>" for c in head)
    body = "".join("<tr>" + "".join(f'<td data-label="{esc(k)}">{esc(c)}</td>' if cards else f"<td>{esc(c)}</td>"
                                    for k, c in zip(head, r)) + "</tr>" for r in rows)
    return (f'<div class="scrollx"><table{" class=cards" if cards else ""}><thead><tr>{h}</tr></thead>'
            f"<tbody>{body}</tbody></table></div>")


def _f(v: float | None, fmt: str) -> str:
    return "-" if v is None else fmt.format(v)


def render_html(doc: dict[str, Any]) -> bytes:
    parts = []
    h = doc["host"]
    for inp in doc["inputs"]:
        parts.append(f"<h2>{esc(inp['path'])}: {esc(inp['content_text'])}, {esc(human_bytes(inp['measured_bytes']))}"
                     f"{' sampled' if inp['sampled'] else ''}</h2>")
        if inp["note"]:
            parts.append(f"<p class='warn'>{esc(inp['note'])}</p>")
        for key, title in (("compress_Bps", "Compression: ratio vs speed"),
                           ("decompress_Bps", "Decompression: ratio vs speed")):
            parts.append(chart(scatter(inp, key), title=title, height=460, how=HOW))
        errors = any(r["error"] for r in inp["rows"])  # the error column only when a row has one
        parts.append(_table(
            ["codec:level", "threads", "ratio", "compress MiB/s", "decompress MiB/s", "compress CPU s/GB",
             "decompress CPU s/GB", "round trip verified"] + ["error"] * errors,
            [[f"{r['codec']}:{r['level']}", r["threads"], _f(r["ratio"], "{:.3f}"),
              _f(r["compress_Bps"] and r["compress_Bps"] / MIB, "{:.1f}"),
              _f(r["decompress_Bps"] and r["decompress_Bps"] / MIB, "{:.1f}"),
              _f(r["compress_cpu_s_per_GB"], "{:.1f}"), _f(r["decompress_cpu_s_per_GB"], "{:.1f}"),
              "yes" if r["verified"] else "no"] + [r["error"] or ""] * errors for r in inp["rows"]]))
        parts.append(f"<p class='meta'>{esc(terms('codec:level', 'threads', 'ratio'))}; MiB/s: of uncompressed "
                     "data; CPU s/GB: CPU seconds spent per GB (10<sup>9</sup> bytes) of uncompressed data; round "
                     "trip verified: the decompressed bytes equal the original</p>")
    if doc["storage"]:
        parts.append("<h2>storage-effective seconds per GB (storage and codec pipelined)</h2>")
        parts.append(_table(["target", "input", "choice", "ratio", "read s/GB", "limited by", "write s/GB",
                             "limited by"],
                            [[s["target"], s["input"], s["label"], f"{s['ratio']:.2f}",
                              f"{s['read']['s_per_GB']:.2f}", s["read"]["limited_by"],
                              f"{s['write']['s_per_GB']:.2f}", s["write"]["limited_by"]] for s in doc["storage"]]))
        parts.append(f"<p class='meta'>{esc(terms('limited by'))}</p>")
    if doc["recommendations"]:
        parts.append("<h2>recommendations</h2>")
        parts.append(_table(["input", "goal", "target", "choice", "ratio", "numbers"],
                            [[r["input"], r["goal"], r["target"] or "-", r["choice"] or "-",
                              "-" if r["ratio"] is None else f"{r['ratio']:.2f}", recommendation_line(r)]
                             for r in doc["recommendations"]], cards=True))
        parts.append(f"<p class='meta'>{esc(terms('goal'))}</p>")
    libs = "; ".join(f"{k}: {v}" for k, v in doc["libraries"].items() if v)
    meta = (f"<p class='meta'>{esc(h.get('cpu_model'))}, {esc(h.get('cpus'))} CPUs; iolens "
            f"{esc(h.get('iolens_version'))}; {esc(libs)}; created {esc(doc['created'])}</p>")
    page = (f"<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'>"
            "<meta name='viewport' content='width=device-width, initial-scale=1'><title>iolens compress</title>"
            f"<style>{CSS}{CHART_CSS}</style>{script_tag()}</head><body><h1>iolens compress</h1>{meta}"
            f"{''.join(parts)}</body></html>")
    return page.encode()
