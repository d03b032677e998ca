#!/usr/bin/env python3
"""Whether a CPU-bound step's real runs move with the machine while its replay cannot: the same work, timed again
and again beside a replay of one capture of it, with the steal and two probes around every run.

    python benchmarks/cpu_drift.py [--rounds 16] [--dir /dev/shm] [--mb 20] [--step "pigz -1 -p 2"]

In a directory under --dir (tmpfs by default; warm page cache, nothing emulated), on --mb MB of synthetic FASTQ:
one capture of `STEP -c reads.fq > reads.fq.gz` (with --trace), then --rounds rounds of a plain run, a replay of
that capture, and two probes run in this process: one gathering at random from a 32 MB array (the memory system)
and one whose array fits in the cache.  Per round it prints each run's wall time and CPU time (the plain run's
from its rusage, the replay's burnt on its threads' CPU clocks) and the steal around it (from /proc/stat); then
the ranges, the medians, and the correlation of the plain runs' CPU time with each probe's.  A replay burns the
recorded CPU time, so where the same work takes more CPU time from one run to the next (and no steal explains
it), a replay that burns the recorded CPU time cannot follow; one that burns the capture's work (its CPU probe,
see docs/whatif.md) follows as far as the burn loop slows with the step, which the correlation of its burnt CPU
with the real runs' says; the probe it correlates with says what the step's speed follows.
"""

from __future__ import annotations

import argparse
import resource
import shutil
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

import numpy as np

from iolens.workspace.target import resolve
from iolens.capture.record import Recording
from iolens.synth import fastq_text
from iolens.sysinfo import cpu_delta, cpu_seconds
from iolens.whatif.plan import build_plan
from iolens.whatif.replay import replay_on


def probes() -> tuple:
    """Two probes: the CPU time of three random gathers over 32 MB, and over an array that fits in the cache."""
    rng = np.random.default_rng(1)
    big, small = np.arange(8 << 20, dtype=np.int32), np.arange(1 << 12, dtype=np.int32)
    at_big, at_small = rng.integers(0, len(big), 4 << 20), rng.integers(0, len(small), 4 << 20)

    def timed(a: np.ndarray, i: np.ndarray) -> float:
        t = time.process_time()
        for _ in range(3):
            int(a[i].sum())
        return time.process_time() - t

    return (lambda: timed(big, at_big)), (lambda: timed(small, at_small))


def stolen(before: dict | None) -> float:
    d = cpu_delta(before, cpu_seconds())
    return d["steal"] if d else float("nan")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=16)
    ap.add_argument("--dir", default="/dev/shm")
    ap.add_argument("--mb", type=float, default=20)
    ap.add_argument("--step", default="pigz -1 -p 2" if shutil.which("pigz") else "gzip -1")
    a = ap.parse_args()
    work = Path(tempfile.mkdtemp(prefix="cpu-drift-", dir=a.dir))
    argv = ["sh", "-c", f"{a.step} -c reads.fq > reads.fq.gz"]
    out = work / "reads.fq.gz"
    try:
        (work / "reads.fq").write_bytes(fastq_text(int(a.mb * 1e6)))
        subprocess.run(argv, cwd=work, check=True)  # warm
        out.unlink()
        cap = Recording(argv, trace=True, cwd=str(work)).run().capture
        out.unlink()
        plan, target = build_plan(cap), resolve(str(work))
        memory, cached = probes()
        print(f"# {a.step} of {a.mb:.0f} MB FASTQ in {work.parent} (warm cache, not emulated); capture "
              f"{cap.meta['wall_s']:.3f} s")
        rows = []
        for k in range(a.rounds):
            c0, r0, t0 = cpu_seconds(), resource.getrusage(resource.RUSAGE_CHILDREN), time.perf_counter()
            subprocess.run(argv, cwd=work, check=True)
            wall, r1, steal = time.perf_counter() - t0, resource.getrusage(resource.RUSAGE_CHILDREN), stolen(c0)
            out.unlink()
            cpu = (r1.ru_utime + r1.ru_stime) - (r0.ru_utime + r0.ru_stime)
            c0 = cpu_seconds()
            r = replay_on(plan, target)
            rows.append((wall, cpu, steal, r.wall_s, sum(r.thread_cpu), stolen(c0), memory(), cached()))
            print(f"round {k + 1:>2}: real {wall:.3f} s, CPU {cpu:.3f} s, steal {steal:.2f} s | replay "
                  f"{r.wall_s:.3f} s, burnt {sum(r.thread_cpu):.3f} s, steal {rows[-1][5]:.2f} s | probes "
                  f"{rows[-1][6]:.3f} s, {rows[-1][7]:.3f} s", flush=True)
        x = np.array(rows)
        for i, name in ((0, "real wall"), (1, "real CPU"), (3, "replay wall"), (4, "replay CPU burnt"),
                        (6, "memory probe"), (7, "cached probe")):
            print(f"{name:<17} {x[:, i].min():.3f}-{x[:, i].max():.3f} s, median {statistics.median(x[:, i]):.3f} s")
        print(f"steal: {np.nansum(x[:, 2]):.2f} s around the real runs, {np.nansum(x[:, 5]):.2f} s around the replays")
        print(f"correlation of the real runs' CPU time with the memory probe {np.corrcoef(x[:, 1], x[:, 6])[0, 1]:.2f}"
              f", with the cached probe {np.corrcoef(x[:, 1], x[:, 7])[0, 1]:.2f}, with the replay's burnt CPU "
              f"{np.corrcoef(x[:, 1], x[:, 4])[0, 1]:.2f}; of the real runs' wall with the replays' "
              f"{np.corrcoef(x[:, 0], x[:, 3])[0, 1]:.2f}")
        print("the replay burns " + ("the capture's work (its CPU time follows the CPU's speed)" if
                                     plan.cpu_ns_per_block else "the capture's CPU time (no CPU probe)"))
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
