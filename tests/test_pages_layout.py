"""Every kind of HTML page iolens writes, at a phone's width (390 px) and a laptop's (1,280 px), in headless
Chromium: nothing clipped or overlapping (helpers/browser.py's LAYOUT_JS: the page never scrolls sideways, every
element inside the window or inside a box that scrolls, and in each chart no title, tick label, legend, point
label or toolbar cut or on top of another), no console message, nothing fetched; and every page under 1.5 MB.

At 390 px a wide table either fits or scrolls in a box that shows a shadow where columns are hidden;
compress's recommendations (sentences) become one card per row, the table it is at 1,280 px; compare's verdicts
are short lines.  A chart's height follows the window's.

The pages come from real runs: the golden capture's report, a capture directory of three tasks, a compare run,
its cost, and compress on a small VCF. Screenshots (the chart toolbar shown) are kept in the test's directory
and copied to $IOLENS_ARTIFACTS when that is set.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from conftest import datapath, iolens
from helpers.browser import load_page

pytestmark = pytest.mark.timeout(600)

KINDS = ("report", "pipeline", "compare", "cost", "compress")
WIDTHS = (390, 1280)
MAX_BYTES = 1_500_000


def _ok(res: subprocess.CompletedProcess) -> None:
    assert res.returncode == 0, res.stderr


@pytest.fixture(scope="module")
def pages(tmp_path_factory, page_runs) -> dict:
    """The golden capture's report, and the pages of the shared runs (conftest.py's page_runs)."""
    report = tmp_path_factory.mktemp("pages") / "report.html"
    _ok(iolens("report", datapath("report", "small.iolens"), "-q", "--html", report))
    return {"report": report, **{k: page_runs[f"{k}.html"] for k in KINDS if k != "report"}}


@pytest.mark.parametrize("kind", KINDS)
def test_page_weight(pages, kind):
    size = pages[kind].stat().st_size
    assert size < MAX_BYTES, f"{kind}.html is {size:,} bytes"


def _keep(shot) -> None:
    art = os.environ.get("IOLENS_ARTIFACTS")
    if art:
        os.makedirs(art, exist_ok=True)
        shutil.copy(shot, os.path.join(art, os.path.basename(shot)))


CHART_FACTS = """() => Array.from(document.querySelectorAll('.js-plotly-plot')).map(g => ({
    id: g.id, w: g.getBoundingClientRect().width,
    xticks: Array.from(g.querySelectorAll('.xtick text')).map(t => t.textContent),
    yticks: Array.from(g.querySelectorAll('.ytick text')).map(t => t.textContent),
    labels: Array.from(g.querySelectorAll('.textpoint text')).map(t => t.textContent)}))"""

# every box that scrolls a table sideways: whether it has more than it shows, and its shadows (the cue)
SCROLLERS = """() => Array.from(document.querySelectorAll('.scrollx, .tablewrap')).map(b => ({
    what: (b.closest('section') || b).querySelector('h2')?.textContent || b.previousElementSibling?.textContent,
    hidden: b.scrollWidth > b.clientWidth + 1, image: getComputedStyle(b).backgroundImage,
    attach: getComputedStyle(b).backgroundAttachment}))"""

# compress's recommendations: each cell's box and how the table is shown
CARDS = """() => { const t = document.querySelector('table.cards'); return {
    display: getComputedStyle(t.rows[1]).display, head: t.tHead.getBoundingClientRect().height,
    box: t.parentElement.scrollWidth - t.parentElement.clientWidth,
    cells: Array.from(t.tBodies[0].querySelectorAll('td')).map(td => {
        const r = td.getBoundingClientRect();
        return {label: td.dataset.label, left: r.left, right: r.right, text: td.textContent,
                cut: td.scrollWidth > td.clientWidth + 1}; })}; }"""


@pytest.mark.parametrize("width", WIDTHS)
@pytest.mark.parametrize("kind", KINDS)
def test_page_is_laid_out_cleanly(pages, kind, width, tmp_path):
    shot = tmp_path / f"{kind}-{width}.png"
    with load_page(pages[kind], screenshot=shot, width=width, height=900) as page:
        assert page.console_errors == [] and page.console_warnings == [] and page.blocked == []
        problems = page.layout_problems()
        assert problems == [], f"{kind} at {width} px:\n" + "\n".join(problems)
        charts = page.evaluate(CHART_FACTS)
        bars = page.evaluate("() => Array.from(document.querySelectorAll('.gantt .bar')).map(b => b.title)")
        scrollers = page.evaluate(SCROLLERS)
        cards = page.evaluate(CARDS) if kind == "compress" else None
        rows = page.evaluate("() => Array.from(document.querySelectorAll('.tablewrap table:not(.cards) tr, "
                             ".scrollx table:not(.cards) tr')).map(r => "
                             "[r.textContent.slice(0, 40), Math.round(r.getBoundingClientRect().height)])")
        verdicts = page.evaluate("() => Array.from(document.querySelectorAll('p.verdict')).map(p => ({text: "
                                 "p.textContent, right: p.getBoundingClientRect().right, cut: p.scrollWidth > "
                                 "p.clientWidth + 1}))")
    _keep(shot)
    for b in scrollers:  # a table with columns out of sight says so with a shadow at the edge
        if b["hidden"]:
            assert "radial-gradient" in b["image"] and "local" in b["attach"], b
    if kind == "compress":  # the recommendations: cards on a phone, every cell whole in the window; a table wide
        assert cards["cells"] and all(c["text"] for c in cards["cells"])
        if width == 390:
            assert cards["display"] == "block" and cards["head"] == 0 and cards["box"] <= 1, cards
            assert all(0 <= c["left"] and c["right"] <= width and not c["cut"] for c in cards["cells"]), cards
        else:
            assert cards["display"] == "table-row" and cards["head"] > 0, cards
    if kind == "compare":  # one short plain line per comparison, whole in the window, the baseline named above
        assert verdicts and all(v["right"] <= width and not v["cut"] for v in verdicts), verdicts
        assert all(len(v["text"]) < 110 and " vs " not in v["text"] for v in verdicts), verdicts
    # a table too wide scrolls sideways: no row squeezed into a word a line (the pipeline's rules were a screen
    # tall each at 390 px)
    assert rows and [r for r in rows if r[1] > 150] == [], rows
    for c in charts:  # each chart follows the window
        assert 0 < c["w"] <= width, c
    if kind == "report":
        hist = next(c for c in charts if c["id"] == "chart-hist")
        assert "100 MiB-1 GiB" in hist["xticks"]
    if kind == "cost":  # the verdict names the options as the charts do, whole in the window
        assert len(verdicts) == 1 and "=…/placement_" in verdicts[0]["text"] and "pages" not in verdicts[0]["text"]
        assert verdicts[0]["right"] <= width and not verdicts[0]["cut"], verdicts
    if kind == "cost":  # the shipped prices named as such, never by their installed path
        assert "the price list shipped with iolens" in Path(pages[kind]).read_text(encoding="utf-8")
        assert "prices.json" not in Path(pages[kind]).read_text(encoding="utf-8")
    if kind == "cost":  # dollars as people write them, never "500µ"
        ticks = [t for c in charts for t in c["yticks"]]
        assert ticks and all(t.startswith("$") and "µ" not in t for t in ticks), ticks
    if kind == "compress":  # every point named codec:level
        labels = charts[0]["labels"]
        assert {"zstd:1", "zstd:19", "bgzip:6", "lz4:1"} <= set(labels), labels
    if kind == "pipeline":  # tasks on a time axis, named by their rule, with their exit status
        assert sorted(b.split(":")[0] for b in bars) == ["rule align", "rule index", "rule sort"]
        assert all("exit status 0" in b for b in bars), bars
        assert ">0 µs<" not in Path(pages[kind]).read_text(encoding="utf-8")  # no time in a class reads "-"


# each chart's height and the height plotly drew it at
HEIGHTS = """() => Array.from(document.querySelectorAll('.js-plotly-plot')).map(g => [
    Math.round(g.getBoundingClientRect().height),
    Math.round(g.querySelector('.main-svg').getBoundingClientRect().height)])"""


@pytest.mark.parametrize("kind", ("report", "compare", "cost", "compress"))
def test_charts_follow_the_window(pages, kind):
    """From a laptop's window to a phone held sideways (390 x 420 px): every chart taller than 85% of the window
    becomes that tall (never under 300 px) and is drawn again at its new size, still laid out cleanly; back at
    the laptop's size it is as tall as before."""
    low = 420
    with load_page(pages[kind], width=1280, height=900) as page:
        tall = page.evaluate(HEIGHTS)
        page.raw.set_viewport_size({"width": 390, "height": low})
        before = json.dumps(tall, separators=(",", ":"))
        drawn = f"(now => now.every(h => h[0] === h[1]) && JSON.stringify(now) %s '{before}')"
        page.raw.wait_for_function(f"() => {drawn % '!=='}(({HEIGHTS})())", timeout=30_000)
        short = page.evaluate(HEIGHTS)
        problems = page.layout_problems()
        page.raw.set_viewport_size({"width": 1280, "height": 900})
        page.raw.wait_for_function(f"() => {drawn % '==='}(({HEIGHTS})())", timeout=30_000)
    assert tall and all(h == svg for h, svg in tall), tall
    assert any(h > 0.85 * low for h, _svg in tall), tall  # the window made some chart shorter
    for (before, _), (after, svg) in zip(tall, short):
        assert after == svg, short  # drawn again at the new height
        assert after <= max(0.85 * low + 1, 300) and (after >= 300 or after == before), (tall, short)
    assert problems == [], "\n".join(problems)
