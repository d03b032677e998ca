"""What a replay itself costs, on a step with a million operations: `dd bs=1` (one read and one write per byte)
profiled with --trace, then converted and replayed at full speed (--speed max: no gaps).

Prints the step's own I/O time (the sum of its traced calls), and the replay's costs: converting the capture to a
plan (Python), the replayer reading its job, and the replayer's time outside the file calls it makes (its loop, its
clock reads and its bookkeeping), per op and against the step's I/O time.

    python benchmarks/replay_cost.py [--ops 1000000] [--dir DIR] [--runs 3]
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from iolens.workspace.target import resolve
from iolens.capture.record import Recording
from iolens.whatif.plan import build_plan
from iolens.whatif.replay import replay_on


def measure(n_ops: int, where: str, runs: int = 3) -> dict[str, Any]:
    """The costs of converting and replaying a traced `dd bs=1` of n_ops / 2 bytes on the directory `where`."""
    d = Path(tempfile.mkdtemp(prefix="replay-cost-", dir=where))
    try:
        n = max(1, n_ops // 2)
        (d / "in").write_bytes(os.urandom(n))
        cap = Recording(["dd", "if=in", "of=out", "bs=1", f"count={n}", "status=none"], trace=True,
                        cwd=str(d)).run().capture
        events = sum(len(p.events) for p in cap.processes if p.events is not None)
        io_s = sum(float(p.events["dur_ns"].sum()) for p in cap.processes if p.events is not None) / 1e9
        build_plan(cap)  # once to warm up (the replayer's --describe, imports)
        t, c = time.perf_counter(), time.process_time()
        plan = build_plan(cap)
        convert_s, convert_cpu_s = time.perf_counter() - t, time.process_time() - c
        walls, busy, setup = [], [], []
        for _ in range(runs):
            r = replay_on(plan, resolve(str(d)), speed="max")
            walls.append(r.wall_s)
            busy.append(sum(th["busy"] + th["dep"] for th in r.threads))
            setup.append(r.setup_s)
        wall, inside = statistics.median(walls), statistics.median(busy)
        return {"events": events, "ops": int(len(plan.ops)), "step_wall_s": float(cap.meta["wall_s"]),
                "step_io_s": io_s, "convert_s": convert_s, "convert_cpu_s": convert_cpu_s,
                "setup_s": statistics.median(setup),
                "replay_wall_s": wall, "replay_calls_s": inside, "engine_s": max(0.0, wall - inside),
                "engine_ns_per_op": max(0.0, wall - inside) / max(1, len(plan.ops)) * 1e9}
    finally:
        shutil.rmtree(d, ignore_errors=True)


def report(m: dict[str, Any]) -> None:
    print(f"replay cost: a traced step of {m['events']:,} events ({m['ops']:,} replayed ops), its wall "
          f"{m['step_wall_s']:.3f} s, its own I/O {m['step_io_s']:.3f} s")
    print(f"  convert the capture (Python, once per capture) {m['convert_s']:.3f} s wall, "
          f"{m['convert_cpu_s']:.3f} s CPU; the replayer reads its job in {m['setup_s']:.3f} s")
    print(f"  replay at full speed {m['replay_wall_s']:.3f} s: in file calls {m['replay_calls_s']:.3f} s, the "
          f"replayer's own {m['engine_s']:.3f} s ({m['engine_ns_per_op']:.0f} ns per op, "
          f"{m['engine_s'] / max(m['step_io_s'], 1e-9) * 100:.0f}% of the step's I/O time)")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--ops", type=int, default=1_000_000)
    ap.add_argument("--dir", default="/dev/shm", help="where to run (default: tmpfs, so the calls cost least and "
                    "the replayer's own cost shows most)")
    ap.add_argument("--runs", type=int, default=3)
    a = ap.parse_args()
    print(f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs")
    report(measure(a.ops, a.dir, a.runs))


if __name__ == "__main__":
    main()
