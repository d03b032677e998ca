"""The reader and the report are total: any input gives a capture (maybe partial) or a one-line error.

tests/data/fuzz holds inputs that once crashed them (byte flips of a format-1.0 capture, and the fuzzer's finds);
benchmarks/fuzz_capture.py runs the same fuzzer for long."""

from __future__ import annotations

import subprocess
import sys
import warnings
from pathlib import Path

import pytest

from conftest import HERE, datapath
from helpers.fuzz import exercise

CORPUS = sorted(datapath("fuzz").glob("*.iolens"))


@pytest.mark.parametrize("path", CORPUS, ids=[p.name for p in CORPUS])
def test_crashers_are_now_partial_reads_or_one_line_errors(path: Path):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # numpy on absurd values: a warning, not a failure
        cap = exercise(path.read_bytes())
    # refused with a one-line error, read as partial, or (format 1.x has no checksums) read as it was written
    assert cap is None or not cap.complete or cap.version == (1, 0)


def test_corpus_is_there():
    assert len(CORPUS) >= 20


@pytest.mark.slow
@pytest.mark.timeout(180)
def test_coverage_guided_fuzzer_finds_no_crash(tmp_path):
    pytest.importorskip("atheris", reason="atheris is in the test extras: pip install '.[test]'")
    res = subprocess.run([sys.executable, str(HERE.parent / "benchmarks" / "fuzz_capture.py"), "fuzz",
                          "--seconds", "25", "--crashes", str(tmp_path / "crashes"), "--corpus", str(tmp_path / "c")],
                         capture_output=True, text=True, timeout=170, cwd=tmp_path)
    summary = [line for line in res.stdout.splitlines() if line.startswith("fuzz:")]
    assert res.returncode == 0 and summary and summary[-1].endswith(" 0 crashes"), res.stderr[-3000:]
    assert int(summary[-1].split()[1]) > 500  # it really ran
