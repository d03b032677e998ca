#!/usr/bin/env python3
"""Calibration of the emulated disks (iolens.lab.nbd): each profile's bandwidth and 4 KiB IOPS, measured cold.

    sudo python benchmarks/emulated_disks.py [--only gp3,hdd] [--repeat 3] [--seconds 3] [--json out.json]

A disk with burst credits (gp2, st1, sc1: iolens.volumes) is measured in both phases, each against the model's
limits there: `burst` (a new volume's full bucket, real size: it lasts far longer than the measurements) and
`baseline` (an empty bucket; idle moments between measurements earn too little to burst again).

For each profile: bring it up in a temporary directory, then, each --repeat times (the median is reported):
- seq write, buffered + fsync: write --seconds worth of the bandwidth in 1 MiB writes, fsync; bytes / time;
- seq read, cold buffered: drop caches, read that file in 1 MiB reads;
- seq read, O_DIRECT: fio, 1 MiB reads, libaio, queue depth 8;
- 4 KiB rand read, O_DIRECT: fio, libaio, queue depth 32, --seconds;
- 4 KiB rand write, O_DIRECT: likewise;
- 4 KiB rand write, buffered + fsync: pwrite --seconds worth of the IOPS limit to distinct, non-adjacent 4 KiB
  blocks (so the block layer cannot merge them), then fsync; writes / time;
- 4 KiB rand read, cold buffered: fio, 16 jobs of psync reads (POSIX_FADV_RANDOM, so no read-ahead), after fio
  has dropped the file from the cache, --seconds;
- 4 KiB read latency at queue depth 1, O_DIRECT: fio, one psync job, --seconds (no limit: for comparison with the
  device's published latency).
Every measurement starts with `sync` and drop_caches. Error % = (measured - limit) / limit; the target is 10%.
It prints the command, date, nbdkit version and load average first, a row per profile and measure (limit,
median, error, samples), a summary row per profile (worst bandwidth and IOPS errors) and the worst overall.
Needs root, nbdkit, nbdfuse (libnbd-bin) and fio.
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

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from iolens.lab import credits, disks, nbd  # noqa: E402

MiB = 1 << 20
BLOCK = 4096


def drop_caches() -> None:
    os.sync()
    Path("/proc/sys/vm/drop_caches").write_text("3\n")


def seq_write(path: Path, nbytes: int) -> float:
    buf = os.urandom(MiB)
    drop_caches()
    t = time.perf_counter()
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    try:
        for _ in range(nbytes // MiB):
            os.write(fd, buf)
        os.fsync(fd)
    finally:
        os.close(fd)
    return nbytes / (time.perf_counter() - t)


def seq_read(path: Path) -> float:
    drop_caches()
    t = time.perf_counter()
    n = 0
    with open(path, "rb", buffering=0) as fh:
        while chunk := fh.read(MiB):
            n += len(chunk)
    return n / (time.perf_counter() - t)


def rand_write_sync(path: Path, count: int) -> float:
    blocks = path.stat().st_size // BLOCK
    chosen = random.sample(range(0, blocks, 2), min(count, blocks // 2))  # even blocks: never adjacent
    buf = os.urandom(BLOCK)
    drop_caches()
    t = time.perf_counter()
    fd = os.open(path, os.O_WRONLY)
    try:
        for b in chosen:
            os.pwrite(fd, buf, b * BLOCK)
        os.fsync(fd)
    finally:
        os.close(fd)
    return len(chosen) / (time.perf_counter() - t)


def fio(path: Path, seconds: float, *args: str) -> dict:
    drop_caches()
    argv = ["fio", "--name=cal", f"--filename={path}", f"--size={path.stat().st_size}", "--time_based",
            f"--runtime={seconds}", "--invalidate=1", "--group_reporting", "--output-format=json", *args]
    out = subprocess.run(argv, capture_output=True, text=True, check=True, timeout=seconds * 10 + 60).stdout
    job = json.loads(out[out.index("{"):])["jobs"][0]
    return {"read_bw": job["read"]["bw_bytes"], "write_bw": job["write"]["bw_bytes"],
            "read_iops": job["read"]["iops"], "write_iops": job["write"]["iops"]}


MEASURES = ("seq write, buffered+fsync", "seq read, cold buffered", "seq read, O_DIRECT",
            "4k rand read, O_DIRECT", "4k rand write, O_DIRECT", "4k rand write, buffered+fsync",
            "4k rand read, cold buffered", "4k read latency QD1, O_DIRECT")


def measure(mnt: Path, prof: disks.Profile, seconds: float) -> dict[str, float]:
    bw = prof.burst_bandwidth or 400 * MiB  # enough to write for --seconds at the faster phase
    iops = prof.iops or 20000
    f = mnt / "seq.dat"
    room = shutil.disk_usage(mnt).free // 2 // MiB * MiB  # an unthrottled disk would fill a small image
    nbytes = min(room, max(32 * MiB, int(bw * seconds) // MiB * MiB))
    out = {MEASURES[0]: seq_write(f, nbytes), MEASURES[1]: seq_read(f)}
    out[MEASURES[2]] = fio(f, seconds, "--rw=read", "--bs=1M", "--direct=1", "--ioengine=libaio",
                           "--iodepth=8")["read_bw"]
    out[MEASURES[3]] = fio(f, seconds, "--rw=randread", "--bs=4k", "--direct=1", "--ioengine=libaio",
                           "--iodepth=32")["read_iops"]
    out[MEASURES[4]] = fio(f, seconds, "--rw=randwrite", "--bs=4k", "--direct=1", "--ioengine=libaio",
                           "--iodepth=32")["write_iops"]
    out[MEASURES[5]] = rand_write_sync(f, int(iops * seconds))
    out[MEASURES[6]] = fio(f, seconds, "--rw=randread", "--bs=4k", "--ioengine=psync", "--numjobs=16",
                           "--fadvise_hint=random")["read_iops"]
    out[MEASURES[7]] = 1000 / fio(f, seconds, "--rw=randread", "--bs=4k", "--direct=1", "--ioengine=psync")["read_iops"]
    return out


def kind(m: str) -> str:
    return "MiB/s" if m.startswith("seq") else "ms" if "latency" in m else "IOPS"


def show(m: str, v: float) -> str:
    return {"MiB/s": f"{v / MiB:.1f}", "ms": f"{v:.2f}", "IOPS": f"{v:.0f}"}[kind(m)]


def phases(prof: disks.Profile) -> list[tuple[str, str | None, int | None, int | None]]:
    """(label, --credits, bandwidth limit, IOPS limit) of each phase to measure."""
    if not prof.bucket:
        return [(prof.name, None, prof.bandwidth, prof.iops)]
    perf = prof.perf
    assert perf is not None
    top = round(perf.burst_iops) if perf.burst_iops else prof.iops
    return [(f"{prof.name} burst", "full", prof.burst_bandwidth, top),
            (f"{prof.name} base", "empty", prof.bandwidth, prof.iops)]


def run_profile(prof: disks.Profile, repeat: int, seconds: float, size: int,
                credits_: str | None = None) -> dict[str, list[float]]:
    perf = prof.perf
    bucket = credits.Bucket.from_perf(perf, credits_) if perf is not None and credits_ else None
    with tempfile.TemporaryDirectory(prefix=f"iolens-cal-{prof.name}-") as tmp:
        state, mnt = Path(tmp) / "state", Path(tmp) / "mnt"
        try:
            nbd.up(state, mnt, prof.device, size=size, bucket=bucket, io_kib=perf.io_kib if perf else None)
            runs = [measure(mnt, prof, seconds) for _ in range(repeat)]
        finally:
            left = nbd.down(state, mnt)
            if left:
                print(f"{prof.name}: teardown left {'; '.join(left)}", file=sys.stderr)
    return {m: [r[m] for r in runs] for m in MEASURES}


def report(label: str, res: dict[str, list[float]], bw: int | None, iops: int | None) -> list[tuple[float, str, str]]:
    """Print a phase's rows and its summary; its worst errors as (abs %, label, unit)."""
    errors: dict[str, list[float]] = {"MiB/s": [], "IOPS": []}
    for m, vals in res.items():
        med = statistics.median(vals)
        limit = {"MiB/s": bw, "IOPS": iops, "ms": None}[kind(m)]
        err = "-"
        if limit:
            errors[kind(m)].append((med - limit) / limit * 100)
            err = f"{errors[kind(m)][-1]:+.1f}%"
        print(f"{label:<12} {m + ' ' + kind(m):<36} {show(m, limit) if limit else '-':>8} {show(m, med):>9} "
              f"{err:>8}   {' '.join(show(m, v) for v in vals)}", flush=True)
    summary = {k: max(v, key=abs) for k, v in errors.items() if v}
    print(f"{label:<12} worst error: " + (", ".join(f"{k} {e:+.1f}%" for k, e in summary.items()) or
                                        "unthrottled") + f" (load average {os.getloadavg()[0]:.1f})\n", flush=True)
    return [(abs(e), label, k) for k, e in summary.items()]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--only", help="comma-separated profile names (default: all)")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--seconds", type=float, default=3.0, help="length of each measurement")
    ap.add_argument("--size", default="2G", help="image size (sparse)")
    ap.add_argument("--json", type=Path, help="also write every sample here")
    a = ap.parse_args()
    why = nbd.missing() + (["fio is not installed"] if subprocess.run(["which", "fio"], capture_output=True).returncode
                           else [])
    if why:
        print(f"emulated_disks: {why[0]}", file=sys.stderr)
        return 2
    size = int(a.size[:-1]) << {"M": 20, "G": 30}[a.size[-1].upper()] if a.size[-1].isalpha() else int(a.size)
    names = a.only.split(",") if a.only else [p.name for p in disks.PROFILES]
    try:
        profiles = [disks.profile(n.strip()) for n in names]
    except nbd.StepFailed as err:
        print(f"emulated_disks: {err}", file=sys.stderr)
        return 2
    version = subprocess.run(["nbdkit", "--version"], capture_output=True, text=True).stdout.strip()
    print(f"# {' '.join(sys.argv)}\n# {time.strftime('%Y-%m-%d %H:%M %Z')}, {version}, {os.cpu_count()} CPUs, "
          f"load average {os.getloadavg()[0]:.1f} at the start")
    print(f"{'profile':<12} {'measure':<36} {'limit':>8} {'measured':>9} {'error':>8}   samples")
    samples, worst = {}, []
    for prof in profiles:
        for label, credits_, bw_limit, iops_limit in phases(prof):
            res = run_profile(prof, a.repeat, a.seconds, size, credits_)
            samples[label] = res
            worst += report(label, res, bw_limit, iops_limit)
    if worst:
        e, name, k = max(worst)
        print(f"worst of all: {name} {k} {e:.1f}% ({'within' if e <= 10 else 'outside'} the 10% target); "
              f"load average {os.getloadavg()[0]:.1f} at the end")
    if a.json:
        a.json.write_text(json.dumps(samples, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
