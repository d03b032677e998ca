#!/usr/bin/env python3
"""What the iolens interposer adds, per call and per process, beside the floor of any interposer.

Each workload runs in four modes, in a random order within each round:
  plain       no preload
  do-nothing  a preload that only forwards the same symbols through dlsym(RTLD_NEXT) (built here):
              the floor any LD_PRELOAD interposer pays
  iolens      the interposer with the variables `iolens profile` sets (IOLENS_DIR on tmpfs)
  --trace     the same with IOLENS_TRACE=1
The added cost of a mode is the median over rounds of (mode - plain) within the same round (interleaved
pairs: the machine's drift falls on both sides), divided by the calls or processes the workload makes.
"x floor" is iolens's added cost over the do-nothing preload's.

Workloads (tests/native/hotloop.c; inputs generated here, page cache warm):
  write()       one-byte write() calls to a file on the work directory's filesystem
  fputc         fputc() into a buffered stream (one flush per 4 KiB)
  fread 1 B     one-byte fread() from a buffered stream
  stat          stat() of one path
  open+close    open() and close() of one path
  true x200     /bin/true started 200 times from a shell loop (a process with no file I/O)
  vfork x200    200 vfork + exec of /bin/true from a program running 8 threads (tests/native/vfork_threads.c);
                with `--only vfork`, compare its iolens row with plain: the target is within 1.5x of plain
  create x2000  a shell writing 2,000 new files in a new directory on tmpfs and removing them with rm -r (each
                file: a creating open, the shell's descriptor copies, a write, an unlinkat through rm's
                directory descriptor)
  minimap2, samtools sort, gzip -1: the real tools on synthetic inputs (iolens data synth)

With --callgrind, each real tool also runs once per mode under valgrind's callgrind: the instructions each mode
adds, a figure the machine's noise does not move (user space only; the kernel's share is not in it).

Usage: benchmarks/profile_overhead.py [--rounds 5] [--quick] [--clock vdso] [--preload LIB] [--only NAME ...]
                                      [--callgrind]
  --preload LIB measures another build of the interposer (an older one, to compare) instead of the installed one.
"""

from __future__ import annotations

import argparse
import os
import random
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

FORWARDER = r"""
#define _GNU_SOURCE
#include <dlfcn.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <sys/stat.h>
#include <unistd.h>
#define NEXT(name) static __typeof__(name) *real; if (!real) real = (__typeof__(name) *)dlsym(RTLD_NEXT, #name)
ssize_t write(int fd, const void *b, size_t n) { NEXT(write); return real(fd, b, n); }
ssize_t read(int fd, void *b, size_t n) { NEXT(read); return real(fd, b, n); }
int fputc(int c, FILE *fp) { NEXT(fputc); return real(c, fp); }
size_t fread(void *b, size_t s, size_t n, FILE *fp) { NEXT(fread); return real(b, s, n, fp); }
size_t fwrite(const void *b, size_t s, size_t n, FILE *fp) { NEXT(fwrite); return real(b, s, n, fp); }
int fputs(const char *s, FILE *fp) { NEXT(fputs); return real(s, fp); }
int stat(const char *p, struct stat *st) { NEXT(stat); return real(p, st); }
int close(int fd) { NEXT(close); return real(fd); }
int open(const char *p, int fl, ...)
{
    va_list ap; va_start(ap, fl); int mode = va_arg(ap, int); va_end(ap);
    NEXT(open); return real(p, fl, mode);
}
"""

MODES = ("plain", "do-nothing", "iolens", "--trace")
TOOLS = ("minimap2", "samtools sort", "gzip -1")  # the names prepare_tools gives the real tools


def run(argv, env, cwd) -> tuple[float, float]:
    """Wall time and CPU time (user + system, of the command and its children) of one run."""
    r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    t = time.perf_counter()
    subprocess.run(argv, env=env, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
    wall = time.perf_counter() - t
    r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (r1.ru_utime - r0.ru_utime) + (r1.ru_stime - r0.ru_stime)


def staging_root() -> Path:
    shm = Path("/dev/shm")
    return Path(tempfile.mkdtemp(prefix="iolens-bench-stage-", dir=shm if os.access(shm, os.W_OK) else None))


PRELOAD: Path | None = None  # --preload; else the installed interposer


def mode_env(mode: str, floor: Path, stage: Path, clock: str | None) -> dict:
    from iolens.native import preload_library

    env = dict(os.environ)
    if mode == "do-nothing":
        env["LD_PRELOAD"] = str(floor)
    elif mode in ("iolens", "--trace"):
        env["LD_PRELOAD"] = str(PRELOAD or preload_library())
        env["IOLENS_DIR"] = str(stage)
        env["IOLENS_PARENT_PID"] = str(os.getpid())
        if mode == "--trace":
            env["IOLENS_TRACE"] = "1"
        if clock:
            env["IOLENS_CLOCK"] = clock
    return env


def bootstrap_ci(xs: list[float]) -> tuple[float, float]:
    from iolens.stats.samples import bootstrap_ci as ci

    return ci(xs)


def measure(argv, rounds: int, floor: Path, cwd: Path, clock: str | None) -> tuple[dict, dict]:
    """Per mode and round, wall and CPU time."""
    wall: dict[str, list[float]] = {m: [] for m in MODES}
    cpu: dict[str, list[float]] = {m: [] for m in MODES}
    for _ in range(rounds):
        order = list(MODES)
        random.shuffle(order)
        for m in order:
            stage = staging_root()
            try:
                w, c = run(argv, mode_env(m, floor, stage, clock), cwd)
                wall[m].append(w)
                cpu[m].append(c)
            finally:
                shutil.rmtree(stage, ignore_errors=True)
    return wall, cpu


def prepare_tools(work: Path, quick: bool) -> list:
    from iolens.synth import synth

    pairs = 10_000 if quick else 50_000
    print(f"# preparing inputs in a temporary directory ({pairs} synthetic read pairs)", flush=True)
    s = synth(work / "synth", ref_bases=2_000_000, pairs=pairs, seed=1)
    sam = work / "aln.sam"
    with open(sam, "wb") as fh:
        subprocess.run(["minimap2", "-ax", "sr", "-t", "2", str(s.reference), str(s.reads1), str(s.reads2)],
                       stdout=fh, stderr=subprocess.DEVNULL, check=True)
    fq = work / "reads.fq"
    with open(fq, "wb") as fh:
        subprocess.run(["gzip", "-dc", str(s.reads1)], stdout=fh, check=True)
    for p in (sam, fq, s.reads1, s.reads2, s.reference):
        p.read_bytes()  # warm the page cache
    return [
        ("minimap2", ["sh", "-c", f"minimap2 -ax sr -t 2 {s.reference} {s.reads1} {s.reads2} > {work}/out.sam "
                                  "2>/dev/null"], None),
        ("samtools sort", ["samtools", "sort", "-@", "2", "-m", "16M", "-T", str(work / "srt"), "-o",
                           str(work / "out.bam"), str(sam)], None),
        ("gzip -1", ["sh", "-c", f"gzip -1 -c {fq} > {work}/fq.gz"], None),
    ]


CREATE_FILES = ('d=$(mktemp -d /dev/shm/iolens-create-XXXXXX) && cd "$d" && mkdir sf && i=0; '
                'while [ $i -lt 2000 ]; do echo $i > sf/f$i; i=$((i+1)); done; rm -r sf && cd / && rmdir "$d"')


def fmt_cost(seconds: float, per: str) -> str:
    return f"{seconds * 1e9:+.1f} ns" if per in ("call", "file") else f"{seconds * 1e3:+.3f} ms"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rounds", type=int, default=5, help="interleaved rounds per workload (default 5)")
    ap.add_argument("--quick", action="store_true", help="fewer calls and rounds: a smoke run, not a measurement")
    ap.add_argument("--clock", choices=["vdso"], help="force the interposer's vDSO clock (IOLENS_CLOCK)")
    ap.add_argument("--preload", type=Path, help="measure this build of the interposer instead of the installed one")
    ap.add_argument("--only", nargs="*", help="workloads to run (names as printed, e.g. write fputc true)")
    ap.add_argument("--callgrind", action="store_true", help="also count the real tools' instructions in each mode "
                    "(valgrind's callgrind, one run each): the added code without the machine's noise")
    args = ap.parse_args()
    global PRELOAD
    if args.preload:
        if not args.preload.is_file():
            print(f"iolens: error: --preload {args.preload}: no such file", file=sys.stderr)
            return 2
        PRELOAD = args.preload.resolve()
    scale = 10 if args.quick else 1
    if args.quick:
        args.rounds = 3
    for t in ("cc", "minimap2", "samtools", "gzip"):
        if shutil.which(t) is None:
            print(f"iolens: error: this benchmark needs {t} (dev/setup installs it)", file=sys.stderr)
            return 2

    work = Path(tempfile.mkdtemp(prefix="iolens-overhead-"))  # $TMPDIR: the files of the write loops
    try:
        here = Path(__file__).resolve().parent.parent
        hot = work / "hotloop"
        subprocess.run(["cc", "-O2", "-o", str(hot), str(here / "tests" / "native" / "hotloop.c")], check=True)
        vfork = work / "vfork_threads"
        subprocess.run(["cc", "-O2", "-pthread", "-o", str(vfork), str(here / "tests" / "native" / "vfork_threads.c")],
                       check=True)
        (work / "floor.c").write_text(FORWARDER)
        floor = work / "libfloor.so"
        subprocess.run(["cc", "-O2", "-shared", "-fPIC", "-o", str(floor), str(work / "floor.c"), "-ldl"], check=True)
        n_fread = 50_000_000 // scale
        (work / "in.bin").write_bytes(b"x" * n_fread)
        (work / "in.bin").read_bytes()
        calls = [
            ("write()", "write", 1_000_000 // scale, "out.bin"),
            ("fputc", "fputc", 50_000_000 // scale, "out.txt"),
            ("fread 1 B", "fread", n_fread, "in.bin"),
            ("stat", "stat", 1_000_000 // scale, "in.bin"),
            ("open+close", "openclose", 500_000 // scale, "in.bin"),
        ]
        workloads = [(name, [str(hot), mode, str(n), str(work / path)], n, "call") for name, mode, n, path in calls]
        workloads.append(("true x200", ["sh", "-c", "for i in $(seq 200); do /bin/true; done"], 200, "process"))
        workloads.append(("vfork x200", [str(vfork), "8", "200", "/bin/true"], 200, "process"))
        workloads.append(("create x2000", ["sh", "-c", CREATE_FILES], 2000, "file"))
        def wanted(name: str) -> bool:
            return not args.only or any(o.lower() in name.lower() for o in args.only)

        if any(wanted(t) for t in TOOLS):  # the inputs take a while to make: only when a tool runs
            workloads += [(name, argv, 1, "run") for name, argv, _ in prepare_tools(work, args.quick)]
        workloads = [w for w in workloads if wanted(w[0])]

        print(f"# {args.rounds} interleaved rounds per workload (mode order shuffled each round); added cost = median "
              f"over rounds of (mode - plain) in the same round; {os.cpu_count()} CPUs; page cache warm; clock: "
              f"{'vDSO (forced)' if args.clock else 'default (TSC where safe)'}.")
        print("# wall: elapsed time.  cpu: user + system time of the command and its children, which a busy, shared "
              "machine disturbs less (the added code runs on the CPU; waiting does not).")
        print("# iolens spread: the interquartile range of its added cost over the rounds; for the real tools, the "
              "95% confidence interval of its median (percentile bootstrap of the rounds' differences).")
        print(f"{'workload':<13} {'':>4} {'plain':>14} {'do-nothing':>11} {'iolens':>11} {'x floor':>7} "
              f"{'--trace':>11} {'x floor':>7}  {'iolens spread':>24}")
        for name, argv, per_n, per in workloads:
            wall, cpu = measure(argv, args.rounds, floor, work, args.clock)
            for label, t in (("wall", wall), ("cpu", cpu)):
                plain = statistics.median(t["plain"])
                added = {m: [a - b for a, b in zip(t[m], t["plain"])] for m in MODES[1:]}
                med = {m: statistics.median(v) for m, v in added.items()}
                q = statistics.quantiles(added["iolens"], n=4) if len(added["iolens"]) > 1 else [med["iolens"]] * 3
                fl = med["do-nothing"]

                def ratio(m: str) -> str:
                    return f"{med[m] / fl:7.1f}" if fl > 0 else f"{'-':>7}"
                if per == "run":
                    cols = [f"{100 * med[m] / plain:+.2f}%" for m in MODES[1:]]
                    base = f"{plain:.3f} s"
                    lo, hi = bootstrap_ci(added["iolens"]) if len(added["iolens"]) > 1 else (med["iolens"],) * 2
                    spread = f"{100 * lo / plain:+.2f}% .. {100 * hi / plain:+.2f}%"
                else:
                    cols = [fmt_cost(med[m] / per_n, per) for m in MODES[1:]]
                    unit = {"call": "/call", "process": "/proc", "file": "/file"}[per]
                    base = fmt_cost(plain / per_n, per).lstrip("+") + unit
                    spread = f"{fmt_cost(q[0] / per_n, per)} .. {fmt_cost(q[2] / per_n, per)}"
                print(f"{name if label == 'wall' else '':<13} {label:>4} {base:>14} {cols[0]:>11} {cols[1]:>11} "
                      f"{ratio('iolens')} {cols[2]:>11} {ratio('--trace')}  {spread:>24}", flush=True)
        if args.callgrind:
            print_instructions([w for w in workloads if w[3] == "run"], floor, work, args.clock)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return 0


def print_instructions(tools: list, floor: Path, work: Path, clock: str | None) -> None:
    """Per real tool, the instructions one run executes in each mode (the program's, the libraries' and the
    interposer's, over every process of the run) and what each mode adds over plain."""
    from preload_ab import callgrind_instructions

    if not shutil.which("valgrind"):
        print("# --callgrind: valgrind is not installed; no instruction counts")
        return
    print("# instructions, one run per mode under valgrind's callgrind (threads serialised; user space only)")
    print(f"{'workload':<13} {'plain':>16} {'do-nothing':>11} {'iolens':>11} {'--trace':>11}")
    for name, argv, _n, _per in tools:
        stage = staging_root()
        try:
            counts = {m: callgrind_instructions(argv, mode_env(m, floor, stage, clock), children=True) for m in MODES}
        finally:
            shutil.rmtree(stage, ignore_errors=True)
        plain = counts["plain"]
        cols = [f"{100 * (counts[m] - plain) / plain:+.3f}%" for m in MODES[1:]]
        print(f"{name:<13} {plain:>16,} {cols[0]:>11} {cols[1]:>11} {cols[2]:>11}", flush=True)


if __name__ == "__main__":
    sys.exit(main())
