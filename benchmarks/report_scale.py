"""Time and peak memory of `iolens report` on a synthetic capture of 1,000 processes and 100,000 files.

    python benchmarks/report_scale.py [--processes 1000] [--files 100000] [--keep DIR] [--python PY]
                                      [--before PKGDIR --rounds 3] [--no-each]
    python benchmarks/report_scale.py --refusals [--size-mib 1024] [--python PY]

Writes the capture (a shell-like root with 999 children, each with its own files, timeline and
mixed access sizes), then runs `iolens report` on it in a fresh interpreter, once for the terminal
report and once writing JSON, CSV and HTML (then, unless --no-each, each format alone), and prints wall time,
CPU time and peak RSS for each.
Targets: under 3 s for the terminal report, under 5 s for every format together, under 600 MiB each.
Wall time depends on the machine's load (printed with each figure); CPU seconds (user + system) less so.

--before PKGDIR: a copy of an older installed `iolens` package (its directory's parent goes first on PYTHONPATH),
measured interleaved with this one, --rounds times each (A B A B ...), medians printed.

--refusals: `iolens report` on large files that are not whole captures (a sparse file, zeros written
out, random bytes, a capture header followed by zeros), each refused with exit status 3: wall time,
peak RSS and the message.  Target: under 64 MiB of memory for each, whatever the size (the reader
checks the header before it reads further).  --python: measure the iolens installed for another
interpreter (an older build, for a before figure).
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from iolens import _format as F
from iolens.capture.writer import (file_header, file_record, meta_record, pack_fixed, record, schema_payload,
                                   string_record)

T0 = 10**12
TARGET_S = {"terminal report": 3.0, "--json --csv --html": 5.0}
TARGET_BYTES = 600 << 20
NCAT = len(F.CATEGORIES)


def make_capture(path: Path, nproc: int, nfiles: int, seed: int = 1) -> None:
    rnd = random.Random(seed)
    per = nfiles // nproc
    span = 3600 * 10**9
    parts = [file_header(), record("SCHEMA", schema_payload()),
             meta_record({"command": ["sh", "pipeline.sh"], "cwd": "/data/run", "start_mono": T0,
                          "end_mono": T0 + span, "wall_s": span / 1e9, "exit_status": 0, "cpus": 32,
                          "mem_bytes": 128 << 30, "host": "bench", "kernel": "6.1",
                          "mounts": [{"mountpoint": "/", "dev": "254:1", "fstype": "ext4", "source": "/dev/vda1",
                                      "options": "rw", "root": "/"},
                                     {"mountpoint": "/data", "dev": "8:17", "fstype": "xfs", "source": "/dev/sdb1",
                                      "options": "rw", "root": "/"},
                                     {"mountpoint": "/scratch", "dev": "259:1", "fstype": "ext4",
                                      "source": "/dev/nvme0n1p1", "options": "rw", "root": "/"},
                                     {"mountpoint": "/mnt/nfs", "dev": "0:50", "fstype": "nfs4", "source": "fs:/x",
                                      "options": "rw", "root": "/"}]})]
    tools = [["samtools", "sort"], ["bwa", "mem"], ["gzip", "-d"], ["python3", "step.py"], ["awk", "{print}"]]
    mounts = ["/data/run", "/scratch/tmp", "/mnt/nfs/ref", "/data/run/out"]
    for i in range(nproc):
        start = 0 if i == 0 else rnd.randrange(0, span - 60 * 10**9)
        end = span if i == 0 else start + rnd.randrange(10**9, 60 * 10**9)
        argv = ["sh", "pipeline.sh"] if i == 0 else tools[i % len(tools)] + [f"part{i}"]
        files = []
        cat = [0] * NCAT
        for j in range(per):
            reads = rnd.randrange(0, 2000)
            writes = rnd.randrange(0, 500)
            rh = [0] * F.HIST_BINS
            wh = [0] * F.HIST_BINS
            for _ in range(3):
                rh[rnd.randrange(0, 7)] += reads // 3
                wh[rnd.randrange(0, 7)] += writes // 3
            ct = [rnd.randrange(0, 10**7), rnd.randrange(0, 10**7), rnd.randrange(0, 10**6), 0, 0]
            for c in range(NCAT):
                cat[c] += ct[c]
            first = T0 + start + rnd.randrange(0, max(1, end - start))
            created = rnd.random() < 0.2
            files.append({
                "path": f"{mounts[j % len(mounts)]}/p{i}/f{j}.{('bam', 'fq.gz', 'sam', 'tmp.0001.bam')[j % 4]}",
                "index": j, "flags": (1 | (2 if rnd.random() < 0.5 else 0)) if created else 0, "dev": 0,
                "ino": i * per + j, "mode": 0o100644, "opens": 1 + rnd.randrange(0, 3), "reads": reads,
                "writes": writes, "bytes_read": reads * 8192, "bytes_written": writes * 65536,
                "read_hist": rh, "write_hist": wh, "seq_reads": int(reads * 0.8), "seq_writes": int(writes * 0.9),
                "max_read_end": reads * 8192, "max_write_end": writes * 65536, "stats": rnd.randrange(0, 5),
                "cat_time_ns": ct, "first_mono": first, "last_mono": min(T0 + end, first + 10**9),
                "created_mono": first if created else 0, "deleted_mono": first + 10**8 if created else 0})
        io = sum(cat[:4])
        shift = F.TIMELINE_SHIFT0
        while ((end - start) >> shift) >= F.TIMELINE_BINS:
            shift += 1
        nb = F.TIMELINE_BINS
        count = [rnd.randrange(0, 50) for _ in range(nb * NCAT)]
        proc = {"pid": 1000 + i, "ppid": 1 if i == 0 else 1000, "flags": 3, "start_mono": T0 + start,
                "end_mono": T0 + end, "utime_ns": max(0, end - start - io) // 2, "cat_time_ns": cat,
                "cat_wall_ns": cat, "io_wall_ns": io, "bytes_read": sum(f["bytes_read"] for f in files),
                "bytes_written": sum(f["bytes_written"] for f in files), "nfiles": per,
                "wait_ns": (end - start) if i == 0 else 0}
        proc["k_rchar"], proc["k_wchar"] = proc["bytes_read"], proc["bytes_written"]
        parts.append(record("PROC", pack_fixed("PROC", proc)))
        parts.append(string_record("EXE", f"/usr/bin/{argv[0]}"))
        parts.append(string_record("ARGV", "\0".join(argv) + "\0"))
        parts.extend(file_record(f) for f in files)
        parts.append(record("TIMELINE", pack_fixed("TIMELINE", {
            "t0_mono": T0 + start, "shift": shift, "nbins": nb, "count": count,
            "bytes_read": [rnd.randrange(0, 1 << 20) for _ in range(nb)],
            "bytes_written": [rnd.randrange(0, 1 << 20) for _ in range(nb)]})))
    parts.append(b"\0" * 8)
    path.write_bytes(b"".join(parts))


def measure_cpu(args: list[str], python: str = sys.executable, expect: int = 0,
                env: dict[str, str] | None = None) -> tuple[float, float, int, str]:
    """Wall seconds, CPU seconds (user + system), peak RSS (bytes) and the last line of stderr of
    `python -m iolens ARGS` in a fresh interpreter, which must exit with status `expect`."""
    code = ("import resource, subprocess, sys, time; t = time.perf_counter(); "
            "r = subprocess.run([sys.executable, '-m', 'iolens', *sys.argv[1:]], stdout=subprocess.DEVNULL, "
            "stderr=subprocess.PIPE, text=True); "
            "w = time.perf_counter() - t; u = resource.getrusage(resource.RUSAGE_CHILDREN); "
            "print(w, u.ru_utime + u.ru_stime, u.ru_maxrss * 1024, r.returncode); "
            "print((r.stderr.strip().splitlines() or [''])[-1])")
    out = subprocess.run([python, "-c", code, *args], capture_output=True, text=True, check=True, env=env)
    first, _, said = out.stdout.partition("\n")
    wall, cpu, rss, rc = first.split()
    if int(rc) != expect:
        raise SystemExit(f"iolens {' '.join(args)} exited with status {rc}, not {expect}: {said.strip()}")
    return float(wall), float(cpu), int(rss), said.strip()


def measure(args: list[str], python: str = sys.executable, expect: int = 0) -> tuple[float, int, str]:
    wall, _cpu, rss, said = measure_cpu(args, python, expect)
    return wall, rss, said


REFUSAL_BYTES = 64 << 20


def refusals(d: Path, size: int, python: str) -> bool:
    """`iolens report` on large files that are not whole captures: each refused, in little memory."""
    header = file_header()
    inputs = {
        "sparse file (truncate -s)": lambda f: f.truncate(size),
        "zeros written out": lambda f: [f.write(bytes(1 << 20)) for _ in range(size >> 20)],
        "random bytes": lambda f: [f.write(random.randbytes(1 << 20)) for _ in range(size >> 20)],
        "capture header, then zeros": lambda f: (f.write(header), f.truncate(size)),
    }
    ok = True
    for label, make in inputs.items():
        path = d / "input.bin"
        with open(path, "wb") as f:
            make(f)
        wall, rss, said = measure(["report", "-q", str(path)], python, expect=3)
        path.unlink()
        good = rss < REFUSAL_BYTES
        ok &= good
        print(f"{label}, {size / 2**20:,.0f} MiB: {wall:.2f} s, peak RSS {rss / 2**20:.0f} MiB "
              f"[target < {REFUSAL_BYTES >> 20} MiB: {'met' if good else 'MISSED'}]: {said.replace(str(d), 'DIR')}")
    return ok


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--processes", type=int, default=1000)
    ap.add_argument("--files", type=int, default=100_000)
    ap.add_argument("--keep", type=Path, help="keep the capture and outputs in this directory")
    ap.add_argument("--python", default=sys.executable, help="the interpreter whose iolens is measured")
    ap.add_argument("--before", help="an older installed iolens package directory, measured interleaved")
    ap.add_argument("--rounds", type=int, default=3, help="with --before: runs of each version")
    ap.add_argument("--each", action=argparse.BooleanOptionalAction, default=True,
                    help="also time each format alone (--json, --csv, --html), for the share of each")
    ap.add_argument("--refusals", action="store_true", help="measure refusals of large files that are not captures")
    ap.add_argument("--size-mib", type=int, default=1024, help="size of each file for --refusals")
    a = ap.parse_args()
    d = a.keep or Path(tempfile.mkdtemp(prefix="iolens-bench-"))
    d.mkdir(parents=True, exist_ok=True)
    if a.refusals:
        ok = refusals(d, a.size_mib << 20, a.python)
        if not a.keep:
            d.rmdir()
        return 0 if ok else 1
    cap = d / "scale.iolens"
    t = time.perf_counter()
    if not cap.exists():  # --keep DIR: a capture made before is measured again
        make_capture(cap, a.processes, a.files)
    print(f"capture: {a.processes:,} processes, {a.files:,} files, {cap.stat().st_size / 2**20:.1f} MiB "
          f"(written in {time.perf_counter() - t:.1f} s)")
    ok = True
    versions = {"this": None}
    if a.before:
        versions = {"before": str(Path(a.before).resolve().parent), "this": None}
    runs: dict[tuple[str, str], list[tuple[float, float, int, str]]] = {}
    each = [(f"--{fmt} alone", ["-q", f"--{fmt}", str(d / f"r.{fmt}")]) for fmt in ("json", "csv", "html")]
    cases = (("terminal report", []),
             ("--json --csv --html", ["-q", "--json", str(d / "r.json"), "--csv", str(d / "r.csv"),
                                      "--html", str(d / "r.html")]),
             *(each if a.each else []))
    for _round in range(a.rounds if a.before else 1):
        for label, extra in cases:
            for version, path in versions.items():  # interleaved: A B A B ...
                for out in d.glob("r.*"):
                    out.unlink()
                env = dict(os.environ, PYTHONPATH=path) if path else None
                load = os.getloadavg()[0]
                wall, cpu, rss = measure_cpu(["report", str(cap), *extra], a.python, env=env)[:3]
                runs.setdefault((label, version), []).append((wall, cpu, rss, f"{load:.1f}"))
    for (label, version), rs in runs.items():
        wall, cpu, rss = (statistics.median(r[i] for r in rs) for i in range(3))
        loads = ", ".join(r[3] for r in rs)
        line = (f"report ({label}, {version}): median of {len(rs)}: {wall:.2f} s wall, {cpu:.2f} s CPU, peak RSS "
                f"{rss / 2**20:.0f} MiB (1-min load before each run: {loads})")
        if label not in TARGET_S:  # one format alone: its share of the whole, no target of its own
            print(line)
            continue
        good = wall < TARGET_S[label] and rss < TARGET_BYTES
        if version == "this":
            ok &= good
        print(f"{line} [target < {TARGET_S[label]:.0f} s and < {TARGET_BYTES >> 20} MiB: {'met' if good else 'MISSED'}]"
              f" (CPU: {'met' if cpu < TARGET_S[label] else 'MISSED'})")
    if not a.keep:
        for p in d.iterdir():
            p.unlink()
        d.rmdir()
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
