"""HTML export of a compare report: box plots with every run, the staged copy-in/run/copy-out bars,
profiled phases, and the statistics table.  One self-contained file: plotly.js is inlined, nothing is
fetched from the network when the page is opened.
"""

from __future__ import annotations

from typing import Any

import plotly.graph_objects as go

from iolens.render.compare_text import decided, runs_phrase
from iolens.render.htmlsafe import esc
from iolens.units import human_bytes, human_seconds

PALETTE = ["#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22",
           "#17becf"]
CSS = """
body { font-family: system-ui, sans-serif; margin: 1.5em 2em; color: #222; }
h1 { font-size: 1.35em; } h2 { font-size: 1.1em; margin-top: 1.6em; }
code { background: #f3f3f3; padding: 0.1em 0.3em; border-radius: 3px; }
table { border-collapse: collapse; font-size: 0.9em; }
table.stats { width: 100%; }
th, td { padding: 0.25em 0.5em; border-bottom: 1px solid #ddd; text-align: right; vertical-align: top; }
th { vertical-align: bottom; background: #f3f4f6; }
th:first-child, td:first-child { text-align: left; overflow-wrap: anywhere; min-width: 12em; }
th:nth-child(2), td:nth-child(2), th:nth-child(3), td:nth-child(3) { font-weight: 600; }
.verdict { font-size: 1.05em; margin: 0.3em 0; } .sig { font-weight: 600; color: #1a6d1a; }
.warn { color: #9a5b00; } .meta { color: #666; font-size: 0.9em; }
"""


def box_figure(rep: dict[str, Any]) -> go.Figure:
    fig = go.Figure()
    for i, r in enumerate(rep["results"]):
        color = PALETTE[i % len(PALETTE)]
        runs = [x for x in r["run_records"] if not x["warmup"]]
        ok = [x for x in runs if x["ok"]]
        fig.add_trace(go.Box(
            y=[x["wall_s"] for x in ok], name=r["name"], boxpoints="all", jitter=0.35, pointpos=0,
            marker=dict(color=color, size=7, opacity=0.75, line=dict(width=1, color="white")),
            line=dict(color=color), fillcolor="rgba(0,0,0,0)", boxmean=True,
            hovertext=[f"run {x['seq']}, round {x['round']}, exit {x['exit_status']}" for x in ok],
            hoverinfo="y+text", showlegend=False,
        ))
        bad = [x for x in runs if not x["ok"]]
        if bad:
            fig.add_trace(go.Scatter(
                x=[r["name"]] * len(bad), y=[x["run_s"] for x in bad], mode="markers", name="failed run",
                marker=dict(symbol="x", size=10, color="#d62728"), showlegend=False,
                hovertext=[f"failed: exit {x['exit_status']}" for x in bad], hoverinfo="y+text",
            ))
    fig.update_layout(
        title="Wall time of every run (box: quartiles and median, dashed: mean; failed runs: red ×)",
        yaxis_title="seconds", template="plotly_white", height=480, margin=dict(l=60, r=20, t=60, b=80),
    )
    fig.update_yaxes(rangemode="tozero")
    return fig


def stage_figure(rep: dict[str, Any]) -> go.Figure | None:
    results = rep["results"]
    if not any(r["phases"] for r in results):
        return None
    names = [r["name"] for r in results]

    def part(r: dict[str, Any], key: str) -> float:
        if r["phases"]:
            return r["phases"][key] or 0.0
        return r["median"] or 0.0 if key == "run_s" else 0.0

    fig = go.Figure()
    for key, label, color in (("copy_in_s", "copy-in", "#9ecae1"), ("run_s", "run", "#3182bd"),
                              ("copy_out_s", "copy-out", "#fdae6b")):
        fig.add_trace(go.Bar(x=names, y=[part(r, key) for r in results], name=label, marker_color=color))
    fig.update_layout(barmode="stack", title="Median time per step (direct configurations: run only)",
                      yaxis_title="seconds", template="plotly_white", height=400,
                      margin=dict(l=60, r=20, t=60, b=80))
    return fig


def profile_figure(rep: dict[str, Any]) -> go.Figure | None:
    profiled = [r for r in rep["results"] if r["profile"]]
    if not profiled:
        return None
    totals: dict[str, float] = {}
    for r in profiled:
        for n, ph in r["profile"]["phases"].items():
            totals[n] = max(totals.get(n, 0.0), ph["own_s"] or 0.0)
    phases = [n for n, _v in sorted(totals.items(), key=lambda kv: -kv[1])][:10]
    fig = go.Figure()
    for i, r in enumerate(profiled):
        fig.add_trace(go.Bar(x=phases, y=[(r["profile"]["phases"].get(n) or {}).get("own_s") or 0.0 for n in phases],
                             name=r["name"], marker_color=PALETTE[i % len(PALETTE)]))
    fig.update_layout(barmode="group", title="Profiled: median own time per phase (process image)",
                      yaxis_title="seconds", template="plotly_white", height=400)
    return fig


def io_figure(rep: dict[str, Any]) -> go.Figure | None:
    profiled = [r for r in rep["results"] if r["profile"]]
    if not profiled:
        return None
    keys = [k for k in profiled[0]["profile"]["io"] if k.endswith("_s") and k != "process_s"]
    fig = go.Figure()
    for j, k in enumerate(keys):
        fig.add_trace(go.Bar(x=[r["name"] for r in profiled], y=[r["profile"]["io"].get(k) or 0.0 for r in profiled],
                             name="compute and other" if k == "compute_s" else f"I/O {k[:-2]}",
                             marker_color=PALETTE[j % len(PALETTE)]))
    fig.update_layout(barmode="stack", title="Profiled: median process time by I/O category",
                      yaxis_title="seconds", template="plotly_white", height=400)
    return fig


def _unbroken(v: Any) -> str:
    """A value never breaks between its number and unit; a range or ± breaks only before its … or ±."""
    return str(v).replace(" ", "\u00a0").replace("\u00a0…\u00a0", " …\u00a0").replace("\u00a0±\u00a0", " ±\u00a0")


def _table(rep: dict[str, Any]) -> str:
    """The statistics, verdict first: the comparison with the baseline, then the time, then what the kernel
    counted.  Cells wrap at their spaces so the table fits the page instead of scrolling."""
    comps = {c["name"]: c for c in rep["comparisons"]}
    head = ["configuration", "vs baseline", "p", "95% CI of median", "median", "user (mean)", "sys (mean)",
            "disk write", "disk read", "peak RSS", "strategy", "runs", "mean ± SD", "min … max", "CV"]
    rows = []
    for r in rep["results"]:
        c = comps.get(r["name"])
        ci = r["median_ci"]
        rows.append([
            r["name"],
            "baseline" if c is None else ("-" if c["rel_diff"] is None else f"{100 * c['rel_diff']:+.1f}%"),
            "" if c is None or c["p_value"] is None else ("< 0.001" if c["p_value"] < 0.001 else f"{c['p_value']:.3f}"),
            "-" if ci is None else f"{human_seconds(ci[0])} … {human_seconds(ci[1])}",
            human_seconds(r["median"]), human_seconds(r["user"]), human_seconds(r["system"]),
            human_bytes(r["io"]["write_bytes"]), human_bytes(r["io"]["read_bytes"]),
            human_bytes(r["io"]["max_rss_bytes"]), r["strategy"],
            f"{r['ok_runs']}" + (f" ({r['failed_runs']} failed)" if r["failed_runs"] else ""),
            "-" if r["mean"] is None else human_seconds(r["mean"]) + (
                "" if r["stddev"] is None else f" ± {human_seconds(r['stddev'])}"),
            "-" if r["min"] is None else f"{human_seconds(r['min'])} … {human_seconds(r['max'])}",
            "-" if r["cv"] is None else f"{100 * r['cv']:.1f}%",
        ])
    out = [f'<p class="meta">baseline: <b>{esc(rep["baseline"])}</b>; p: two-sided test of the difference '
           "against the baseline</p>",
           '<table class="stats"><thead><tr>' + "".join(f"<th>{esc(h)}</th>" for h in head) + "</tr></thead><tbody>"]
    for row in rows:
        out.append("<tr>" + f"<td>{esc(row[0])}</td>" + "".join(f"<td>{esc(_unbroken(v))}</td>" for v in row[1:])
                   + "</tr>")
    out.append("</tbody></table>")
    return "\n".join(out)


def render_html(rep: dict[str, Any]) -> bytes:
    figs = [f for f in (box_figure(rep), stage_figure(rep), profile_figure(rep), io_figure(rep)) if f is not None]
    divs = []
    for i, f in enumerate(figs):
        divs.append(f.to_html(full_html=False, include_plotlyjs=(i == 0), include_mathjax=False,
                              config={"displaylogo": False, "responsive": True}))
    s = rep["settings"]
    prov = rep["provenance"]
    verdicts = "\n".join(
        f'<p class="verdict{" sig" if decided(c) else ""}">{esc(c["verdict"])}</p>' for c in rep["comparisons"])
    warnings = "\n".join(f'<p class="warn">warning: {esc(w)}</p>' for w in rep["warnings"])
    failures = []
    for r in rep["results"]:
        for f in r["failures"][:3]:
            failures.append(f"<p><b>{esc(r['name'])}</b>, run {f['seq']}, exit {f['exit_status']}:</p>"
                            f"<pre>{esc((f['stderr_tail'] or '').strip()[-1500:])}</pre>")
    meta = (f"{esc(runs_phrase(s))}, {s['warmup']} warmup, randomized interleaving (seed {s['seed']}), "
            f"cache {esc(s['cache'])}{' (' + ', '.join(s['evict_methods']) + ')' if s['evict_methods'] else ''}"
            "; "
            f"host {esc(prov.get('host'))}, {esc(prov.get('cpu_model'))}, {esc(prov.get('cpus'))} CPUs, "
            f"kernel {esc(prov.get('kernel'))}, iolens {esc(prov.get('iolens_version'))}")
    commands = "".join(f"<li><b>{esc(r['name'])}</b>: <code>{esc(r['command'])}</code>"
                       + "".join(f" (<b>emulated</b>: {esc(t['target'])}, {esc(t['emulates'])})"
                                 for t in r.get("lab_targets") or [] if t["emulated"]) + "</li>"
                       for r in rep["results"])
    page = f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>iolens compare</title><style>{CSS}</style></head>
<body>
<h1>iolens compare: <code>{esc(rep['command_template'])}</code></h1>
<p class="meta">{meta}</p>
{verdicts}
{warnings}
{''.join(divs)}
<h2>Statistics</h2>
{_table(rep)}
<h2>Commands (last run of each configuration)</h2>
<ul>{commands}</ul>
{'<h2>Failed runs</h2>' + ''.join(failures) if failures else ''}
</body></html>
"""
    return page.encode()
