"""Aggregate of N clients against N x one client: `iolens bench --clients N` at N = 1, 2, 4 on tmpfs and a disk.

Runs the streams suite (file per client and one shared file, stonewalled writes, neighbour reads) and the meta
suite for each N, repeats each point, and prints the median last-done aggregate, the one-client figure times N and
their ratio.  Usage:

    python benchmarks/multi_client.py --disk /var/tmp --repeat 3 --runtime 1
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys

PHASES = ["file-per-client write", "file-per-client read (neighbour)", "shared-file write",
          "shared-file read (neighbour)", "meta-create", "meta-stat"]


def run(target: str, n: int, args: argparse.Namespace) -> dict[str, float]:
    cmd = [sys.executable, "-m", "iolens", "bench", target, "--clients", str(n), "--suite", "streams",
           "--suite", "meta", "--runtime", str(args.runtime), "--size", args.size, "--files", str(args.files),
           "--json", "-", "-q", "--no-store"]
    out = subprocess.run(cmd, capture_output=True, text=True, check=True).stdout
    doc = json.loads(out)
    got = {}
    for r in doc["results"]:
        got[r["phase"]] = r["last_done_Bps"] if r["bytes"] else r["last_done_iops"]
    return got


def fmt(v: float, phase: str) -> str:
    return f"{v / 1e6:,.0f} MB/s" if "meta" not in phase else f"{v:,.0f} ops/s"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tmpfs", default="/dev/shm")
    ap.add_argument("--disk", default="/var/tmp", help="a directory on the root disk")
    ap.add_argument("--clients", default="1,2,4")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--runtime", type=float, default=1.0, help="stonewall, seconds")
    ap.add_argument("--size", default="4G", help="bytes per client (the stonewall stops writes first)")
    ap.add_argument("--files", type=int, default=20000, help="metadata files per client")
    args = ap.parse_args()
    ns = [int(x) for x in args.clients.split(",")]
    print("| target | phase | " + " | ".join(f"N={n} aggregate (x N·single)" for n in ns) + " |")
    print("|---|---|" + "---|" * len(ns))
    for name, target in (("tmpfs", args.tmpfs), ("disk", args.disk)):
        med: dict[int, dict[str, float]] = {}
        for n in ns:
            reps = [run(target, n, args) for _ in range(args.repeat)]
            med[n] = {p: statistics.median(r[p] for r in reps) for p in PHASES}
        one = med[ns[0]]
        for p in PHASES:
            cells = [f"{fmt(med[n][p], p)} ({med[n][p] / (n * one[p]):.2f})" for n in ns]
            print(f"| {name} | {p} | " + " | ".join(cells) + " |", flush=True)


if __name__ == "__main__":
    main()
