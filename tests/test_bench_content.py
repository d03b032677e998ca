"""What the engine writes: genomic-like text that parses and compresses like the real thing, and honest extremes."""

from __future__ import annotations

from pathlib import Path

import pytest
import zstandard

from iolens.bench import engine

SIZE = 4 << 20


def write(tmp_path: Path, content: str, **extra) -> bytes:
    work = tmp_path / "iolens-bench-content"
    work.mkdir(exist_ok=True)
    res = engine.run_job({"dirs": [str(work)], "phases": [{"name": "w", "groups": [
        {"op": "write", "dir": 0, "file": content, "size": SIZE, "bs": 65536, "content": content, **extra}]}]})
    assert res["status"] == "ok", res["error"]
    assert res["phases"][0]["groups"][0]["content"] == content
    data = (work / f"{content}.0").read_bytes()
    assert len(data) == SIZE
    return data


def ratio(data: bytes, level: int = 3) -> float:
    return len(data) / len(zstandard.ZstdCompressor(level=level).compress(data))


def test_fastq_parses_and_has_binned_qualities(tmp_path):
    data = write(tmp_path, "fastq")
    lines = data.split(b"\n")[: 4 * 2000]
    assert len(lines) == 8000
    quals = set()
    for i in range(0, len(lines), 4):
        head, seq, plus, qual = lines[i: i + 4]
        assert head.startswith(b"@") and plus == b"+"
        assert len(seq) == len(qual) == 150
        assert set(seq) <= set(b"ACGTN")
        quals |= set(qual)
    assert quals <= set(b"#-8F") and len(quals) == 4  # Q2/Q12/Q23/Q37 bins, all used
    # quality falls toward the 3' end: more low bins in the last 30 bases than the first 30
    q = [lines[i + 3] for i in range(0, len(lines), 4)]
    low = lambda part: sum(c != ord("F") for s in q for c in part(s))  # noqa: E731
    assert low(lambda s: s[-30:]) > 1.5 * low(lambda s: s[:30])
    gc = sum(seq.count(b"G") + seq.count(b"C") for seq in lines[1::4]) / sum(len(s) for s in lines[1::4])
    assert 0.35 < gc < 0.60
    assert 2.5 < ratio(data) < 8.0  # binned-quality FASTQ: zstd-3 typically 3-5x


def test_sam_has_sorted_records(tmp_path):
    data = write(tmp_path, "sam")
    lines = data.split(b"\n")
    assert lines[0].startswith(b"@HD\tVN:1.6\tSO:coordinate")
    recs = [ln.split(b"\t") for ln in lines[4:2000]]
    assert all(len(r) >= 11 for r in recs)
    pos = [int(r[3]) for r in recs]
    assert pos == sorted(pos)
    assert all(len(r[9]) == len(r[10]) == 150 for r in recs)
    assert 3.0 < ratio(data) < 12.0


def test_random_does_not_compress_and_zeros_do(tmp_path):
    assert ratio(write(tmp_path, "random")) < 1.01
    z = write(tmp_path, "zeros")
    assert z == bytes(SIZE)


def test_template_repeats_a_given_file(tmp_path):
    tmpl = tmp_path / "real.fq"
    tmpl.write_bytes(b"@r1\nACGT\n+\nFFFF\n" * 1000)
    data = write(tmp_path, "template", template=str(tmpl))
    assert data[: tmpl.stat().st_size] == tmpl.read_bytes()
    assert data.count(b"@r1\nACGT\n+\nFFFF\n") >= SIZE // 16 - 2


def test_missing_template_is_an_error(tmp_path):
    work = tmp_path / "iolens-bench-x"
    work.mkdir()
    res = engine.run_job({"dirs": [str(work)], "phases": [{"name": "w", "groups": [
        {"op": "write", "dir": 0, "size": 4096, "bs": 4096, "content": "template",
         "template": str(tmp_path / "absent")}]}]})
    assert res["status"] == "error" and "template" in res["error"]["message"]


@pytest.mark.parametrize("content", ["fastq", "sam"])
def test_content_is_deterministic_for_a_seed(tmp_path, content):
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    assert write(tmp_path / "a", content) == write(tmp_path / "b", content)
