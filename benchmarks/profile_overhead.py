#!/usr/bin/env python3
"""Overhead of the iolens interposer: profiled / unprofiled wall time, as the median ratio of
interleaved pairs (the order inside each pair is random, so machine drift spreads evenly).

Workloads (inputs generated locally; cache state: warm — every input is read once before timing):
  samtools sort  of a few hundred MB of SAM (-@ 2)
  minimap2       mapping the synthetic paired reads (-t 2)
  gzip -1        of the reads, decompressed
  write-1B       N one-byte write() calls   (worst case per call)
  fputc          N fputc() calls            (worst case per call)
  true x200      200 short processes        (fixed cost per process)
  vfork x200     200 vfork + exec of true from a program with 8 threads and 64 MB in use
                 (tests/native/vfork_threads.c; --vfork runs only this one, no inputs to prepare)

"interposer" runs set LD_PRELOAD and IOLENS_DIR directly (what the program pays);
"iolens profile" adds the CLI's start-up, merge and summary (what the user waits for, once per run).
strace -f -c runs beside each workload once (on fewer calls for the hot loops, scaled per call).

Usage: benchmarks/profile_overhead.py [--pairs 10] [--sam-mb 300] [--calls 10000000] [--quick] [--vfork]
"""

from __future__ import annotations

import argparse
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def sh(argv, **kw):
    return subprocess.run(argv, check=True, **kw)


def timed(argv, env=None, cwd=None, stdout=subprocess.DEVNULL) -> float:
    t = time.perf_counter()
    subprocess.run(argv, env=env, cwd=cwd, stdout=stdout, stderr=subprocess.DEVNULL, check=True)
    return time.perf_counter() - t


def preload_env(stage: Path) -> dict:
    from iolens.native import preload_library

    env = dict(os.environ)
    env["LD_PRELOAD"] = str(preload_library())
    env["IOLENS_DIR"] = str(stage)
    return env


def interleaved(argv, pairs: int, stage_root: Path, cwd: Path) -> tuple[list[float], list[float]]:
    plain, prof = [], []
    for i in range(pairs):
        stage = stage_root / f"s{i}"
        stage.mkdir()
        order = [0, 1]
        random.shuffle(order)
        for which in order:
            if which == 0:
                plain.append(timed(argv, cwd=cwd))
            else:
                prof.append(timed(argv, env=preload_env(stage), cwd=cwd))
        shutil.rmtree(stage)
    return plain, prof


def strace_time(argv, cwd: Path) -> float | None:
    if shutil.which("strace") is None:
        return None
    return timed(["strace", "-f", "-c", "-o", "/dev/null", *argv], cwd=cwd)


def prepare(args, work: Path, hot: Path) -> list:
    """Generate the inputs and warm the page cache; the workloads that read them."""
    from iolens.synth import synth

    pairs_for_sam = max(20_000, args.sam_mb * 1_000_000 // 700)
    print(f"# preparing inputs in {work} (synthetic reads, SAM of ~{args.sam_mb} MB)", flush=True)
    small = synth(work / "small", ref_bases=5_000_000, pairs=100_000 if not args.quick else 20_000, seed=1)
    big = synth(work / "big", ref_bases=5_000_000, pairs=pairs_for_sam, seed=2)
    sam = work / "big.sam"
    with open(sam, "wb") as fh:
        sh(["minimap2", "-ax", "sr", "-t", "2", str(big.reference), str(big.reads1), str(big.reads2)],
           stdout=fh, stderr=subprocess.DEVNULL)
    fq = work / "reads.fq"
    with open(fq, "wb") as fh:
        sh(["gzip", "-dc", str(small.reads1)], stdout=fh)
    for p in (sam, fq, small.reads1, small.reads2, small.reference):  # warm the page cache
        p.read_bytes()
    return [
        ("samtools sort", ["samtools", "sort", "-@", "2", "-m", "64M", "-T", str(work / "srt"), "-o",
                           str(work / "out.bam"), str(sam)], None),
        ("minimap2", ["minimap2", "-ax", "sr", "-t", "2", "-o", str(work / "aln.sam"), str(small.reference),
                      str(small.reads1), str(small.reads2)], None),
        ("gzip -1", ["sh", "-c", f"gzip -1 -c {fq} > {work}/fq.gz"], None),
        ("write-1B", [str(hot), "write", str(args.calls), str(work / "hot.bin")], args.calls),
        ("fputc", [str(hot), "fputc", str(args.calls), str(work / "hot.txt")], args.calls),
        ("true x200", ["sh", "-c", "for i in $(seq 200); do /bin/true; done"], 200),
    ]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--pairs", type=int, default=10, help="interleaved pairs per workload (default 10)")
    ap.add_argument("--sam-mb", type=int, default=300, help="size of the SAM to sort (default 300 MB)")
    ap.add_argument("--calls", type=int, default=10_000_000, help="calls in the hot loops (default 10 M)")
    ap.add_argument("--quick", action="store_true", help="small sizes, 3 pairs (a smoke run, not a measurement)")
    ap.add_argument("--vfork", action="store_true", help="only the vfork-from-threads workload")
    args = ap.parse_args()
    if args.quick:
        args.pairs, args.sam_mb, args.calls = 3, 30, 1_000_000
    for t in ("cc",) if args.vfork else ("minimap2", "samtools", "gzip", "cc"):
        if shutil.which(t) is None:
            print(f"benchmark needs {t}; run dev/setup as root", file=sys.stderr)
            return 2

    work = Path(tempfile.mkdtemp(prefix="iolens-overhead-"))
    try:
        stage_root = work / "stage"
        stage_root.mkdir()
        here = Path(__file__).resolve().parent.parent
        hot = work / "hotloop"
        sh(["cc", "-O2", "-o", str(hot), str(here / "tests" / "native" / "hotloop.c")])
        vft = work / "vfork_threads"
        sh(["cc", "-O2", "-pthread", "-o", str(vft), str(here / "tests" / "native" / "vfork_threads.c")])
        vfork = ("vfork x200", [str(vft), "8", "200", shutil.which("true") or "/bin/true"], 200)
        workloads = [vfork] if args.vfork else [*prepare(args, work, hot), vfork]
        print(f"# {args.pairs} interleaved pairs per workload; cache state: warm; "
              f"{os.cpu_count()} CPUs; medians")
        print(f"{'workload':<14} {'plain s':>9} {'profiled s':>10} {'ratio':>7} {'ratio IQR':>15} {'overhead':>9} "
              f"{'per call/proc':>14} {'strace ratio':>12}")
        for name, argv, per in workloads:
            plain, prof = interleaved(argv, args.pairs, stage_root, work)
            ratios = [b / a for a, b in zip(plain, prof)]
            med_a, med_b, med_r = statistics.median(plain), statistics.median(prof), statistics.median(ratios)
            q = statistics.quantiles(ratios, n=4) if len(ratios) > 1 else [med_r, med_r, med_r]
            iqr = f"{q[0]:.3f}-{q[2]:.3f}"
            per_txt = ""
            if per:
                added = statistics.median([b - a for a, b in zip(plain, prof)]) / per
                per_txt = f"{added * 1e9:.0f} ns" if per == args.calls else f"{added * 1e3:.3f} ms"
            # strace on a tenth of the calls for the hot loops (it is ~100x slower per call)
            st_argv = argv
            scale = 1.0
            if name in ("write-1B", "fputc"):
                n = max(10_000, args.calls // 100)
                st_argv = [argv[0], argv[1], str(n), argv[3]]
                scale = args.calls / n
                base = timed(st_argv, cwd=work)
                st = strace_time(st_argv, work)
                st_ratio = ((st - base) * scale + med_a) / med_a if st is not None else None
            else:
                st = strace_time(st_argv, work)
                st_ratio = st / med_a if st is not None else None
            st_txt = f"{st_ratio:.2f}" if st_ratio else "n/a"
            print(f"{name:<14} {med_a:9.3f} {med_b:10.3f} {med_r:7.4f} {iqr:>15} {100 * (med_r - 1):8.2f}% "
                  f"{per_txt:>14} {st_txt:>12}", flush=True)
        # end to end: the CLI's own fixed cost (python start-up, merge, summary)
        e2e = []
        for i in range(args.pairs):
            out = work / f"e2e{i}.iolens"
            e2e.append(timed([sys.executable, "-m", "iolens", "profile", "-q", "-o", str(out), "--", "true"]))
        print(f"# iolens profile -- true (CLI start-up + merge + summary): median {statistics.median(e2e):.3f} s")
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
