"""The charts every HTML page shares: the plotting library, inlined once per page, and the layout that keeps a
chart readable from a 360 px phone to a wide screen.

- The library is plotly.js's "basic" bundle (scatter, bar, pie: 1.2 MB against 4.8 MB for the full one),
  vendored in `assets/` by `dev/vendor-plotly`; a page inlines it, so it works offline and fetches nothing.
- A chart's title is HTML above it (it wraps on a narrow screen; a title drawn by plotly is cut), its legend is
  a row below the plot, its axes make room for their tick labels (`automargin`), and the toolbar sits in the
  top margin, where nothing else is drawn.
- A chart's height is CSS (html_table's `chart_height`): its usual height, less on a screen too short for it;
  plotly's `responsive` redraws it when the window changes.
"""

from __future__ import annotations

import functools
import math
import os
from importlib import resources
from typing import Any

from iolens.render.html_table import SCROLL_CUE_CSS, chart_height
from iolens.render.htmlsafe import esc_line

CONFIG: dict[str, Any] = {"displaylogo": False, "responsive": True}

# the layout every chart starts from; the toolbar (about 30 px tall) lives in the top margin
LAYOUT: dict[str, Any] = {
    "template": "plotly_white",
    "autosize": True,
    "font": {"size": 12},
    "margin": {"l": 10, "r": 10, "t": 34, "b": 10, "autoexpand": True},
    "legend": {"orientation": "h", "xref": "container", "yref": "container", "x": 0, "xanchor": "left",
               "y": 0, "yanchor": "bottom"},
    "xaxis": {"automargin": True, "title": {"standoff": 10}},
    "yaxis": {"automargin": True, "title": {"standoff": 8}},
}

CSS = """
.chartbox{margin:1.2em 0;max-width:100%}
.chartbox h3{font-size:1em;margin:.2em 0 .1em;font-weight:600}
.chartbox .how{color:#667;font-size:.85em;margin:0 0 .3em}
.chartbox .plot{width:100%}
.scrollx{overflow-x:auto;max-width:100%}
p,li,h1,h2,summary,code{overflow-wrap:anywhere}
@media(max-width:600px){body{margin-left:.7em!important;margin-right:.7em!important}}
""" + SCROLL_CUE_CSS


@functools.cache
def plotly_js() -> str:
    """The vendored plotly.js bundle's text."""
    return resources.files("iolens.render").joinpath("assets/plotly-basic.min.js").read_text("utf-8")


# Point labels placed so they overlap neither each other, nor the points, nor the lines drawn between points (a
# Pareto front): after every drawing (the first, and each resize), each labelled point takes the first of eight
# positions around it that is free and inside the plot, or the least covered one. When every chart's labels are
# placed, the page is marked rendered (<body data-rendered="1">), which the browser tests wait for.
LABELS_JS = r"""
(function(){
  "use strict";
  var POS = ["top center", "bottom center", "middle right", "middle left", "top right", "top left",
             "bottom right", "bottom left"];
  function box(pos, px, py, w, h, d){
    var v = pos.split(" ")[0], u = pos.split(" ")[1], s = v === "middle" ? d : 0, l, t;
    l = u === "center" ? px - w / 2 : (u === "right" ? px + s : px - w - s);
    t = v === "middle" ? py - h / 2 : (v === "top" ? py - d - h : py + d);
    return {l: l, t: t, r: l + w, b: t + h};
  }
  function cover(a, b){
    return Math.max(0, Math.min(a.r, b.r) - Math.max(a.l, b.l)) * Math.max(0, Math.min(a.b, b.b) - Math.max(a.t, b.t));
  }
  // how long a stretch of the segment s ([[x, y], [x, y]]) lies inside the box b (Liang-Barsky clipping)
  function crossed(b, s){
    var x = s[0][0], y = s[0][1], dx = s[1][0] - x, dy = s[1][1] - y, t0 = 0, t1 = 1;
    var p = [-dx, dx, -dy, dy], q = [x - b.l, b.r - x, y - b.t, b.b - y];
    for (var k = 0; k < 4; k++) {
      if (p[k] === 0) { if (q[k] < 0) return 0; continue; }
      var r = q[k] / p[k];
      if (p[k] < 0) { if (r > t1) return 0; if (r > t0) t0 = r; }
      else { if (r < t0) return 0; if (r < t1) t1 = r; }
    }
    return (t1 - t0) * Math.hypot(dx, dy);
  }
  function place(gd){
    var fl = gd._fullLayout, sz = fl._size, area = {l: sz.l, t: sz.t, r: sz.l + sz.w, b: sz.t + sz.h};
    var labels = [], marks = [], lines = [];
    Array.prototype.forEach.call(gd.querySelectorAll(".scatterlayer .trace"), function(el){
      var cd = el.__data__, t = cd && cd[0] && cd[0].trace;
      if (!t || t.visible !== true) return;
      var xa = fl["xaxis" + t.xaxis.slice(1)], ya = fl["yaxis" + t.yaxis.slice(1)];
      var size = (t.marker && typeof t.marker.size === "number") ? t.marker.size : 8, prev = null;
      cd.forEach(function(pt){
        if (!isFinite(pt.x) || !isFinite(pt.y)) { prev = null; return; }
        var px = xa._offset + xa.c2p(pt.x), py = ya._offset + ya.c2p(pt.y), r = size / 2 + 1;
        if (/markers/.test(t.mode)) marks.push({l: px - r, t: py - r, r: px + r, b: py + r});
        if (/lines/.test(t.mode)) { if (prev) lines.push([prev, [px, py]]); prev = [px, py]; }
      });
      Array.prototype.forEach.call(el.querySelectorAll(".textpoint"), function(g){
        var pt = g.__data__, txt = g.querySelector("text");
        if (!pt || !txt || !isFinite(pt.x) || !isFinite(pt.y)) return;
        var bb = txt.getBBox();
        labels.push({trace: t.index, i: pt.i, px: xa._offset + xa.c2p(pt.x), py: ya._offset + ya.c2p(pt.y),
                     w: bb.width + 8, h: bb.height + 4, d: size / 2 + 2, n: t._length || cd.length,
                     now: Array.isArray(t.textposition) ? t.textposition[pt.i] : t.textposition,
                     real: txt.getBoundingClientRect()});
      });
    });
    if (!labels.length) return true;
    // a bounded number of rounds: each restyle redraws the chart, and plotly gives up (with a console warning)
    // on a chart whose margins are recomputed too many times in a row
    if ((gd._iolensRounds || 0) >= 6) return true;
    // where the drawn labels still overlap (the model of plotly's offsets is approximate), the later label's
    // position is ruled out and the labels are placed again: at most a few rounds
    var bad = gd._iolensBad || (gd._iolensBad = {}), rounds = gd._iolensRounds = (gd._iolensRounds || 0) + 1;
    var rect = function(lb){ return {l: lb.real.left, t: lb.real.top, r: lb.real.right, b: lb.real.bottom}; };
    var g = gd.getBoundingClientRect();  // lines are in the chart's pixels, drawn labels in the window's
    labels.forEach(function(a, i){
      var own = rect(a), inChart = {l: own.l - g.left, t: own.t - g.top, r: own.r - g.left, b: own.b - g.top};
      if (lines.some(function(s){ return crossed(inChart, s) > 1; }))  // a drawn label on a line
        (bad[a.trace + ":" + a.i] = bad[a.trace + ":" + a.i] || {})[a.now] = true;
      labels.slice(i + 1).forEach(function(b){
        if (cover(own, rect(b)) > 1 && rounds < 8)
          (bad[b.trace + ":" + b.i] = bad[b.trace + ":" + b.i] || {})[b.now] = true;
      });
    });
    var placed = [], want = {};
    labels.forEach(function(lb){
      var best = null, bestCost = Infinity, ruled = bad[lb.trace + ":" + lb.i] || {};
      POS.forEach(function(pos){
        if (bestCost === 0 || ruled[pos]) return;
        var b = box(pos, lb.px, lb.py, lb.w, lb.h, lb.d), c = 0;
        placed.forEach(function(o){ c += 4 * cover(b, o); });
        marks.forEach(function(o){ c += cover(b, o); });
        lines.forEach(function(s){ c += lb.h * crossed(b, s); });  // a line through it: as its height's area
        c += lb.w * lb.h - cover(b, area);
        if (c < bestCost - 0.5) { bestCost = c; best = {pos: pos, b: b}; }
      });
      if (!best) best = {pos: lb.now || POS[0], b: box(lb.now || POS[0], lb.px, lb.py, lb.w, lb.h, lb.d)};
      placed.push(best.b);
      var arr = want[lb.trace] || (want[lb.trace] = {list: [], changed: false, n: lb.n});
      arr.list[lb.i] = best.pos;
      if (best.pos !== lb.now) arr.changed = true;
    });
    var idx = [], vals = [];
    Object.keys(want).forEach(function(k){
      if (!want[k].changed) return;
      var list = [];
      for (var i = 0; i < want[k].n; i++) list.push(want[k].list[i] || "top center");
      idx.push(+k); vals.push(list);
    });
    if (idx.length) Plotly.restyle(gd, {textposition: vals}, idx);
    return idx.length === 0;
  }
  window.addEventListener("load", function(){
    var charts = Array.prototype.slice.call(document.querySelectorAll(".js-plotly-plot"));
    function settle(gd){
      if (place(gd)) gd.setAttribute("data-labels", "placed");
      if (charts.every(function(c){ return c.getAttribute("data-labels") === "placed"; }))
        document.body.setAttribute("data-rendered", "1");
    }
    charts.forEach(function(gd){ gd.on("plotly_afterplot", function(){ settle(gd); }); });
    charts.forEach(settle);
    if (!charts.length) document.body.setAttribute("data-rendered", "1");
  });
})();
"""


def script_tag() -> str:
    """The library and the label placement as inline <script> elements, for a page's <head>."""
    return f"<script>{plotly_js()}</script><script>{LABELS_JS}</script>"


def _over(base: dict[str, Any], extra: dict[str, Any]) -> dict[str, Any]:
    out = dict(base)
    for k, v in extra.items():
        out[k] = _over(out[k], v) if isinstance(v, dict) and isinstance(out.get(k), dict) else v
    return out


def layout(**extra: Any) -> dict[str, Any]:
    """LAYOUT with `extra` laid over it, key by key at every depth (`xaxis={"title": ...}` keeps automargin)."""
    return _over(LAYOUT, extra)


def js_layout() -> dict[str, Any]:
    """LAYOUT for a page that draws its charts in its own script: without the template, which is a name only the
    Python side resolves."""
    return {k: v for k, v in LAYOUT.items() if k != "template"}


def chart(fig: Any, *, title: str, how: str = "", height: int = 420) -> str:
    """A plotly figure as a titled block of the page: `title` and `how` (how to read it: symbols, units) are HTML
    text above the plot, so they wrap; the figure takes the width it is given and `chart_height(height)`, and
    follows the window."""
    own = {k: v for k, v in fig.layout.to_plotly_json().items() if k not in ("template", "height")}
    fig.layout = layout(**own)  # no height of its own: plotly takes the box's, and follows it
    div = fig.to_html(full_html=False, include_plotlyjs=False, include_mathjax=False, config=CONFIG,
                      default_width="100%", default_height=chart_height(height))
    note = f'<p class="how">{how}</p>' if how else ""
    return f'<div class="chartbox"><h3>{esc_line(title)}</h3>{note}<div class="plot">{div}</div></div>'


def label(text: str, width: int = 18) -> str:
    """A category or point name for a chart: escaped, and broken into lines of about `width` characters at
    spaces, `/` or `=` so a long path does not push the plot off a narrow screen."""
    words: list[str] = []
    cur = ""
    for ch in str(text):
        cur += ch
        if ch in " /=,":
            words.append(cur)
            cur = ""
    words.append(cur)
    lines, line = [], ""
    for w in words:
        if line and len(line) + len(w.rstrip()) > width:
            lines.append(line.rstrip())
            line = ""
        line += w
    lines.append(line.rstrip())
    return "<br>".join(esc_line(x) for x in lines if x)


NARROWEST_PLOT_PX = 300  # the plot's width on a 360 px screen, less the y axis


def category_axis(names: list[str], **extra: Any) -> dict[str, Any]:
    """An x axis of named categories (labels made by `label`): upright tick labels when they fit side by side at the
    narrowest width, else vertical ones, which never overlap (plotly's slanted ones do)."""
    longest = max((len(line) for n in names for line in n.split("<br>")), default=0)
    upright = len(names) * (7 * longest + 8) <= NARROWEST_PLOT_PX
    return {"tickangle": 0 if upright else -90, **extra}


def shortened(names: list[str]) -> list[str]:
    """Several names with the directories they all start with shown as "…" (a placement's long common path would
    take the whole chart or sentence): "out=/scratch/run1/a strategy=stage" -> "out=…/a strategy=stage"."""
    pre = os.path.commonprefix(names) if len(names) > 1 else ""
    first, last = pre.find("/"), pre.rfind("/")
    if first < 0 or last <= first:
        return list(names)
    return [n[:first] + "…" + n[last:] for n in names]


def labels(names: list[str], width: int = 18) -> list[str]:
    """`label` for each of several names, `shortened`."""
    return [label(n, width) for n in shortened(names)]


def elided(names: list[str]) -> str:
    """What "…" stands for, for a chart's note, when `labels` shortened `names` ("" when it did not)."""
    return ("; …: the directories every name starts with (the full names are in the table)"
            if any("…" in x and "…" not in n for x, n in zip(labels(names), names)) else "")


def money_axis(values: list[float]) -> dict[str, Any]:
    """A y axis in dollars with as many decimals as the largest value needs (never "500µ")."""
    top = max([abs(v) for v in values if v is not None and math.isfinite(v)] or [1.0])
    digits = 0 if top >= 100 else max(2, 1 - math.floor(math.log10(top)) if top > 0 else 2)
    return {"tickprefix": "$", "tickformat": f",.{digits}f", "rangemode": "tozero"}


def time_unit(values: list[float | None]) -> tuple[float, str]:
    """The unit of a time axis that makes its largest value read as a plain number: (seconds per unit, name)."""
    top = max([v for v in values if v is not None and math.isfinite(v)] or [0.0])
    if top < 1:
        return 1e-3, "ms"
    if top < 300:
        return 1.0, "s"
    return (60.0, "min") if top < 3 * 3600 else (3600.0, "h")
