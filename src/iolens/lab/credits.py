"""Burst credits and I/O accounting in real time: a small controller beside an emulated disk that keeps its credit
balance, switches the device's limits between burst and baseline as the balance empties and refills, and counts
I/O as the provider does.

    Bucket.from_perf(perf, "full")        -> the balance a new volume gets (gp2: 5.4M I/Os; st1: 1 TiB per TiB)
    bucket.step(dt, used) -> "burst"|"baseline"  earn dt x baseline, spend what the disk did, clamp to the capacity
    io_unit(ios, nbytes, smallest, largest)  what the IOPS server counts one I/O as, from a tick's mean request
    run(state_dir)                        the controller: once per TICK_S, read what the loop device completed
                                          (/sys/block/loopN/stat), step the bucket, write the limits to the rate
                                          files nbdkit re-reads (its rate filter's rate-file=), and record the balance

The volume model (iolens.volumes) says what a credit is: an I/O of up to io_kib (gp2) or a MiB (st1, sc1, EFS).
The balance is earned at the baseline rate and spent by everything done (AWS's wording: credits accrue at the
baseline and are spent by I/O), never above the capacity. While it is above zero the disk runs at the burst limit.

The IOPS server (nbd.Device.iops_args) counts bytes, each request rounded up to 64 KiB, while the provider counts
an I/O of up to io_kib (256 KiB on SSD volumes, 1 MiB on st1/sc1) as one, and merges sequential small I/Os up to
that size. So the controller sets the server's rate to IOPS x the tick's mean request size, held between 64 KiB and
io_kib: small random I/O gets the IOPS limit, a stream gets IOPS x io_kib (gp2's 300 IOPS: 75 MiB/s, not 19). A mix
of small and large requests in one tick is counted by its mean (a stream beside random 4 KiB I/O gets up to a
quarter more than the model gives).

A time scale S (for tests only) divides the bucket and the starting balance by S: every rate stays the provider's,
so a burst and a refill each take 1/S of their real time. Every result made under it says so (lab.emulation).
"""

from __future__ import annotations

import json
import sys
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from iolens.volumes import Perf

TICK_S = 0.1
STREAM_SLACK = 1.05  # the IOPS server's rate for units above 64 KiB: in series with the device's rate filter it
# delivered 7% under its rate to 1 MiB O_DIRECT writes and 10% under to buffered writeback (gp2 at 75 MiB/s)
RESUME = 0.01  # an empty bucket bursts again once it holds this fraction of its capacity
STATE = "credits.json"
SECTOR = 512
MiB = 1 << 20


class CreditsError(ValueError):
    """--credits text that is not full, empty or a percentage (a one-line message)."""


def initial_fraction(text: str | None) -> float | None:
    """--credits full|empty|PCT -> a fraction of the bucket (None: what a new volume gets)."""
    if text is None or text == "new":
        return None
    if text == "full":
        return 1.0
    if text == "empty":
        return 0.0
    try:
        pct = float(text.rstrip("%"))
    except ValueError:
        pct = -1.0
    if not 0 <= pct <= 100:
        raise CreditsError(f"--credits {text}: write full, empty or a percentage from 0 to 100")
    return pct / 100


@dataclass
class Bucket:
    unit: str  # "io" or "MiB"
    capacity: float
    balance: float
    baseline: float  # the limit (and the earn rate) in the unit per second
    burst: float  # the limit while the balance lasts
    io_kib: int | None = None  # "io": the largest I/O counted as one
    time_scale: float = 1.0

    @classmethod
    def from_perf(cls, perf: Perf, credits: str | None = None, time_scale: float = 1.0) -> Bucket | None:
        """The bucket of a volume with credits (None: it has none, or does not burst above its baseline)."""
        c = perf.credits
        if c is None:
            return None
        base, burst = (perf.iops, perf.burst_iops) if c.unit == "io" else (perf.mibps, perf.burst_mibps)
        if base is None or burst is None or burst <= base:
            return None
        frac = initial_fraction(credits)
        start = c.initial if frac is None else frac * c.capacity
        return cls(c.unit, c.capacity / time_scale, start / time_scale, base, burst, perf.io_kib, time_scale)

    bursting: bool = True

    @property
    def phase(self) -> str:
        return "burst" if self.bursting else "baseline"

    @property
    def limit(self) -> float:
        return self.burst if self.phase == "burst" else self.baseline

    def used(self, ios: int, nbytes: int) -> float:
        """What a tick's completed requests cost, in the bucket's unit."""
        if self.unit == "MiB":
            return nbytes / MiB
        return float(max(ios, nbytes / ((self.io_kib or 256) * 1024)))

    def __post_init__(self) -> None:
        self.bursting = self.balance > 0

    def step(self, dt: float, used: float) -> str:
        """Earn dt at the baseline, spend `used`; burst while the balance lasts, and again once it holds
        RESUME of the bucket (so a disk held at its baseline does not flicker to burst on each credit earned)."""
        self.balance = min(self.capacity, self.balance + self.baseline * dt - used)
        self.balance = max(self.balance, -self.baseline * TICK_S)  # a tick's overshoot, not a debt that grows
        self.bursting = self.balance > (0 if self.bursting else RESUME * self.capacity)
        return self.phase


def io_unit(ios: int, nbytes: int, smallest: int, largest: int) -> int:
    """The bytes the IOPS server should let through per I/O of the model: a tick's mean request, held between the
    server's smallest unit and the largest I/O the provider counts as one."""
    return max(smallest, min(largest, round(nbytes / ios))) if ios > 0 else smallest


def next_unit(unit: int, ios: int, nbytes: int, allowed: float, iops: dict[str, Any]) -> int:
    """The unit after a tick of `ios` requests and `nbytes` (`allowed`: the requests the IOPS limit lets through
    in it). A larger mean raises it at once (a stream starts); a smaller one lowers it only when the tick's requests
    press on the limit (a quarter of it or more), so the journal's few small writes between a stream's requests, or
    a metadata read after it, do not drop a stream to IOPS x 64 KiB for the second nbdkit takes to re-read."""
    if ios <= 0:
        return unit
    mean = io_unit(ios, nbytes, iops["smallest"], iops["largest"])
    return mean if mean > unit or ios >= 0.25 * allowed else unit


def disk_stat(loop: str) -> tuple[int, int]:
    """(completed requests, bytes) of a block device since it was attached."""
    f = (Path("/sys/block") / Path(loop).name / "stat").read_text().split()
    return int(f[0]) + int(f[4]), (int(f[2]) + int(f[6])) * SECTOR


def write_rate(path: Path, bits_per_s: float) -> None:
    """Atomically, as the rate filter asks: a new file renamed over the old."""
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(f"{int(bits_per_s)}\n")
    tmp.replace(path)


def configure(path: Path, loop: str, bucket: Bucket | None, rate_file: Path | None, bytes_per_unit: float,
              iops: dict[str, Any] | None) -> None:
    """Write the controller's config (and so its state file), and the rate files with their starting limits.

    rate_file: the bandwidth the bucket switches (throughput credits), bytes_per_unit the device's bytes per MiB.
    iops: the IOPS server's rate file ("file"), its IOPS when no I/O bucket switches them ("iops"), and the smallest
    and largest bytes counted as one I/O ("smallest", "largest")."""
    if bucket is not None and rate_file is not None:
        write_rate(rate_file, bucket.limit * bytes_per_unit * 8)
    if iops is not None:
        write_rate(Path(iops["file"]), _iops_now(bucket, iops) * iops["smallest"] * 8)
    path.write_text(json.dumps({"bucket": asdict(bucket) if bucket else None, "loop": loop,
                                "rate_file": str(rate_file) if rate_file else None, "bytes_per_unit": bytes_per_unit,
                                "iops": iops, "phase": bucket.phase if bucket else None, "updated": time.time()}))


def _iops_now(bucket: Bucket | None, iops: dict[str, Any]) -> float:
    """The IOPS limit now: the bucket's for I/O credits, else the device's."""
    return bucket.limit if bucket is not None and bucket.unit == "io" else float(iops["iops"])


def read_state(path: Path) -> dict | None:
    try:
        return json.loads(Path(path).read_text())
    except (OSError, ValueError):
        return None


def run(path: Path) -> None:
    """The controller loop (until killed): see the module docstring. Its config and state: `path` (credits.json)."""
    state_dir = path.parent
    cfg = json.loads(path.read_text())
    b = Bucket(**cfg["bucket"]) if cfg.get("bucket") else None
    rate_file = Path(cfg["rate_file"]) if cfg.get("rate_file") else None
    per_unit = float(cfg["bytes_per_unit"])
    iops = cfg.get("iops")
    unit = iops["smallest"] if iops else 0
    written = _iops_now(b, iops) * unit if iops else 0.0
    ios0, bytes0 = disk_stat(cfg["loop"])
    t0 = last = time.monotonic()
    phase = b.phase if b else None
    while True:
        time.sleep(TICK_S)
        now = time.monotonic()
        ios, nbytes = disk_stat(cfg["loop"])
        if b is not None:
            b.step(now - last, b.used(ios - ios0, nbytes - bytes0))
            if b.phase != phase:
                phase = b.phase
                if rate_file is not None:
                    write_rate(rate_file, b.limit * per_unit * 8)
                with open(Path(state_dir) / "credits.log", "a") as log:
                    log.write(f"{now - t0:.2f} {phase} {b.balance:.0f}\n")
        if iops is not None:
            unit = next_unit(unit, ios - ios0, nbytes - bytes0, _iops_now(b, iops) * (now - last), iops)
            rate = _iops_now(b, iops) * unit * (STREAM_SLACK if unit > iops["smallest"] else 1)
            if abs(rate - written) > 0.02 * written:
                write_rate(Path(iops["file"]), rate * 8)
                written = rate
        ios0, bytes0, last = ios, nbytes, now
        cfg.update(bucket=asdict(b) if b else None, phase=phase, io_unit=unit, updated=time.time())
        tmp = path.with_name(f".{STATE}.tmp")
        tmp.write_text(json.dumps(cfg) + "\n")
        tmp.replace(path)


if __name__ == "__main__":  # python -m iolens.lab.credits STATE/credits.json (started by nbd.up)
    run(Path(sys.argv[1]))
