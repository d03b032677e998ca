#!/usr/bin/env python3
"""The small-file step replayed by two builds of iolens: this one and an older checkout, on each one's capture.

    python benchmarks/replay_builds.py --old CHECKOUT [--rounds 9] [--dir /dev/shm] [--files 2000]

CHECKOUT is another clone of iolens with its native parts built (`dev/build-native` there), for example
`git worktree add ../old COMMIT`.  The step is the accuracy benchmark's small-file step (a shell writing --files
files, `ls`, `cat` of them all, `rm -r`), with stdout and stderr to /dev/null.  It is profiled once by each build;
then each round, in a random order: a plain run, the old build's replay of its capture, this build's replay of
the old capture, and this build's replay of its own, each on --dir (tmpfs by default; warm page cache, nothing
emulated).  Prints the medians and each against the plain runs' median.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

STEP = ("mkdir -p sf && i=0; while [ $i -lt {n} ]; do echo $i > sf/f$i; i=$((i+1)); done; "
        "ls sf > list && cat sf/* > all && rm -r sf")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--old", required=True, type=Path, help="an older iolens checkout, native parts built")
    ap.add_argument("--rounds", type=int, default=9)
    ap.add_argument("--dir", default="/dev/shm")
    ap.add_argument("--files", type=int, default=2000)
    a = ap.parse_args()
    old_src = (a.old / "src").resolve()
    if not (old_src / "iolens" / "_native").is_dir():
        sys.exit(f"{a.old}: no src/iolens/_native there; run dev/build-native in that checkout first")
    step = STEP.format(n=a.files)
    builds = {"old": dict(os.environ, PYTHONPATH=str(old_src)),
              "new": {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}}
    with tempfile.TemporaryDirectory(dir=a.dir, prefix="iolens-builds-") as tmp:
        work, caps = Path(tmp) / "w", Path(tmp)

        def fresh() -> None:
            shutil.rmtree(work, ignore_errors=True)
            work.mkdir()

        def plain() -> float:
            fresh()
            t = time.perf_counter()
            subprocess.run(["sh", "-c", step], cwd=work, check=True, stdout=subprocess.DEVNULL,
                           stderr=subprocess.DEVNULL)
            return time.perf_counter() - t

        def replay(build: str, cap: Path) -> float:
            fresh()
            out = caps / "r.json"
            subprocess.run([sys.executable, "-m", "iolens", "replay", str(cap), "--on", a.dir, "--json", str(out),
                            "--force"], env=builds[build], check=True, capture_output=True)
            return float(json.loads(out.read_text())["targets"][0]["wall_s"])

        for build in builds:
            fresh()
            subprocess.run([sys.executable, "-m", "iolens", "profile", "-q", "--trace", "-o",
                            str(caps / f"{build}.iolens"), "--", "sh", "-c", step], cwd=work, env=builds[build],
                           check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        runs: dict[str, list[float]] = {"plain": [], "old replays old": [], "new replays old": [],
                                        "new replays new": []}
        for _ in range(a.rounds):
            for k in random.sample(list(runs), len(runs)):
                runs[k].append(plain() if k == "plain" else
                               replay(k.split()[0], caps / f"{k.split()[-1]}.iolens"))
    base = statistics.median(runs["plain"])
    print(f"# {a.rounds} rounds in random order, the small-file step ({a.files} files) on {a.dir}; warm cache, "
          "not emulated; replayed wall against the plain runs' median")
    for k, v in runs.items():
        print(f"{k:16s} {statistics.median(v) * 1e3:7.1f} ms  {statistics.median(v) / base:6.3f}x")


if __name__ == "__main__":
    main()
