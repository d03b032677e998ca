"""Wall time of `iolens compress FILE` with no options, on a 10 MiB VCF and a 10 MiB FASTQ.

The time budget of the default is shown here, not in unit tests (tests check the count of codec/level pairs and that
the adaptive repetition stops).  The inputs are made locally:

- VCF: a realistic multi-sample VCF 4.2 body (## header lines, CHROM..FORMAT + 20 samples, increasing positions,
  dbSNP-like IDs, INFO with DP/AF/AC/AN, GT:DP:GQ genotype fields drawn from allele frequencies), 10 MiB;
- FASTQ: the first 10 MiB of `iolens data synth` reads (binned qualities), decompressed.

    python benchmarks/compress_default.py --iolens PATH/TO/iolens [--iolens OTHER/iolens] [--workdir DIR]

Each `--iolens` is run on both files in turn, with stdout to a pipe; the table gives wall and CPU seconds and the
machine's load average before each run (the figures depend on it).
"""

from __future__ import annotations

import argparse
import gzip
import os
import random
import resource
import subprocess
import tempfile
import time
from pathlib import Path

MiB = 1 << 20
SIZE = 10 * MiB
SAMPLES = 20


def make_vcf(path: Path, size: int = SIZE, seed: int = 1) -> None:
    rng = random.Random(seed)
    head = ["##fileformat=VCFv4.2", "##source=iolens-benchmark", "##reference=GRCh38",
            *(f"##contig=<ID=chr{c},length={n}>" for c, n in ((1, 248956422), (2, 242193529))),
            '##INFO=<ID=DP,Number=1,Type=Integer,Description="Total depth">',
            '##INFO=<ID=AF,Number=A,Type=Float,Description="Allele frequency">',
            '##INFO=<ID=AC,Number=A,Type=Integer,Description="Allele count">',
            '##INFO=<ID=AN,Number=1,Type=Integer,Description="Allele number">',
            '##FORMAT=<ID=GT,Number=1,Type=String,Description="Genotype">',
            '##FORMAT=<ID=DP,Number=1,Type=Integer,Description="Read depth">',
            '##FORMAT=<ID=GQ,Number=1,Type=Integer,Description="Genotype quality">',
            "\t".join(["#CHROM", "POS", "ID", "REF", "ALT", "QUAL", "FILTER", "INFO", "FORMAT",
                       *(f"S{i:03d}" for i in range(SAMPLES))])]
    out = ["\n".join(head) + "\n"]
    n, pos = len(out[0]), 10000
    while n < size:
        pos += int(rng.expovariate(1 / 300)) + 1
        ref = rng.choice("ACGT")
        alt = rng.choice([b for b in "ACGT" if b != ref]) if rng.random() < 0.9 else ref + rng.choice("ACGT") * 2
        af = min(0.99, rng.betavariate(0.3, 2))
        gts = []
        ac = 0
        for _ in range(SAMPLES):
            a, b = int(rng.random() < af), int(rng.random() < af)
            ac += a + b
            gts.append(f"{a}/{b}:{rng.randint(8, 60)}:{min(99, int(rng.gauss(60, 25)) if a + b else 99)}")
        rs = f"rs{rng.randint(1000, 99999999)}" if rng.random() < 0.7 else "."
        line = "\t".join(["chr1", str(pos), rs, ref, alt, f"{rng.uniform(20, 5000):.1f}",
                          "PASS" if rng.random() < 0.9 else "LowQual",
                          f"DP={rng.randint(200, 1500)};AF={ac / (2 * SAMPLES):.3f};AC={ac};AN={2 * SAMPLES}",
                          "GT:DP:GQ", *gts]) + "\n"
        out.append(line)
        n += len(line)
    path.write_bytes("".join(out).encode()[:size].rsplit(b"\n", 1)[0] + b"\n")


def make_fastq(path: Path, iolens: str, work: Path, size: int = SIZE) -> None:
    subprocess.run([iolens, "data", "synth", "-o", str(work / "synth"), "--pairs", "40000", "--force"], check=True,
                   stdout=subprocess.DEVNULL)
    with gzip.open(work / "synth" / "reads_1.fq.gz", "rb") as f:
        data = f.read(size + 4096)
    data = data[:size]
    # cut at a record boundary: the last complete 4-line record
    lines = data.split(b"\n")
    keep = (len(lines) - 1) // 4 * 4
    path.write_bytes(b"\n".join(lines[:keep]) + b"\n")


def time_one(iolens: str, path: Path, db: Path) -> tuple[float, float, float, int]:
    load = os.getloadavg()[0]
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t = time.perf_counter()
    p = subprocess.run([iolens, "compress", str(path), "--db", str(db)], stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE)
    wall = time.perf_counter() - t
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    if p.returncode != 0:
        print(p.stderr.decode(errors="replace")[-2000:])
    return wall, cpu, load, p.returncode


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--iolens", action="append", required=True, help="an iolens executable (repeat to compare)")
    ap.add_argument("--workdir", type=Path, default=None)
    ap.add_argument("--only", choices=("vcf", "fastq"), default=None)
    a = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="iolens-compress-default-") as tmp:
        work = a.workdir or Path(tmp)
        work.mkdir(parents=True, exist_ok=True)
        vcf, fq = work / "calls.vcf", work / "reads.fq"
        if not vcf.exists():
            make_vcf(vcf)
        if not fq.exists():
            make_fastq(fq, a.iolens[0], work)
        files = [f for f in (vcf, fq) if a.only is None or f.suffix.lstrip(".").startswith(a.only[:2])]
        print(f"{'iolens':40} {'input':10} {'MiB':>5} {'wall s':>7} {'CPU s':>7} {'load':>5} rc", flush=True)
        for exe in a.iolens:
            for f in files:
                wall, cpu, load, rc = time_one(exe, f, work / "results.sqlite")
                print(f"{exe[-40:]:40} {f.name:10} {f.stat().st_size / MiB:5.1f} {wall:7.1f} {cpu:7.1f} "
                      f"{load:5.1f} {rc}", flush=True)


if __name__ == "__main__":
    main()
