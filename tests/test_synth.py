"""The synthetic genomics input: well-formed, realistic qualities, a few % errors, deterministic."""

from __future__ import annotations

import gzip

from conftest import iolens
from iolens.synth import QCHARS, fastq_text, synth


def read_fastq(path):
    with gzip.open(path, "rt") as fh:
        lines = fh.read().splitlines()
    assert len(lines) % 4 == 0
    return [lines[i : i + 4] for i in range(0, len(lines), 4)]


def test_synth_files_are_well_formed(tmp_path):
    res = synth(tmp_path, ref_bases=200_000, pairs=2_000, read_len=100, seed=5)
    ref = res.reference.read_text().splitlines()
    assert ref[0].startswith(">chr1")
    seq = "".join(line for line in ref if not line.startswith(">"))
    assert len(seq) == 200_000 and set(seq) <= set("ACGT")
    gc = (seq.count("G") + seq.count("C")) / len(seq)
    assert 0.33 < gc < 0.62
    r1, r2 = read_fastq(res.reads1), read_fastq(res.reads2)
    assert len(r1) == len(r2) == 2_000
    allowed = {chr(c) for c in QCHARS}
    for (h1, s1, p1, q1), (h2, _s2, _p2, _q2) in zip(r1, r2):
        assert h1.endswith("/1") and h2.endswith("/2") and h1[:-2] == h2[:-2] and p1 == "+"
        assert len(s1) == len(q1) == 100 and set(q1) <= allowed
    quals = "".join(q for *_x, q in r1)
    top = quals.count(chr(37 + 33)) / len(quals)
    assert 0.8 < top < 0.99  # mostly Q37, not all
    assert 0.002 < res.error_rate < 0.05


def test_synth_is_deterministic(tmp_path):
    a = synth(tmp_path / "a", ref_bases=100_000, pairs=500, seed=9)
    b = synth(tmp_path / "b", ref_bases=100_000, pairs=500, seed=9)
    assert a.reference.read_bytes() == b.reference.read_bytes()
    assert gzip.decompress(a.reads1.read_bytes()) == gzip.decompress(b.reads1.read_bytes())


def test_fastq_text_size():
    text = fastq_text(300_000, seed=2)
    assert len(text) == 300_000 and text.startswith(b"@synth_0/1\n")


def test_cli_refuses_to_overwrite(tmp_path):
    res = iolens("data", "synth", "-o", tmp_path, "--ref-size", "100000", "--pairs", "100")
    assert res.returncode == 0, res.stderr
    before = (tmp_path / "ref.fa").read_bytes()
    res = iolens("data", "synth", "-o", tmp_path, "--ref-size", "100000", "--pairs", "100", "--seed", "2")
    assert res.returncode == 2 and "already exists" in res.stderr and "Traceback" not in res.stderr
    assert (tmp_path / "ref.fa").read_bytes() == before
