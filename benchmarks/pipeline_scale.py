"""Time and peak memory of `iolens report DIR` on a capture directory of 2,000 task captures, 200,000 files.

    python benchmarks/pipeline_scale.py [--tasks 2000] [--files 200000] [--rules 12] [--jobs N] [--keep DIR]

Writes the task captures with tests/helpers/capture.py's writer (each task: a shell and its tool, files on
several mounts, some of them temporary, the workflow's names in META), then runs `iolens report DIR` in a
fresh interpreter, and prints the wall time and the peak RSS of the parent and of the largest worker.
Target: under 10 s and under 1 GiB in all.
"""

from __future__ import annotations

import argparse
import random
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
from helpers.capture import fil, proc, write_capture  # noqa: E402

TARGET_S = 10.0
TARGET_BYTES = 1 << 30
ROOTS = ["/data", "/scratch", "/mnt/nfs", "/dev/shm"]


def make_dir(d: Path, tasks: int, files: int, rules: int, seed: int = 1) -> None:
    rnd = random.Random(seed)
    per = max(1, files // tasks)
    for t in range(tasks):
        rule = f"rule{t % rules:02d}"
        fs = []
        for i in range(per):
            root = ROOTS[(t + i) % len(ROOTS)]
            if i % 10 == 0:
                fs.append(fil(f"{root}/tmp/{rule}.{t}.{i}.tmp", writes=8, write_size=4096, write_time=0.002,
                              created=True, deleted=True))
            elif i % 2:
                fs.append(fil(f"{root}/in/{rule}/{t}/{i}.fq", reads=rnd.randint(1, 64), read_size=65536,
                              read_time=rnd.random() * 0.01))
            else:
                fs.append(fil(f"{root}/out/{rule}/{t}/{i}.bam", writes=rnd.randint(1, 64), write_size=512,
                              write_time=rnd.random() * 0.02, created=True))
        meta = {"workflow": {"slurm": {"job_id": str(1000 + t), "job_name": rule, "array_task_id": str(t)}},
                "host": f"node{t % 8:02d}", "start_real_ns": 1_700_000_000 * 10**9 + t * 10**8}
        write_capture(d / f"node{t % 8:02d}.j1000_{t}.{4000 + t}.{t}.iolens", [
            proc(100, ["sh", "-c", "tool"], start=0, end=2.0, children=[]),
            proc(101, ["tool", "-x"], ppid=100, start=0.1, end=1.9, files=fs),
        ], meta=meta)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tasks", type=int, default=2000)
    ap.add_argument("--files", type=int, default=200_000)
    ap.add_argument("--rules", type=int, default=12)
    ap.add_argument("--keep", type=Path, help="write (or reuse) the captures here")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        d = args.keep or Path(tmp) / "captures"
        if not d.exists() or not any(d.glob("*.iolens")):
            d.mkdir(parents=True, exist_ok=True)
            t0 = time.perf_counter()
            make_dir(d, args.tasks, args.files, args.rules)
            print(f"wrote {args.tasks} task captures, {args.files} files in {time.perf_counter() - t0:.1f} s")
        out = Path(tmp) / "report.json"
        t0 = time.perf_counter()
        res = subprocess.run([sys.executable, "-m", "iolens", "report", str(d), "--json", str(out), "-q", "--force"],
                             capture_output=True, text=True)
        wall = time.perf_counter() - t0
        peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss * 1024
        if res.returncode not in (0, 3):
            sys.exit(f"report failed: {res.stderr}")
        import json

        rep = json.loads(out.read_text())
        print(f"report DIR: {wall:.2f} s, peak RSS of the largest process {peak / 2**20:.0f} MiB "
              f"(the parent and one worker per core run at once: at most {3 * peak / 2**20:.0f} MiB in all); "
              f"{rep['totals']['tasks']} tasks, {len(rep['rules'])} rules")
        print(f"target: under {TARGET_S:.0f} s and {TARGET_BYTES >> 20} MiB: "
              f"{'met' if wall < TARGET_S and 3 * peak < TARGET_BYTES else 'NOT met'}")


if __name__ == "__main__":
    main()
