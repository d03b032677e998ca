"""What the kernel's own reclaim of idle memory (DAMON) costs a step's real run on a throttled disk.

Brings up `lab:magnetic` (root), lays out the accuracy benchmark's inputs there, and runs one of its steps
(`samtools sort -m 1M` by default) after each idle time in --idles, warm as the accuracy benchmark makes it
(inputs and programs read back, writeback settled): first with the reclaim as the machine has it, then with it
turned off (pagecache.reclaim_paused).  Prints each run's wall time and what the disk read and wrote during it:
reads there are the filesystem's metadata the reclaim took, which no read of the inputs brings back.

    python benchmarks/idle_reclaim.py [--step sort-spill] [--idles 0,0,120,0,120,0]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from whatif_accuracy import STEPS, clean, lab_down, lab_up, prepare, real_run  # noqa: E402

from iolens.workspace.target import resolve  # noqa: E402
from iolens.pagecache import proactive_reclaim, reclaim_paused  # noqa: E402


def runs(work: Path, argv: list[str], idles: list[float], label: str) -> None:
    for idle in idles:
        clean(work)  # the last run's outputs gone before the idle, so nothing untimed touches the disk after it
        time.sleep(idle)
        io: list = []
        wall = real_run(work, argv, io)  # inputs and programs read back, writeback settled, then timed
        _w, rd, wr = io[0]
        seen = f"read {rd / 1e6:.2f} MB, wrote {wr / 1e6:.2f} MB" if rd is not None else "no device"
        print(f"reclaim {label:<3} idle {idle:5.0f} s: real {wall:.3f} s; the disk during it: {seen}", flush=True)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--step", default="sort-spill", choices=sorted(STEPS))
    ap.add_argument("--idles", default="0,0,120,0,120,0", help="seconds idle before each run, comma-separated")
    a = ap.parse_args()
    idles = [float(x) for x in a.idles.split(",")]
    age = proactive_reclaim()
    if age is None:
        raise SystemExit("no DAMON reclaim runs on this machine: nothing to measure")
    print(f"the kernel pages out memory idle {age:.0f} s (DAMON); lab:magnetic is emulated (nbdkit rate+delay); "
          "cache warm (inputs and programs read back, writeback settled before each run)")
    lab, up = lab_up(["magnetic"])
    try:
        if not up:
            raise SystemExit("lab:magnetic did not come up (root, nbdkit and nbd needed)")
        t = resolve("lab:magnetic")
        assert t.path is not None
        work = Path(tempfile.mkdtemp(prefix="idle-", dir=t.path))
        prepare(work, 1.0)
        argv = STEPS[a.step]
        runs(work, argv, idles, "on")
        with reclaim_paused() as paused:
            if not paused:
                raise SystemExit("the reclaim could not be turned off (root needed)")
            runs(work, argv, idles, "off")
    finally:
        lab_down(lab)


if __name__ == "__main__":
    main()
