"""Aggregate of N clients against N x one client: `iolens bench --clients N` at N = 1, 2, 4 on tmpfs, a disk and,
with --lab, lab targets (a loop ext4 and emulated disks, whose per-target limits cap the aggregate).

Runs the streams suite (file per client, one segmented and one strided shared file, stonewalled writes, neighbour
reads) and the meta suite (a directory per client and one shared directory) for each N, repeats each point, and
prints the median last-done aggregate with, in brackets, its ratio to N x the one-client figure.  Usage:

    python benchmarks/multi_client.py --disk /var/tmp --repeat 3 --runtime 1 --lab
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from typing import Iterator

from iolens.bench.suites import parse_size

PHASES = ["file-per-client write", "file-per-client read (neighbour)", "shared-file write",
          "shared-file read (neighbour)", "strided-file write", "strided-file read (neighbour)",
          "meta-create", "meta-stat", "meta-shared-create", "meta-shared-stat"]
IOLENS = [sys.executable, "-m", "iolens"]


def run(target: str, n: int, size: str, args: argparse.Namespace, env: dict[str, str]) -> dict[str, float]:
    cmd = IOLENS + ["bench", target, "--clients", str(n), "--suite", "streams", "--suite", "meta", "--runtime",
                    str(args.runtime), "--size", size, "--files", str(args.files), "--json", "-", "-q", "--no-store"]
    p = subprocess.run(cmd, capture_output=True, text=True, env=env)
    if p.returncode:
        sys.exit(f"failed ({p.returncode}): {' '.join(cmd)}\n{p.stderr}")
    doc = json.loads(p.stdout)
    for w in doc["warnings"]:
        print(f"warning: {target} N={n}: {w}", file=sys.stderr)
    return {r["phase"]: (r["last_done_Bps"] if r["bytes"] else r["last_done_iops"]) or 0.0 for r in doc["results"]}


def fmt(v: float, phase: str) -> str:
    return f"{v / 1e6:,.0f} MB/s" if "meta" not in phase else f"{v:,.0f} ops/s"


@contextlib.contextmanager
def lab(targets: list[str], args: argparse.Namespace) -> Iterator[tuple[str, dict[str, str]]]:
    """A lab under a temporary directory with the given targets, taken down afterwards; yields (dir, env)."""
    with tempfile.TemporaryDirectory(prefix="iolens-multi-lab-") as d:
        up = subprocess.run(IOLENS + ["lab", "up", "--dir", d, "--only", ",".join(targets), "--size", args.lab_size,
                                      "--disk-size", args.lab_size, "-q"], capture_output=True, text=True)
        try:
            if up.returncode:
                sys.exit(f"iolens lab up failed:\n{up.stdout}{up.stderr}")
            yield d, dict(os.environ, IOLENS_LAB_DIR=d)
        finally:
            subprocess.run(IOLENS + ["lab", "down", "--dir", d], capture_output=True)


def limits(d: str, env: dict[str, str]) -> dict[str, str]:
    """Each lab target's stated limit, for the table's notes."""
    p = subprocess.run(IOLENS + ["lab", "status", "--dir", d, "--json"], capture_output=True, text=True, env=env)
    out = {}
    for t in json.loads(p.stdout or "{}").get("targets", []):
        lim = t.get("limits") or {}
        if lim.get("read_bps"):
            out[t["name"]] = (f"{lim['read_bps'] / 2**20:g} MiB/s, {lim.get('read_iops') or '-'} IOPS "
                              "(per target, shared by every client)")
    return out


def table(name: str, target: str, size: str, ns: list[int], args: argparse.Namespace, env: dict[str, str]) -> None:
    med: dict[int, dict[str, float]] = {}
    for n in ns:
        reps = [run(target, n, size, args, env) for _ in range(args.repeat)]
        med[n] = {p: statistics.median(r.get(p, 0.0) for r in reps) for p in PHASES}
    one = med[ns[0]]
    for p in PHASES:
        cells = [f"{fmt(med[n][p], p)} ({med[n][p] / (n * one[p]) if one[p] else float('nan'):.2f})" for n in ns]
        print(f"| {name} | {p} | " + " | ".join(cells) + " |", flush=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tmpfs", default="/dev/shm")
    ap.add_argument("--disk", default="/var/tmp", help="a directory on the root disk")
    ap.add_argument("--clients", default="1,2,4")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--runtime", type=float, default=1.0, help="stonewall, seconds")
    ap.add_argument("--size", default="4G", help="bytes per client (the stonewall stops writes first)")
    ap.add_argument("--files", type=int, default=10000,
                    help="metadata files per client (a 1 GiB lab ext4 has 65,536 inodes: keep 4 x FILES below it)")
    ap.add_argument("--lab", action="store_true", help="also bring up lab targets under a temporary directory")
    ap.add_argument("--lab-targets", default="ext4,magnetic,gp3", help="lab targets for --lab")
    ap.add_argument("--lab-size", default="1G", help="size of each lab target (loop image, emulated disk)")
    args = ap.parse_args()
    ns = [int(x) for x in args.clients.split(",")]
    print(f"# {' '.join(sys.argv)}")
    print(f"# {time.strftime('%Y-%m-%d %H:%M')} {platform.node()}, {os.cpu_count()} CPUs, load average "
          f"{' '.join(f'{x:.1f}' for x in os.getloadavg())}; median of {args.repeat}, stonewall {args.runtime:g} s; "
          "last-done aggregate (aggregate / (N x one client))")
    print("| target | phase | " + " | ".join(f"N={n}" for n in ns) + " |")
    print("|---|---|" + "---|" * len(ns))
    for name, target in (("tmpfs", args.tmpfs), ("disk", args.disk)):
        table(name, target, args.size, ns, args, dict(os.environ))
    if args.lab:
        targets = args.lab_targets.split(",")
        # a lab target holds every client's data: at most a fifth of it per client
        per_client = f"{max(16 << 20, parse_size(args.lab_size) // (5 * max(ns))) >> 20}M"
        with lab(targets, args) as (d, env):
            lims = limits(d, env)
            for t in targets:
                table(f"lab:{t}", f"lab:{t}", per_client, ns, args, env)
            for t in targets:
                if t in lims:
                    print(f"# lab:{t} limit: {lims[t]}")
        print(f"# lab targets: {per_client} per client")


if __name__ == "__main__":
    main()
