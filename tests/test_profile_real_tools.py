"""Real tools under the profiler: same exit codes and output bytes as unprofiled runs, and at least
99% of the kernel's read/write byte counters attributed to files."""

from __future__ import annotations

import hashlib
import subprocess
import sys

import pytest

from conftest import tool
from iolens.analysis.summary import summarize


def digest(path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.fixture(scope="module")
def genomics(tmp_path_factory):
    from iolens.synth import synth

    d = tmp_path_factory.mktemp("genomics")
    res = synth(d, ref_bases=1_000_000, pairs=40_000, seed=3)
    return d, res


def run_both(profiled, tmp_path, argv_for, outname):
    """Run unprofiled into a/ and profiled into b/; returns (plain result, profiled result, capture)."""
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    plain = subprocess.run(argv_for(tmp_path / "a"), capture_output=True, timeout=600, cwd=tmp_path / "a")
    res, cap = profiled(argv_for(tmp_path / "b"), cwd=tmp_path / "b")
    assert res.returncode == plain.returncode, res.stderr
    assert digest(tmp_path / "a" / outname) == digest(tmp_path / "b" / outname)
    return plain, res, cap


def assert_coverage(cap, at_least=0.99):
    s = summarize(cap)
    assert s.kernel_read + s.kernel_written > 1_000_000
    assert s.coverage is not None and s.coverage >= at_least, (s.coverage, s.kernel_read, s.kernel_written,
                                                                s.bytes_read, s.bytes_written)
    return s


def test_minimap2(genomics, profiled, tmp_path):
    mm2 = tool("minimap2")
    d, r = genomics

    def argv(out):
        return ["bash", "-c", f"{mm2} -ax sr -t 2 {r.reference} {r.reads1} {r.reads2} > {out}/aln.sam 2>/dev/null"]

    _plain, _res, cap = run_both(profiled, tmp_path, argv, "aln.sam")
    s = assert_coverage(cap)
    assert str(r.reference) in {f["path"] for p in cap.processes for f in p.files}
    assert any(p.name == "minimap2" for p in s.tree)


def test_samtools_sort(genomics, profiled, tmp_path):
    mm2, samtools = tool("minimap2"), tool("samtools")
    d, r = genomics
    sam = d / "aln.sam"
    if not sam.exists():
        with open(sam, "wb") as fh:
            subprocess.run([mm2, "-ax", "sr", str(r.reference), str(r.reads1), str(r.reads2)], stdout=fh,
                           stderr=subprocess.DEVNULL, check=True)
    # relative paths: samtools writes its command line into the BAM header

    def argv(out):
        return [samtools, "sort", "-@", "2", "-m", "4M", "-T", "tmp", "-o", "sorted.bam", str(sam)]

    _plain, _res, cap = run_both(profiled, tmp_path, argv, "sorted.bam")
    s = assert_coverage(cap)
    temps = [f for f in s.temp_files if "/b/tmp" in f.path]
    assert temps, "samtools sort's spill files are seen as temp files (created and deleted)"
    assert all(f.lifetime_s is not None and f.lifetime_s >= 0 for f in temps)


def test_gzip(genomics, profiled, tmp_path):
    gz = tool("gzip")
    d, r = genomics

    def argv(out):
        return ["bash", "-c", f"{gz} -dc {r.reads1} | {gz} -1 > {out}/re.gz"]

    _plain, _res, cap = run_both(profiled, tmp_path, argv, "re.gz")
    assert_coverage(cap)


def test_cp_copy_file_range(genomics, profiled, tmp_path):
    cp = tool("cp")
    d, r = genomics

    def argv(out):
        return [cp, str(r.reads1), f"{out}/copy.fq.gz"]

    _plain, _res, cap = run_both(profiled, tmp_path, argv, "copy.fq.gz")
    s = assert_coverage(cap)
    size = r.reads1.stat().st_size
    files = {f["path"]: f for p in cap.processes for f in p.files}
    assert files[str(r.reads1)]["bytes_read"] == size
    assert files[str(tmp_path / "b" / "copy.fq.gz")]["bytes_written"] == size
    assert s.bytes_written >= size


def test_python(genomics, profiled, tmp_path):
    d, r = genomics
    code = ("import sys, gzip; data = gzip.open(sys.argv[1]).read(); "
            "open(sys.argv[2] + '/fq.txt', 'wb').write(data)")

    def argv(out):
        return [sys.executable, "-c", code, str(r.reads2), str(out)]

    _plain, _res, cap = run_both(profiled, tmp_path, argv, "fq.txt")
    assert_coverage(cap)


def test_stdin_stdout_pass_through(profiled, tmp_path):
    res, cap = profiled(["cat"], input="hello through the profiler\n")
    assert res.returncode == 0
    assert res.stdout == "hello through the profiler\n"
    assert res.stderr == ""
