"""The storage types iolens emulates and prices, each defined once: its priced option, its size rule and its
performance model as a function of size and provisioned figures, from the provider's documentation.

    perf("gp2", 100)                   -> Perf: 300 IOPS baseline, 3,000 burst on a 5.4M I/O-credit bucket, 128 MiB/s
    perf("st1", 2048)                  -> Perf: 80 MiB/s baseline, 500 burst, a 2 TiB throughput-credit bucket
    perf("io2", 100, iops=4000)        -> Perf: 4,000 IOPS, no credits
    TYPES["gp3"].spec(500)             -> "aws:ebs-gp3:size=500:iops=3000:throughput=125" (a priced option)

The lab's targets (lab/catalog.py), their emulation (lab/nbd.py), their prices (cost/inputs.py) and the sizes
`iolens cost` assumes all come from here. Every figure names its source and the date it was read (SOURCES), as
the price snapshot does. Sizes are GiB; throughputs MiB/s; the credit buckets count I/Os (IOPS credits) or MiB
(throughput credits).

Nothing here does I/O: plain arithmetic, importable from every layer.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

TIB = 1024  # GiB


@dataclass(frozen=True)
class Source:
    url: str
    as_of: str  # when the figures were read
    transcribed: bool = True  # copied by hand from the page, not fetched by a tool


EBS = Source("https://docs.aws.amazon.com/ebs/latest/userguide/ebs-volume-types.html (General Purpose SSD, "
             "Provisioned IOPS SSD, Throughput Optimized and Cold HDD, Previous generation)", "2024-06")
EC2_STORE = Source("https://docs.aws.amazon.com/AWSEC2/latest/UserGuide/InstanceStorage.html", "2024-06")
EFS = Source("https://docs.aws.amazon.com/efs/latest/ug/performance.html (Bursting throughput)", "2024-06")
FSX_LUSTRE = Source("https://docs.aws.amazon.com/fsx/latest/LustreGuide/performance.html (Aggregate file system "
                    "performance, Scratch 2)", "2024-06")
S3 = Source("https://docs.aws.amazon.com/AmazonS3/latest/userguide/optimizing-performance.html", "2024-06")


@dataclass(frozen=True)
class Credits:
    """A burst bucket: `capacity` units, earned at the baseline rate, spent by what is done above it."""

    unit: str  # "io" (an I/O of up to io_kib) or "MiB"
    capacity: float
    initial: float  # what a new volume starts with

    def as_dict(self) -> dict:
        return {"unit": self.unit, "capacity": self.capacity, "initial": self.initial}


@dataclass(frozen=True)
class Perf:
    """What the model says one volume of one size does. None: no limit the model knows of."""

    iops: float | None  # baseline
    mibps: float | None  # baseline
    burst_iops: float | None = None  # while credits last (None: as the baseline)
    burst_mibps: float | None = None
    credits: Credits | None = None  # the bucket the burst spends (None: no credits, the baseline holds)
    io_kib: int | None = None  # the largest I/O the provider counts as one

    @property
    def credit_rate(self) -> float | None:
        """Credits earned per second (the baseline rate of the credit's unit)."""
        if self.credits is None:
            return None
        return self.iops if self.credits.unit == "io" else self.mibps

    @property
    def burst_seconds(self) -> float | None:
        """How long a full bucket lasts at full burst (credits spent above the baseline, earned at it)."""
        c = self.credits
        if c is None:
            return None
        hi, lo = (self.burst_iops, self.iops) if c.unit == "io" else (self.burst_mibps, self.mibps)
        return c.capacity / (hi - lo) if hi and lo is not None and hi > lo else None

    def as_dict(self) -> dict:
        return {"iops": self.iops, "mibps": self.mibps, "burst_iops": self.burst_iops,
                "burst_mibps": self.burst_mibps, "credits": self.credits.as_dict() if self.credits else None,
                "io_kib": self.io_kib, "burst_seconds": self.burst_seconds}


Model = Callable[[float, float | None, float | None], Perf]  # (size GiB, iops, throughput MiB/s) -> Perf


class SizeError(ValueError):
    """A size or provisioned figure outside what the volume type allows (a one-line message)."""


@dataclass(frozen=True)
class VolumeType:
    name: str
    option: str  # the priced option in cost/prices.json
    title: str
    source: Source
    model: Model
    default_gib: float | None = None  # None: not sized (object stores, instance store)
    min_gib: float = 1
    max_gib: float = 16 * TIB
    provisioned: tuple[str, ...] = ()  # "iops", "throughput": figures the user sets and pays for
    published: str = ""  # the figures as the provider states them

    def perf(self, size_gib: float | None = None, iops: float | None = None,
             throughput: float | None = None) -> Perf:
        size = self.check(size_gib, iops, throughput)
        return self.model(size, iops, throughput)

    def check(self, size_gib: float | None, iops: float | None, throughput: float | None) -> float:
        """The size to use (the default when None); SizeError when a figure is out of range."""
        size = self.default_gib if size_gib is None else size_gib
        if size is None:
            size = 0.0
        elif not self.min_gib <= size <= self.max_gib:
            raise SizeError(f"{self.name} volumes are {self.min_gib:g} to {self.max_gib:g} GiB, not {size:g}")
        for what, val in (("iops", iops), ("throughput", throughput)):
            if val is not None and what not in self.provisioned:
                raise SizeError(f"{self.name} has no provisioned {what}; "
                                f"{'it sets ' + ' and '.join(self.provisioned) if self.provisioned else 'drop it'}")
            if val is not None and val <= 0:
                raise SizeError(f"{self.name}: {what} must be above 0")
        return size

    def spec(self, size_gib: float | None = None, iops: float | None = None,
             throughput: float | None = None) -> str:
        """The priced option for this volume: size and provisioned figures included, as `cost` takes them."""
        size = self.check(size_gib, iops, throughput)
        parts = [self.option]
        if size_gib is not None or self.default_gib is not None:
            parts.append(f"size={size:g}")
        p = self.model(size, iops, throughput) if self.provisioned else None
        if p is not None and "iops" in self.provisioned and p.iops is not None:
            parts.append(f"iops={p.iops:g}")
        if p is not None and "throughput" in self.provisioned and p.mibps is not None:
            parts.append(f"throughput={p.mibps:g}")
        return ":".join(parts)


def _clamp(x: float, lo: float, hi: float) -> float:
    return max(lo, min(hi, x))


def _gp2(size: float, iops: float | None, throughput: float | None) -> Perf:
    base = _clamp(3 * size, 100, 16_000)
    cap = 128.0 if size <= 170 else 250.0  # 170-334 GiB: 250 MiB/s only while credits last
    base_mibps = min(128.0 if size < 334 else 250.0, base * 0.25)
    if base >= 3000:
        return Perf(base, base_mibps, io_kib=256)
    return Perf(base, base_mibps, 3000, min(cap, 3000 * 0.25),
                Credits("io", 5.4e6, 5.4e6), io_kib=256)


def _gp3(size: float, iops: float | None, throughput: float | None) -> Perf:
    i = 3000.0 if iops is None else iops
    t = 125.0 if throughput is None else throughput
    if not 3000 <= i <= min(16_000, 500 * size):
        raise SizeError(f"gp3 IOPS are 3,000 to {min(16_000, 500 * size):g} at {size:g} GiB (500 per GiB), "
                        f"not {i:g}")
    if not 125 <= t <= min(1000, i * 0.25):
        raise SizeError(f"gp3 throughput is 125 to {min(1000, i * 0.25):g} MiB/s at {i:g} IOPS (0.25 MiB/s per "
                        f"IOPS), not {t:g}")
    return Perf(i, t, io_kib=256)


def _piops(name: str, per_gib: int, top: int, mib_per_iops: float, top_mibps: float, default: float) -> Model:
    def model(size: float, iops: float | None, throughput: float | None) -> Perf:
        i = default if iops is None else iops
        hi = min(top, per_gib * size)
        if not 100 <= i <= hi:
            raise SizeError(f"{name} IOPS are 100 to {hi:g} at {size:g} GiB ({per_gib} per GiB), not {i:g}")
        return Perf(i, min(top_mibps, i * mib_per_iops), io_kib=256)
    return model


def _hdd(per_tib: float, burst_per_tib: float, top: float, burst_top: float, iops: float) -> Model:
    """st1 / sc1: throughput per TiB, a burst bucket of 1 TiB of credits per TiB, full when new; 1 MiB I/Os."""
    def model(size: float, _iops: float | None, _tp: float | None) -> Perf:
        tib = size / TIB
        return Perf(iops, min(top, per_tib * tib), iops, min(burst_top, burst_per_tib * tib),
                    Credits("MiB", tib * 1024 * 1024, tib * 1024 * 1024), io_kib=1024)
    return model


def _standard(size: float, iops: float | None, throughput: float | None) -> Perf:
    return Perf(100, 40, io_kib=None)  # "about 100 IOPS on average", 40-90 MiB/s: the low end


def _unlimited(size: float, iops: float | None, throughput: float | None) -> Perf:
    return Perf(None, None)


def _efs(size: float, iops: float | None, throughput: float | None) -> Perf:
    """Bursting mode: 50 MiB/s per TiB stored baseline, 100 MiB/s per TiB burst (at least 100 MiB/s), a bucket of
    2.1 TiB of credits per TiB stored (at least 2.1 TiB), and a new file system starts with 2.1 TiB."""
    tib = size / TIB
    full = max(2.1, 2.1 * tib) * 1024 * 1024
    return Perf(None, 50 * tib, None, max(100.0, 100 * tib), Credits("MiB", full, 2.1 * 1024 * 1024))


def _fsx_lustre(size: float, iops: float | None, throughput: float | None) -> Perf:
    """Scratch 2: 200 MB/s per TiB of storage as the baseline (the burst to 1,300 MB/s per TiB is on network
    credits the provider does not state, so the model holds the baseline)."""
    return Perf(None, 200e6 / (1 << 20) * size / TIB)


TYPES: dict[str, VolumeType] = {t.name: t for t in [
    VolumeType("gp2", "aws:ebs-gp2", "EBS gp2 general-purpose SSD", EBS, _gp2, default_gib=100,
               published="3 IOPS/GiB (min 100, max 16,000); below 1 TiB bursts to 3,000 IOPS on a 5.4 million "
                         "I/O-credit bucket earned at the baseline, full when new; 128 MiB/s up to 170 GiB, 250 "
                         "MiB/s from 334 GiB (between: 250 while credits last); I/Os of up to 256 KiB"),
    VolumeType("gp3", "aws:ebs-gp3", "EBS gp3 general-purpose SSD", EBS, _gp3, default_gib=100,
               provisioned=("iops", "throughput"),
               published="3,000 IOPS and 125 MiB/s included at any size; up to 16,000 IOPS (500 per GiB) and "
                         "1,000 MiB/s (0.25 MiB/s per IOPS) provisioned; no credits"),
    VolumeType("io1", "aws:ebs-io1", "EBS io1 provisioned-IOPS SSD", EBS,
               _piops("io1", 50, 64_000, 0.25, 1000, 3000), default_gib=100, min_gib=4, provisioned=("iops",),
               published="100 to 64,000 provisioned IOPS (50 per GiB), 0.25 MiB/s per IOPS up to 1,000 MiB/s"),
    VolumeType("io2", "aws:ebs-io2", "EBS io2 Block Express provisioned-IOPS SSD", EBS,
               _piops("io2", 1000, 256_000, 0.256, 4000, 3000), default_gib=100, min_gib=4, provisioned=("iops",),
               published="100 to 256,000 provisioned IOPS (1,000 per GiB), 0.256 MiB/s per IOPS up to 4,000 MiB/s"),
    VolumeType("st1", "aws:ebs-st1", "EBS st1 throughput-optimized HDD", EBS, _hdd(40, 250, 500, 500, 500),
               default_gib=TIB, min_gib=125,
               published="40 MiB/s per TiB baseline (max 500), bursts to 250 MiB/s per TiB (max 500) on 1 TiB of "
                         "credits per TiB, earned at the baseline; 500 IOPS of up to 1 MiB"),
    VolumeType("sc1", "aws:ebs-sc1", "EBS sc1 cold HDD", EBS, _hdd(12, 80, 192, 250, 250),
               default_gib=TIB, min_gib=125,
               published="12 MiB/s per TiB baseline (max 192), bursts to 80 MiB/s per TiB (max 250) on 1 TiB of "
                         "credits per TiB, earned at the baseline; 250 IOPS of up to 1 MiB"),
    VolumeType("standard", "aws:ebs-standard", "EBS magnetic (standard), previous generation", EBS, _standard,
               default_gib=100, max_gib=TIB,
               published="about 100 IOPS on average (40-200), 40-90 MiB/s, bursts to hundreds of IOPS"),
    VolumeType("instance-nvme", "aws:ec2-instance-nvme", "EC2 instance-store NVMe SSD", EC2_STORE, _unlimited,
               published="hundreds of thousands of IOPS and GB/s; comes with the instance"),
    VolumeType("efs", "aws:efs-standard", "EFS file system in bursting throughput mode", EFS, _efs,
               published="50 KiB/s per GiB stored baseline, bursts to 100 MiB/s per TiB (at least 100 MiB/s) on "
                         "2.1 TiB of credits per TiB stored; a new file system starts with 2.1 TiB"),
    VolumeType("fsx-lustre", "aws:fsx-lustre-scratch2", "FSx for Lustre file system, Scratch 2 (SSD)", FSX_LUSTRE,
               _fsx_lustre, default_gib=1200, min_gib=1200, max_gib=1024 * TIB,
               published="200 MB/s per TiB of storage baseline, bursting to 1,300 MB/s per TiB; sub-millisecond "
                         "metadata latency; 1.2 TiB and then steps of 2.4 TiB"),
    VolumeType("s3", "aws:s3-standard", "S3 Standard bucket", S3, _unlimited,
               published="3,500 PUT and 5,500 GET requests per second per prefix; no volume limits"),
]}


def volume_type(name: str) -> VolumeType:
    try:
        return TYPES[name]
    except KeyError:
        raise SizeError(f"no volume type {name!r}; choose from {', '.join(TYPES)}") from None


def perf(name: str, size_gib: float | None = None, iops: float | None = None,
         throughput: float | None = None) -> Perf:
    return volume_type(name).perf(size_gib, iops, throughput)


def default_size(option_id: str) -> float | None:
    """The size `cost` assumes for a priced option when none is given: the catalogue's (None: not ours)."""
    for t in TYPES.values():
        if t.option == option_id:
            return t.default_gib
    return None
