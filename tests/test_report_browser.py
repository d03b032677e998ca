"""The HTML report of a real capture of the synthetic genomics step, loaded in headless Chromium.

The step reads a FASTQ file named `<script>alert(1)</script>.fq`: the page must show that name as text
and never run it.  The screenshot is kept in the test's output directory (and copied to
$IOLENS_ARTIFACTS when that is set) so a person can look at it.
"""

from __future__ import annotations

import json
import os
import shutil

import pytest

from conftest import iolens, tool
from helpers.browser import load_page

EVIL = "<script>alert(1)</script>.fq"
CHARTS = ["chart-breakdown", "chart-hist", "chart-mounts", "chart-iops", "chart-throughput", "chart-phases"]


@pytest.fixture(scope="module")
def genomics_capture(tmp_path_factory):
    tool("minimap2")
    tool("samtools")
    from iolens.synth import synth

    d = tmp_path_factory.mktemp("browser")
    synth(d, ref_bases=200_000, pairs=5_000, seed=5)
    # a "/" cannot be in a file name, so the name's "</" makes a directory: the path ends with the whole text
    step = (f"mkdir -p '{EVIL.split('/')[0]}' && zcat reads_1.fq.gz > '{EVIL}' && "
            f"minimap2 -a -t 2 ref.fa '{EVIL}' reads_2.fq.gz 2>/dev/null > aln.sam && "
            "samtools sort -m 1M -o aln.bam aln.sam 2>/dev/null && samtools index aln.bam")
    cap = d / "step.iolens"
    res = iolens("profile", "-q", "--trace", "-o", cap, "--", "sh", "-c", step, cwd=d)
    assert res.returncode == 0, res.stderr
    return d, cap


def test_html_report_renders_in_chromium(genomics_capture, tmp_path):
    d, cap = genomics_capture
    html = tmp_path / "report.html"
    res = iolens("report", cap, "-q", "--html", html)
    assert res.returncode == 0, res.stderr
    text = html.read_text()
    assert EVIL not in text  # only ever escaped in the file itself
    assert "&lt;script&gt;alert(1)&lt;/script&gt;.fq" in text

    shot = tmp_path / "report.png"
    with load_page(html, screenshot=shot) as page:
        assert page.console_errors == []
        assert page.console_warnings == []  # plotly warned 28 times about numeric bar colours
        assert page.dialogs == []  # alert(1) never ran
        assert page.blocked == []  # nothing fetched from the network: the page is self-contained
        for cid in CHARTS:
            info = page.evaluate("""id => { const e = document.getElementById(id); const r = e.getBoundingClientRect();
                return {plot: e.classList.contains('js-plotly-plot'), traces: (e.data || []).length,
                        svg: e.querySelectorAll('.main-svg').length,
                        drawn: e.querySelectorAll('.cartesianlayer g.trace path').length,
                        w: r.width, h: r.height}; }""", cid)
            assert info["plot"] and info["svg"] > 0, (cid, info)
            assert info["traces"] > 0 and info["drawn"] > 0, (cid, info)
            assert info["w"] > 200 and info["h"] > 200, (cid, info)
        # the charts carry the run's data, not empty axes
        total = page.evaluate("() => { const g = document.getElementById('chart-breakdown');"
                              " return g.data.reduce((s, t) => s + (t.x[0] || 0), 0); }")
        assert total > 0
        phases = page.evaluate("() => document.getElementById('chart-phases').data[0].x.length")
        assert phases >= 4  # sh, zcat, minimap2, samtools sort, samtools index (and their sh images)
        # the evil name is there as text, in the files table
        shown = page.evaluate("name => Array.from(document.querySelectorAll('#files td.path'))"
                              ".some(td => td.textContent.endsWith('/' + name))", EVIL)
        assert shown
        assert page.evaluate("() => Array.from(document.scripts).filter(s => s.type !== 'application/json')"
                             ".some(s => s.textContent.includes('alert(1)'))") is False
        # tables sort when a header is clicked
        page.raw.click("#files thead th:nth-child(5)")
        page.raw.click("#files thead th:nth-child(5)")
        vals = page.evaluate("() => Array.from(document.querySelectorAll('#files tbody tr td:nth-child(5)'))"
                             ".map(td => parseFloat(td.getAttribute('data-v')))")
        assert vals == sorted(vals, reverse=True) and vals[0] > 0
        # every advice item of the report is on the page (how many fire depends on this machine's timing)
        from iolens.analysis.report import build_report
        from iolens.capture.reader import read_capture

        expected = len(build_report(read_capture(cap)).advice)
        assert page.evaluate("() => document.querySelectorAll('#advice .advice').length") == expected
    assert shot.stat().st_size > 20_000
    out = os.environ.get("IOLENS_ARTIFACTS")
    if out:
        os.makedirs(out, exist_ok=True)
        shutil.copy(shot, os.path.join(out, "report-browser.png"))


def test_html_report_of_a_real_run_fits_1280(genomics_capture, tmp_path):
    _d, cap = genomics_capture
    html = tmp_path / "report.html"
    assert iolens("report", cap, "-q", "--html", html).returncode == 0
    shot = tmp_path / "report-1280.png"
    with load_page(html, screenshot=shot, width=1280, height=800) as page:
        assert page.console_errors == [] and page.console_warnings == []
        assert page.headers_outside(1280) == []
    out = os.environ.get("IOLENS_ARTIFACTS")
    if out:
        os.makedirs(out, exist_ok=True)
        shutil.copy(shot, os.path.join(out, "report-browser-1280.png"))


def test_chrome_trace_of_the_traced_step(genomics_capture, tmp_path):
    _d, cap = genomics_capture
    out = tmp_path / "trace.json"
    res = iolens("report", cap, "-q", "--chrome-trace", out)
    assert res.returncode == 0, res.stderr
    doc = json.loads(out.read_text())
    ev = doc["traceEvents"]
    names = {e["args"]["name"] for e in ev if e["ph"] == "M"}
    assert {"minimap2", "samtools"} <= names
    calls = [e for e in ev if e["ph"] == "X" and e["cat"] != "process"]
    assert calls and all(e["dur"] >= 0 and e["ts"] >= 0 for e in calls)
    assert any(e["args"]["file"] and e["args"]["file"].endswith(EVIL) and e["name"] in ("READ", "FREAD", "GETDELIM",
                                                                                        "STDIO_FILL")
               for e in calls)
