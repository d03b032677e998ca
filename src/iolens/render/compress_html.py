"""HTML export of `iolens compress`: ratio-vs-speed scatters (compress and decompress) with the Pareto front
marked, the storage-effective table and the recommendations.  One self-contained file: plotly.js is inlined,
nothing is fetched when the page is opened; every string from the user goes through htmlsafe.esc.
"""

from __future__ import annotations

from iolens.render.compress_text import recommendation_line

from typing import Any

import plotly.graph_objects as go

from iolens.render.htmlsafe import esc
from iolens.units import human_bytes

PALETTE = ["#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22",
           "#17becf", "#393b79", "#637939", "#8c6d31", "#843c39", "#7b4173", "#3182bd", "#e6550d", "#31a354"]
CSS = """
body { font-family: system-ui, sans-serif; margin: 1.5em 2em; color: #222; max-width: 1200px; }
h1 { font-size: 1.35em; } h2 { font-size: 1.1em; margin-top: 1.6em; }
table { border-collapse: collapse; font-size: 0.9em; }
th, td { padding: 0.25em 0.7em; white-space: nowrap; border-bottom: 1px solid #ddd; text-align: right; }
th:first-child, td:first-child { text-align: left; } .warn { color: #9a5b00; } .meta { color: #666; font-size: 0.9em; }
"""


def pareto(points: list[tuple[float, float]]) -> list[int]:
    """Indices of the points no other point beats on both speed (x) and ratio (y), by speed."""
    order = sorted(range(len(points)), key=lambda i: (-points[i][0], -points[i][1]))
    front, best_y = [], float("-inf")
    for i in order:
        if points[i][1] > best_y:
            front.append(i)
            best_y = points[i][1]
    return sorted(front, key=lambda i: points[i][0])


def scatter(inp: dict[str, Any], key: str, title: str) -> go.Figure:
    rows = [r for r in inp["rows"] if r["ratio"] and r[key]]
    fig = go.Figure()
    codecs = list(dict.fromkeys(r["codec"] for r in rows))
    for ci, codec in enumerate(codecs):
        mine = [r for r in rows if r["codec"] == codec]
        fig.add_trace(go.Scatter(
            x=[r[key] / 1e6 for r in mine], y=[r["ratio"] for r in mine], mode="markers", name=codec,
            marker=dict(color=PALETTE[ci % len(PALETTE)], size=9, symbol=["circle" if r["threads"] == 1 else
                                                                          "diamond" for r in mine]),
            text=[r["label"] for r in mine], hovertemplate="%{text}<br>%{x:.1f} MB/s, ratio %{y:.3f}<extra></extra>"))
    pts = [(r[key], r["ratio"]) for r in rows]
    front = [rows[i] for i in pareto(pts)]
    fig.add_trace(go.Scatter(x=[r[key] / 1e6 for r in front], y=[r["ratio"] for r in front], mode="lines+markers",
                             name="Pareto front", line=dict(color="#222", dash="dot"),
                             marker=dict(symbol="circle-open", size=15, color="#222"),
                             text=[r["label"] for r in front], hovertemplate="%{text} (Pareto)<extra></extra>"))
    fig.update_layout(title=title, xaxis_title="MB/s of uncompressed data (log)", yaxis_title="ratio",
                      template="plotly_white", height=460, margin=dict(l=60, r=20, t=60, b=60))
    fig.update_xaxes(type="log")
    return fig


def _table(head: list[str], rows: list[list[Any]]) -> str:
    h = "".join(f"<th>{esc(c)}</th>" for c in head)
    body = "".join("<tr>" + "".join(f"<td>{esc(c)}</td>" for c in r) + "</tr>" for r in rows)
    return f"<table><tr>{h}</tr>{body}</table>"


def _f(v: float | None, fmt: str) -> str:
    return "-" if v is None else fmt.format(v)


def render_html(doc: dict[str, Any]) -> bytes:
    parts, first = [], True
    h = doc["host"]
    for inp in doc["inputs"]:
        parts.append(f"<h2>{esc(inp['path'])}: {esc(inp['content_text'])}, {esc(human_bytes(inp['measured_bytes']))}"
                     f"{' sampled' if inp['sampled'] else ''}</h2>")
        if inp["note"]:
            parts.append(f"<p class='warn'>{esc(inp['note'])}</p>")
        for key, title in (("compress_Bps", "compression: ratio vs speed"),
                           ("decompress_Bps", "decompression: ratio vs speed")):
            fig = scatter(inp, key, f"{title} (diamonds: more than one thread; dotted: Pareto front)")
            parts.append(fig.to_html(full_html=False, include_plotlyjs=first, include_mathjax=False,
                                     config={"displaylogo": False}))
            first = False
        parts.append(_table(
            ["codec:level", "threads", "ratio", "compress MB/s", "decompress MB/s", "CPU s/GB c", "CPU s/GB d",
             "verified", "error"],
            [[f"{r['codec']}:{r['level']}", r["threads"], _f(r["ratio"], "{:.3f}"),
              _f(r["compress_Bps"] and r["compress_Bps"] / 1e6, "{:.1f}"),
              _f(r["decompress_Bps"] and r["decompress_Bps"] / 1e6, "{:.1f}"),
              _f(r["compress_cpu_s_per_GB"], "{:.1f}"), _f(r["decompress_cpu_s_per_GB"], "{:.1f}"),
              "yes" if r["verified"] else "no", r["error"] or ""] for r in inp["rows"]]))
    if doc["storage"]:
        parts.append("<h2>storage-effective seconds per GB (storage and codec pipelined)</h2>")
        parts.append(_table(["target", "input", "choice", "ratio", "read s/GB", "bound", "write s/GB", "bound"],
                            [[s["target"], s["input"], s["label"], f"{s['ratio']:.2f}",
                              f"{s['read']['s_per_GB']:.2f}", s["read"]["limited_by"],
                              f"{s['write']['s_per_GB']:.2f}", s["write"]["limited_by"]] for s in doc["storage"]]))
    if doc["recommendations"]:
        parts.append("<h2>recommendations</h2>")
        parts.append(_table(["input", "goal", "target", "choice", "ratio", "numbers"],
                            [[r["input"], r["goal"], r["target"] or "-", r["choice"] or "-",
                              "-" if r["ratio"] is None else f"{r['ratio']:.2f}", recommendation_line(r)]
                             for r in doc["recommendations"]]))
    libs = "; ".join(f"{k}: {v}" for k, v in doc["libraries"].items() if v)
    meta = (f"<p class='meta'>{esc(h.get('cpu_model'))}, {esc(h.get('cpus'))} CPUs; iolens "
            f"{esc(h.get('iolens_version'))}; {esc(libs)}; created {esc(doc['created'])}</p>")
    page = (f"<!DOCTYPE html><html><head><meta charset='utf-8'><title>iolens compress</title><style>{CSS}</style>"
            f"</head><body><h1>iolens compress</h1>{meta}{''.join(parts)}</body></html>")
    return page.encode()
