"""The pipeline figures: `iolens report DIR` on 2,000 task captures with 200,000 files, and the per-task cost.

    python benchmarks/pipeline_scale.py [--tasks 2000] [--files 200000] [--rules 12] [--keep DIR]
                                        [--task-cost 500] [--no-slurm]

Scale: writes the task captures with tests/helpers/capture.py's writer (each task: a shell and its tool, files
on several mounts, some of them temporary, the workflow's names in META), then runs `iolens report DIR` in a
fresh interpreter, and prints its wall time, its CPU time (parent and workers) and the peak RSS of the largest
process.  Target: under 10 s and under 1 GiB in all.

Per-task cost: N tasks of `true` without and with profiling (LD_PRELOAD and IOLENS_DIR, as `iolens wrap`
sets them): always as a plain loop of N processes started here (alternating, wall and CPU time per task), and
as an N-task Slurm array (`sbatch --array --wrap true`, submit to last task done) when the local Slurm of
tests/helpers/slurm.py can be started (root and Debian's slurm-wlm); the output says which ran.
"""

from __future__ import annotations

import argparse
import os
import random
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
from helpers.capture import fil, proc, write_capture  # noqa: E402
from helpers.slurm import SlurmUnavailable, local_slurm, slurm_missing  # noqa: E402

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


def _subreaper() -> None:
    """Become the reaper of orphaned descendants, so RUSAGE_CHILDREN counts the report's worker processes too
    (multiprocessing's forkserver and its workers outlive the report process, and nobody waits for them)."""
    import ctypes

    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(36, 1, 0, 0, 0) != 0:  # PR_SET_CHILD_SUBREAPER
        print("warning: cannot become a subreaper: the CPU time may leave out the report's workers")


def _reap_orphans() -> None:
    while True:
        try:
            os.waitpid(-1, 0)
        except ChildProcessError:
            return


def report_scale(args: argparse.Namespace) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        d = args.keep or Path(tmp) / "captures"
        if not d.exists() or not any(d.glob("*.iolens")):
            d.mkdir(parents=True, exist_ok=True)
            t0 = time.perf_counter()
            make_dir(d, args.tasks, args.files, args.rules)
            print(f"wrote {args.tasks} task captures, {args.files} files in {time.perf_counter() - t0:.1f} s")
        out = Path(tmp) / "report.json"
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        t0 = time.perf_counter()
        res = subprocess.run([sys.executable, "-m", "iolens", "report", str(d), "--json", str(out), "-q", "--force"],
                             capture_output=True, text=True)
        wall = time.perf_counter() - t0
        _reap_orphans()
        ru = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpu = ru.ru_utime + ru.ru_stime - before.ru_utime - before.ru_stime
        peak = ru.ru_maxrss * 1024
        if res.returncode not in (0, 3):
            sys.exit(f"report failed: {res.stderr}")
        import json

        rep = json.loads(out.read_text())
        print(f"report DIR: {wall:.2f} s wall, {cpu:.2f} s CPU (parent and workers; {cpu / wall:.1f} cores busy), "
              f"peak RSS of the largest process {peak / 2**20:.0f} MiB (the parent and one worker per core run at "
              f"once: at most {3 * peak / 2**20:.0f} MiB in all); {rep['totals']['tasks']} tasks, "
              f"{len(rep['rules'])} rules")
        print(f"target: under {TARGET_S:.0f} s and {TARGET_BYTES >> 20} MiB: "
              f"{'met' if wall < TARGET_S and 3 * peak < TARGET_BYTES else 'NOT met'}")


def _profiled_env(parts: Path) -> dict[str, str]:
    from iolens.native import preload_library

    parts.mkdir(parents=True, exist_ok=True)
    return {"LD_PRELOAD": str(preload_library()), "IOLENS_DIR": str(parts)}


def task_cost_loop(n: int, tmp: Path) -> None:
    """N tasks of `true` started from here, each way in turn: per-task wall and CPU time.  Profiled = the
    environment `iolens wrap slurm` exports; TaskProlog = the prolog it prints run first (its own processes),
    against the same shell without it."""
    prolog = tmp / "prolog.sh"
    prolog.write_text(subprocess.run([sys.executable, "-m", "iolens", "wrap", "slurm", "--task-prolog", "-d",
                                      str(tmp / "prolog")], check=True, capture_output=True, text=True).stdout)
    prolog.chmod(0o755)
    plain = dict(os.environ, SLURM_JOB_ID="1", SLURM_JOB_NAME="true")
    ways = {"plain": (["/bin/true"], plain),
            "profiled": (["/bin/true"], dict(plain, **_profiled_env(tmp / "loop" / "parts"))),
            "shell": (["/bin/sh", "-c", "exec /bin/true"], plain),
            "shell+TaskProlog": (["/bin/sh", "-c", f'eval "$({prolog})"; exec /bin/true'], plain)}
    got: dict[str, list[tuple[float, float]]] = {k: [] for k in ways}
    failed: dict[str, list[int]] = {k: [] for k in ways}
    for _ in range(n):
        for label, (argv, env) in ways.items():
            t0 = time.perf_counter()
            child = subprocess.Popen(argv, env=env)
            _, status, ru = os.wait4(child.pid, 0)
            got[label].append((time.perf_counter() - t0, ru.ru_utime + ru.ru_stime))
            child.returncode = os.waitstatus_to_exitcode(status)  # reaped here, for its rusage
            if status:
                failed[label].append(child.returncode)
    med = {k: statistics.median(w for w, _ in v) for k, v in got.items()}
    cpu = {k: sum(c for _, c in v) / n for k, v in got.items()}
    parts = len(list((tmp / "loop" / "parts").glob("*.part")))
    entries = sum(1 for d in (tmp / "prolog" / "parts").iterdir() if (d / "task.json").exists())
    print(f"per-task cost, plain loop of {n} tasks of /bin/true, started here in turn ({parts} capture parts and "
          f"{entries} TaskProlog entries written): median wall / mean CPU (children) per task")
    for base, way in (("plain", "profiled"), ("shell", "shell+TaskProlog")):
        print(f"  {way:<17} {med[way] * 1e3:6.2f} ms / {cpu[way] * 1e3:5.2f} ms CPU, against {base} "
              f"{med[base] * 1e3:5.2f} / {cpu[base] * 1e3:5.2f}: {(med[way] - med[base]) * 1e3:+.2f} ms wall, "
              f"{(cpu[way] - cpu[base]) * 1e3:+.2f} ms CPU")
    for label, codes in failed.items():
        if codes:
            print(f"  FAILED: {len(codes)} of {n} {label} tasks (exit status, negative = signal): {codes[:10]}")


def _array(env: dict[str, str], n: int, export: str, cwd: Path) -> float:
    """Seconds from submitting an N-task array of `true` to its last task leaving the queue (a refused
    submission, which a loaded controller sometimes gives, is tried again twice)."""
    t0 = time.perf_counter()
    for attempt in range(3):
        res = subprocess.run(["sbatch", "--parsable", f"--array=0-{n - 1}", "-o", "/dev/null", "-D", str(cwd), export,
                              "--wrap", "true"], env=env, capture_output=True, text=True)
        if res.returncode == 0:
            break
        print(f"  sbatch refused the array ({res.stderr.strip()}){'; again' if attempt < 2 else ''}")
        time.sleep(2)
    else:
        raise SlurmUnavailable(f"sbatch refused the array three times: {res.stderr.strip()}")
    job = res.stdout.strip()
    while subprocess.run(["squeue", "-h", "-j", job], env=env, capture_output=True, text=True).stdout.strip():
        time.sleep(0.05)
    return time.perf_counter() - t0


# the local Slurm starts array tasks on its scheduler's ticks; these make the ticks as short as it allows (about
# two tasks a second on two cores), so the arrays take minutes, not most of an hour
FAST_SCHEDULER = "SchedulerType=sched/builtin\nSchedulerParameters=sched_min_interval=0,batch_sched_delay=0\n"


def task_cost_slurm(n: int, tmp: Path, rounds: int) -> None:
    """N-task Slurm arrays of `true`, plain and profiled alternately (`rounds` each), then the report of the
    profiled arrays' capture directory (every task must be there)."""
    why = slurm_missing()
    if why:
        print(f"per-task cost, Slurm array: not run: the local Slurm {why}")
        return
    parts = tmp / "array" / "parts"
    prof = _profiled_env(parts)
    (tmp / "slurm").mkdir()
    try:
        with local_slurm(tmp / "slurm", FAST_SCHEDULER) as env:
            times: dict[str, list[float]] = {"plain": [], "profiled": []}
            for _ in range(rounds):
                times["plain"].append(_array(env, n, "--export=ALL", tmp))
                times["profiled"].append(_array(env, n, "--export=ALL," + ",".join(f"{k}={v}" for k, v in
                                                                                   prof.items()), tmp))
    except SlurmUnavailable as err:
        print(f"per-task cost, Slurm array: not run: {err}")
        return
    a, b = min(times["plain"]), min(times["profiled"])
    res = subprocess.run([sys.executable, "-m", "iolens", "report", str(parts.parent), "--json", "-"],
                         capture_output=True, text=True)
    import json

    tot = json.loads(res.stdout)["totals"] if res.returncode in (0, 3) else {"tasks": "?", "not_profiled": "?"}
    print(f"per-task cost, local Slurm array of {n} x `true` (sbatch --array --wrap true; submit to last task done, "
          f"best of {rounds}): plain {a:.2f} s ({a / n * 1e3:.1f} ms/task), profiled {b:.2f} s ({b / n * 1e3:.1f} "
          f"ms/task): {(b - a) / n * 1e3:+.2f} ms per task (the scheduler's ticks dominate: the loop above is the "
          f"finer figure); every round (s): plain {', '.join(f'{t:.2f}' for t in times['plain'])}; profiled "
          f"{', '.join(f'{t:.2f}' for t in times['profiled'])}; report of the profiled arrays: {tot['tasks']} tasks, "
          f"{tot['not_profiled']} not profiled (of {n * rounds})")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tasks", type=int, default=2000)
    ap.add_argument("--files", type=int, default=200_000)
    ap.add_argument("--rules", type=int, default=12)
    ap.add_argument("--keep", type=Path, help="write (or reuse) the captures here")
    ap.add_argument("--task-cost", type=int, default=500, metavar="N", help="tasks of `true` per measurement (0: none)")
    ap.add_argument("--rounds", type=int, default=1, help="Slurm arrays of each kind, alternating")
    ap.add_argument("--no-slurm", action="store_true", help="the plain loop only")
    ap.add_argument("--no-scale", action="store_true", help="the per-task cost only")
    args = ap.parse_args()
    if not args.no_scale:
        _subreaper()
        report_scale(args)
    if args.task_cost > 0:
        with tempfile.TemporaryDirectory(ignore_cleanup_errors=True) as tmp:  # slurmctld may still be saving
            task_cost_loop(args.task_cost, Path(tmp))
            if args.no_slurm:
                print("per-task cost, Slurm array: not run (--no-slurm)")
            else:
                task_cost_slurm(args.task_cost, Path(tmp), args.rounds)


if __name__ == "__main__":
    main()
