"""Realistic synthetic genomics inputs, made locally so nothing is downloaded.

- a reference FASTA with uneven GC and some repeats;
- paired-end reads from it with Illumina-style 4-level binned qualities
  (Q2/Q12/Q23/Q37, as NovaSeq writes them), quality falling toward the 3' end,
  and substitution errors drawn from those qualities (a few % overall); or, with `quality="full"`, full-resolution
  Phred scores 2..41 as older instruments (HiSeq 2000/2500) wrote them, which compress far worse;
- SAM-like text for storage tests that need compressible genomic data.

Everything is deterministic for a given seed.
"""

from __future__ import annotations

import gzip
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np

BASES = np.frombuffer(b"ACGT", dtype=np.uint8)
COMP = np.zeros(256, dtype=np.uint8)
COMP[np.frombuffer(b"ACGTN", dtype=np.uint8)] = np.frombuffer(b"TGCAN", dtype=np.uint8)
QBINS = np.array([2, 12, 23, 37])
QCHARS = (QBINS + 33).astype(np.uint8)


@dataclass
class SynthResult:
    reference: Path
    reads1: Path
    reads2: Path
    ref_bases: int
    pairs: int
    error_rate: float


def make_reference(length: int, rng: np.random.Generator, *, contigs: int = 2) -> list[tuple[str, np.ndarray]]:
    """Contigs with GC drifting between 35% and 60% and a few copied repeats."""
    out = []
    per = length // contigs
    for c in range(contigs):
        n = per if c < contigs - 1 else length - per * (contigs - 1)
        block = 10_000
        gc = np.clip(0.45 + np.cumsum(rng.normal(0, 0.02, size=n // block + 1)), 0.35, 0.60)
        p_gc = np.repeat(gc, block)[:n]
        u = rng.random(n)
        is_gc = u < p_gc
        pick = rng.random(n) < 0.5
        seq = np.where(is_gc, np.where(pick, ord("G"), ord("C")), np.where(pick, ord("A"), ord("T"))).astype(np.uint8)
        for _ in range(max(1, n // 200_000)):  # repeats: copies of 1-5 kb elsewhere
            L = int(rng.integers(1000, 5000))
            if n > 3 * L:
                src, dst = rng.integers(0, n - L, size=2)
                seq[dst : dst + L] = seq[src : src + L]
        out.append((f"chr{c + 1}", seq))
    return out


def write_fasta(path: Path, contigs: list[tuple[str, np.ndarray]], width: int = 60) -> None:
    with open(path, "wb") as fh:
        for name, seq in contigs:
            fh.write(f">{name} synthetic\n".encode())
            n = len(seq)
            full = n // width
            body = seq[: full * width].reshape(full, width)
            lines = np.hstack([body, np.full((full, 1), ord("\n"), dtype=np.uint8)])
            fh.write(lines.tobytes())
            if n % width:
                fh.write(seq[full * width :].tobytes() + b"\n")


QUALITY_MODES = ("binned", "full")


def qualities(n: int, length: int, rng: np.random.Generator, mode: str = "binned") -> np.ndarray:
    """Binned Phred scores: mostly Q37, degrading toward the 3' end, with dips.  mode="full": every score from 2 to
    41, around a mean that falls from 38 to 26 along the read, with per-read and per-base noise."""
    pos = np.arange(length) / max(1, length - 1)
    if mode == "full":
        mean = 38.0 - 12.0 * pos**2
        per_read = rng.normal(0, 2.0, size=(n, 1))
        q = np.rint(mean + per_read + rng.normal(0, 3.5, size=(n, length)))
        return np.clip(q, 2, 41).astype(np.int64)
    p_bad = 0.02 + 0.10 * pos**2  # chance a position falls out of the top bin
    u = rng.random((n, length))
    q = np.full((n, length), 3, dtype=np.int8)
    q[u < p_bad] = 2
    q[u < p_bad * 0.35] = 1
    q[u < p_bad * 0.08] = 0
    dips = rng.random(n) < 0.03  # a few reads with a bad stretch
    if dips.any():
        start = rng.integers(0, length - 10, size=dips.sum())
        for row, s in zip(np.flatnonzero(dips), start):
            q[row, s : s + 10] = np.minimum(q[row, s : s + 10], 1)
    return QBINS[q]


def _apply_errors(reads: np.ndarray, q: np.ndarray, rng: np.random.Generator) -> int:
    p_err = 10.0 ** (-q / 10.0)
    hit = rng.random(reads.shape) < p_err
    k = int(hit.sum())
    if k:
        shift = rng.integers(1, 4, size=k)
        idx = np.searchsorted(BASES, reads[hit])
        reads[hit] = BASES[(idx + shift) % 4]
    return k


def simulate_pairs(contigs: list[tuple[str, np.ndarray]], pairs: int, rng: np.random.Generator, *, read_len: int = 150,
                   insert_mean: int = 350, insert_sd: int = 50, quality: str = "binned") -> Iterator[tuple]:
    """Yield chunks of (names, r1, q1, r2, q2) arrays."""
    chunk = 20_000
    sizes = np.array([len(s) for _n, s in contigs], dtype=float)
    made = 0
    while made < pairs:
        n = min(chunk, pairs - made)
        which = rng.choice(len(contigs), size=n, p=sizes / sizes.sum())
        frag = np.clip(rng.normal(insert_mean, insert_sd, size=n).astype(int), read_len + 10, None)
        r1 = np.empty((n, read_len), dtype=np.uint8)
        r2 = np.empty((n, read_len), dtype=np.uint8)
        for ci, (_name, seq) in enumerate(contigs):
            rows = np.flatnonzero(which == ci)
            if not len(rows):
                continue
            start = rng.integers(0, len(seq) - frag[rows] - 1)
            idx1 = start[:, None] + np.arange(read_len)
            idx2 = (start + frag[rows] - 1)[:, None] - np.arange(read_len)
            r1[rows] = seq[idx1]
            r2[rows] = COMP[seq[idx2]]
        flip = rng.random(n) < 0.5  # either strand
        r1[flip], r2[flip] = r2[flip].copy(), r1[flip].copy()
        q1 = qualities(n, read_len, rng, quality)
        q2 = qualities(n, read_len, rng, quality)
        errs = _apply_errors(r1, q1, rng) + _apply_errors(r2, q2, rng)
        yield made, r1, q1, r2, q2, errs
        made += n


def _fastq_block(start: int, mate: int, reads: np.ndarray, q: np.ndarray) -> bytes:
    out = bytearray()
    quals = (q + 33).astype(np.uint8)
    for i in range(len(reads)):
        out += b"@synth_%d/%d\n" % (start + i, mate)
        out += reads[i].tobytes()
        out += b"\n+\n"
        out += quals[i].tobytes()
        out += b"\n"
    return bytes(out)


def synth(outdir: Path, *, ref_bases: int = 5_000_000, pairs: int = 100_000, read_len: int = 150,
          seed: int = 1, level: int = 6, quality: str = "binned") -> SynthResult:
    outdir.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(seed)
    contigs = make_reference(ref_bases, rng)
    ref = outdir / "ref.fa"
    write_fasta(ref, contigs)
    r1p, r2p = outdir / "reads_1.fq.gz", outdir / "reads_2.fq.gz"
    errors = 0
    with gzip.open(r1p, "wb", compresslevel=level) as f1, gzip.open(r2p, "wb", compresslevel=level) as f2:
        for start, r1, q1, r2, q2, errs in simulate_pairs(contigs, pairs, rng, read_len=read_len, quality=quality):
            f1.write(_fastq_block(start, 1, r1, q1))
            f2.write(_fastq_block(start, 2, r2, q2))
            errors += errs
    return SynthResult(ref, r1p, r2p, ref_bases, pairs, errors / (2 * pairs * read_len))


def fastq_text(nbytes: int, seed: int = 1, read_len: int = 150, quality: str = "binned",
               ref_bases: int | None = None) -> bytes:
    """About nbytes of FASTQ text (for storage tests that need genomic-like data).  The reference is nbytes/20
    bases unless `ref_bases` says otherwise: a small one makes reads overlap (high coverage), which long-window
    codecs exploit more than a real run's low coverage per file region allows."""
    rng = np.random.default_rng(seed)
    contigs = make_reference(ref_bases or max(100_000, nbytes // 20), rng, contigs=1)
    per = 2 * read_len + 20
    pairs = max(1, nbytes * 5 // (8 * per)) + 1  # overestimate; the loop stops at nbytes
    out = bytearray()
    for start, r1, q1, r2, q2, _e in simulate_pairs(contigs, pairs, rng, read_len=read_len, quality=quality):
        out += _fastq_block(start, 1, r1, q1)
        out += _fastq_block(start, 2, r2, q2)
        if len(out) >= nbytes:
            break
    return bytes(out[:nbytes])
