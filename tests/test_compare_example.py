"""The end-to-end compare example (examples/compare/run.sh): real minimap2 and samtools on synthetic data,
with a verdict for every pair and box plots that a real browser renders, every run's point shown."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest

from conftest import tool
from helpers.browser import load_page

EXAMPLE = Path(__file__).resolve().parent.parent / "examples" / "compare"
RUNS = 5  # what is checked (every run counted and drawn, a verdict of any kind worded) holds at any count


@pytest.fixture(scope="module")
def example(tmp_path_factory):
    import subprocess

    tool("minimap2")
    tool("samtools")
    out = tmp_path_factory.mktemp("example") / "out"
    env = dict(os.environ, IOLENS_CMD=f"{sys.executable} -m iolens", IOLENS_DB=str(out.parent / "results.sqlite"))
    res = subprocess.run([str(EXAMPLE / "run.sh"), str(out), str(RUNS)], capture_output=True, text=True, env=env,
                         timeout=280)
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-3000:]
    return out, res


@pytest.mark.slow
@pytest.mark.timeout(300)
def test_output_placement_and_sort_tmp_reach_verdicts(example):
    out, res = example
    place = json.loads((out / "output-placement.json").read_text())
    assert [r["name"] for r in place["results"]] == ["/dev/null", "same-dir", "tmpfs"]
    sort = json.loads((out / "sort-tmp.json").read_text())
    assert [r["name"] for r in sort["results"]] == ["same-dir", "tmpfs"]
    for rep in (place, sort):
        for r in rep["results"]:
            assert r["ok_runs"] == RUNS and r["failed_runs"] == 0 and r["warmup_runs"] == 1
            assert r["median"] > 0.05
        for c in rep["comparisons"]:
            assert c["p_value"] is not None and c["n"] == RUNS
            kind = c["decision"]["kind"]
            assert c["decision"]["n"] == RUNS and f"{RUNS} runs each" in c["verdict"]
            if kind in ("faster", "slower"):
                assert c["verdict"].startswith(f"{c['name']} is {kind} than {c['baseline']} by ")
            elif kind == "equivalent":
                assert "no difference larger than 5%" in c["verdict"]
            else:
                assert "undecided after" in c["verdict"] and "use --runs auto" in c["verdict"]
            assert c["verdict"] in " ".join(res.stdout.split())  # wrapped at the terminal width
    # what reached each placement: minimap2's 16 MB of SAM, only to the same-dir disk
    io = {r["name"]: r["io"] for r in place["results"]}
    assert io["same-dir"]["wchar"] > 10 << 20
    assert io["/dev/null"]["wchar"] > 10 << 20
    # the sort spilled temp BAMs into its -T location and read them back
    for r in sort["results"]:
        assert r["io"]["rchar"] > r["io"]["wchar"] > 1 << 20
    # no temp directory is left behind in the synthetic data directory or on tmpfs
    assert [p.name for p in (out / "synth").iterdir() if p.name.startswith(("iolens-compare-", "sort-input."))] == []


@pytest.mark.slow
@pytest.mark.timeout(300)
def test_box_plots_render_in_a_browser_with_every_run(example, tmp_path):
    out, _res = example
    for name, boxes in (("output-placement", 3), ("sort-tmp", 2)):
        shot = tmp_path / f"{name}.png"
        with load_page(out / f"{name}.html", screenshot=shot,
                       wait_for="document.querySelectorAll('.js-plotly-plot .main-svg').length > 0") as page:
            assert page.console_errors == [] and page.dialogs == [] and page.blocked == []
            assert page.evaluate("document.querySelectorAll('.js-plotly-plot').length") == 1
            # each configuration's box is a bar from its first to its third quartile (the page's plotting bundle
            # has no box traces), its median a marker with whiskers
            assert page.evaluate("document.querySelectorAll('g.trace.bars').length") == boxes
            # every run is a point on the plot, beside the medians
            assert page.evaluate("document.querySelectorAll('g.trace.scatter path.point').length") == boxes * (RUNS + 1)
            verdicts = page.evaluate("[...document.querySelectorAll('p.verdict')].map(p => p.textContent)")
            assert len(verdicts) == boxes - 1
        assert shot.stat().st_size > 30_000
