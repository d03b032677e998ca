"""The one export interface: every command writes each format it offers, refuses every other with one line
before it runs anything, and every JSON it writes carries its tag and schema_version, documented in docs/."""

from __future__ import annotations

import csv
import io
import json
import re
import subprocess

import pytest
from conftest import HERE, datapath, iolens

from iolens.render import exports

pytestmark = pytest.mark.timeout(600)

DOCS = "\n".join(p.read_text() for p in (HERE.parent / "docs").glob("*.md"))

# command (as typed), the kinds it decides between
COMMANDS = {"report": ("report", "pipeline"), "diff": ("diff", "pipeline-diff"), "replay": ("replay",),
            "predict": ("predict",), "compare": ("compare",), "cost": ("cost",),
            "compress": ("compress", "compress-fs"), "bench": ("bench",)}


def _options(kinds: tuple[str, ...]) -> set[str]:
    return {f.option for k in kinds for f in exports.offered(k)}


@pytest.mark.parametrize("command", COMMANDS)
def test_help_offers_exactly_the_formats_that_apply(command):
    text = iolens(command, "--help", check=True).stdout
    shown = {f.option for f in exports.FORMATS if re.search(rf"^\s+{re.escape(f.option)} PATH", text, re.M)}
    assert shown == _options(COMMANDS[command]), text


@pytest.mark.parametrize("command", COMMANDS)
def test_a_format_that_does_not_apply_is_refused_before_anything_runs(command, tmp_path):
    other = next(f for f in exports.FORMATS if f.option not in _options(COMMANDS[command]))
    out = tmp_path / f"x{other.suffix}"
    (tmp_path / "b").mkdir()
    argv = {"report": [datapath("report", "small.iolens")],
            "diff": [datapath("report", "small.iolens"), datapath("report", "small.iolens")],
            "replay": [tmp_path / "none.iolens", "--on", tmp_path],
            "predict": [tmp_path / "none.iolens", "--on", tmp_path],
            "compare": ["touch {out:marker}", "--place", f"out={tmp_path},{tmp_path}/b", "--runs", "2", "--no-store"],
            "cost": ["--option", "aws:ebs-gp3=100", "--no-store"],
            "compress": [datapath("report", "small.json"), "--codecs", "lz4", "--no-store"],
            "bench": ["null", "--no-store", "-q"]}[command]
    res = iolens(command, *argv, other.option, out, cwd=tmp_path)
    assert res.returncode == 2, res.stdout + res.stderr
    err = res.stderr.strip().splitlines()
    assert len(err) == 1 and other.option in err[0] and "not a format of" in err[0], res.stderr
    assert "Traceback" not in res.stderr and not out.exists() and not (tmp_path / "marker").exists()


def _check_json(path) -> dict:
    doc = json.loads(path.read_text())
    tag, ver = doc.get("tag"), doc.get("schema_version")
    assert isinstance(tag, str) and tag.startswith("iolens-"), doc.keys()
    assert isinstance(ver, list) and len(ver) == 2 and all(isinstance(v, int) for v in ver), ver
    assert f"`{tag}`" in DOCS or f'"{tag}"' in DOCS or f"tag {tag}" in DOCS, f"{tag} is not documented in docs/"
    return doc


def test_report_writes_every_format_it_offers(tmp_path):
    out = {f.name: tmp_path / f"r-{f.name}{f.suffix}" for f in exports.offered("report")}
    args = [a for f in exports.offered("report") for a in (f.option, out[f.name])]
    cap = tmp_path / "t.iolens"
    iolens("profile", "--trace", "-q", "-o", cap, "--", "sh", "-c", "echo x > f; cat f", check=True, cwd=tmp_path)
    res = iolens("report", cap, *args, "--sample", "S1", "-q", cwd=tmp_path)
    assert res.returncode == 0, res.stderr
    assert _check_json(out["json"])["tag"] == "iolens-report"
    assert "<html" in out["html"].read_text()[:200].lower()
    rows = list(csv.reader(io.StringIO(out["csv"].read_text())))
    assert len(rows) >= 2 and len({len(r) for r in rows}) == 1
    assert json.loads(out["chrome-trace"].read_text())["traceEvents"]
    assert "S1" in out["multiqc"].read_text()


def test_diff_replay_and_predict_write_their_formats(tmp_path):
    cap = tmp_path / "t.iolens"
    iolens("profile", "--trace", "-q", "-o", cap, "--", "sh", "-c", "echo x > f; cat f", check=True, cwd=tmp_path)
    res = iolens("diff", cap, cap, "--json", tmp_path / "d.json")
    assert res.returncode == 0, res.stderr
    assert _check_json(tmp_path / "d.json")["tag"] == "iolens-diff"
    work = tmp_path / "work"
    work.mkdir()
    res = iolens("replay", cap, "--on", work, "--json", tmp_path / "r.json", "--fio-iolog", tmp_path / "r.iolog")
    assert res.returncode == 0, res.stderr
    assert _check_json(tmp_path / "r.json")["tag"] == "iolens-replay"
    assert (tmp_path / "r.iolog").read_text().startswith("fio version 3 iolog")
    assert (tmp_path / "r.iolog.layout").exists()
    res = iolens("predict", cap, "--on", work, "--home", work, "--json", tmp_path / "p.json")
    assert res.returncode == 0, res.stderr
    assert _check_json(tmp_path / "p.json")["tag"] == "iolens-predict"


def test_compare_cost_compress_and_bench_write_their_formats(tmp_path):
    db = tmp_path / "r.sqlite"
    (tmp_path / "b").mkdir()
    res = iolens("compare", "touch {out:marker}", "--place", f"out={tmp_path},{tmp_path}/b", "--runs", "2", "--db", db,
                 "-q",
                 "--json", tmp_path / "c.json", "--html", tmp_path / "c.html", cwd=tmp_path)
    assert res.returncode == 0, res.stderr
    assert _check_json(tmp_path / "c.json")["tag"] == "iolens-compare"
    assert "<html" in (tmp_path / "c.html").read_text()[:200].lower()
    res = iolens("cost", "--option", "aws:ebs-gp3=100", "--option", "aws:ebs-gp2=120", "--no-store",
                 "--json", tmp_path / "k.json", "--html", tmp_path / "k.html")
    assert res.returncode == 0, res.stderr
    assert _check_json(tmp_path / "k.json")["tag"] == "iolens-cost"
    assert "<html" in (tmp_path / "k.html").read_text()[:200].lower()
    res = iolens("compress", datapath("report", "small.json"), "--codecs", "lz4", "--threads", "1", "--min-time",
                 "0.01", "--no-store", "-q", "--json", tmp_path / "z.json", "--html", tmp_path / "z.html")
    assert res.returncode == 0, res.stderr
    assert _check_json(tmp_path / "z.json")["tag"].startswith("iolens-compress")
    assert "<html" in (tmp_path / "z.html").read_text()[:200].lower()
    res = iolens("bench", "null", "--suite", "random", "--threads", "1", "--size", "4M", "--files", "6",
                 "--runtime", "0.1", "-q", "--no-store", "--json", tmp_path / "b.json")
    assert res.returncode == 0, res.stderr
    assert _check_json(tmp_path / "b.json")["tag"] == "iolens-bench"


def test_json_to_stdout_is_the_document_alone(tmp_path):
    res = iolens("report", datapath("report", "small.iolens"), "--json", "-")
    assert res.returncode == 0 and json.loads(res.stdout)["tag"] == "iolens-report"


def test_every_kind_has_a_format_and_every_format_a_kind():
    for kind in exports.KINDS:
        assert exports.offered(kind), kind
    for f in exports.FORMATS:
        assert f.renders and set(f.renders) <= set(exports.KINDS), f.name
    assert len({f.option for f in exports.FORMATS}) == len(exports.FORMATS)


def test_no_command_writes_around_the_registry():
    """The commands with output files write them through render.exports: none calls a renderer's JSON, HTML or CSV
    writer itself."""
    cmd_dir = HERE.parent / "src" / "iolens" / "commands"
    files = [str(cmd_dir / f"{c}.py") for c in COMMANDS] + [str(cmd_dir / "_pipeline_dir.py")]
    grep = subprocess.run(["grep", "-lE", r"render_(json|html|csv|multiqc|chrome_trace)\(|bench_json\(", *files],
                          capture_output=True, text=True)
    assert grep.stdout.strip() == "", grep.stdout
