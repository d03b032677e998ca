"""Two builds of the interposer (or more) against each other, interleaved in one run.

    python benchmarks/preload_ab.py OLD.so NEW.so [--workload write] [--calls 1000000] [--rounds 15] [--callgrind]

Runs tests/native/hotloop.c's WORKLOAD (write: one-byte write() calls to a file in a temporary directory on the
current filesystem; fputc, fread, stat, openclose as in profile_overhead.py; true: /bin/true started CALLS times
from a shell loop, default 200, a process with no file I/O; write-nosys: the write workload with a library
after the interposer whose write() does nothing, in every mode, so the figure is the hook's own CPU time with
no kernel time around it to add noise) plain and under each library, with the variables
`iolens profile` sets (IOLENS_DIR on /dev/shm), the order shuffled in every round.  Prints, per library, the
median CPU time per call (or process) and the median over rounds of (library - plain) in the same round: a
difference between two builds that is smaller than the spread between moments (profile_overhead.py's runs)
shows up here.  Page cache warm; the default clock (TSC where safe).

--callgrind adds the steady proxies, which a busy machine does not disturb (no timing): instructions per call
of the workload (valgrind's callgrind: (instructions at 2N - at N) / N, N = 20,000; for `true`, the
instructions of one /bin/true), and for every library, of one /bin/true: its instructions, its system calls
(strace -f -c; the preload's own and the loader's) and its minor page faults (getrusage, mean of 50 runs).

write-nosys puts a library after the interposer, so the interposer calls it through the resolved pointer:
it measures that path, not the inline system call the interposer makes when libc's write is next (posix.c).
"""

from __future__ import annotations

import argparse
import os
import platform
import random
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent.parent


# write-nosys: the next write() after the interposer's, doing nothing
NOSYS = """
#include <unistd.h>
ssize_t write(int fd, const void *b, size_t n)
{
    (void)fd; (void)b; __asm__ volatile("" ::: "memory"); return (ssize_t)n;
}
"""


def cpu_ns_per_call(argv: list[str], env: dict, calls: int) -> float:
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    subprocess.run(argv, env=env, check=True)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime) / calls * 1e9


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("libs", nargs="+", type=Path, help="preload libraries to compare")
    ap.add_argument("--workload", default="write",
                    choices=["write", "fputc", "fread", "stat", "openclose", "true", "write-nosys"])
    ap.add_argument("--calls", type=int, help="calls (default 1,000,000) or, for true, processes (default 200)")
    ap.add_argument("--rounds", type=int, default=15)
    ap.add_argument("--callgrind", action="store_true", help="also count instructions with valgrind's callgrind")
    args = ap.parse_args()
    if args.calls is None:
        args.calls = 200 if args.workload == "true" else 1_000_000
    for lib in args.libs:
        if not lib.is_file():
            sys.exit(f"preload_ab: {lib}: no such file")
    with tempfile.TemporaryDirectory(prefix="iolens-ab-", dir=".") as tmp:
        work = Path(tmp)
        hot = work / "hotloop"
        subprocess.run(["cc", "-O2", "-o", str(hot), str(HERE / "tests" / "native" / "hotloop.c")], check=True)
        nosys = ""
        if args.workload == "write-nosys":
            (work / "nosys.c").write_text(NOSYS)
            subprocess.run(["cc", "-O2", "-shared", "-fPIC", "-o", str(work / "nosys.so"), str(work / "nosys.c")],
                           check=True)
            nosys = str((work / "nosys.so").resolve())
        path = work / "data.bin"
        path.write_bytes(os.urandom(1 << 20))
        if args.workload == "true":
            argv = ["sh", "-c", f"i=0; while [ $i -lt {args.calls} ]; do /bin/true; i=$((i+1)); done"]
        else:
            argv = [str(hot), args.workload.removesuffix("-nosys"), str(args.calls), str(path)]
        if args.callgrind:
            print_instructions(args, hot, path)
        names = ["plain", *(str(lib) for lib in args.libs)]
        times: dict[str, list[float]] = {n: [] for n in names}
        for _ in range(args.rounds):
            order = list(names)
            random.shuffle(order)
            for name in order:
                stage = Path(tempfile.mkdtemp(prefix="iolens-ab-", dir="/dev/shm"))
                env = dict(os.environ)
                if nosys:
                    env["LD_PRELOAD"] = nosys
                if name != "plain":
                    env.update(LD_PRELOAD=f"{Path(name).resolve()} {nosys}".strip(), IOLENS_DIR=str(stage),
                               IOLENS_PARENT_PID=str(os.getpid()))
                times[name].append(cpu_ns_per_call(argv, env, args.calls))
                shutil.rmtree(stage)
    load = os.getloadavg()[0]
    per = "process" if args.workload == "true" else "call"
    print(f"# {args.workload} x {args.calls:,}, {args.rounds} interleaved rounds, CPU time of the child per {per}; "
          f"load average {load:.1f} on {os.cpu_count()} CPUs")
    unit, scale = ("ms", 1e-6) if per == "process" else ("ns", 1.0)
    for name in names:
        added = [(a - b) * scale for a, b in zip(times[name], times["plain"])]
        q = statistics.quantiles(added, n=4)
        print(f"{name}: median {statistics.median(times[name]) * scale:.3f} {unit}/{per}, "
              f"added {statistics.median(added):+.3f} {unit} (IQR {q[0]:+.3f} .. {q[2]:+.3f})")
    return 0


def _callgrind(env: dict, children: bool) -> list[str]:
    """How to start callgrind.  `valgrind` is a dynamic launcher that execs the tool, a static program: with the
    interposer in LD_PRELOAD the launcher loads it, and its exec of a static program passes the environment the
    program would have unprofiled (no LD_PRELOAD), so the guest would run unprofiled.  The tool is started
    directly instead (VALGRIND_LIB and VALGRIND_LAUNCHER set as the launcher sets them).  A traced child is
    re-executed through the launcher, so counts over children (`children`) still go through it."""
    lib = os.environ.get("VALGRIND_LIB", "/usr/libexec/valgrind")
    arch = {"x86_64": "amd64", "aarch64": "arm64"}.get(platform.machine(), platform.machine())
    tool = Path(lib) / f"callgrind-{arch}-linux"
    launcher = shutil.which("valgrind")
    if children or not tool.exists() or launcher is None:
        return ["valgrind", "--tool=callgrind"]
    env["VALGRIND_LIB"], env["VALGRIND_LAUNCHER"] = lib, launcher
    return [str(tool)]


def callgrind_instructions(argv: list[str], env: dict, children: bool = False) -> int:
    """Instructions one run of argv executes (valgrind's callgrind; the program's and the libraries'), summed over
    the processes it execs when `children` (a `sh -c` line)."""
    with tempfile.TemporaryDirectory(prefix="iolens-ab-cg-", dir="/dev/shm") as stage:
        run_env = dict(env)
        if "LD_PRELOAD" in run_env:
            run_env["IOLENS_DIR"] = stage
        logs = Path(stage) / "vg"
        logs.mkdir()
        # a log file per process: a child's stderr may be sent elsewhere (`2>/dev/null`)
        follow = ["--trace-children=yes", f"--log-file={logs}/%p"] if children else []
        r = subprocess.run([*_callgrind(run_env, children), "--callgrind-out-file=/dev/null", *follow, *argv],
                           env=run_env, capture_output=True, text=True, check=True)
        text = "".join(f.read_text() for f in logs.iterdir()) if children else r.stderr
    counts = [int(line.split("Collected :")[1].replace(",", "").strip()) for line in text.splitlines()
              if "Collected :" in line]
    if not counts:
        raise RuntimeError(f"callgrind printed no count: {text[-300:]}")
    return sum(counts)


def syscalls(argv: list[str], env: dict) -> str:
    """System calls one run of argv makes (strace -f -c), or a dash without strace."""
    if not shutil.which("strace"):
        return "-"
    with tempfile.TemporaryDirectory(prefix="iolens-ab-st-", dir="/dev/shm") as stage:
        run_env = dict(env)
        if "LD_PRELOAD" in run_env:
            run_env["IOLENS_DIR"] = stage
        out = Path(stage) / "strace.txt"
        subprocess.run(["strace", "-f", "-c", "-o", str(out), *argv], env=run_env, capture_output=True, check=True)
        for line in out.read_text().splitlines():
            if line.rstrip().endswith("total"):  # % time, seconds, usecs/call, calls, [errors,] total
                return line.split()[3]
    return "?"


def minor_faults(argv: list[str], env: dict, runs: int = 50) -> float:
    """Minor page faults per run of argv (getrusage of the children, mean over runs)."""
    with tempfile.TemporaryDirectory(prefix="iolens-ab-pf-", dir="/dev/shm") as stage:
        run_env = dict(env)
        if "LD_PRELOAD" in run_env:
            run_env["IOLENS_DIR"] = stage
        before = resource.getrusage(resource.RUSAGE_CHILDREN).ru_minflt
        for _ in range(runs):
            subprocess.run(argv, env=run_env, check=True)
        return (resource.getrusage(resource.RUSAGE_CHILDREN).ru_minflt - before) / runs


def print_instructions(args, hot: Path, path: Path) -> None:
    """The steady proxies: instructions per call of the workload, and per /bin/true its instructions, system
    calls and page faults, per library."""
    if not shutil.which("valgrind"):
        print("# --callgrind: valgrind is not installed; no instruction counts")
        return
    n = 20_000
    per_true = "one /bin/true: instructions (callgrind), system calls (strace -f -c), minor faults (mean of 50)"
    if args.workload == "true":
        print(f"# {per_true}")
    else:
        print(f"# instructions (callgrind): per {args.workload} call = (count at {2 * n:,} calls - at {n:,}) / {n:,}; "
              f"{per_true}")
    for name in ["plain", *(str(lib) for lib in args.libs)]:
        env = dict(os.environ)
        if name != "plain":
            env.update(LD_PRELOAD=str(Path(name).resolve()), IOLENS_PARENT_PID=str(os.getpid()))
        true = callgrind_instructions(["/bin/true"], env)
        proc = (f"{true:,} instructions, {syscalls(['/bin/true'], env)} system calls, "
                f"{minor_faults(['/bin/true'], env):.1f} minor faults per /bin/true")
        if args.workload == "true":
            print(f"{name}: {proc}")
            continue
        work = args.workload.removesuffix("-nosys")
        a = callgrind_instructions([str(hot), work, str(n), str(path)], env)
        b = callgrind_instructions([str(hot), work, str(2 * n), str(path)], env)
        print(f"{name}: {(b - a) / n:.1f} instructions per {args.workload} call; {proc}")


if __name__ == "__main__":
    raise SystemExit(main())
