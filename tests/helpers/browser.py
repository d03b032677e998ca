"""A headless Chromium that loads a local HTML file, for tests of pages iolens writes.

    from helpers.browser import load_page

    with load_page(html_path, screenshot=tmp_path / "page.png") as page:
        assert page.console_errors == []          # console errors and uncaught page errors
        assert page.console_warnings == []        # console.warn() calls (plotly's "Invalid color", ...)
        assert page.dialogs == []                 # alert()/confirm()/prompt() calls, which must never happen
        n = page.evaluate("document.querySelectorAll('.js-plotly-plot').length")
        assert page.layout_problems() == []       # nothing clipped or overlapping (LAYOUT_JS)

`load_page` uses Debian's Chromium (/usr/bin/chromium, or $IOLENS_CHROMIUM) through Playwright, with no
network: any request that is not for the file itself is blocked and listed in `page.blocked`, so a
page that needs a CDN fails visibly.  It skips the test when Playwright or Chromium is missing.
`wait_for` is a JS expression that must become true before the screenshot (default: the page's
`data-rendered` marker on <body>, or the load event if the page has none).
"""

from __future__ import annotations

import contextlib
import os
import shutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterator

import pytest

CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--no-first-run"]


def chromium_path() -> str:
    for cand in (os.environ.get("IOLENS_CHROMIUM"), "/usr/bin/chromium", shutil.which("chromium"),
                 shutil.which("chromium-browser")):
        if cand and os.path.exists(cand):
            return cand
    pytest.skip("Chromium is not installed (Debian package chromium); dev/setup installs it as root")


# What "nothing clipped or overlapping" means on a page, checked in the page itself:
# - the page never scrolls sideways, and every element lies inside the window unless it is inside a box that
#   scrolls (a wide table in its own scroll box);
# - a box that hides its overflow shows all its text;
# - in each chart: every title, tick label, legend, colour bar, point label and the toolbar lie inside the chart,
#   and none of these pairs overlap: toolbar / legend, title, axis titles, colour bar; an axis title / its tick
#   labels; the legend / ticks and axis titles; tick labels of one axis among themselves; point labels among
#   themselves; and no point label lies on a line drawn between points (a Pareto front). The toolbar shows on
#   hover only: its place is checked all the same.
LAYOUT_JS = r"""() => {
  const W = document.documentElement.clientWidth, out = [];
  const desc = el => (el.id ? "#" + el.id : el.tagName.toLowerCase()
                      + (typeof el.className === "string" && el.className ? "." + el.className.split(" ")[0] : ""))
                     + ' "' + (el.textContent || "").trim().slice(0, 40) + '"';
  if (document.documentElement.scrollWidth > W + 1)
    out.push("the page scrolls sideways: " + document.documentElement.scrollWidth + " px in " + W);
  const scrolls = el => { for (let p = el.parentElement; p; p = p.parentElement) {
    if (/(auto|scroll)/.test(getComputedStyle(p).overflowX)) return true; } return false; };
  for (const el of document.body.querySelectorAll("*")) {
    if (el.closest("svg") || el.closest(".modebar-container")) continue;
    const r = el.getBoundingClientRect();
    if (!r.width || !r.height || getComputedStyle(el).visibility === "hidden") continue;
    if ((r.right > W + 1 || r.left < -1) && !scrolls(el))
      out.push("outside the window (" + Math.round(r.left) + ".." + Math.round(r.right) + "): " + desc(el));
    const cs = getComputedStyle(el);
    if (/(hidden|clip)/.test(cs.overflowX) && el.textContent.trim() && el.scrollWidth > el.clientWidth + 1
        && el.children.length === 0)
      out.push("text cut by its box: " + desc(el));
  }
  // an SVG text's own box, turned as the text is (tick labels are often drawn at an angle): its four corners on
  // the screen; two such boxes overlap unless an edge of one separates them (the separating axis theorem)
  const corners = e => {
    if (!e.getBBox || !e.getScreenCTM) { const r = e.getBoundingClientRect();
      return [[r.left, r.top], [r.right, r.top], [r.right, r.bottom], [r.left, r.bottom]]; }
    const b = e.getBBox(), m = e.getScreenCTM();
    return [[b.x, b.y], [b.x + b.width, b.y], [b.x + b.width, b.y + b.height], [b.x, b.y + b.height]]
      .map(([x, y]) => [m.a * x + m.c * y + m.e, m.b * x + m.d * y + m.f]);
  };
  const apart = (p, q) => {
    for (const poly of [p, q]) for (let i = 0; i < 4; i++) {
      const [x1, y1] = poly[i], [x2, y2] = poly[(i + 1) % 4], nx = y1 - y2, ny = x2 - x1;
      const len = Math.hypot(nx, ny) || 1;
      const pr = pts => pts.map(([x, y]) => (x * nx + y * ny) / len);
      const a = pr(p), b = pr(q);
      if (Math.min(Math.max(...a), Math.max(...b)) - Math.max(Math.min(...a), Math.min(...b)) <= 1) return true;
    }
    return false;
  };
  const hit = (a, b) => !apart(a.c, b.c);
  for (const gd of document.querySelectorAll(".js-plotly-plot")) {
    const g = gd.getBoundingClientRect();
    const boxes = sel => Array.from(gd.querySelectorAll(sel))
      .filter(e => (e.textContent || "").trim() || !/text$/i.test(e.tagName))
      .map(e => ({e: e, r: e.getBoundingClientRect(), c: corners(e)})).filter(b => b.r.width > 0 && b.r.height > 0);
    const parts = {title: boxes(".g-gtitle text"), legend: boxes(".legend .bg"), modebar: boxes(".modebar"),
                   xtitle: boxes(".g-xtitle text"), ytitle: boxes(".g-ytitle text"), y2title: boxes(".g-y2title text"),
                   xticks: boxes(".xtick text"), yticks: boxes(".ytick text"), y2ticks: boxes(".y2tick text"),
                   colorbar: boxes(".colorbar .cbbg"), labels: boxes(".textpoint text")};
    for (const k in parts) for (const b of parts[k])
      if (b.r.left < g.left - 1 || b.r.right > g.right + 1 || b.r.top < g.top - 1 || b.r.bottom > g.bottom + 1)
        out.push(gd.id + ": " + k + ' "' + (b.e.textContent || "").trim() + '" cut by the chart\'s edge');
    const pairs = [["modebar", "legend"], ["modebar", "title"], ["modebar", "ytitle"], ["modebar", "y2title"],
                   ["modebar", "colorbar"], ["modebar", "yticks"], ["modebar", "y2ticks"],
                   ["xtitle", "xticks"], ["ytitle", "yticks"], ["y2title", "y2ticks"], ["legend", "xticks"],
                   ["legend", "xtitle"], ["legend", "yticks"], ["legend", "title"], ["colorbar", "xtitle"],
                   ["colorbar", "xticks"], ["colorbar", "legend"], ["colorbar", "yticks"], ["labels", "labels"],
                   ["xticks", "xticks"], ["yticks", "yticks"], ["y2ticks", "y2ticks"]];
    // the lines between points, sampled every 2 px on the screen: a point label with a sample inside it (by more
    // than 1 px) sits on a line
    const samples = Array.from(gd.querySelectorAll(".scatterlayer .js-line")).flatMap(path => {
      const m = path.getScreenCTM(), n = path.getTotalLength(), out = [];
      for (let d = 0; d <= n; d += 2) { const q = path.getPointAtLength(d);
        out.push([m.a * q.x + m.c * q.y + m.e, m.b * q.x + m.d * q.y + m.f]); }
      return out; });
    for (const b of parts.labels)
      if (samples.some(([x, y]) => x > b.r.left + 1 && x < b.r.right - 1 && y > b.r.top + 1 && y < b.r.bottom - 1))
        out.push(gd.id + ': labels "' + (b.e.textContent || "").trim() + '" on a line');
    for (const [p, q] of pairs) parts[p].forEach((a, i) => parts[q].forEach((b, j) => {
      if ((p !== q || i < j) && hit(a, b))
        out.push(gd.id + ": " + p + ' "' + (a.e.textContent || "").trim().slice(0, 30) + '" overlaps ' + q + ' "'
                 + (b.e.textContent || "").trim().slice(0, 30) + '"');
    }));
  }
  return out;
}"""


@dataclass
class Page:
    """What a loaded page did, plus the live Playwright page for queries (evaluate, locator...)."""

    raw: Any
    console_errors: list[str] = field(default_factory=list)
    console_warnings: list[str] = field(default_factory=list)
    dialogs: list[str] = field(default_factory=list)
    blocked: list[str] = field(default_factory=list)

    def evaluate(self, expression: str, arg: Any = None) -> Any:
        return self.raw.evaluate(expression, arg)

    def layout_problems(self) -> list[str]:
        """Every element clipped or overlapping another (LAYOUT_JS); [] when the page is laid out cleanly."""
        return self.raw.evaluate(LAYOUT_JS)

    def headers_outside(self, right: float) -> list[str]:
        """Every table header cell whose right edge is past `right` (CSS pixels, page not scrolled)."""
        return self.raw.evaluate("""right => Array.from(document.querySelectorAll('table th'))
            .filter(th => th.getBoundingClientRect().right > right + 0.5)
            .map(th => (th.closest('table').id
                        || th.closest('section, body').querySelector('h2, h1')?.textContent || '?')
                 + ': ' + th.textContent.trim() + ' @ ' + Math.round(th.getBoundingClientRect().right))""", right)


@contextlib.contextmanager
def load_page(html: str | Path, *, screenshot: str | Path | None = None, width: int = 1400, height: int = 900,
              wait_for: str | None = None, timeout_ms: int = 60_000) -> Iterator[Page]:
    sync_api = pytest.importorskip("playwright.sync_api", reason="playwright is not installed (pip install playwright)")
    exe = chromium_path()
    url = Path(html).resolve().as_uri()
    with sync_api.sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=exe, headless=True, args=CHROMIUM_ARGS)
        try:
            ctx = browser.new_context(viewport={"width": width, "height": height})
            raw = ctx.new_page()
            page = Page(raw)

            def on_console(m):
                if m.type == "error":
                    page.console_errors.append(m.text)
                elif m.type in ("warning", "trace"):  # plotly.js warns through console.trace
                    page.console_warnings.append(m.text)

            raw.on("console", on_console)
            raw.on("pageerror", lambda e: page.console_errors.append(f"uncaught: {e}"))

            def on_dialog(d):
                page.dialogs.append(f"{d.type}: {d.message}")
                d.dismiss()

            raw.on("dialog", on_dialog)

            def route(r):
                if r.request.url == url or r.request.url.startswith("data:"):
                    r.continue_()
                else:
                    page.blocked.append(r.request.url)
                    r.abort()

            raw.route("**/*", route)
            raw.goto(url, wait_until="load", timeout=timeout_ms)
            cond = wait_for or ("document.body.getAttribute('data-rendered') === '1' "
                                "|| !document.querySelector('script[id]')")
            raw.wait_for_function(cond, timeout=timeout_ms)
            if screenshot is not None:
                # the chart toolbar shows on hover only: shown in the screenshot, so its place can be seen
                raw.add_style_tag(content=".modebar{opacity:1!important}")
                raw.screenshot(path=str(screenshot), full_page=True)
            yield page
        finally:
            browser.close()
