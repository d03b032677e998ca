"""Two builds of the interposer (or more) against each other, interleaved in one run.

    python benchmarks/preload_ab.py OLD.so NEW.so [--workload write] [--calls 1000000] [--rounds 15]

Runs tests/native/hotloop.c's WORKLOAD (write: one-byte write() calls to a file in a temporary directory on the
current filesystem; fputc, fread, stat, openclose as in profile_overhead.py) plain and under each library, with the
variables `iolens profile` sets (IOLENS_DIR on /dev/shm), the order shuffled in every round.  Prints, per library,
the median CPU time per call and the median over rounds of (library - plain) in the same round: a difference
between two builds that is smaller than the spread between moments (profile_overhead.py's runs) shows up here.
Page cache warm; the default clock (TSC where safe).
"""

from __future__ import annotations

import argparse
import os
import random
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent.parent


def cpu_ns_per_call(argv: list[str], env: dict, calls: int) -> float:
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    subprocess.run(argv, env=env, check=True)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime) / calls * 1e9


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("libs", nargs="+", type=Path, help="preload libraries to compare")
    ap.add_argument("--workload", default="write", choices=["write", "fputc", "fread", "stat", "openclose"])
    ap.add_argument("--calls", type=int, default=1_000_000)
    ap.add_argument("--rounds", type=int, default=15)
    args = ap.parse_args()
    for lib in args.libs:
        if not lib.is_file():
            sys.exit(f"preload_ab: {lib}: no such file")
    with tempfile.TemporaryDirectory(prefix="iolens-ab-", dir=".") as tmp:
        work = Path(tmp)
        hot = work / "hotloop"
        subprocess.run(["cc", "-O2", "-o", str(hot), str(HERE / "tests" / "native" / "hotloop.c")], check=True)
        path = work / "data.bin"
        path.write_bytes(os.urandom(1 << 20))
        argv = [str(hot), args.workload, str(args.calls), str(path)]
        names = ["plain", *(str(lib) for lib in args.libs)]
        times: dict[str, list[float]] = {n: [] for n in names}
        for _ in range(args.rounds):
            order = list(names)
            random.shuffle(order)
            for name in order:
                stage = Path(tempfile.mkdtemp(prefix="iolens-ab-", dir="/dev/shm"))
                env = dict(os.environ)
                if name != "plain":
                    env.update(LD_PRELOAD=str(Path(name).resolve()), IOLENS_DIR=str(stage),
                               IOLENS_PARENT_PID=str(os.getpid()))
                times[name].append(cpu_ns_per_call(argv, env, args.calls))
                shutil.rmtree(stage)
    load = os.getloadavg()[0]
    print(f"# {args.workload} x {args.calls:,}, {args.rounds} interleaved rounds, CPU time of the child per call; "
          f"load average {load:.1f} on {os.cpu_count()} CPUs")
    for name in names:
        added = [a - b for a, b in zip(times[name], times["plain"])]
        print(f"{name}: median {statistics.median(times[name]):.1f} ns/call, added {statistics.median(added):+.1f} ns "
              f"(IQR {statistics.quantiles(added, n=4)[0]:+.1f} .. {statistics.quantiles(added, n=4)[2]:+.1f})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
