"""Golden files for the report on a small fixed capture, and the report command's outputs and errors.

The capture is tests/data/report/small.iolens, written by make_fixture.py beside it.  After an
intended change, rewrite the golden files with IOLENS_UPDATE_GOLDEN=1 and review the diff.
"""

from __future__ import annotations

import csv
import io
import json
import os
import re
import sys
from pathlib import Path

import pytest
from rich.console import Console

from conftest import datapath, iolens
from iolens.analysis.report import build_report
from iolens.capture.reader import read_capture
from iolens.render.report_json import SCHEMA_VERSION, TAG, render_json
from iolens.render.report_text import render_report_text

UPDATE = os.environ.get("IOLENS_UPDATE_GOLDEN") == "1"
CAPTURE = datapath("report", "small.iolens")


def golden(name: str, actual: str) -> None:
    path = datapath("report", name)
    if UPDATE:
        path.write_text(actual)
    assert path.exists(), f"{path} is missing; create it with IOLENS_UPDATE_GOLDEN=1"
    expected = path.read_text()
    assert actual == expected, f"{name} differs from the golden file; if intended, rerun with IOLENS_UPDATE_GOLDEN=1"


@pytest.fixture(scope="module")
def rep():
    return build_report(read_capture(CAPTURE))


def text_of(r) -> str:
    buf = io.StringIO()
    render_report_text(r, Console(file=buf, width=120, force_terminal=False, color_system=None, highlight=False))
    return buf.getvalue()


def test_fixture_is_what_its_script_writes(tmp_path):
    sys.path.insert(0, str(CAPTURE.parent))
    try:
        import make_fixture
    finally:
        sys.path.pop(0)
    from helpers.capture import write_capture

    out = write_capture(tmp_path / "again.iolens", make_fixture.processes(),
                        {"command": ["sh", "-c", "align.sh"], "cwd": "/data/run"})
    assert out.read_bytes() == CAPTURE.read_bytes()


def test_json_golden(rep):
    golden("small.json", render_json(rep).decode())


def test_text_golden(rep):
    golden("small.txt", text_of(rep))


def test_golden_text_names_the_findings(rep):
    text = text_of(rep)
    assert "samtools sort -T /scratch/tmp/sort" in text
    assert "uncompressed SAM written and read back" in text
    assert "/data/run/weird name [x].fq" in text


def test_json_carries_tag_version_and_every_key(rep):
    d = json.loads(render_json(rep))
    assert d["tag"] == TAG and d["schema_version"] == SCHEMA_VERSION
    doc = (Path(__file__).resolve().parents[1] / "docs" / "report-json.md").read_text()
    documented = set(re.findall(r"`([a-z_0-9]+)`", doc))

    def keys(obj, where):
        missing = []
        if isinstance(obj, dict):
            for k, v in obj.items():
                dynamic = where in ("breakdown", "ops", "thresholds", "iops", "per_mount_iops", "per_mount_bps", "data")
                if not dynamic and k not in documented:
                    missing.append(f"{where}.{k}")
                missing += keys(v, k if not dynamic else where)
        elif isinstance(obj, list) and obj and isinstance(obj[0], dict):
            missing += keys(obj[0], where)
        return missing

    assert keys(d, "report") == []
    # every file row has every key, null when not applicable
    assert all(set(f) == set(d["files"][0]) for f in d["files"])
    tmp = next(f for f in d["files"] if f["path"].endswith("tmp.0000.bam"))
    ref = next(f for f in d["files"] if f["path"].endswith("ref.fa"))
    assert tmp["lifetime_s"] == pytest.approx(28.0) and ref["lifetime_s"] is None


def test_cli_outputs(tmp_path):
    res = iolens("report", CAPTURE, "--json", "-")
    assert res.returncode == 0, res.stderr
    assert json.loads(res.stdout) == json.loads(datapath("report", "small.json").read_text())
    res = iolens("report", CAPTURE, "-q", "--csv", tmp_path / "f.csv", "--multiqc", tmp_path / "x_mqc.json",
                 "--html", tmp_path / "r.html", "--sample", "S1")
    assert res.returncode == 0, res.stderr
    assert res.stdout == ""
    rows = list(csv.DictReader(io.StringIO((tmp_path / "f.csv").read_text())))
    assert len(rows) == 13 and rows[0]["path"] == "/data/run/aln.sam"  # 12 files and a pipe
    assert float(rows[0]["tiny_write_s"]) == pytest.approx(6.0)
    mqc = json.loads((tmp_path / "x_mqc.json").read_text())
    assert mqc["plot_type"] == "bargraph" and set(mqc["data"]) == {"S1"}
    assert mqc["data"]["S1"]["tiny_write"] == pytest.approx(6.0)
    page = (tmp_path / "r.html").read_text()
    assert "<script src" not in page and "cdn" not in page.lower().split("plotly")[0]
    assert "/data/run/weird name [x].fq" in page


def test_cli_terminal_report(rep):
    res = iolens("report", CAPTURE)
    assert res.returncode == 0, res.stderr
    assert "Where the time went" in res.stdout and "Advice" in res.stdout
    # the process leaves the report to its exit (cli.leave_at_exit) once the output is flushed: it is whole
    assert res.stdout.rstrip().endswith(rep.advice[-1].fix.split()[-1]) and res.stderr == ""


def test_a_profiled_report_still_ends_as_a_profiled_program_does(tmp_path):
    """The report process exits without freeing its report (cli.leave_at_exit), but not past a profiler that has its
    results to write at the end: `python -m cProfile -o FILE -m iolens report` still writes FILE."""
    import pstats
    import subprocess

    from conftest import _absolute_pythonpath

    out = tmp_path / "report.prof"
    argv = [sys.executable, "-m", "cProfile", "-o", str(out), "-m", "iolens", "report", "-q", str(CAPTURE)]
    res = subprocess.run(argv, env=_absolute_pythonpath(dict(os.environ)), capture_output=True, text=True, timeout=600)
    assert res.returncode == 0, res.stderr
    assert any(name == "build_report" for _file, _line, name in pstats.Stats(str(out)).stats)


def test_cli_thresholds_and_overrides():
    res = iolens("report", "--thresholds")
    assert res.returncode == 0 and "small_bytes" in res.stdout and "65536" in res.stdout
    res = iolens("report", CAPTURE, "--set", "nope=1")
    assert res.returncode == 2 and res.stderr.startswith("iolens: error: unknown threshold 'nope'")
    assert "Traceback" not in res.stderr


def test_chrome_trace_needs_a_traced_capture(tmp_path):
    res = iolens("report", CAPTURE, "-q", "--chrome-trace", tmp_path / "t.json")
    assert res.returncode == 2
    assert "no traced operations" in res.stderr and "--trace" in res.stderr and res.stderr.count("\n") == 1


def test_garbled_and_truncated_captures(tmp_path):
    data = CAPTURE.read_bytes()
    bad = tmp_path / "bad.iolens"
    bad.write_bytes(b"not a capture at all")
    res = iolens("report", bad)
    assert res.returncode == 3 and res.stderr.strip() == (
        f"iolens: error: {bad}: not an iolens capture (it does not start as one does); give a file "
        "written by iolens profile -o")
    cut = tmp_path / "cut.iolens"
    cut.write_bytes(data[: len(data) // 2])
    res = iolens("report", cut, "--json", "-")
    assert res.returncode == 3  # a partial capture is reported, and says so in its exit status
    assert re.search(r"iolens: warning: .*cut short at byte \d+", res.stderr)
    assert json.loads(res.stdout)["capture"]["complete"] is False
    head = tmp_path / "head.iolens"
    head.write_bytes(data[:200])
    res = iolens("report", head)
    assert res.returncode == 3 and re.match(r"iolens: error: .* at byte \d+", res.stderr)
    assert "Traceback" not in res.stderr


def test_a_step_without_advice_says_so_in_plain_words():
    """With no advice, the terminal and the page say what that means, not that "no advice rule fired"."""
    import html

    from iolens.render.report_html import render_html

    r = build_report(read_capture(CAPTURE), advise=False)
    assert not r.advice
    term = " ".join(text_of(r).split())
    page = html.unescape(render_html(r).decode())
    assert "no advice: nothing in this step points at storage" in term
    assert "No advice: nothing in this step points at storage." in page
    assert "rule fired" not in term and "rule fired" not in page
