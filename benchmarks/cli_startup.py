"""Start-up time of the `iolens` command: `--help`, `--version` and `profile --help`, against `python -c pass`.

    python benchmarks/cli_startup.py [--runs 21] [--iolens PATH]

Runs each command N times, interleaved (so a burst of load hits them all alike), and prints the median and the
minimum wall time and the median CPU time (user + system, a steadier figure on a shared machine) of each, and
what each adds to the interpreter's own start-up.  Target: `iolens --help` and `--version` under 60 ms.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

TARGET_S = 0.060


def run_once(argv: list[str]) -> tuple[float, float]:
    """(wall, CPU) seconds of one run; CPU is the child's user + system time."""
    t0 = time.perf_counter()
    child = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    _, status, ru = os.wait4(child.pid, 0)
    wall = time.perf_counter() - t0
    child.returncode = os.waitstatus_to_exitcode(status)  # reaped here, for its rusage
    if os.waitstatus_to_exitcode(status) != 0:
        sys.exit(f"{' '.join(argv)} failed with status {os.waitstatus_to_exitcode(status)}")
    return wall, ru.ru_utime + ru.ru_stime


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=21)
    ap.add_argument("--iolens", help="the iolens script [default: the one next to this Python, else on PATH]")
    args = ap.parse_args()
    exe = args.iolens or str(Path(sys.executable).with_name("iolens"))
    if not os.path.exists(exe):
        exe = shutil.which("iolens") or sys.exit("no iolens script: install iolens or give --iolens")
    cases = {"python -c pass": [sys.executable, "-c", "pass"], "iolens --help": [exe, "--help"],
             "iolens --version": [exe, "--version"], "iolens profile --help": [exe, "profile", "--help"]}
    for argv in cases.values():  # warm the page cache and the bytecode caches
        run_once(argv)
    times: dict[str, list[tuple[float, float]]] = {k: [] for k in cases}
    for _ in range(args.runs):
        for name, argv in cases.items():
            times[name].append(run_once(argv))
    floor = statistics.median(w for w, _ in times["python -c pass"])
    print(f"{exe}, {args.runs} runs each, interleaved; load average {os.getloadavg()[0]:.1f} on "
          f"{os.cpu_count()} CPUs")
    print(f"{'command':<24} {'median':>8} {'min':>8} {'CPU':>8} {'over python':>12}")
    for name, ts in times.items():
        wall = statistics.median(w for w, _ in ts)
        cpu = statistics.median(c for _, c in ts)
        print(f"{name:<24} {wall * 1e3:>6.1f}ms {min(w for w, _ in ts) * 1e3:>6.1f}ms {cpu * 1e3:>6.1f}ms "
              f"{(wall - floor) * 1e3:>+10.1f}ms")
    worst = max(statistics.median(w for w, _ in times[k]) for k in ("iolens --help", "iolens --version"))
    print(f"target: iolens --help and --version under {TARGET_S * 1e3:.0f} ms (median): "
          f"{'met' if worst < TARGET_S else 'NOT met'} ({worst * 1e3:.1f} ms)")


if __name__ == "__main__":
    main()
