#!/usr/bin/env python3
"""The hot paths of two builds of the native engines, interleaved: this installed iolens's and another build's
iolens-bench and iolens-replay (a directory holding both, for example another checkout's `src/iolens/_native`).

    python benchmarks/native_ab.py --old DIR [--rounds 7] [--dir /dev/shm] [--ops 400000]

- bench: one job of 4 KiB psync ops on --dir (a sequential write of a 64 MiB file, random reads of it, random
  writes) and the null engine's random reads (no system call: the engine's own loop), per op: phase wall / ops,
  and the phase's CPU time (user + system) / ops.
- replay: a traced `dd bs=1` of --ops / 2 bytes (one read and one write per byte), its plan replayed at full
  speed (--speed max); per op, the replayer's own time (wall minus the time inside its calls) and its user CPU.
Each round runs both builds, in an order that alternates; prints the medians and new against old.

With --callgrind, instead: the user-space instructions per op of each build, counted by valgrind's callgrind (the
same on every run, where the times above move with the machine's load): each bench phase alone and the replay,
run at two sizes, the difference in instructions over the difference in ops.  The replayer runs with
valgrind_openat2.c preloaded (valgrind does not know openat2), compiled with cc.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import statistics
import subprocess
import tempfile
from pathlib import Path

from iolens.capture.record import Recording
from iolens.native import native_path
from iolens.whatif.plan import build_plan

MiB = 1 << 20
BENCH_PHASES = [
    ("seq write", {"op": "write", "bs": 4096, "size": 64 * MiB}),
    ("rand read", {"op": "randread", "bs": 4096, "file_size": 64 * MiB, "ops": 200000}),
    ("rand write", {"op": "randwrite", "bs": 4096, "file_size": 64 * MiB, "ops": 200000}),
    ("null rand read", {"op": "randread", "engine": "null", "bs": 4096, "file_size": 64 * MiB, "ops": 2000000}),
    ("small create", {"op": "create", "size": 4096, "count": 20000, "fanout": 10}),
]


def bench_round(engine: Path, where: str) -> dict[str, float]:
    """ns per op of each phase of the bench job (wall, and the CPU time of the engine's process), run by `engine`
    in a fresh directory below `where`."""
    d = tempfile.mkdtemp(prefix="iolens-bench-ab-", dir=where)
    try:
        job = {"schema_version": [1, 3], "dirs": [d], "seed": 1,
               "phases": [{"name": n, "groups": [dict(g, threads=1)]} for n, g in BENCH_PHASES]}
        out = subprocess.run([str(engine)], input=json.dumps(job), capture_output=True, text=True, check=True)
        res = json.loads(out.stdout)
        per = {f"bench {p['name']}": p["wall_s"] / p["groups"][0]["ops"] * 1e9 for p in res["phases"]}
        per.update({f"bench {p['name']} CPU": (p["cpu_user_s"] + p["cpu_sys_s"]) / p["groups"][0]["ops"] * 1e9
                    for p in res["phases"]})
        return per
    finally:
        shutil.rmtree(d, ignore_errors=True)


def instructions(argv: list[str], env: dict[str, str] | None = None) -> int:
    """The user-space instructions argv runs, by callgrind."""
    res = subprocess.run(["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null", *argv],
                         capture_output=True, text=True, check=True, env=env)
    return int(next(ln for ln in res.stderr.splitlines() if "Collected :" in ln).split(":")[1])


def bench_instructions(engine: Path, where: str) -> dict[str, float]:
    """Instructions per op of each bench phase, alone, at two op counts."""
    per: dict[str, float] = {}
    for name, g in BENCH_PHASES:
        counts = []
        for scale in (1, 3):
            d = tempfile.mkdtemp(prefix="iolens-bench-ab-", dir=where)
            try:
                n = 10000 * scale
                scaled = "count" if "count" in g else "size" if "size" in g else "ops"
                grp = dict(g, threads=1, **{scaled: n * 4096 if scaled == "size" else n})
                pre = [] if g["op"] in ("write", "create") or g.get("engine") == "null" else [
                    {"name": "layout", "report": False, "groups": [{"op": "write", "bs": MiB, "size": 64 * MiB}]}]
                job = {"schema_version": [1, 3], "dirs": [d], "seed": 1,
                       "phases": [*pre, {"name": name, "groups": [grp]}]}
                path = Path(d) / "job.json"
                path.write_text(json.dumps(job))
                counts.append((n, instructions([str(engine), str(path)])))
            finally:
                shutil.rmtree(d, ignore_errors=True)
        per[name] = (counts[1][1] - counts[0][1]) / (counts[1][0] - counts[0][0])
    return per


def replay_job(work: Path, n_ops: int) -> tuple[dict, int]:
    """A traced dd bs=1 step's replay job (speed max) and its op count; the op list is written to work."""
    n = max(1, n_ops // 2)
    (work / "in").write_bytes(os.urandom(n))
    cap = Recording(["dd", "if=in", "of=out", "bs=1", f"count={n}", "status=none"], trace=True,
                    cwd=str(work)).run().capture
    plan = build_plan(cap)
    ops = work / f"ops-{n_ops}.bin"
    ops.write_bytes(plan.ops.tobytes())
    return plan.job("ROOT", str(ops), speed="max", cache="warm", log=None, dependency_timeout_s=None), len(plan.ops)


def replay_round(replayer: Path, job: dict, n_ops: int, where: str, work: Path) -> dict[str, float]:
    """The replayer's own ns per op (its wall minus the time inside its calls) and its user CPU ns per op."""
    root = tempfile.mkdtemp(prefix="iolens-bench-ab-", dir=where)
    try:
        path = work / "job.json"
        path.write_text(json.dumps(dict(job, root=root)))
        u0 = resource.getrusage(resource.RUSAGE_CHILDREN).ru_utime
        res = json.loads(subprocess.run([str(replayer), str(path)], capture_output=True, text=True,
                                        check=True).stdout)
        user = resource.getrusage(resource.RUSAGE_CHILDREN).ru_utime - u0
        inside = sum(t["busy_ns"] + t["dep_ns"] for t in res["thread_times"])
        return {"replay own time": (res["wall_ns"] - inside) / n_ops, "replay user CPU": user / n_ops * 1e9}
    finally:
        shutil.rmtree(root, ignore_errors=True)


def replay_instructions(replayer: Path, jobs: list[tuple[dict, int]], where: str, work: Path) -> float:
    """The replayer's instructions per op, from two jobs of different sizes."""
    shim = work / "openat2.so"
    if not shim.exists():
        subprocess.run(["cc", "-O2", "-shared", "-fPIC", "-o", str(shim),
                        str(Path(__file__).with_name("valgrind_openat2.c"))], check=True)
    counts = []
    for job, n_ops in jobs:
        root = tempfile.mkdtemp(prefix="iolens-bench-ab-", dir=where)
        try:
            path = work / "job.json"
            path.write_text(json.dumps(dict(job, root=root)))
            counts.append((n_ops, instructions([str(replayer), str(path)], dict(os.environ, LD_PRELOAD=str(shim)))))
        finally:
            shutil.rmtree(root, ignore_errors=True)
    return (counts[1][1] - counts[0][1]) / (counts[1][0] - counts[0][0])


def by_callgrind(builds: dict[str, Path], where: str, n_ops: int) -> None:
    with tempfile.TemporaryDirectory(prefix="native-ab-", dir=where) as tmp:
        work = Path(tmp)
        jobs = [replay_job(work, n_ops // 10), replay_job(work, 3 * n_ops // 10)]
        rows = {name: {**bench_instructions(b / "iolens-bench", where),
                       "replay": replay_instructions(b / "iolens-replay", jobs, where, work)}
                for name, b in builds.items()}
    print("user-space instructions per op (callgrind)")
    for what in rows["old"]:
        old, new = rows["old"][what], rows["new"][what]
        print(f"  {what:<22} old {old:8.1f}  new {new:8.1f}  {new - old:+6.1f}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--old", required=True, type=Path, help="a directory with the other build's engines")
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--dir", default="/dev/shm")
    ap.add_argument("--ops", type=int, default=400000)
    ap.add_argument("--callgrind", action="store_true", help="count instructions instead of timing")
    a = ap.parse_args()
    builds = {"old": a.old, "new": native_path("iolens-bench").parent}
    if a.callgrind:
        by_callgrind(builds, a.dir, a.ops)
        return
    figures: dict[tuple[str, str], list[float]] = {}
    with tempfile.TemporaryDirectory(prefix="native-ab-", dir=a.dir) as tmp:
        work = Path(tmp)
        job, n_ops = replay_job(work, a.ops)
        for r in range(a.rounds):
            for name in (["old", "new"] if r % 2 == 0 else ["new", "old"]):
                per = {**bench_round(builds[name] / "iolens-bench", a.dir),
                       **replay_round(builds[name] / "iolens-replay", job, n_ops, a.dir, work)}
                for what, ns in per.items():
                    figures.setdefault((what, name), []).append(ns)
    print(f"medians of {a.rounds} interleaved rounds on {a.dir}, ns per op (replay: {n_ops:,} ops)")
    for what in dict.fromkeys(k for k, _ in figures):
        old, new = statistics.median(figures[(what, "old")]), statistics.median(figures[(what, "new")])
        print(f"  {what:<22} old {old:8.1f}  new {new:8.1f}  {new / old - 1:+6.1%}")


if __name__ == "__main__":
    main()
