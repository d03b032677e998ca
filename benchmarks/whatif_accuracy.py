"""How close replay and predict come to real runs: step x target -> actual, replayed, predicted, error %.

Each step is profiled once (with --trace) on the first target, then replayed and predicted on every target, and run
for real there (RUNS interleaved runs, median).  Targets: a directory on tmpfs, one on the root disk, and any
`lab:NAME` given on the command line (bring the lab up first; this script never starts it).

    python benchmarks/whatif_accuracy.py [--runs 5] [--scale 1] [lab:hdd ...]
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

from iolens.bench.targets import resolve
from iolens.capture.record import Recording
from iolens.synth import fastq_text, synth
from iolens.whatif.plan import build_plan
from iolens.whatif.predict import calibrate, predict, step_model
from iolens.whatif.replay import replay_on

STEPS = {
    "minimap2-sam": ["minimap2", "-a", "-t", "2", "ref.fa", "reads_1.fq.gz", "-o", "out.sam"],
    "sort-spill": ["samtools", "sort", "-m", "1M", "-o", "sorted.bam", "in.sam"],
    "index": ["samtools", "index", "in.bam"],
    "gzip-fastq": ["sh", "-c", "gzip -1 -c reads.fq > reads.fq.gz"],
    "small-files": ["sh", "-c", "mkdir -p sf && i=0; while [ $i -lt 2000 ]; do echo $i > sf/f$i; i=$((i+1)); done; "
                    "ls sf > list && cat sf/* > all && rm -r sf"],
}
OUTPUTS = ["out.sam", "sorted.bam", "in.bam.bai", "reads.fq.gz", "list", "all", "sf"]


def prepare(work: Path, scale: float) -> None:
    s = synth(work / "syn", ref_bases=int(2_000_000 * scale), pairs=int(40_000 * scale), seed=3)
    shutil.copy(s.reference, work / "ref.fa")
    shutil.copy(s.reads1, work / "reads_1.fq.gz")
    (work / "reads.fq").write_bytes(fastq_text(int(40_000_000 * scale)))
    subprocess.run(["minimap2", "-a", "-t", "2", "ref.fa", "reads_1.fq.gz", "-o", "in.sam"], cwd=work, check=True,
                   capture_output=True)
    subprocess.run(["samtools", "sort", "-o", "in.bam", "in.sam"], cwd=work, check=True, capture_output=True)


def clean(work: Path) -> None:
    for name in OUTPUTS:
        p = work / name
        if p.is_dir():
            shutil.rmtree(p)
        elif p.exists():
            p.unlink()


def real_run(work: Path, argv: list[str]) -> float:
    clean(work)
    t = time.perf_counter()
    subprocess.run(argv, cwd=work, check=True, capture_output=True)
    return time.perf_counter() - t


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--scale", type=float, default=1.0)
    ap.add_argument("labs", nargs="*")
    a = ap.parse_args()
    bases = [tempfile.mkdtemp(prefix="whatif-", dir="/dev/shm"), tempfile.mkdtemp(prefix="whatif-", dir="/var/tmp")]
    names = ["tmpfs", "rootdisk"] + a.labs
    try:
        targets = [resolve(b) for b in bases] + [resolve(s) for s in a.labs]
        works = []
        for t in targets:
            w = Path(tempfile.mkdtemp(prefix="whatif-work-", dir=t.path))
            prepare(w, a.scale)
            works.append(w)
        home = 1  # profiled on the root disk
        caps = {}
        for step, argv in STEPS.items():
            clean(works[home])
            res = Recording(argv, trace=True, cwd=str(works[home])).run()
            caps[step] = res.capture
        actual: dict[tuple[str, str], list[float]] = {}
        for _ in range(a.runs):
            for step, argv in STEPS.items():
                for n, w in zip(names, works):
                    actual.setdefault((step, n), []).append(real_run(w, argv))
        cals = [calibrate(t, refresh=True) for t in targets]
        errs_r, errs_p = [], []
        print(f"{'step':<14} {'target':<10} {'actual':>8} {'replayed':>9} {'err':>7} {'predicted':>10} {'err':>7}")
        for step in STEPS:
            plan = build_plan(caps[step])
            model = step_model(caps[step])
            for i, (n, t) in enumerate(zip(names, targets)):
                act = statistics.median(actual[(step, n)])
                rep = statistics.median(replay_on(plan, t).wall_s for _ in range(3))
                pred = predict(model, cals[i], cals[home], n).wall_s
                er, ep = (rep - act) / act * 100, (pred - act) / act * 100
                errs_r.append(abs(er))
                errs_p.append(abs(ep))
                print(f"{step:<14} {n:<10} {act:>7.3f}s {rep:>8.3f}s {er:>+6.1f}% {pred:>9.3f}s {ep:>+6.1f}%")
        print(f"mean absolute error: replay {statistics.mean(errs_r):.1f}%, predict {statistics.mean(errs_p):.1f}%")
    finally:
        for b in bases:
            shutil.rmtree(b, ignore_errors=True)
        for w in locals().get("works", []):
            shutil.rmtree(w, ignore_errors=True)


if __name__ == "__main__":
    main()
