"""The pipeline report laid out: terminal text, JSON, and a self-contained HTML page with a Gantt chart by host.

Renderers only lay out what `merge.build_pipeline` computed.
"""

from __future__ import annotations

import json
import math
from typing import Any

from iolens.render.html_table import PAGE_CSS, SORTABLE_JS, table, td
from iolens.render.htmlsafe import esc_line
from iolens.render.terminal import Col, FitTable, fold, text_of
from iolens.units import human_bytes as fmt_bytes


def _s(x: float | None) -> str:
    return "-" if x is None else f"{x:.2f}s"


def render_json(rep: dict[str, Any]) -> bytes:
    return (json.dumps(rep, indent=1, default=str) + "\n").encode()


DIFF_TAG, DIFF_SCHEMA = "iolens-pipeline-diff", [2, 0]


def render_diff_json(ra: dict[str, Any], rb: dict[str, Any], a: str, b: str) -> bytes:
    """Two pipeline runs rule by rule: each rule's figures in run A and in run B (null where it did not run)."""
    pairs: dict[str, Any] = {}
    for side, rep in (("a", ra), ("b", rb)):
        for r in rep["rules"]:
            pairs.setdefault(r["rule"], {"rule": r["rule"], "a": None, "b": None})[side] = {
                k: r[k] for k in ("tasks", "time_s", "io_s", "io_share", "bytes_read", "bytes_written")}
    doc = {"tag": DIFF_TAG, "schema_version": DIFF_SCHEMA, "a": a, "b": b, "rules": list(pairs.values())}
    return (json.dumps(doc, indent=1) + "\n").encode()


def _storage(items: list[dict[str, Any]]) -> str:
    return ", ".join(f"{i['mount']} ({i['fstype']}, {fmt_bytes(i['bytes'])})" for i in items[:3]) or "-"


# the words of the pipeline report, explained once for the terminal and the page
TERMS = {
    "rule": "a step of the workflow; its tasks are the jobs that ran it",
    "task time": "wall time of every task added up",
    "storage I/O": "the part of that time spent waiting on file reads, writes and metadata",
    "I/O %": "share of the tasks' time spent in storage I/O",
    "time at stake": "the rule's storage I/O time, the most faster storage could save",
    "temp": "bytes written to files the tasks deleted again",
    "spills to": "where those temporary files were written",
    "not profiled": "tasks iolens found no capture for",
    "partial": "tasks killed or still running, counted up to where they stopped",
}


def terms(*names: str) -> str:
    """The named terms with their meanings, one footnote line."""
    return "; ".join(f"{n}: {TERMS[n]}" for n in names)


def classes_key() -> str:
    """What the I/O classes' names mean, at the default sizes (`iolens report --thresholds`)."""
    from iolens.analysis.thresholds import defaults

    th = defaults()
    return (f"tiny: data calls under {fmt_bytes(th['tiny_bytes'])}, small: under {fmt_bytes(th['small_bytes'])} "
            "(by default; iolens report --thresholds); larger calls are streaming (forwards) or random (backwards); "
            "metadata: opening, closing, listing and stat-ing files; syncs: waiting for data to reach the device; "
            "pipe wait: reads and writes of pipes, sockets and terminals")


WIDTH = 80  # the width when none is given (a caller passes render/terminal.py's `width()`)


def _rule_rows(rep: dict[str, Any], top: int, width: int) -> list[str]:
    t = FitTable([Col("rule", "left", wrap=True), Col("tasks", drop=4), Col("time"), Col("I/O"), Col("I/O %"),
                  Col("read", drop=2), Col("written", drop=1), Col("temp", drop=3)], box=None, pad_edge=False,
                 show_edge=False, header_style="")
    out: list[str] = []
    for r in rep["rules"][:top]:
        t.add_row(r["rule"], str(r["tasks"]), _s(r["time_s"]), _s(r["io_s"]), f"{r['io_share']:.0%}",
                  fmt_bytes(r["bytes_read"]), fmt_bytes(r["bytes_written"]), fmt_bytes(r["temp_bytes"]))
        st = r["storage"]
        out += fold(f"  {r['rule']}: reads from {_storage(st['reads'])}; writes to {_storage(st['writes'])}; "
                    f"spills to {_storage(st['spills'])}", width - 1, "  ")
    key = fold(terms("I/O %", "temp"), width - 1, "")
    return [line.rstrip() for line in text_of(t, width).splitlines()] + key + (["", "storage per rule:"] + out
                                                                                    if out else [])


def render_text(rep: dict[str, Any], top: int = 20, width: int = WIDTH) -> str:
    """The pipeline report as text laid out at `width` columns (prose folded, the rules' table fitted)."""
    def _wrap(text: str, indent: str = "  ") -> list[str]:
        return fold(text, width - 1, indent)

    from iolens.pipeline.merge import BOUND_SHARE

    t = rep["totals"]
    out = _wrap(f"pipeline {rep['directory']}: {t['tasks']} tasks profiled in {t['rules']} rules on {t['hosts']} "
                f"host(s); {t['not_profiled']} not profiled; {t['partial']} partial", "")
    out += _wrap(f"  task time {_s(t['time_s'])}, of which storage I/O {_s(t['io_s'])}")
    out += ["", "storage-bound rules (by time at stake):"]
    out += _wrap(f"  storage-bound: {BOUND_SHARE:.0%} or more of the rule's task time is storage I/O; "
                 + terms("time at stake"), "  ")
    for b in rep["storage_bound"] or [{"rule": "(none)", "time_at_stake_s": None, "io_share": 0, "advice": None}]:
        out += _wrap(f"  {b['rule']:<20} {_s(b['time_at_stake_s']):>9} {b['io_share']:>5.0%}", "  ")
    out += [""] + _rule_rows(rep, top, width)
    advice = [b["advice"] for b in rep["storage_bound"] if b["advice"]]
    if advice:
        out += ["", "advice per rule:"]
        for a in advice:
            out += _wrap(f"  {a}")
    if rep["not_profiled"]:
        out += ["", "tasks not profiled:"]
        for n in rep["not_profiled"][:top]:
            out += _wrap(f"  {n['id']} (rule {n['rule']}): {n['why']}")
    lost = [r for r in rep["tasks"] if r.get("unprofiled")]
    if lost:
        out += ["", "tasks with programs that ran unprofiled (static binary, stripped environment):"]
        for r in lost[:top]:
            out += _wrap(f"  {r['id']} (rule {r['rule']}): {'; '.join(r['unprofiled'][:3])}")
    partial = [r for r in rep["tasks"] if r["partial"]]
    if partial:
        out += ["", "partial tasks (killed or still running; counted up to where they stopped):"]
        for r in partial[:top]:
            out += _wrap(f"  {r['id']} (rule {r['rule']}, exit {r['exit_status']})")
    out += ["", "hosts:"]
    for h in rep["hosts"]:
        out += _wrap(f"  {h['host']:<20} {h['tasks']:>5} tasks  wall {_s(h['wall_s'])}  I/O {_s(h['io_s'])}")
    return "\n".join(out) + "\n"


def _ticks(span: float) -> list[float]:
    """Round values from 0 to `span`, about five of them."""
    if span <= 0:
        return [0.0]
    raw = span / 5
    mag = 10 ** math.floor(math.log10(raw))
    step = next(m * mag for m in (1, 2, 5, 10) if m * mag >= raw)
    return [round(i * step, 9) for i in range(int(span / step + 1e-9) + 1)]


# the time axis's one unit, by its span: (unit, seconds in it, the span from which it is used)
AXIS_UNITS = (("µs", 1e-6, 0.0), ("ms", 1e-3, 1e-3), ("s", 1.0, 1.0), ("min", 60.0, 300.0), ("h", 3600.0, 3 * 3600.0))


def time_axis(span_s: float) -> list[tuple[float, str]]:
    """Ticks for a time axis from 0 to `span_s`: (seconds, label), every label in the same unit ("0 s", "0.5 s")."""
    unit, size, _ = next(u for u in reversed(AXIS_UNITS) if span_s >= u[2])
    return [(t * size, f"{t:g} {unit}") for t in _ticks(span_s / size)]


# on a phone the rules table scrolls sideways (its box shows a shadow) rather than squeezing its sentences (where
# each rule's data went, its advice) into a word a line, which made every row a screen tall
NARROW_CSS = ("@media (max-width:700px){#rules td:nth-child(n+10){min-width:13em}"
              "#rules td:nth-child(13){min-width:26em}}")

GANTT_CSS = """
.gantt{margin:4px 0 0}
.gantt .host{font-size:12px;font-weight:600;margin:8px 0 2px;overflow-wrap:anywhere}
.gantt .lanes{position:relative;background:#f6f7f9;border-left:1px solid #99a}
.gantt .bar{position:absolute;height:15px;border-radius:2px;overflow:hidden;white-space:nowrap;font-size:10.5px;
  line-height:15px;color:#111;padding-left:2px;box-sizing:border-box;min-width:2px}
.gantt .axis{position:relative;height:30px;border-top:1px solid #99a;font-size:11px;color:#445}
.gantt .axis span{position:absolute;top:3px;transform:translateX(-50%);white-space:nowrap}
.gantt .axis span.first{transform:none}.gantt .axis span.last{transform:translateX(-100%)}
.gantt .axis .title{position:absolute;top:16px;left:0;right:0;text-align:center;transform:none}
"""


def _gantt(rep: dict[str, Any]) -> str:
    """Tasks on a time axis, one block of lanes per host: each task a bar from its start to its end, named by its
    rule (the workflow's name for it), coloured from green (computing) to red (storage I/O); its tooltip holds
    the rule, the times, the exit status and the capture it came from. Laid out in percentages, so it follows the
    window's width."""
    rows = [r for r in rep["tasks"] if r["start_real_ns"]]
    if not rows:
        return "<p>no task times</p>"
    t0 = min(r["start_real_ns"] for r in rows)
    t1 = max(r["start_real_ns"] + (r["wall_s"] or 0) * 1e9 for r in rows)
    span = max(t1 - t0, 1.0)
    hosts = sorted({r["host"] or "?" for r in rows})
    lanes: dict[str, list[float]] = {h: [] for h in hosts}  # each lane's end time, per host
    placed: dict[str, list[tuple[dict[str, Any], float, float, int]]] = {h: [] for h in hosts}
    for r in sorted(rows, key=lambda r: r["start_real_ns"]):
        s, e = r["start_real_ns"] - t0, r["start_real_ns"] - t0 + (r["wall_s"] or 0) * 1e9
        ends = lanes[r["host"] or "?"]
        lane = next((i for i, end in enumerate(ends) if end <= s), len(ends))
        if lane == len(ends):
            ends.append(e)
        else:
            ends[lane] = e
        placed[r["host"] or "?"].append((r, s, e, lane))
    out = ['<div class="gantt">']
    for h in hosts:
        bars = []
        for r, s, e, lane in placed[h]:
            left, width = 100 * s / span, 100 * (e - s) / span
            io = r["io_s"] / r["wall_s"] if r["wall_s"] else 0
            colour = f"hsl({int(120 - 120 * min(io, 1))},60%,62%)"
            status = "exit status unknown" if r["exit_status"] is None else f"exit status {r['exit_status']}"
            tip = (f"rule {r['rule']}: {_hs(r['wall_s'])} from {_hs(s / 1e9)}, {io:.0%} storage I/O, {status}"
                   + (", partial" if r["partial"] else "") + f"; capture {r['id']}")
            # the name inside the bar when it fits at the narrowest width (about 300 px for the whole span)
            name = esc_line(r["rule"]) if width / 100 * 300 >= 6.5 * len(r["rule"]) + 6 else ""
            bars.append(f'<div class="bar" style="left:{left:.3f}%;width:{width:.3f}%;top:{lane * 17 + 1}px;'
                        f'background:{colour}" title="{esc_line(tip)}">{name}</div>')
        out.append(f'<div class="host">{esc_line(h)}</div><div class="lanes" style="height:{len(lanes[h]) * 17 + 1}px">'
                   + "".join(bars) + "</div>")
    labels = []
    for i, (t, label) in enumerate(time_axis(span / 1e9)):
        cls = ' class="first"' if i == 0 else (' class="last"' if 100 * t * 1e9 / span > 92 else "")
        labels.append(f'<span{cls} style="left:{min(100.0, 100 * t * 1e9 / span):.3f}%">{label}</span>')
    out.append(f'<div class="axis">{"".join(labels)}<span class="title">time from the first task\'s start</span></div>')
    out.append("</div>")
    return "".join(out) + ('<p class="note">Hover over a task for its rule, times and exit status; colour: green = '
                           "computing, red = storage I/O.</p>")


MAX_TASK_ROWS = 5000


def _cells(*cells: tuple[Any, Any, str]) -> str:
    """One table row: (text, sort value or None, class) per cell."""

    return "<tr>" + "".join(td(t, v, c) for t, v, c in cells) + "</tr>"


def _hs(x: float | None) -> str:
    from iolens.units import human_seconds

    return human_seconds(x)


def _num(x: float | None, text: str) -> tuple[str, float | None, str]:
    return (text, x or 0, "")


def _rules_table(rep: dict[str, Any]) -> str:

    rows = []
    for r in rep["rules"]:
        st = r["storage"]
        rows.append(_cells((r["rule"], None, "text"), _num(r["tasks"], f"{r['tasks']:,}"),
                           _num(r["time_s"], _hs(r["time_s"])), _num(r["io_s"], _hs(r["io_s"])),
                           _num(r["io_share"], f"{r['io_share']:.0%}"),
                           _num(r["bytes_read"], fmt_bytes(r["bytes_read"])),
                           _num(r["bytes_written"], fmt_bytes(r["bytes_written"])),
                           _num(r["temp_bytes"], fmt_bytes(r["temp_bytes"])),
                           _num(r["files"], f"{r['files']:,}"), (_storage(st["reads"]), None, "text"),
                           (_storage(st["writes"]), None, "text"), (_storage(st["spills"]), None, "text"),
                           (r["advice_line"] or "-", None, "text")))
    return table("rules", [("rule", "s"), ("tasks", "n"), ("time", "n"), ("I/O", "n"), ("I/O %", "n"),
                            ("read", "n"), ("written", "n"), ("temp", "n"), ("files", "n"), ("reads from", "s"),
                            ("writes to", "s"), ("spills to", "s"), ("advice", "s")], rows)


def _classes_table(rep: dict[str, Any]) -> str:
    from iolens.pipeline.merge import IO_CLASSES, LABELS

    other = sorted({k for r in rep["rules"] for k in r["breakdown"]} - set(IO_CLASSES))
    def cell(x: float | None) -> tuple[str, float | None, str]:  # none of that class: "-", not "0 µs"
        return _num(x, _hs(x) if x else "-")

    rows = [_cells((r["rule"], None, "text"), *(cell(r["breakdown"].get(c)) for c in IO_CLASSES + other))
            for r in rep["rules"]]
    return table("classes", [("rule", "s")] + [(LABELS.get(c, c.replace("_", " ")), "n")
                                                for c in IO_CLASSES + other], rows)


def _tasks_table(rep: dict[str, Any]) -> str:

    rows = [_cells((t["id"], None, "path"), (t["rule"], None, "text"), (t["host"] or "?", None, "text"),
                   _num(t["wall_s"], _hs(t["wall_s"])), _num(t["io_s"], _hs(t["io_s"])),
                   _num(t["cpu_s"], _hs(t["cpu_s"])), _num(t["bytes_read"], fmt_bytes(t["bytes_read"] or 0)),
                   _num(t["bytes_written"], fmt_bytes(t["bytes_written"] or 0)),
                   ("-" if t["exit_status"] is None else str(t["exit_status"]), None, "text"),
                   ("partial" if t["partial"] else "", None, "text"))
            for t in rep["tasks"][:MAX_TASK_ROWS]]
    return table("tasks", [("task", "s"), ("rule", "s"), ("host", "s"), ("wall", "n"), ("I/O", "n"), ("CPU", "n"),
                            ("read", "n"), ("written", "n"), ("exit", "s"), ("", "s")], rows)


def _hosts_table(rep: dict[str, Any]) -> str:

    rows = [_cells((h["host"], None, "text"), _num(h["tasks"], f"{h['tasks']:,}"), _num(h["wall_s"], _hs(h["wall_s"])),
                   _num(h["io_s"], _hs(h["io_s"])), _num(h["cpu_s"], _hs(h["cpu_s"])),
                   _num(h["bytes_read"], fmt_bytes(h["bytes_read"])),
                   _num(h["bytes_written"], fmt_bytes(h["bytes_written"]))) for h in rep["hosts"]]
    return table("hosts", [("host", "s"), ("tasks", "n"), ("wall", "n"), ("I/O", "n"), ("CPU", "n"), ("read", "n"),
                            ("written", "n")], rows)


def _missing(rep: dict[str, Any]) -> str:

    rows = [_cells((n["id"], None, "path"), (n["rule"], None, "text"), (n["why"], None, "text"))
            for n in rep["not_profiled"]]
    rows += [_cells((t["id"], None, "path"), (t["rule"], None, "text"),
                    ("partial: killed or still running, counted up to where it stopped", None, "text"))
             for t in rep["tasks"] if t["partial"]]
    rows += [_cells((t["id"], None, "path"), (t["rule"], None, "text"),
                    ("ran programs without the interposer: " + "; ".join(t["unprofiled"][:3]), None, "text"))
             for t in rep["tasks"] if t.get("unprofiled")]
    if not rows:
        return '<p class="note">every task was profiled to its end</p>'
    return table("missing", [("task", "s"), ("rule", "s"), ("why", "s")], rows)


def render_html(rep: dict[str, Any]) -> bytes:
    """One self-contained page in the single-run report's style: cards, the storage-bound rules with their advice,
    sortable tables of rules, time by I/O class, tasks and hosts, and the Gantt chart of tasks by host."""
    from iolens.pipeline.merge import BOUND_SHARE
    from iolens.render.htmlsafe import script_json

    t = rep["totals"]
    cards = [("tasks", f"{t['tasks']:,}"), ("rules", f"{t['rules']:,}"), ("hosts", f"{t['hosts']:,}"),
             ("task time", _hs(t["time_s"])), ("storage I/O", _hs(t["io_s"])),
             ("not profiled", f"{t['not_profiled']:,}"), ("partial", f"{t['partial']:,}")]
    bound = "".join(f'<div class="advice high"><span class="atitle">{esc_line(b["rule"])}</span><span class="stake">'
                    f'{_hs(b["time_at_stake_s"])} at stake, {b["io_share"]:.0%} of its time is storage I/O</span>'
                    f'<div class="fix">{esc_line(b["advice"] or "")}</div></div>' for b in rep["storage_bound"])
    keyed = [k for k, _v in cards if k in TERMS]

    def tip(k: str) -> str:
        return f' title="{esc_line(TERMS[k])}"' if k in TERMS else ""

    more = (f'<p class="note">the first {MAX_TASK_ROWS:,} of {len(rep["tasks"]):,} tasks, by start time</p>'
            if len(rep["tasks"]) > MAX_TASK_ROWS else "")
    page = f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>iolens pipeline report: {esc_line(rep['directory'])}</title>
<style>{PAGE_CSS}{GANTT_CSS}th[data-type="s"]{{text-align:left}}{NARROW_CSS}</style>
</head><body>
<header><h1>iolens pipeline report</h1><div class="cmd">{esc_line(rep['directory'])}</div></header>
<main>
<div class="cards">{"".join(f'<div class="card"{tip(k)}><div class="k">{k}</div><div class="v">{v}</div></div>'
                            for k, v in cards)}<p class="note cardnote">{esc_line(terms(*keyed))}</p></div>
<section id="advice"><h2>Storage-bound rules</h2>
<p class="note">Rules whose tasks spend {BOUND_SHARE:.0%} or more of their time in storage I/O, by time at stake
({esc_line(TERMS["time at stake"])}).</p>
{bound or '<p class="note">none</p>'}</section>
<section><h2>Rules</h2><p class="note">Click a column to sort.</p>
<div class="tablewrap">{_rules_table(rep)}</div>
<p class="note">{esc_line(terms("rule", "I/O %", "temp", "spills to"))}</p></section>
<section><h2>Time by I/O class</h2><div class="tablewrap">{_classes_table(rep)}</div>
<p class="note">{esc_line(classes_key())}</p></section>
<section><h2>Tasks by host</h2><div class="tablewrap">{_gantt(rep)}</div></section>
<section><h2>Hosts</h2><div class="tablewrap">{_hosts_table(rep)}</div></section>
<section><h2>Tasks</h2>{more}<div class="tablewrap">{_tasks_table(rep)}</div></section>
<section><h2>Not profiled, partial or partly profiled</h2><div class="tablewrap">{_missing(rep)}</div></section>
</main>
<script type="application/json" id="rules">{script_json(rep["rules"])}</script>
<script>
(function(){{
  "use strict";
{SORTABLE_JS}  document.body.setAttribute("data-rendered", "1");
}})();
</script>
</body></html>
"""
    return page.encode()


def render_diff(a: dict[str, Any], b: dict[str, Any], width: int = WIDTH) -> str:
    """Two pipeline runs, rule by rule: time, storage I/O and bytes, B against A, laid out at `width`."""
    ra, rb = {r["rule"]: r for r in a["rules"]}, {r["rule"]: r for r in b["rules"]}
    out = fold(f"A {a['directory']} ({a['totals']['tasks']} tasks)  vs  B {b['directory']} "
               f"({b['totals']['tasks']} tasks)", width - 1, "")
    t = FitTable([Col("rule", "left", wrap=True), Col("tasks A/B", drop=3), Col("time A"), Col("time B"),
                  Col("change"), Col("I/O A", drop=2), Col("I/O B", drop=2), Col("written A", drop=1),
                  Col("written B", drop=1)], box=None, pad_edge=False, show_edge=False, header_style="")
    for name in sorted(set(ra) | set(rb), key=lambda n: -max(ra.get(n, {}).get("time_s", 0),
                                                             rb.get(n, {}).get("time_s", 0))):
        x, y = ra.get(name), rb.get(name)
        ta, tb = (x or {}).get("time_s"), (y or {}).get("time_s")
        change = f"{(tb - ta) / ta:+.0%}" if ta and tb is not None else "new" if x is None else "gone"
        t.add_row(name, f"{(x or {}).get('tasks', 0)}/{(y or {}).get('tasks', 0)}", _s(ta), _s(tb), change,
                  _s((x or {}).get("io_s")), _s((y or {}).get("io_s")), fmt_bytes((x or {}).get("bytes_written", 0)),
                  fmt_bytes((y or {}).get("bytes_written", 0)))
    out += [line.rstrip() for line in text_of(t, width).splitlines()]
    return "\n".join(out) + "\n"
