"""HTML export of a compare report: box plots with every run, the staged copy-in/run/copy-out bars,
profiled phases, and the statistics table.  One self-contained file: the charts' library is inlined
(render/plotting.py), nothing is fetched from the network when the page is opened.
"""

from __future__ import annotations

import statistics
from typing import Any

import plotly.graph_objects as go

from iolens.render.compare_text import column_key, decided, key_line, runs_phrase, verdict_key
from iolens.render.htmlsafe import esc
from iolens.render.plotting import CSS as CHART_CSS
from iolens.render.plotting import elided, category_axis, chart, label, labels, script_tag, shortened, time_unit
from iolens.stats.sequential import MORE_RUNS, pct, signed_pct
from iolens.units import human_bytes, human_seconds

EMULATED = ("a lab target that imitates this storage on this machine (its speed limits shaped to match): "
            "not the real device or service")
PALETTE = ["#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22",
           "#17becf"]
CSS = """
body { font-family: system-ui, sans-serif; margin: 1.5em 2em; color: #222; }
h1 { font-size: 1.35em; } h2 { font-size: 1.1em; margin-top: 1.6em; }
code { background: #f3f3f3; padding: 0.1em 0.3em; border-radius: 3px; }
table { border-collapse: collapse; font-size: 0.9em; }
table.stats { width: 100%; }
th, td { padding: 0.25em 0.4em; border-bottom: 1px solid #ddd; text-align: right; vertical-align: top; }
th { vertical-align: bottom; background: #f3f4f6; }
th:first-child, td:first-child { text-align: left; overflow-wrap: anywhere; min-width: 12em; }
th:nth-child(2), td:nth-child(2), th:nth-child(3), td:nth-child(3) { font-weight: 600; }
.verdict { font-size: 1.05em; margin: 0.3em 0; } .sig { font-weight: 600; color: #1a6d1a; }
.warn { color: #9a5b00; } .meta { color: #666; font-size: 0.9em; }
"""


def _quartiles(v: list[float]) -> tuple[float, float, float]:
    if len(v) < 2:
        return v[0], v[0], v[0]
    q1, med, q3 = statistics.quantiles(v, n=4, method="inclusive")
    return q1, med, q3


def box_figure(rep: dict[str, Any]) -> go.Figure:
    """Every run as a dot over its configuration's box (quartiles), median line and whiskers (fastest to slowest
    run), drawn with bars and markers."""
    fig = go.Figure()
    names = [r["name"] for r in rep["results"]]
    div, unit = time_unit([x["wall_s"] for r in rep["results"] for x in r["run_records"]])
    for i, r in enumerate(rep["results"]):
        color = PALETTE[i % len(PALETTE)]
        runs = [x for x in r["run_records"] if not x["warmup"]]
        ok = [x for x in runs if x["ok"]]
        walls = sorted(x["wall_s"] for x in ok)
        if walls:
            q1, med, q3 = _quartiles(walls)
            fig.add_trace(go.Bar(x=[i], base=[q1 / div], y=[max(q3 - q1, 1e-9) / div], width=0.6,
                                 marker=dict(color="rgba(0,0,0,0)", line=dict(color=color, width=2)),
                                 hovertemplate=f"quartiles {human_seconds(q1)} … {human_seconds(q3)}<extra></extra>"))
            fig.add_trace(go.Scatter(
                x=[i], y=[med / div], mode="markers",
                marker=dict(symbol="line-ew", size=34, line=dict(color=color, width=3)),
                error_y=dict(type="data", symmetric=False, array=[(walls[-1] - med) / div],
                             arrayminus=[(med - walls[0]) / div], color=color, thickness=1.5, width=8),
                hovertemplate=(f"median {human_seconds(med)}, fastest {human_seconds(walls[0])}, "
                               f"slowest {human_seconds(walls[-1])}<extra></extra>")))
        n = len(ok)
        fig.add_trace(go.Scatter(
            x=[i - 0.2 + 0.4 * (k + 0.5) / n for k in range(n)], y=[x["wall_s"] / div for x in ok], mode="markers",
            marker=dict(color=color, size=7, opacity=0.8, line=dict(width=1, color="white")),
            hovertext=[f"{esc(r['name'])}: run {x['seq']}, round {x['round']}, {human_seconds(x['wall_s'])}"
                       for x in ok], hoverinfo="text"))
        bad = [x for x in runs if not x["ok"]]
        if bad:
            fig.add_trace(go.Scatter(
                x=[i] * len(bad), y=[x["run_s"] / div for x in bad], mode="markers",
                marker=dict(symbol="x", size=10, color="#d62728"),
                hovertext=[f"failed: exit {x['exit_status']}" for x in bad], hoverinfo="y+text",
            ))
    fig.update_layout(yaxis_title=f"wall time ({unit})", showlegend=False,
                      xaxis=category_axis(labels(names), tickmode="array", tickvals=list(range(len(names))),
                                          ticktext=labels(names), range=[-0.6, len(names) - 0.4]))
    fig.update_yaxes(rangemode="tozero")
    return fig


def stage_figure(rep: dict[str, Any]) -> go.Figure | None:
    results = rep["results"]
    if not any(r["phases"] for r in results):
        return None

    def part(r: dict[str, Any], key: str) -> float:
        if r["phases"]:
            return r["phases"][key] or 0.0
        return r["median"] or 0.0 if key == "run_s" else 0.0

    keys = (("copy_in_s", "copy-in", "#9ecae1"), ("run_s", "run", "#3182bd"), ("copy_out_s", "copy-out", "#fdae6b"))
    div, unit = time_unit([sum(part(r, k) for k, _l, _c in keys) for r in results])
    fig = go.Figure()
    for key, name, color in keys:
        fig.add_trace(go.Bar(x=labels([r["name"] for r in results]), y=[part(r, key) / div for r in results],
                             name=name, marker_color=color))
    fig.update_layout(barmode="stack", yaxis_title=f"median time ({unit})",
                      xaxis=category_axis(labels([r["name"] for r in results])))
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
    div, unit = time_unit(list(totals.values()))
    fig = go.Figure()
    for i, r in enumerate(profiled):
        fig.add_trace(go.Bar(x=[label(n) for n in phases],
                             y=[((r["profile"]["phases"].get(n) or {}).get("own_s") or 0.0) / div for n in phases],
                             name=labels([x["name"] for x in profiled], 40)[i], marker_color=PALETTE[i % len(PALETTE)]))
    fig.update_layout(barmode="group", yaxis_title=f"median own time ({unit})",
                      xaxis=category_axis([label(n) for n in phases]))
    return fig


def io_figure(rep: dict[str, Any]) -> go.Figure | None:
    profiled = [r for r in rep["results"] if r["profile"]]
    if not profiled:
        return None
    keys = [k for k in profiled[0]["profile"]["io"] if k.endswith("_s") and k != "process_s"]
    div, unit = time_unit([sum(r["profile"]["io"].get(k) or 0.0 for k in keys) for r in profiled])
    fig = go.Figure()
    for j, k in enumerate(keys):
        fig.add_trace(go.Bar(x=labels([r["name"] for r in profiled]),
                             y=[(r["profile"]["io"].get(k) or 0.0) / div for r in profiled],
                             name="compute and other" if k == "compute_s" else f"I/O {k[:-2]}",
                             marker_color=PALETTE[j % len(PALETTE)]))
    fig.update_layout(barmode="stack", yaxis_title=f"median process time ({unit})",
                      xaxis=category_axis(labels([r["name"] for r in profiled])))
    return fig


def unbroken(v: Any) -> str:
    """A value never breaks between its number and unit; a range, ± or [interval] breaks only before its …, ± or
    [."""
    return (str(v).replace(" ", "\u00a0").replace("\u00a0…\u00a0", " …\u00a0").replace("\u00a0±\u00a0", " ±\u00a0")
            .replace("\u00a0[", " ["))


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
    keys = column_key(rep["settings"])
    tips = {h: keys.get(h.removesuffix(" of median"), "") for h in head}
    out = [f'<p class="meta">baseline: <b>{esc(rep["baseline"])}</b></p>',
           '<table class="stats"><thead><tr>' + "".join(
               f'<th title="{esc(tips[h])}">{esc(h)}</th>' if tips[h] else f"<th>{esc(h)}</th>" for h in head)
           + "</tr></thead><tbody>"]
    for row in rows:
        out.append("<tr>" + f"<td>{esc(row[0])}</td>" + "".join(f"<td>{esc(unbroken(v))}</td>" for v in row[1:])
                   + "</tr>")
    out.append("</tbody></table>")
    out.append(f'<p class="meta">{esc(key_line(keys))}</p>')
    return "\n".join(out)


def _short_verdict(c: dict[str, Any], name: str, runs: bool) -> str:
    """A comparison's verdict in a few words, the configuration named `name`: what it found and the interval
    (the full sentence is the verdict's tooltip); `runs`: say how many runs it had."""
    d = c.get("decision") or {}
    kind, ratio, low, high = d.get("kind"), d.get("ratio"), d.get("low"), d.get("high")
    rest = c["verdict"][len(d["sentence"]):] if d.get("sentence") and c["verdict"].startswith(d["sentence"]) else ""
    if ratio is None or low is None or high is None:
        found = f"undecided: {d['reason']}" if d.get("reason") else c["verdict"]
        return f"{name}: {found}"
    if kind in ("faster", "slower"):
        a, b = sorted((abs(low - 1), abs(high - 1)))
        found = f"{kind} by {pct(ratio - 1)} [{pct(a)}, {pct(b)}]"
    else:
        words = "undecided" if kind == "undecided" else f"no difference larger than {100 * d['margin']:g}%"
        found = f"{words} ({signed_pct(ratio - 1)} [{signed_pct(low - 1)}, {signed_pct(high - 1)}])"
    many = f" ({d['n']} vs {d['n_baseline']} runs)" if runs else ""
    return f"{name}: {found}{many}{rest}"


def _verdicts(rep: dict[str, Any]) -> str:
    """One short line per comparison under one line naming the baseline; what an undecided one needs, once."""
    comps = rep["comparisons"]
    if not comps:
        return ""
    names = [rep["baseline"]] + [c["name"] for c in comps]
    short = dict(zip(names, shortened(names)))
    counts = {((c.get("decision") or {}).get("n"), (c.get("decision") or {}).get("n_baseline")) for c in comps}
    n, nb = next(iter(counts))
    same = len(counts) == 1 and n is not None and n == nb
    out = [f'<p class="meta">against the baseline, <b>{esc(short[rep["baseline"]])}</b>'
           f'{f", {n} runs each" if same else ""}:</p>']
    out += [f'<p class="verdict{" sig" if decided(c) else ""}" title="{esc(c["verdict"])}">'
            f"{esc(_short_verdict(c, short[c['name']], not same))}</p>" for c in comps]
    notes = []
    if any((c.get("decision") or {}).get("kind") == "undecided" for c in comps):
        notes.append(f"to decide the undecided: {MORE_RUNS[bool(rep['settings'].get('auto'))]}")
    if elided(names):
        notes.append(elided(names).removeprefix("; "))
    if notes:
        out.append(f'<p class="meta">{esc("; ".join(notes))}</p>')
    return "\n".join(out)


def render_html(rep: dict[str, Any]) -> bytes:
    names = elided([r["name"] for r in rep["results"]])
    figs = [(box_figure(rep), "Wall time of every run",
             "dots: the runs; box: the middle half of the runs (quartiles); thick line: median; whiskers: fastest "
             "to slowest run; ×: failed run" + names, 460),
            (stage_figure(rep), "Median time per step",
             "copy-in and copy-out: staging the files to and from the placement; direct configurations only run"
             + names,
             400),
            (profile_figure(rep), "Profiled: median own time per phase",
             "a phase is one program the command ran (a process image); own time leaves out waiting for children",
             400),
            (io_figure(rep), "Profiled: median process time by kind of I/O", "", 400)]
    divs = [chart(f, title=t, how=how, height=h) for f, t, how, h in figs if f is not None]
    s = rep["settings"]
    prov = rep["provenance"]
    verdicts = _verdicts(rep)
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
                       + "".join(f" (<b title='{esc(EMULATED)}'>emulated</b>: {esc(t['target'])}, {esc(t['emulates'])})"
                                 for t in r.get("lab_targets") or [] if t["emulated"]) + "</li>"
                       for r in rep["results"])
    page = f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1"><title>iolens compare</title>
<style>{CSS}{CHART_CSS}</style>{script_tag()}</head>
<body>
<h1>iolens compare: <code>{esc(rep['command_template'])}</code></h1>
<p class="meta">{meta}</p>
{verdicts}
{f'<p class="meta">{esc(verdict_key(s))}</p>' if rep["comparisons"] else ""}
{warnings}
{''.join(divs)}
<h2>Statistics</h2>
<div class="scrollx">{_table(rep)}</div>
<h2>Commands (last run of each configuration)</h2>
<ul>{commands}</ul>
{'<h2>Failed runs</h2>' + ''.join(failures) if failures else ''}
</body></html>
"""
    return page.encode()
