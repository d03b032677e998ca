"""Every HTML page iolens writes, in headless Chromium at 1,280 × 800: each table's header cells lie inside
the viewport (nothing important behind a horizontal scroll) and the console stays silent (no errors, no
warnings such as plotly's "Invalid color specifier").

The pages come from real inputs: the report of the golden capture in tests/data/report, and the HTML of
a real `iolens compare` run.  `iolens bench` has no HTML page.  Screenshots are kept in the test's
directory and copied to $IOLENS_ARTIFACTS when that is set.
"""

from __future__ import annotations

import os
import shutil

import pytest

from conftest import datapath, iolens
from helpers.browser import load_page

WIDTH, HEIGHT = 1280, 800


def look(html, shot) -> dict:
    with load_page(html, screenshot=shot, width=WIDTH, height=HEIGHT) as page:
        assert page.console_errors == []
        assert page.console_warnings == []
        assert page.blocked == []
        outside = page.headers_outside(WIDTH)
        assert outside == [], f"table headers past {WIDTH} px: {outside}"
        assert page.evaluate("() => document.querySelectorAll('table th').length") > 0
        info = page.evaluate("""() => ({scroll: document.documentElement.scrollWidth,
            charts: Array.from(document.querySelectorAll('.js-plotly-plot')).map(g => ({
                id: g.id, w: g.getBoundingClientRect().right,
                ytitles: Array.from(g.querySelectorAll('.g-ytitle, .g-y2title')).map(t => t.textContent),
                yticks: Array.from(g.querySelectorAll('.yaxislayer-above .ytick text')).map(t => t.textContent)}))})""")
    assert info["scroll"] <= WIDTH  # the page itself does not scroll sideways
    for chart in info["charts"]:
        assert chart["w"] <= WIDTH, chart
    out = os.environ.get("IOLENS_ARTIFACTS")
    if out:
        os.makedirs(out, exist_ok=True)
        shutil.copy(shot, os.path.join(out, os.path.basename(shot)))
    return info


def test_report_page_fits_1280(tmp_path):
    html = tmp_path / "report.html"
    res = iolens("report", datapath("report", "small.iolens"), "-q", "--html", html)
    assert res.returncode == 0, res.stderr
    info = look(html, tmp_path / "report-1280.png")
    mounts = next(c for c in info["charts"] if c["id"] == "chart-mounts")
    # the storage chart: titled axes with units, ticks that are all different and never negative
    assert any("GiB" in t for t in mounts["ytitles"]) and any("I/O time (s)" in t for t in mounts["ytitles"])
    assert len(mounts["yticks"]) == len(set(mounts["yticks"])) > 2
    assert not any(t.startswith(("-", "−")) for t in mounts["yticks"])


def test_compare_page_fits_1280(tmp_path):
    (tmp_path / "in.bin").write_bytes(os.urandom(1 << 20))
    for sub in ("placement_one", "placement_two"):
        (tmp_path / sub).mkdir()
    html = tmp_path / "compare.html"
    res = iolens("compare", "cat {in} > {out:copy.bin}", "--input", f"in={tmp_path / 'in.bin'}",
                 "--place", f"out={tmp_path / 'placement_one'},{tmp_path / 'placement_two'}",
                 "--strategy", "direct,stage", "--runs", "3", "--warmup", "0", "--no-store", "--seed", "5",
                 "--html", html, cwd=tmp_path)
    assert res.returncode == 0, res.stderr
    look(html, tmp_path / "compare-1280.png")
    with load_page(html, width=WIDTH, height=HEIGHT) as page:
        heads = page.evaluate("() => Array.from(document.querySelectorAll('table.stats th')).map(t => t.textContent)")
    assert heads[0] == "configuration" and heads[1] == "vs baseline" and heads[2] == "p"
    assert heads[3].startswith("95% CI")
    assert {"disk write", "peak RSS"} <= set(heads)


@pytest.mark.parametrize("page", ["bench"])
def test_bench_has_no_html_page(page):
    res = iolens(page, "--help")
    assert "--html" not in res.stdout  # nothing to check in a browser; add it here when it gets one
