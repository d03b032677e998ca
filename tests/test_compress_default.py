"""The default `iolens compress FILE`: the registry's quick set and its count, the adaptive repetition stopping on a
synthetic clock, peak memory that is the call's own, codec names users type, genomics-aware recommendations, and a
heartbeat on a pipe.  Its wall time is shown by benchmarks/compress_default.py, not asserted here."""

from __future__ import annotations

import json
import os
import shutil

import pytest
from click.testing import CliRunner

from conftest import iolens
from iolens.compress import codecs as C
from iolens.compress import measure as M
from iolens.compress.detect import INDEX, detect
from iolens.compress.run import plan_rows, recommend
from iolens.render.compress_text import recommendation_line
from iolens.synth import fastq_text

pytestmark = pytest.mark.timeout(120)

QUICK_PAIRS = 9  # the registry's quick column; raise it only with a new figure from benchmarks/compress_default.py


def test_the_default_set_is_the_registry_quick_column_and_small():
    quick = C.parse_codecs(None)
    assert quick == [(c, c.quick) for c in C.REGISTRY.values() if c.quick]
    assert len(plan_rows(quick, [1])) == QUICK_PAIRS
    assert {c.fmt for c, _ in quick} >= {"gzip", "bgzf", "zstd", "lz4", "xz"}  # representative: every family
    assert all(set(lv) <= set(c.levels) for c, lv in quick)
    full = C.parse_codecs(None, full=True)
    assert [c.name for c, _ in full] == list(C.REGISTRY) and len(plan_rows(full, [1, 2])) > 2 * QUICK_PAIRS


def _settings(monkeypatch, tmp_path, *args: str) -> dict:
    """What the command asks measure() for (measure itself is not run)."""
    from iolens.cli import main

    seen: dict = {}

    def fake(files, **kw):
        seen.update(kw)
        raise SystemExit(0)

    monkeypatch.setattr("iolens.compress.run.measure", fake)
    f = tmp_path / "x.vcf"
    f.write_bytes(b"##fileformat=VCFv4.2\n")
    r = CliRunner().invoke(main, ["compress", str(f), "--no-store", "-q", *args])
    assert r.exit_code == 0, r.output
    return seen


def test_cli_default_is_quick_and_full_is_everything(monkeypatch, tmp_path):
    q = _settings(monkeypatch, tmp_path)
    assert q["mode"] == "quick" and q["threads"] == [1] and q["sample"] == 4 << 20 and q["min_time"] == 0.1
    assert len(plan_rows(q["codecs"], q["threads"])) == QUICK_PAIRS
    f = _settings(monkeypatch, tmp_path, "--full")
    assert f["mode"] == "full" and f["sample"] is None and f["min_time"] == 0.5
    assert f["threads"] == sorted({1, os.cpu_count() or 1}) and len(f["codecs"]) == len(C.REGISTRY)
    c = _settings(monkeypatch, tmp_path, "--codecs", "gz:1", "--threads", "1,2")
    assert c["mode"] == "custom" and [(x.name, lv) for x, lv in c["codecs"]] == [("zlib", ("1",))]


def test_codec_names_users_type():
    got = [(c.name, lv) for c, lv in C.parse_codecs(["gzip:6,GZ:1,zst:19,bgz,bgzip:6,xz"])]
    assert got == [("zlib", ("6",)), ("zlib", ("1",)), ("zstd", ("19",)), ("bgzf", C.REGISTRY["bgzf"].default_levels),
                   ("bgzip", ("6",)), ("xz", C.REGISTRY["xz"].default_levels)]
    assert set(C.ALIASES) & set(C.REGISTRY) == set()  # an alias never hides a codec


def test_unknown_codec_is_one_line_naming_the_aliases(tmp_path):
    f = tmp_path / "x.fq"
    f.write_bytes(b"@r\nACGT\n+\nIIII\n")
    r = iolens("compress", str(f), "--codecs", "snappy", "--no-store")
    assert r.returncode != 0 and "Traceback" not in r.stderr
    (line,) = r.stderr.strip().splitlines()
    assert "unknown codec 'snappy'" in line and "gzip=zlib" in line and "zst=zstd" in line


class Clock:
    """A synthetic clock: each pass advances it by the next duration."""

    def __init__(self, durations):
        self.now, self.durations = 0.0, iter(durations)

    def __call__(self) -> float:
        return self.now

    def one_pass(self) -> float:
        d = next(self.durations)
        self.now += d
        return d


def test_repetition_stops_when_stable():
    clk = Clock([0.05] * 100)
    times, _ = M.repeat(clk.one_pass, min_time=0.1, max_time=1.0, clock=clk)
    assert len(times) == M.MIN_PASSES  # 3 x 0.05 s passes the minimum time, and equal passes are stable


def test_repetition_stops_at_the_budget_when_never_stable():
    clk = Clock([0.1] + [0.2] * 100)  # the median of the last three stays 100% above the best
    times, _ = M.repeat(clk.one_pass, min_time=0.1, max_time=1.0, clock=clk)
    assert len(times) == 6 and clk.now == pytest.approx(1.1)  # the pass that crosses the budget is the last


def test_a_slow_first_call_is_the_only_pass():
    clk = Clock([])  # no further pass may be made
    clk.now = 5.0
    times, _ = M.repeat(clk.one_pass, min_time=0.1, max_time=1.0, clock=clk, first=5.0)
    assert times == [5.0]
    t = M.Timing(5.0, 5.0, 1, 5.0, None)
    assert t.spread_pct is None  # one pass says nothing about the spread


def test_budget_follows_min_time():
    assert M.max_time_for(0.1) == 1.0 and M.max_time_for(0.5) == 5.0


@pytest.fixture(scope="module")
def fq(tmp_path_factory):
    p = tmp_path_factory.mktemp("cd") / "reads.fq"
    p.write_bytes(fastq_text(3_000_000, seed=4))
    return p


def test_library_peak_is_the_calls_own(fq, tmp_path):
    """The decompressor writes the whole input into a new buffer: its peak is at least that.  Measured in this
    process instead, freed memory is reused and the figure can be 0."""
    n = fq.stat().st_size
    got = M.library_first("zlib", "1", 1, str(fq), str(tmp_path / "out.gz"))
    assert got["why"] is None
    assert 0.9 * n <= got["decompress"] <= 4 * n
    assert got["compress"] >= (tmp_path / "out.gz").stat().st_size * 0.9
    assert got["wall_s"] > 0 and got["cpu_s"] > 0
    import zlib
    assert zlib.decompress((tmp_path / "out.gz").read_bytes(), 31) == fq.read_bytes()


@pytest.mark.skipif(M.gnu_time() is None, reason="GNU time not installed")
def test_tool_peak_is_the_tools_not_the_interpreters(fq, tmp_path):
    own = M._status_kib("VmHWM")
    assert own is not None
    cat = M.tool_peak(["cat"], str(fq), str(tmp_path / "o"), str(tmp_path))
    assert cat[1] is None and cat[0] is not None and 0 < cat[0] < own / 4
    # wait4's maxrss for the same child started from this interpreter: at least the interpreter's size
    assert M.run_tool(["cat"], str(fq), str(tmp_path / "o")).maxrss > cat[0]


def test_bed_is_detected():
    assert detect(b"chr1\t100\t200\tpeak1\t5\t+\nchr1\t300\t400\tpeak2\t3\t-\n").format == "bed"
    assert detect(b"track name=x\nchr2\t1\t50\n").format == "bed"
    assert detect(b"chr1\t200\t100\n").format == "text"  # start after end


def _row(label_codec: str, fmt: str, level: str, ratio: float, cbps: float) -> dict:
    return {"label": f"{label_codec}:{level}", "codec": label_codec, "format": fmt, "level": level, "threads": 1,
            "ratio": ratio, "verified": True, "compress_Bps": cbps, "decompress_Bps": 5e8}


def _doc(fmt: str, rows: list[dict]) -> dict:
    return {"inputs": [{"path": f"x.{fmt}", "content": {"format": fmt, "inner": None}, "rows": rows}], "storage": []}


def test_a_vcf_is_recommended_indexable_bgzf_with_its_cost():
    rows = [_row("lz4", "lz4", "1", 2.5, 4e8), _row("bgzf", "bgzf", "6", 4.5, 3e7), _row("xz", "xz", "6", 6.0, 1e6)]
    recs = recommend(_doc("vcf", rows))
    idx = next(r for r in recs if r["kind"] == "indexable")
    assert idx["choice"] == "bgzf:6" and idx["index_with"] == INDEX["vcf"] == "tabix -p vcf" and not idx["cram"]
    assert idx["alternative"]["choice"] == "xz:6" and idx["alternative"]["htslib_reads"] is False
    inter = next(r for r in recs if r["kind"] == "intermediate")
    assert inter["choice"] == "lz4:1" and inter["htslib_reads"] is False
    line = recommendation_line(idx)
    assert "tabix -p vcf" in line and "xz:6 is 25% smaller" in line and "\n" not in line
    assert line.startswith("4.50x, writes 29 MiB/s;")  # 3e7 B/s in MiB/s, the unit of the tables and the page
    assert "cannot read lz4" in recommendation_line(inter)
    assert all(set(r) == set(recs[0]) for r in recs)  # every key always present


def test_alignments_mention_cram_and_plain_text_gets_no_index():
    sam = recommend(_doc("sam", [_row("bgzf", "bgzf", "6", 4.0, 3e7)]))
    assert next(r for r in sam if r["kind"] == "indexable")["cram"]
    assert "CRAM" in recommendation_line(next(r for r in sam if r["kind"] == "indexable"))
    assert not [r for r in recommend(_doc("text", [_row("zstd", "zstd", "3", 3.0, 1e8)])) if r["kind"] == "indexable"]
    none = next(r for r in recommend(_doc("bed", [_row("zstd", "zstd", "3", 3.0, 1e8)])) if r["kind"] == "indexable")
    assert none["choice"] is None and "add --codecs bgzf" in recommendation_line(none)


@pytest.mark.skipif(shutil.which("lz4") is None, reason="lz4 not installed")
def test_pipe_gets_one_heartbeat_line_per_codec_and_json_keeps_working(fq, tmp_path):
    out = tmp_path / "o.json"
    r = iolens("compress", str(fq), "--codecs", "lz4:1,bgzf:1", "--min-time", "0.01", "--no-store", "--json",
               str(out), "--html", str(tmp_path / "o.html"))
    assert r.returncode == 0, r.stderr
    beats = [ln for ln in r.stderr.splitlines() if ln.startswith("iolens compress: ")]
    assert [b.split()[2] for b in beats] == ["0/2", "1/2", "2/2"]
    doc = json.loads(out.read_text())
    assert doc["schema_version"] == [1, 1] and doc["settings"]["mode"] == "custom" and doc["settings"]["pairs"] == 2
    idx = next(x for x in doc["recommendations"] if x["kind"] == "indexable")
    assert idx["choice"] == "bgzf:1" and idx["index_with"] == "samtools fqidx"
    for row in doc["inputs"][0]["rows"]:
        assert row["compress_peak_bytes"] > 0 and row["peak_note"] is None
    assert "samtools fqidx" in (tmp_path / "o.html").read_text()
    q = iolens("compress", str(fq), "--codecs", "lz4:1", "--min-time", "0.01", "--no-store", "-q")
    assert q.returncode == 0 and "iolens compress: " not in q.stderr

