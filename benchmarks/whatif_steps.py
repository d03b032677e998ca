"""The held-out corpus of what-if steps (whatif_corpus.toml): its loader and the generators of its synthetic inputs.

One definition of the steps for benchmarks/whatif_corpus.py, benchmarks/whatif_accuracy.py (the six steps marked
`accuracy`) and the tests.  Every input is made here, deterministically (fixed seeds), at a size scaled from the
file's `--scale 1` figures; nothing is downloaded and no user data is read.
"""

from __future__ import annotations

import shutil
import subprocess
import tarfile
import tomllib
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from iolens.synth import fastq_text, synth

CORPUS_FILE = Path(__file__).resolve().parent / "whatif_corpus.toml"
GENOMICS = ("ref.fa", "reads_1.fq.gz", "reads.fq", "in.sam", "in.bam")  # what the "genomics" input makes


@dataclass(frozen=True)
class Step:
    name: str
    argv: list[str]
    inputs: list[str]
    outputs: list[str]
    shape: str
    accuracy: bool  # one of benchmarks/whatif_accuracy.py's six
    scale: float = 1.0  # its inputs at this many times a run's --scale (the file's `scale`)


@dataclass(frozen=True)
class Corpus:
    steps: dict[str, Step]
    tuning: list[str]
    evaluation: list[str]
    date: str
    inputs: dict[str, dict[str, Any]]

    def half(self, name: str) -> list[str]:
        return {"tuning": self.tuning, "evaluation": self.evaluation}[name]

    def input_names(self, inputs: list[str]) -> set[str]:
        """The names the inputs occupy in a work directory (the genomics set makes several files)."""
        return {n for i in inputs for n in (GENOMICS if self.inputs[i]["kind"] == "genomics" else (i,))}


def load(path: Path = CORPUS_FILE) -> Corpus:
    """The corpus, checked: every step in exactly one half, every input it names defined."""
    doc = tomllib.loads(path.read_text())
    steps = {n: Step(n, list(s["argv"]), list(s["inputs"]), list(s["outputs"]), s["shape"],
                     bool(s.get("accuracy")), float(s.get("scale", 1.0)))
             for n, s in doc["step"].items()}
    split = doc["split"]
    tuning, evaluation = list(split["tuning"]), list(split["evaluation"])
    if set(tuning) & set(evaluation) or sorted(tuning + evaluation) != sorted(steps):
        raise ValueError(f"{path.name}: the split must put every step in exactly one half")
    for s in steps.values():
        if missing := [i for i in s.inputs if i not in doc["inputs"]]:
            raise ValueError(f"{path.name}: step {s.name} names undefined inputs {missing}")
    return Corpus(steps, tuning, evaluation, str(split["date"]), dict(doc["inputs"]))


def _genomics(work: Path, spec: dict[str, Any], scale: float) -> None:
    s = synth(work / "syn", ref_bases=int(spec["ref_bases"] * scale), pairs=int(spec["pairs"] * scale), seed=3)
    shutil.copy(s.reference, work / "ref.fa")
    shutil.copy(s.reads1, work / "reads_1.fq.gz")
    shutil.rmtree(work / "syn")
    (work / "reads.fq").write_bytes(fastq_text(int(spec["fastq_bytes"] * scale)))
    subprocess.run(["minimap2", "-a", "-t", "2", "ref.fa", "reads_1.fq.gz", "-o", "in.sam"], cwd=work, check=True,
                   capture_output=True)
    subprocess.run(["samtools", "sort", "-o", "in.bam", "in.sam"], cwd=work, check=True, capture_output=True)


def _lines(path: Path, spec: dict[str, Any], scale: float) -> None:
    """Text lines of 8-80 random letters and digits (what GNU sort sorts), `bytes` in all."""
    rng = np.random.default_rng(11)
    alphabet = np.frombuffer(b"abcdefghijklmnopqrstuvwxyz0123456789", dtype=np.uint8)
    n = int(spec["bytes"] * scale)
    buf = alphabet[rng.integers(0, len(alphabet), size=n)]
    ends = np.cumsum(rng.integers(9, 81, size=n // 9 + 1))
    buf[ends[ends < n]] = ord("\n")
    buf[-1] = ord("\n")
    path.write_bytes(buf.tobytes())


def _tree(path: Path, spec: dict[str, Any], scale: float) -> None:
    """`files` small text files of about `bytes` each, in directories of 100."""
    rng = np.random.default_rng(12)
    n = max(10, int(spec["files"] * scale))
    for i in range(n):
        d = path / f"d{i // 100:03d}"
        if i % 100 == 0:
            d.mkdir(parents=True)
        size = int(rng.integers(spec["bytes"] // 2, spec["bytes"] * 3 // 2))
        (d / f"f{i:05d}.txt").write_bytes(bytes(rng.integers(97, 123, size=size, dtype=np.uint8)))


def _tar(path: Path, spec: dict[str, Any], scale: float) -> None:
    """A tar of another input (made first), its members named as that input, with fixed times and owners."""
    def fixed(m: tarfile.TarInfo) -> tarfile.TarInfo:
        m.mtime, m.uid, m.gid, m.uname, m.gname = 0, 0, 0, "", ""
        return m

    src = path.parent / spec["of"]
    with tarfile.open(path, "w", format=tarfile.GNU_FORMAT) as tf:
        tf.add(src, arcname=spec["of"], filter=fixed)


def _random(path: Path, spec: dict[str, Any], scale: float) -> None:
    """Incompressible bytes (random reads of it must meet the storage, not a compressed cache)."""
    path.write_bytes(np.random.default_rng(13).bytes(int(spec["bytes"] * scale)))


def _vcf(path: Path, spec: dict[str, Any], scale: float) -> None:
    """A bgzipped, tabix-indexed VCF of `records` SNVs over chr1 and chr2 (1 Mb each, whatever the scale)."""
    rng = np.random.default_rng(14)
    n = max(100, int(spec["records"] * scale))
    lines = ["##fileformat=VCFv4.2", "##contig=<ID=chr1,length=1000000>", "##contig=<ID=chr2,length=1000000>",
             '##INFO=<ID=DP,Number=1,Type=Integer,Description="depth">',
             "#CHROM\tPOS\tID\tREF\tALT\tQUAL\tFILTER\tINFO"]
    for chrom, k in (("chr1", n // 2), ("chr2", n - n // 2)):
        pos = np.sort(rng.choice(np.arange(1, 1_000_000), size=k, replace=False))
        ref = rng.integers(0, 4, size=k)
        alt = (ref + rng.integers(1, 4, size=k)) % 4
        dp = rng.integers(5, 80, size=k)
        lines += [f"{chrom}\t{p}\t.\t{'ACGT'[r]}\t{'ACGT'[a]}\t50\tPASS\tDP={d}"
                  for p, r, a, d in zip(pos, ref, alt, dp)]
    plain = path.with_suffix("")
    plain.write_text("\n".join(lines) + "\n")
    subprocess.run(["bgzip", "-f", str(plain)], check=True, capture_output=True)
    subprocess.run(["tabix", "-f", "-p", "vcf", str(path)], check=True, capture_output=True)


INPUT_KINDS: dict[str, Callable[[Path, dict[str, Any], float], None]] = {
    "lines": _lines, "tree": _tree, "tar": _tar, "random": _random, "vcf": _vcf}


def prepare(corpus: Corpus, work: Path, inputs: list[str], scale: float) -> None:
    """Makes `inputs` (and what they are made of) in `work`, in the file's order."""
    want = set(inputs) | {corpus.inputs[i]["of"] for i in inputs if "of" in corpus.inputs[i]}
    for name, spec in corpus.inputs.items():
        if name not in want:
            continue
        if spec["kind"] == "genomics":
            _genomics(work, spec, scale)
        else:
            INPUT_KINDS[spec["kind"]](work / name, spec, scale)


def kept(corpus: Corpus, inputs: list[str]) -> set[str]:
    """What a work directory holds before a step runs: its inputs, and their side files (a tabix index)."""
    names = corpus.input_names(inputs)
    return names | {n + ".tbi" for n in names if corpus.inputs.get(n, {}).get("kind") == "vcf"}
