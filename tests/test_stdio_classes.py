"""Size classes describe what reaches storage: buffered stdio is classed by the system calls its
buffer fills and flushes make, checked against the kernel (strace -c -f) on real tools; and captures
written before stdio was recorded this way (FILE version 1) still read the same."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess

import pytest

from conftest import datapath, iolens, tool
from iolens.analysis.report import build_report
from iolens.capture.reader import read_capture
from iolens.render.report_json import render_json

READS = {"read", "pread64", "readv", "preadv", "preadv2"}
WRITES = {"write", "pwrite64", "writev", "pwritev", "pwritev2"}


def test_file_v1_capture_reads_the_same():
    """The report fixture as FILE version 1 (before stdio_*) and as written now give the same report."""
    old = read_capture(datapath("report", "small-file-v1.iolens"))
    new = read_capture(datapath("report", "small.iolens"))
    assert old.processes[0].files and all(f["stdio_flushes"] == 0 for p in old.processes for f in p.files)
    a = json.loads(render_json(build_report(old)))
    b = json.loads(render_json(build_report(new)))
    a["capture"].pop("path"), b["capture"].pop("path")
    assert a == b


@pytest.fixture(scope="module")
def inputs(tmp_path_factory):
    from iolens.synth import synth

    d = tmp_path_factory.mktemp("stdio_inputs")
    r = synth(d, ref_bases=1_000_000, pairs=20_000, seed=5)
    return d, r


def strace_calls(script: str, cwd) -> dict[str, int]:
    """Read and write system calls of a shell command and its children, as strace -c -f counts them."""
    if shutil.which("strace") is None:
        pytest.skip("strace is not installed (Debian package strace)")
    out = cwd / "strace.txt"
    subprocess.run(["strace", "-c", "-f", "-o", str(out), "bash", "-c", script], cwd=cwd, check=True, timeout=600)
    calls = {"read": 0, "write": 0}
    for line in out.read_text().splitlines():
        m = re.match(r"\s*[\d.]+\s+[\d.]+\s+\d+\s+(\d+)\s+(?:\d+\s+)?(\w+)\s*$", line)
        if m and m.group(2) in READS:
            calls["read"] += int(m.group(1))
        elif m and m.group(2) in WRITES:
            calls["write"] += int(m.group(1))
    return calls


def report_requests(script: str, cwd) -> tuple[dict[str, int], dict[str, int]]:
    """Requests the report classes (its size histograms, over files) and the library calls seen."""
    cap_path = cwd / "run.iolens"
    res = iolens("profile", "-q", "-o", cap_path, "--", "bash", "-c", script, cwd=cwd)
    assert res.returncode == 0, res.stderr
    cap = read_capture(cap_path)
    rep = build_report(cap)
    files = [f for p in cap.processes for f in p.files]
    calls = {"read": sum(f["reads"] for f in files), "write": sum(f["writes"] for f in files)}
    return {"read": sum(rep.histograms["read"]), "write": sum(rep.histograms["write"])}, calls


def check(script: str, tmp_path, *, min_calls: int = 100):
    a, b = tmp_path / "strace", tmp_path / "profile"
    a.mkdir(), b.mkdir()
    kernel = strace_calls(script, a)
    classed, library = report_requests(script, b)
    for d in ("read", "write"):
        if kernel[d] < min_calls and classed[d] < min_calls:
            continue  # a handful of calls (the loader's, a log line): nothing to compare
        assert abs(classed[d] - kernel[d]) <= 0.1 * kernel[d], (d, classed, kernel, library)
    return kernel, classed, library


def test_minimap2_writing_sam(inputs, tmp_path):
    """minimap2 writes SAM with buffered stdio: thousands of library calls, a write per 4 KiB flush."""
    mm2 = tool("minimap2")
    _d, r = inputs
    kernel, classed, library = check(f"{mm2} -ax sr -t 2 {r.reference} {r.reads1} {r.reads2} > aln.sam 2>/dev/null",
                                     tmp_path)
    assert kernel["write"] > 1000
    assert library["write"] > 2 * kernel["write"]  # counted as calls, they would be far off


def test_samtools_sort(inputs, tmp_path):
    mm2, samtools = tool("minimap2"), tool("samtools")
    d, r = inputs
    sam = d / "aln.sam"
    if not sam.exists():
        with open(sam, "wb") as fh:
            subprocess.run([mm2, "-ax", "sr", str(r.reference), str(r.reads1), str(r.reads2)], stdout=fh,
                           stderr=subprocess.DEVNULL, check=True)
    check(f"{samtools} sort -@ 2 -m 4M -T tmp -o sorted.bam {sam}", tmp_path)


def test_gzip(inputs, tmp_path):
    gz = tool("gzip")
    d, r = inputs
    fq = d / "reads_1.fq"
    if not fq.exists():
        with open(fq, "wb") as fh:
            subprocess.run([gz, "-dc", str(r.reads1)], stdout=fh, check=True)
    check(f"{gz} -1 -c {fq} > re.gz && {gz} -dc re.gz > back.fq", tmp_path)


def test_report_says_how_stdio_was_classed(cprog, tmp_path):
    cap = tmp_path / "s.iolens"
    res = iolens("profile", "-q", "-o", cap, "--", cprog("stdio_modes"), tmp_path, cwd=tmp_path)
    assert res.returncode == 0, res.stderr
    out = iolens("report", cap, env=dict(os.environ, COLUMNS="200"), cwd=tmp_path).stdout
    flat = " ".join(out.split())
    assert flat.count("stdio calls (") == 1, out
    assert "are library calls, not requests to storage: they are classed by the buffer fills and flushes" in flat
    assert "(captures from older iolens versions class them by the calls)" in flat and "FILE version" not in flat
