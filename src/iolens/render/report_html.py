"""The report as one self-contained HTML file: works offline, no CDN (the charts' library is inlined, and every
chart starts from the shared layout: render/plotting.py).

Tables are rendered here with every string HTML-escaped; the charts get their data from a JSON block
that is escaped for a <script> element and read with JSON.parse, and every label given to plotly is
entity-escaped in the page, so a file named `<script>...` shows as text and never runs.
"""

from __future__ import annotations

import math
from typing import Any

from iolens.analysis.model import Report
from iolens.analysis.breakdown import BREAKDOWN, CLASSES, LABELS
from iolens.analysis.processes import chain_rows
from iolens.names import shown
from iolens.render.htmlsafe import esc_line as _h
from iolens.render.htmlsafe import script_json
from iolens.render.html_table import PAGE_CSS, SORTABLE_JS, td, table
from iolens.render.multiqc import COLORS
from iolens.render.plotting import CONFIG, js_layout, script_tag
from iolens.render.report_text import NO_ADVICE, integrity_lines, storage_mounts, unattributed_line
from iolens.units import exit_text, human_bytes, human_seconds, pct

MAX_FILE_ROWS = 2000
MAX_PHASES = 200
MAX_PROC_BARS = 30
PAGE_BYTES = 1_450_000  # the rows of the files and processes tables fill a page up to this (1.5 MB less room for
# their headers and notes): they get the room the rest of the page leaves
FILES_SHARE = 0.6  # of that room, the files table's; the processes table has the rest


def _fit(rows: list[str], room: int) -> list[str]:
    """The first rows whose UTF-8 bytes add up to at most `room`."""
    used = 0
    for i, row in enumerate(rows):
        used += len(row.encode())
        if used > room:
            return rows[:i]
    return rows


def _files_table(r: Report, room: int) -> str:
    files = [f for f in r.files if f.kind != "stream" and not f.program][:MAX_FILE_ROWS]
    rows = []
    for f in files:
        note = []
        if f.temporary:
            note.append(f"temp, lived {human_seconds(f.lifetime_s)}")
        if f.times_read and f.times_read >= 1.5:
            note.append(f"read {f.times_read:.1f}x")
        if f.text_format:
            note.append(f"uncompressed {f.text_format}")
        rows.append("<tr>" + "".join([
            td(f.path, cls="path"), td(f.kind, cls="text"),
            td(" ".join(x for x in (f.storage, f.fstype, f.mount) if x), cls="text"),
            td(human_bytes(f.bytes_read), f.bytes_read), td(human_bytes(f.bytes_written), f.bytes_written),
            td(f"{f.reads + f.writes:,}", f.reads + f.writes), td(f"{f.metadata_ops:,}", f.metadata_ops),
            td(human_seconds(f.time_s), f.time_s),
            td(max(CLASSES, key=lambda c: f.breakdown[c]).replace("_", " ") if f.time_s > 0 else "-", cls="text"),
            td(f.dominant_size, cls="text"), td(f.pattern, cls="text"),
            td(human_seconds(f.lifetime_s), f.lifetime_s),
            td("; ".join(note), cls="text"), td(", ".join(f.tools), cls="text"),
        ]) + "</tr>")
    headers = [("file", "s"), ("kind", "s"), ("storage", "s"), ("read", "n"), ("written", "n"),
               ("data calls", "n"), ("metadata calls", "n"), ("time", "n"), ("mostly", "s"), ("dominant size", "s"),
               ("pattern", "s"), ("temp lifetime", "n"), ("note", "s"), ("tools", "s")]
    rows = _fit(rows, room)
    total = sum(1 for f in r.files if f.kind != "stream" and not f.program)
    more = (f'<p class="note">Showing the {len(rows):,} files with the most I/O time of {total:,}; '
            "<code>iolens report --csv</code> writes them all.</p>") if total > len(rows) else ""
    programs = sum(1 for f in r.files if f.program)
    if programs:
        more += (f'<p class="note">{programs:,} executables and shared libraries that were only looked up or mapped '
                 "by the loader (no data calls) are left out; the JSON and CSV list them.</p>")
    return table("files", headers, rows) + more


def _mounts_table(r: Report) -> str:
    rows = []
    for m in storage_mounts(r):
        rows.append("<tr>" + "".join([
            td(m.mount, cls="path"), td(m.storage), td(m.fstype or "-"), td(m.source or "-"),
            td(human_bytes(m.bytes_read), m.bytes_read), td(human_bytes(m.bytes_written), m.bytes_written),
            td(f"{m.reads + m.writes:,}", m.reads + m.writes), td(f"{m.metadata_ops:,}", m.metadata_ops),
            td(human_seconds(m.time_s), m.time_s), td(f"{m.files:,}", m.files),
            td(human_bytes(m.temp_bytes) if m.temp_files else "-", m.temp_bytes),
        ]) + "</tr>")
    line = unattributed_line(r)
    return table("mounts", [("mount", "s"), ("storage", "s"), ("fs", "s"), ("device", "s"), ("read", "n"),
                             ("written", "n"), ("data calls", "n"), ("metadata calls", "n"), ("time", "n"),
                             ("files", "n"), ("temp written", "n")], rows) + (
        f'<p class="note">{_h(line)}</p>' if line else "")


def _procs_table(r: Report, room: int) -> str:
    rows = []
    chains = chain_rows(r.processes)
    for p in chains[:MAX_PHASES]:
        rows.append("<tr>" + "".join([
            td("\u00a0\u00a0" * p.depth + f"{p.label} [{p.pid}]", p.images[0], cls="path"),
            td(human_seconds(p.start_s), p.start_s), td(human_seconds(p.wall_s), p.wall_s),
            td(human_seconds(p.cpu_s), p.cpu_s), td(human_seconds(p.io_s), p.io_s),
            td(pct(p.io_s, p.own_s), p.io_s / p.own_s if p.own_s else 0),
            td(human_bytes(p.bytes_read), p.bytes_read), td(human_bytes(p.bytes_written), p.bytes_written),
            td(human_seconds(p.subtree_io_s), p.subtree_io_s), td(p.subtree_processes, p.subtree_processes),
            td(exit_text(p.exit_status, p.exit_signal, short=True), p.exit_status),
            td(" ".join(p.argv)[:300], cls="path"),
        ]) + "</tr>")
    rows = _fit(rows, room)
    more = (f'<p class="note">Showing the first {len(rows):,} of {len(chains):,} processes (their exec chains); '
            "<code>iolens report --json</code> lists them all.</p>") if len(chains) > len(rows) else ""
    return table("processes", [("process", "n"), ("start", "n"), ("wall", "n"), ("cpu", "n"), ("I/O", "n"),
                                ("I/O share", "n"), ("read", "n"), ("written", "n"), ("subtree I/O", "n"),
                                ("subtree processes", "n"), ("exit", "n"), ("command", "s")], rows) + more


def _advice(r: Report) -> str:
    if not r.advice:
        return f'<p class="note">{_h(NO_ADVICE[0].upper() + NO_ADVICE[1:])}.</p>'
    out = []
    for a in r.advice:
        stake = "" if a.time_at_stake_s is None else (
            f'<span class="stake">up to {_h(human_seconds(a.time_at_stake_s))} at stake'
            + (f" ({100 * a.share:.0f}% of process time)" if a.share is not None else "") + "</span>")
        ev = "".join(f"<li>{_h(e)}</li>" for e in a.evidence)
        out.append(f'<div class="advice {_h(a.severity)}" data-rule="{_h(a.rule)}"><div class="atitle">'
                   f'<span class="sev">{_h(a.severity)}</span> {_h(a.title)} {stake}</div>'
                   f'<ul class="evidence">{ev}</ul><div class="fix"><b>Fix:</b> {_h(a.fix)}</div></div>')
    return "\n".join(out)


def _phases(r: Report) -> dict:
    """The Gantt: one row per process (its exec chain's images side by side on it), one bar per image."""
    chains = chain_rows(r.processes)[:MAX_PHASES]
    by_index = {p.index: p for p in r.processes}
    bars = []
    for row, c in enumerate(chains):
        for k in c.images:
            p = by_index[k]
            bars.append({"row": row, "name": shown(p.name), "start": p.start_s, "wall": p.wall_s, "io": p.io_s,
                         "cpu": p.cpu_s, "own": p.own_s, "pid": p.pid})
    return {"rows": [shown(f"{'  ' * c.depth}{c.label} [{c.pid}]") for c in chains], "bars": bars}


def _chart_data(r: Report) -> dict:
    procs = sorted(r.processes, key=lambda p: -p.own_s)[:MAX_PROC_BARS]
    tl = r.timeline
    return {
        "classes": BREAKDOWN,
        "labels": LABELS,
        "colors": COLORS,
        "run": r.breakdown,
        "procs": [{"name": shown(f"{p.name} [{p.pid}]"), "b": p.breakdown} for p in procs],
        "mounts": [{"name": shown(m.mount), "b": m.breakdown, "read": m.bytes_read, "written": m.bytes_written,
                    "time": m.time_s} for m in storage_mounts(r)],
        "hist": r.histograms,
        "timeline": {"t": tl.t_s, "iops": tl.iops, "read_bps": tl.read_bps, "write_bps": tl.write_bps,
                     "mount_bps": tl.per_mount_bps, "mount_iops": tl.per_mount_iops, "bin_s": tl.bin_s},
        "phases": _phases(r),
        "layout": js_layout(),
        "config": CONFIG,
    }


def _clean(obj: Any) -> Any:
    if isinstance(obj, float):
        return obj if math.isfinite(obj) else 0.0
    if isinstance(obj, dict):
        return {k: _clean(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_clean(v) for v in obj]
    return obj


def render_html(r: Report, *, plotly_js: str | None = None) -> bytes:
    """The page; `plotly_js` replaces the charts' library (tests that only read the tables pass "")."""
    cap, tot = r.capture, r.totals
    cmd = " ".join(cap["command"])
    cov = tot["coverage"]
    cards = [
        ("wall time", human_seconds(tot["wall_s"]), "from the command's start to its end"),
        ("process time", human_seconds(tot["own_s"]),
         "the wall time of every process added up, less each one's waits for its children"),
        ("storage I/O", f"{human_seconds(tot['io_s'])} ({pct(tot['io_s'], tot['own_s'])})",
         "process time spent in calls to files and storage (share of process time)"),
        ("compute", f"{human_seconds(tot['compute_s'])} ({pct(tot['compute_s'], tot['own_s'])})",
         "process time outside storage calls: computing, and waiting on pipes"),
        ("read / written", f"{human_bytes(tot['bytes_read'])} / {human_bytes(tot['bytes_written'])}",
         "bytes the program asked to read and write"),
        ("processes / files", f"{tot['processes']:,} / {tot['files']:,}", "processes started, files used"),
        ("coverage", "unknown" if cov is None else f"{100 * cov:.1f}%",
         "the share of the kernel's count of bytes read and written that iolens saw call by call; below 100%, "
         "some I/O went by another way (memory maps, a static program) and the breakdown is a lower bound"),
        ("exit status", "?" if cap["exit_status"] is None else str(cap["exit_status"]), "0 means success"),
    ]
    cards_html = "".join(f'<div class="card" title="{_h(tip)}"><div class="k">{_h(k)}</div>'
                         f'<div class="v">{_h(v)}</div></div>' for k, v, tip in cards)
    cards_html += ('<p class="note cardnote">Process time: the wall time of every process added up, less its waits '
                   "for children. Coverage: the share of the kernel's count of bytes read and written that iolens saw "
                   "call by call (below 100%: some I/O went by memory maps or unprofiled programs). Hover over a "
                   "figure for what it means.</p>")
    problems = "".join(
        f'<div class="warn banner" role="alert" data-partial="1" style="border:2px solid #d62728;background:#fdecea;'
        f'color:#8a1c1c;padding:10px 14px;margin:12px 0;border-radius:6px;font-weight:600">{_h(line)}</div>'
        if line.startswith("PARTIAL") else f'<p class="warn">{_h(line)}</p>' for line in integrity_lines(r))
    problems += "".join(f'<p class="warn">warning: {_h(p)}</p>' for p in cap["problems"])
    thresholds = "".join(f"<tr><td>{_h(k)}</td><td>{_h(v)}</td></tr>" for k, v in r.thresholds.items())
    parts = dict(
        title=_h(f"iolens report: {cmd}"[:200]),
        cmd=_h(cmd),
        host=_h(f"{cap['host'] or '?'} · {cap['cpus'] or '?'} CPUs · {human_bytes(cap['mem_bytes'])} RAM · "
                f"kernel {cap['kernel'] or '?'} · capture {cap['path']}"),
        cards=cards_html,
        problems=problems,
        advice=_advice(r),
        mounts=_mounts_table(r),
        thresholds=thresholds,
        data=script_json(_clean(_chart_data(r))),
        plotly=script_tag() if plotly_js is None else f"<script>{plotly_js}</script>",
        app=_APP_JS,
        css=PAGE_CSS,
        tiny=_h(human_bytes(r.thresholds["tiny_bytes"])),
        small=_h(human_bytes(r.thresholds["small_bytes"])),
    )
    # the tables of files and processes (a large capture has thousands) get the room the rest of the page leaves
    room = max(0, PAGE_BYTES - len(_TEMPLATE.format(files="", procs="", **parts).encode()))
    files = _files_table(r, int(room * FILES_SHARE))
    procs = _procs_table(r, room - len(files.encode()))
    return _TEMPLATE.format(files=files, procs=procs, **parts).encode("utf-8")


_APP_JS = r"""
(function(){
  "use strict";
  var D = JSON.parse(document.getElementById("iolens-data").textContent);
  function _h(s){ return String(s).replace(/&/g,"&amp;").replace(/</g,"&lt;").replace(/>/g,"&gt;"); }
  function fmtS(s){ if(s<1e-3) return (s*1e6).toFixed(0)+" µs"; if(s<1) return (s*1e3).toFixed(1)+" ms";
    if(s<120) return s.toFixed(2)+" s"; return (s/60).toFixed(1)+" min"; }
  var cfg = D.config, base = D.layout;
  function over(a, b){ var o = JSON.parse(JSON.stringify(a));
    for (var k in b) o[k] = (b[k] && typeof b[k] === "object" && !Array.isArray(b[k]) && o[k] &&
                             typeof o[k] === "object") ? over(o[k], b[k]) : b[k];
    return o; }
  function lay(extra){ return over(base, extra); }

  // time breakdown: the whole run, then the processes with the most own time; the colour key is HTML under
  // the chart (it wraps at any width, where a legend of a dozen entries would squeeze the plot)
  (function(){
    var rows = [{name:"whole run", b:D.run}].concat(D.procs);
    var y = rows.map(function(r){ return _h(r.name); });
    var used = D.classes.filter(function(c){ return rows.some(function(r){ return (r.b[c] || 0) > 0; }); });
    var traces = used.map(function(c){
      return {type:"bar", orientation:"h", name:D.labels[c], y:y, marker:{color:D.colors[c]},
              x:rows.map(function(r){ return r.b[c] || 0; }),
              hovertemplate:"%{y}<br>"+D.labels[c]+": %{x:.4g} s<extra></extra>"};
    });
    Plotly.newPlot("chart-breakdown", traces, lay({barmode:"stack", xaxis:{title:{text:"seconds"}},
      yaxis:{autorange:"reversed"}, showlegend:false, height:Math.max(260, 90+26*rows.length)}), cfg);
    document.getElementById("key-breakdown").innerHTML = used.map(function(c){
      return '<li><span class="sw" style="background:' + D.colors[c] + '"></span>' + _h(D.labels[c]) + '</li>';
    }).join("");
  })();

  // access-size histograms
  Plotly.newPlot("chart-hist", [
    {type:"bar", name:"reads", x:D.hist.bins, y:D.hist.read, marker:{color:"#2ca02c"}},
    {type:"bar", name:"writes", x:D.hist.bins, y:D.hist.write, marker:{color:"#1f77b4"}}
  ], lay({barmode:"group", yaxis:{title:{text:"calls"}, type:"log"}, xaxis:{title:{text:"request size"}}}), cfg);

  // IOPS and throughput over time
  (function(){
    var T = D.timeline, t = T.t, traces = [];
    Object.keys(T.iops).forEach(function(cat){
      var v = T.iops[cat]; if (!v.some(function(x){ return x > 0; })) return;
      traces.push({type:"scatter", mode:"lines", line:{shape:"hv"}, name:cat, x:t, y:v});
    });
    if (!traces.length) traces.push({type:"scatter", mode:"lines", name:"none", x:t, y:t.map(function(){return 0;})});
    Plotly.newPlot("chart-iops", traces, lay({xaxis:{title:{text:"seconds from start"}},
                                              yaxis:{title:{text:"calls / s"}}}), cfg);
    var tp = [
      {type:"scatter", mode:"lines", line:{shape:"hv", color:"#2ca02c"}, name:"read", x:t,
       y:T.read_bps.map(function(v){return v/1048576;})},
      {type:"scatter", mode:"lines", line:{shape:"hv", color:"#1f77b4"}, name:"written", x:t,
       y:T.write_bps.map(function(v){return v/1048576;})}
    ];
    Object.keys(T.mount_bps).forEach(function(m){
      tp.push({type:"scatter", mode:"lines", line:{shape:"hv", dash:"dot"}, name:_h(m)+" (est.)", x:t,
               y:T.mount_bps[m].map(function(v){return v/1048576;})});
    });
    Plotly.newPlot("chart-throughput", tp, lay({xaxis:{title:{text:"seconds from start"}},
                                                yaxis:{title:{text:"MiB / s"}}}), cfg);
  })();

  function shareColor(v){
    var a = [0x9e, 0xca, 0xe1], b = [0xd6, 0x27, 0x28], t = Math.min(1, Math.max(0, v || 0));
    return "rgb(" + a.map(function(x, i){ return Math.round(x + (b[i] - x) * t); }).join(",") + ")";
  }

  // phases: one row per process (an exec chain's images side by side), one labelled bar per image,
  // coloured by the image's I/O share of its own time
  (function(){
    var R = D.phases.rows, B = D.phases.bars;
    var share = B.map(function(b){ return b.own > 0 ? Math.min(1, b.io / b.own) : 0; });
    Plotly.newPlot("chart-phases", [{type:"bar", orientation:"h", base:B.map(function(b){return b.start;}),
      x:B.map(function(b){ return Math.max(b.wall, 1e-6); }), y:B.map(function(b){ return b.row; }),
      text:B.map(function(b){ return _h(b.name); }), textposition:"inside", insidetextanchor:"start",
      textangle:0, textfont:{size:11, color:"#1d2330"}, width:0.8,
      customdata:B.map(function(b, i){ return [_h(b.name) + " [" + b.pid + "]", fmtS(b.start), fmtS(b.wall),
        fmtS(b.cpu), fmtS(b.io), (100 * share[i]).toFixed(0) + "%"]; }),
      hovertemplate:"%{customdata[0]}<br>start %{customdata[1]}, wall %{customdata[2]}<br>cpu %{customdata[3]}, " +
        "I/O %{customdata[4]} (%{customdata[5]} of its own time)<extra></extra>",
      marker:{color:share.map(shareColor)}}],
      lay({xaxis:{title:{text:"seconds from the start"}, rangemode:"tozero"},
           uniformtext:{mode:"hide", minsize:9},
           yaxis:{autorange:"reversed", automargin:true,
                  tickmode:"array", tickvals:R.map(function(r, i){ return i; }),
                  ticktext:R.map(function(r){ return _h(r).replace(/ /g, "\u00a0"); })},
           height:Math.max(260, 110 + 24 * R.length), showlegend:false}), cfg);
  })();

  // the unit that makes the largest value read as 1 to 1023 (bytes) or 1 to 999 (seconds), so ticks are readable
  function unit(max, units){ var u = units[0]; units.forEach(function(c){ if (max >= c[1]) u = c; }); return u; }
  var BYTES = [["B",1],["KiB",1024],["MiB",1048576],["GiB",1073741824],["TiB",1099511627776]];
  var SECONDS = [["µs",1e-6],["ms",1e-3],["s",1],["min",60]];

  // per mount: bytes and time, each on an axis from zero in a unit that suits its values
  (function(){
    var M = D.mounts, x = M.map(function(m){ return _h(m.name); });
    var b = unit(Math.max.apply(null, [0].concat(M.map(function(m){ return Math.max(m.read, m.written); }))), BYTES);
    var s = unit(Math.max.apply(null, [0].concat(M.map(function(m){ return m.time; }))), SECONDS);
    Plotly.newPlot("chart-mounts", [
      {type:"bar", name:"read", x:x, y:M.map(function(m){return m.read/b[1];}), marker:{color:"#2ca02c"},
       hovertemplate:"%{x}<br>read %{y:.3~f} "+b[0]+"<extra></extra>"},
      {type:"bar", name:"written", x:x, y:M.map(function(m){return m.written/b[1];}), marker:{color:"#1f77b4"},
       hovertemplate:"%{x}<br>written %{y:.3~f} "+b[0]+"<extra></extra>"},
      {type:"scatter", mode:"markers", name:"I/O time", x:x, y:M.map(function(m){return m.time/s[1];}), yaxis:"y2",
       marker:{color:"#d62728", size:12, symbol:"diamond"},
       hovertemplate:"%{x}<br>I/O time %{y:.3~f} "+s[0]+"<extra></extra>"}
    ], lay({barmode:"group", margin:{l:70, r:70, t:40, b:50}, xaxis:{automargin:true},
            yaxis:{title:{text:"read / written ("+b[0]+")"}, rangemode:"tozero", tickformat:"~g", automargin:true},
            yaxis2:{title:{text:"I/O time ("+s[0]+")"}, overlaying:"y", side:"right", rangemode:"tozero",
                    tickformat:"~g",
                    tickmode:"auto", nticks:6, showgrid:false, zeroline:false, automargin:true}}), cfg);
  })();

""" + SORTABLE_JS + r"""  document.body.setAttribute("data-rendered", "1");
})();
"""

_TEMPLATE = """<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{title}</title>
<style>{css}</style>
{plotly}
</head><body>
<header><h1>iolens report</h1><div class="cmd">{cmd}</div><div class="host">{host}</div></header>
<main>
<div class="cards">{cards}</div>
{problems}
<section id="advice"><h2>Advice</h2>{advice}</section>
<section><h2>Where the time went</h2>
<p class="note">Process time (wall time of each process less its waits for children) split into kinds of I/O
and compute. Tiny &lt; {tiny}, small &lt; {small}; larger calls are streaming (forwards) or random (backwards).
Metadata: opening, closing, listing and stat-ing files; sync: waiting for data to reach the device (fsync);
waiting on pipes: reads and writes of pipes, sockets and terminals.</p>
<div id="chart-breakdown" class="chart auto"></div><ul id="key-breakdown" class="key"></ul></section>
<div class="grid2">
<section><h2>Access sizes</h2><div id="chart-hist" class="chart"></div></section>
<section><h2>Storage</h2><div id="chart-mounts" class="chart"></div></section>
</div>
<div class="grid2">
<section><h2>Calls per second</h2><div id="chart-iops" class="chart"></div></section>
<section><h2>Throughput</h2><div id="chart-throughput" class="chart"></div>
<p class="note">Per-mount lines are estimated from when each process used each file.</p></section>
</div>
<section><h2>Phases</h2><p class="note">One row per process (its exec chain: the programs it ran in turn, side by
side), one bar per program from its start to its end, coloured by the share of its own time spent in storage I/O:
<span class="grad"></span> 0% to 100%.</p><div id="chart-phases" class="chart auto"></div></section>
<section><h2>Mounts</h2><div class="tablewrap">{mounts}</div></section>
<section><h2>Files</h2><div class="tablewrap">{files}</div></section>
<section><h2>Processes</h2><div class="tablewrap">{procs}</div></section>
<section><h2>Thresholds</h2><details><summary>values used for this report</summary>
<table><tbody>{thresholds}</tbody></table></details></section>
</main>
<script type="application/json" id="iolens-data">{data}</script>
<script>{app}</script>
</body></html>
"""
