"""The parts of iolens's self-contained HTML pages that more than one page uses: sortable tables and the page style.

Every string goes through the one HTML escape (`htmlsafe.esc_line`); numbers sort by their `data-v` value.
"""

from __future__ import annotations

import math
from typing import Any

from iolens.render.htmlsafe import esc_line as _h


def _num(v: Any) -> float:
    return 0.0 if v is None or (isinstance(v, float) and not math.isfinite(v)) else float(v)


def td(text: object, value: Any = None, cls: str = "") -> str:
    v = "" if value is None else f' data-v="{_num(value):.9g}"'
    c = f' class="{cls}"' if cls else ""
    return f"<td{v}{c}>{_h(text)}</td>"


def table(tid: str, headers: list[tuple[str, str]], rows: list[str]) -> str:
    th = "".join(f'<th data-type="{t}" title="click to sort">{_h(h)}</th>' for h, t in headers)
    return (f'<table class="sortable" id="{tid}"><thead><tr>{th}</tr></thead><tbody>' + "".join(rows)
            + "</tbody></table>")


MIN_CHART_PX = 300  # a chart is never shorter than this, however short the screen
SCREEN_SHARE = 85  # a chart takes at most this share (%) of the window's height


def chart_height(px: int) -> str:
    """The CSS height of a chart usually `px` tall: at most SCREEN_SHARE% of the window's height (a phone held
    sideways), at least MIN_CHART_PX; plotly's `responsive` redraws the chart when the window changes."""
    return f"clamp({MIN_CHART_PX}px, {SCREEN_SHARE}vh, {px}px)"


# A box that scrolls a wide table sideways shows a shadow at each edge that has more table beyond it: the white
# covers scroll with the table (background-attachment: local) and uncover the shadows, fixed to the box's edges,
# only where columns are hidden; a table that fits shows none.
SCROLL_CUE_CSS = """
.scrollx,.tablewrap{background:linear-gradient(to right,#fff 40%,rgba(255,255,255,0)) left/36px 100% no-repeat local,
  linear-gradient(to left,#fff 40%,rgba(255,255,255,0)) right/36px 100% no-repeat local,
  radial-gradient(farthest-side at 0 50%,rgba(0,0,0,.28),rgba(0,0,0,0)) left/14px 100% no-repeat scroll,
  radial-gradient(farthest-side at 100% 50%,rgba(0,0,0,.28),rgba(0,0,0,0)) right/14px 100% no-repeat scroll}
"""

PAGE_CSS = SCROLL_CUE_CSS + """
body{font-family:system-ui,-apple-system,Segoe UI,Roboto,sans-serif;margin:0;color:#1d2330;background:#f6f7f9}
header{background:#1d2330;color:#fff;padding:18px 28px}
header h1{margin:0;font-size:20px}
header .cmd{font-family:ui-monospace,Menlo,Consolas,monospace;font-size:13px;margin-top:6px;word-break:break-all;
  color:#cfd6e4}
header .host{font-size:12px;color:#9aa4b8;margin-top:4px}
main{padding:12px 28px 40px}
section{background:#fff;border:1px solid #e1e4ea;border-radius:8px;margin:16px 0;padding:12px 18px}
h2{font-size:17px;margin:6px 0 10px}
.cards{display:flex;flex-wrap:wrap;gap:10px}
.card{background:#fff;border:1px solid #e1e4ea;border-radius:8px;padding:8px 14px;min-width:130px}
.card .k{font-size:11px;color:#667;text-transform:uppercase;letter-spacing:.04em}
.card .v{font-size:17px;font-weight:600;margin-top:2px}
.chart{width:100%;height:""" + chart_height(360) + """}
.chart.tall{height:""" + chart_height(520) + """}
.chart.auto{height:auto}
.cards .cardnote{flex-basis:100%;margin:2px 0 0}
.grad{display:inline-block;width:80px;height:10px;vertical-align:-1px;border-radius:2px;
  background:linear-gradient(to right,#9ecae1,#d62728)}
.key{list-style:none;padding:0;margin:6px 0 0;display:flex;flex-wrap:wrap;gap:4px 14px;font-size:12.5px}
.key .sw{display:inline-block;width:11px;height:11px;margin-right:5px;vertical-align:-1px;border-radius:2px}
@media(max-width:600px){main{padding:8px 8px 30px}section{padding:8px 10px}header{padding:14px 12px}}
.grid2{display:grid;grid-template-columns:1fr 1fr;gap:12px}
@media(max-width:1100px){.grid2{grid-template-columns:1fr}}
table{border-collapse:collapse;width:100%;font-size:12.5px}
th,td{padding:4px 6px;border-bottom:1px solid #eceef2;text-align:right;vertical-align:top}
td{white-space:nowrap}
th{background:#f0f2f5;cursor:pointer;position:sticky;top:0;user-select:none;vertical-align:bottom;
   overflow-wrap:normal;hyphens:none}
th.asc::after{content:" \\25B2"}th.desc::after{content:" \\25BC"}
td.path,th:first-child{text-align:left}
td.path{font-family:ui-monospace,Menlo,Consolas,monospace;white-space:normal;overflow-wrap:anywhere;min-width:180px}
td.text{white-space:normal;text-align:left}
.tablewrap{max-height:560px;overflow:auto}
.advice{border-left:5px solid #999;padding:8px 12px;margin:10px 0;background:#fafbfc}
.advice.high{border-color:#d62728}.advice.medium{border-color:#ff9f1c}.advice.low{border-color:#7a8699}.advice.info{border-color:#1f77b4}
.atitle{font-weight:600}
.sev{font-size:11px;text-transform:uppercase;background:#e8ebf0;border-radius:4px;padding:1px 6px;margin-right:6px}
.stake{font-weight:400;color:#555;margin-left:8px}
.evidence{margin:6px 0 6px 4px;font-size:13px}
.fix{font-size:13.5px}
.note{color:#667;font-size:12.5px}
.warn{color:#a15c00}
code{background:#eef0f4;padding:1px 4px;border-radius:3px}
"""

SORTABLE_JS = r"""  // sortable tables: click a header; numbers sort by data-v
  Array.prototype.forEach.call(document.querySelectorAll("table.sortable"), function(table){
    Array.prototype.forEach.call(table.tHead.rows[0].cells, function(th, col){
      th.addEventListener("click", function(){
        var asc = !th.classList.contains("asc");
        Array.prototype.forEach.call(table.tHead.rows[0].cells, function(h){ h.classList.remove("asc","desc"); });
        th.classList.add(asc ? "asc" : "desc");
        var num = th.getAttribute("data-type") === "n", body = table.tBodies[0];
        var rows = Array.prototype.slice.call(body.rows);
        rows.sort(function(a, b){
          var x = a.cells[col], z = b.cells[col], r;
          if (num) r = parseFloat(x.getAttribute("data-v") || "0") - parseFloat(z.getAttribute("data-v") || "0");
          else r = x.textContent.localeCompare(z.textContent);
          return asc ? r : -r;
        });
        rows.forEach(function(row){ body.appendChild(row); });
      });
    });
  });
"""
