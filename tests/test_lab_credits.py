"""Burst credits emulated in real time (lab/credits.py): the bucket's arithmetic, and, as root, a time series on a
time-scaled gp2 (IOPS credits) and st1 (throughput credits): burst until the bucket empties, then the baseline, then
a refill that buys a shorter burst, each against the volume model (iolens.volumes).

The burst rate a shared machine reaches can be below the model's (the stack tops out near 2,000-3,000 4 KiB
requests a second here under load), so gp2's burst must not exceed the model's; st1's 1 MiB stream must be within
10% of its burst (its bandwidth switches, nothing per request holds it). What a burst spent above the baseline
before it fell to the baseline is checked against the bucket. On gp2 with an empty bucket, a stream must run at the
model's baseline throughput (300 I/Os of 256 KiB a second, not of 64 KiB) while small random writes keep 300 IOPS.
The baseline, which the stack reaches with room to spare, is checked against the model's figure. Tolerances: 10%
for rates; 15% for what the first burst spent against the bucket and 20% for what the refill's short burst spent
against what the idle time earned (fio's 1 s log at the phase edges; the controller counts the device's requests,
journal writes included, fio only its own).
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import time
from pathlib import Path

import pytest
from conftest import iolens, lab_up, unavailable

from iolens import volumes
from iolens.lab import credits, disks, nbd

MiB = 1 << 20
SCALE = 400  # gp2: 5.4M / 400 = 13,500 I/O credits; st1: 1 TiB / 400 = 2,621 MiB


def test_a_bucket_spends_above_its_baseline_and_refills_at_it():
    b = credits.Bucket.from_perf(volumes.perf("gp2", 100), None, 1000)
    assert b is not None and (b.capacity, b.balance, b.baseline, b.burst) == (5400, 5400, 300, 3000)
    assert b.step(1.0, 3000) == "burst" and b.balance == pytest.approx(2700)
    assert b.step(1.0, 3000) == "baseline" and b.balance <= 0
    assert b.step(1.0, 300) == "baseline"  # held at its baseline it earns what it spends
    assert b.step(1.0, 0) == "burst" and b.balance == pytest.approx(300, abs=31)  # above 1% of the bucket again
    assert b.step(100.0, 0) == "burst" and b.balance == 5400  # never above the capacity
    assert b.used(10, 10 * (1 << 20)) == 40  # 1 MiB I/Os count as 4 of 256 KiB
    empty = credits.Bucket.from_perf(volumes.perf("st1", 2048), "empty")
    assert empty is not None and empty.phase == "baseline" and empty.limit == 80
    half = credits.Bucket.from_perf(volumes.perf("st1", 2048), "50")
    assert half is not None and half.balance == pytest.approx(1024 * 1024)
    assert credits.Bucket.from_perf(volumes.perf("gp3", 100)) is None  # no credits
    assert credits.Bucket.from_perf(volumes.perf("gp2", 2000)) is None  # baseline above the burst
    with pytest.raises(credits.CreditsError, match="full, empty or a percentage"):
        credits.initial_fraction("lots")


def test_lab_up_refuses_bad_credits_in_one_line(tmp_path):
    res = iolens("lab", "up", "--dir", tmp_path / "lab", "--only", "gp2", "--credits", "lots")
    assert res.returncode != 0 and "Traceback" not in res.stderr
    assert "--credits lots: write full, empty or a percentage" in res.stderr


@pytest.fixture(scope="module")
def labdir(tmp_path_factory):
    why = nbd.missing() if os.geteuid() == 0 else []
    if not why and subprocess.run(["which", "fio"], capture_output=True).returncode:
        why = ["fio is not installed (apt-get install fio)"]
    if why:
        unavailable("; ".join(why))
    os.environ["IOLENS_LAB_TIME_SCALE"] = str(SCALE)
    try:
        yield from lab_up(tmp_path_factory, "credits", "--only", "gp2,st1", "--disk-size", "1G")
    finally:
        os.environ.pop("IOLENS_LAB_TIME_SCALE", None)


def _fio(path: Path, log: Path, seconds: float, *, small: bool) -> list[float]:
    """fio for `seconds`, O_DIRECT at a deep queue; its rate each second: IOPS (small) or MiB/s."""
    job = (["--rw=randwrite", "--bs=4k", "--iodepth=32", "--size=256M", f"--write_iops_log={log}"] if small else
           ["--rw=write", "--bs=1M", "--iodepth=8", "--size=256M", f"--write_bw_log={log}"])
    subprocess.run(["fio", "--name=c", f"--filename={path}", "--direct=1", "--ioengine=libaio", "--time_based",
                    f"--runtime={seconds:g}", "--log_avg_msec=1000", "--output-format=terse", *job],
                   check=True, stdout=subprocess.DEVNULL, timeout=seconds + 60)
    (out,) = log.parent.glob(f"{log.name}_{'iops' if small else 'bw'}.*.log")
    vals = [float(line.split(",")[1]) for line in out.read_text().splitlines()]
    out.unlink()
    return vals if small else [v / 1024 for v in vals]  # fio logs KiB/s


def _phases(series: list[float], base: float) -> tuple[float, float, float, float]:
    """(burst rate, burst seconds, credits the burst spent, baseline rate after) of a per-second series.

    The burst runs to the last second above the midpoint between its start and the baseline (a second the host
    stalls in is still burst); the edge second counts by where it lies between them. What it spent is what was done
    above the baseline during it (credits are earned at the baseline and spent by everything done), which the
    model says is the bucket."""
    first = statistics.median(series[:3])
    mid = (first + base) / 2
    n = max((i + 1 for i, v in enumerate(series) if v >= mid), default=0)
    burst = statistics.median(series[:n]) if n else first
    edge = series[n] if n < len(series) else base
    part = max(0.0, min(1.0, (edge - base) / (burst - base))) if burst > base else 0.0
    spent = sum(v - base for v in series[:n]) + part * (edge - base)
    tail = series[n + 2:]
    return burst, n + part, spent, statistics.median(tail) if tail else float("nan")


def _prefill(labdir: Path, name: str, path: Path) -> None:
    """Write the file the throughput test overwrites, then give back the credits that cost (the bucket refills)."""
    subprocess.run(["dd", "if=/dev/zero", f"of={path}", "bs=1M", "count=256", "oflag=direct", "status=none"],
                   check=True)
    while _status(labdir, name)["credits"]["balance"] < 0.999 * _status(labdir, name)["credits"]["capacity"]:
        time.sleep(0.5)


def _status(labdir: Path, name: str) -> dict:
    res = iolens("lab", "status", "--dir", labdir, "--json")
    return {t["name"]: t for t in json.loads(res.stdout)["targets"]}[name]


@pytest.mark.root
@pytest.mark.slow
@pytest.mark.timeout(600)
@pytest.mark.parametrize("name, unit", [("gp2", "io"), ("st1", "MiB")])
def test_burst_until_the_bucket_empties_then_baseline_then_refill(labdir, tmp_path, name, unit):
    perf = disks.profile(name).perf
    assert perf is not None and perf.credits is not None
    small = unit == "io"
    base, top = (perf.iops, perf.burst_iops) if small else (perf.mibps, perf.burst_mibps)
    assert base and top
    bucket = perf.credits.capacity / SCALE
    t = _status(labdir, name)
    assert t["time_scale"] == SCALE and t["credits"]["capacity"] == pytest.approx(bucket)
    assert t["credits"]["phase"] == "burst"  # a new volume starts full
    path = Path(t["path"]) / "f"
    if not small:  # written once unthrottled by the host: the sparse image's first writes allocate host blocks
        _prefill(labdir, name, path)
    seconds = 1.6 * bucket / (0.5 * top - base) if small else 1.6 * bucket / (top - base) + 8

    series = _fio(path, tmp_path / "a", seconds, small=small)
    ended = time.monotonic()
    rate, length, spent, held = _phases(series, base)
    print(f"lab:{name} x{SCALE}: burst {rate:.0f} (model {top:g}) for {length:.1f} s, spending {spent:.0f} of a "
          f"{bucket:.0f} bucket, then {held:.1f} (model {base:g}); series {' '.join(f'{v:.0f}' for v in series)}")
    assert rate <= 1.1 * top and rate > 2.5 * base
    if not small:  # a stream reaches st1's burst: its bandwidth switches, no per-request delay holds it
        assert rate == pytest.approx(top, rel=0.10)
    assert spent == pytest.approx(bucket, rel=0.15)
    assert held == pytest.approx(base, rel=0.10)

    idle = 0.3 * bucket / base  # refills 30% of the bucket
    time.sleep(max(0.0, idle - (time.monotonic() - ended)))
    earned = base * (time.monotonic() - ended)
    again = _fio(path, tmp_path / "b", seconds / 2, small=small)
    rate2, length2, spent2, held2 = _phases(again, base)
    print(f"lab:{name}: after {earned / base:.1f} s idle (earning {earned:.0f}), burst {rate2:.0f} for {length2:.1f} s "
          f"spending {spent2:.0f}, then {held2:.1f}; series {' '.join(f'{v:.0f}' for v in again)}")
    assert rate2 > 2.5 * base
    assert spent2 == pytest.approx(earned, rel=0.2)
    assert held2 == pytest.approx(base, rel=0.10)



@pytest.mark.root
@pytest.mark.slow
@pytest.mark.timeout(300)
def test_gp2_at_its_baseline_streams_at_iops_x_256k_and_keeps_its_small_iops(labdir, tmp_path):
    """gp2 counts an I/O of up to 256 KiB as one: at its 300 IOPS baseline a stream of 1 MiB writes runs at 75 MiB/s
    (not 300 x 64 KiB = 19), while 4 KiB random writes stay at 300 IOPS."""
    perf = disks.profile("gp2").perf
    assert perf is not None and perf.iops and perf.mibps and perf.io_kib
    assert perf.mibps == pytest.approx(perf.iops * perf.io_kib / 1024)
    assert perf.burst_mibps and perf.burst_mibps > 1.5 * perf.mibps  # a burst would show in the stream
    path = Path(_status(labdir, "gp2")["path"]) / "s"
    bucket = perf.credits.capacity / SCALE if perf.credits else 0
    empty = _fio(path, tmp_path / "e", 1.6 * bucket / (0.5 * perf.burst_iops - perf.iops), small=True)
    assert statistics.median(empty[-3:]) == pytest.approx(perf.iops, rel=0.10)  # the bucket is empty
    # the second or so of idle between two fio runs earns about 1% of the scaled bucket, so the stream may open
    # with a burst of a second: its first two seconds are left out
    stream = _fio(path, tmp_path / "s", 12, small=False)
    small = _fio(path, tmp_path / "r", 6, small=True)
    mibps, iops = statistics.median(stream[2:]), statistics.median(small[1:])
    print(f"lab:gp2 at its baseline: 1 MiB writes {' '.join(f'{v:.1f}' for v in stream)} MiB/s (model "
          f"{perf.mibps:g}); 4 KiB random writes {' '.join(f'{v:.0f}' for v in small)} IOPS (model {perf.iops:g})")
    assert mibps == pytest.approx(perf.mibps, rel=0.10)
    assert iops == pytest.approx(perf.iops, rel=0.10)


def test_the_iops_unit_follows_the_mean_request_up_at_once_and_down_under_load():
    iops = {"smallest": 64 << 10, "largest": 256 << 10}
    assert credits.io_unit(10, 10 * 4096, 64 << 10, 256 << 10) == 64 << 10  # small I/O: one token each
    assert credits.io_unit(10, 10 * (1 << 20), 64 << 10, 256 << 10) == 256 << 10  # 1 MiB: 4 I/Os of 256 KiB
    assert credits.io_unit(4, 4 * (128 << 10), 64 << 10, 256 << 10) == 128 << 10
    assert credits.next_unit(64 << 10, 3, 3 << 20, 30, iops) == 256 << 10  # a stream starts: up at once
    assert credits.next_unit(256 << 10, 2, 8192, 30, iops) == 256 << 10  # a journal write between: kept
    assert credits.next_unit(256 << 10, 20, 20 * 4096, 30, iops) == 64 << 10  # random I/O at the limit: down
    assert credits.next_unit(256 << 10, 0, 0, 30, iops) == 256 << 10  # idle: kept


@pytest.mark.root
@pytest.mark.slow
@pytest.mark.timeout(300)
def test_a_sized_target_comes_up_with_the_limits_and_price_of_its_size(tmp_path_factory):
    why = nbd.missing() if os.geteuid() == 0 else []
    if why:
        unavailable("; ".join(why))
    scale = os.environ.pop("IOLENS_LAB_TIME_SCALE", None)  # the module's time-scaled lab may be up: not this one
    try:
        _sized(tmp_path_factory)
    finally:
        if scale is not None:
            os.environ["IOLENS_LAB_TIME_SCALE"] = scale


def _sized(tmp_path_factory) -> None:
    for d in lab_up(tmp_path_factory, "sized", "--only", "lab:sc1:500G", "--disk-size", "256M", "--credits", "50"):
        t = _status(d, "sc1:500G")
        assert t["time_scale"] == 1
        assert t["status"] == "up" and t["healthy"], t
        assert t["volume"] == "aws:ebs-sc1:size=500"
        assert t["limits"]["write_bps"] == round(12 * 500 / 1024 * MiB)  # 12 MiB/s per TiB
        assert t["credits"]["capacity"] == pytest.approx(500 * 1024)  # 1 TiB of credits per TiB, in MiB
        assert t["credits"]["start"] == pytest.approx(250 * 1024)  # --credits 50
        assert t["device"]["bandwidth"] == disks.profile("sc1").at(500).device.bandwidth
        res = iolens("cost", "--option", "lab:sc1:500G=600")
        assert res.returncode == 0 and "size=500" in res.stdout, res.stdout + res.stderr
