"""The emulated disks: each profile's volume type and size (iolens.volumes), or its own limits, and the calibrated
nbdkit settings (nbd.Device) that give them here; nbd.py builds and runs the device.

Profile.at(size, iops, throughput) is the same disk at another size (lab:gp2:500G): the model's limits there, the
device's rate scaled from the calibrated one.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from iolens import volumes
from iolens.lab.nbd import GiB, Device, MiB
from iolens.lab.sysops import StepFailed

RATES = ("gp2", "gp3", "st1", "sc1")  # disks whose limits are rates, scaled from the calibrated ones at another size


@dataclass(frozen=True)
class Profile:
    """One emulated disk: what it emulates, its limits (a volume type of iolens.volumes at a size, or its own), the
    calibrated settings that give them here, and what we cannot do."""

    name: str
    emulates: str
    device: Device  # the calibrated settings that give those limits here
    volume: str | None = None  # a volume type in iolens.volumes: the limits and what is published come from it
    size_gib: float | None = None  # the modelled size (the image is `size`, and sparse)
    provisioned_iops: float | None = None
    provisioned_throughput: float | None = None
    own: tuple[int | None, int | None, str] | None = None  # not a volume type: (bytes/s, IOPS, published)
    size: int = 2 * GiB  # default image size (sparse)
    not_emulated: tuple[str, ...] = field(default_factory=tuple)

    @property
    def perf(self) -> volumes.Perf | None:
        if not self.volume:
            return None
        return volumes.perf(self.volume, self.size_gib, self.provisioned_iops, self.provisioned_throughput)

    def at(self, size_gib: float | None, iops: float | None = None, throughput: float | None = None) -> Profile:
        """This disk at another size (and provisioned figures): the limits the model gives there. A disk whose
        limits are rates (RATES) has its device's rate scaled from the calibrated one; one whose model gives the
        same limits at that size (magnetic at any size, io2 at its provisioned IOPS) keeps its calibrated device;
        one whose delay gives its IOPS and the model other ones (io2 at 4,000 IOPS) gets an IOPS server and a
        bandwidth at the model's figures instead; a disk of its own (hdd) keeps its limits, the size setting only
        its price. StepFailed (one line) for a size or figure the volume type does not allow."""
        new = replace(self, size_gib=size_gib if size_gib is not None else self.size_gib,
                      provisioned_iops=iops if iops is not None else self.provisioned_iops,
                      provisioned_throughput=throughput)
        if self.volume is None:
            if iops is not None or throughput is not None:
                raise StepFailed(f"lab:{self.name} is a disk of its own with no provisioned figures; give a size only")
            return replace(new, not_emulated=(*self.not_emulated, SIZE_PRICES_ONLY))
        if volumes.TYPES[self.volume].default_gib is None:
            raise StepFailed(f"lab:{self.name} ({volumes.TYPES[self.volume].title}) comes with its instance and takes "
                             "no size")
        try:
            perf = new.perf
        except volumes.SizeError as err:
            raise StepFailed(str(err)) from None
        assert perf is not None
        if perf == self.perf:
            return new
        if self.name not in RATES:  # the calibrated delay gives other IOPS: a request-rate limit instead
            assert perf.iops and perf.mibps
            device = Device(round(perf.mibps * MiB), 0, 16, iops=round(perf.iops))
            return replace(new, device=device, not_emulated=(
                f"the {self.device.latency_ms} ms per-request latency of lab:{self.name}: at {perf.iops:g} IOPS a "
                "request-rate limit stands for it, and at queue depth 1 a request takes what the stack takes",
                *(n for n in self.not_emulated if n != DELAY_IOPS and "latency" not in n)))
        assert self.device.bandwidth and self.burst_bandwidth
        k = self.device.bandwidth / self.burst_bandwidth  # calibration: the rate given per byte/s of the limit
        bw = round((new.burst_bandwidth or 0) * k)
        if self.device.iops:  # the controller counts I/Os of up to the model's io_kib as one (credits.py)
            top = round(perf.burst_iops if new.bucket and perf.burst_iops else perf.iops or 0)
            device = replace(self.device, bandwidth=bw, iops=top)
        else:
            device = replace(self.device, bandwidth=bw)
        return replace(new, device=device)

    def emulates_at(self) -> str:
        """What it emulates, with the size and the model's limits there (for a resized disk)."""
        p = self.perf
        if p is None or self.volume is None:
            return self.emulates
        what = [f"{p.iops:g} IOPS" if p.iops else "", f"{p.mibps:g} MiB/s" if p.mibps else ""]
        burst = [f"{p.burst_iops:g} IOPS" if p.burst_iops else "", f"{p.burst_mibps:g} MiB/s" if p.burst_mibps else ""]
        text = f"{volumes.TYPES[self.volume].title} of {self.size_gib:g} GiB: {', '.join(w for w in what if w)}"
        return text + (f" baseline, bursting to {', '.join(b for b in burst if b)} on its credits" if self.bucket
                       else "")

    @property
    def bucket(self) -> bool:
        """Whether it has burst credits (a credit controller switches its limits; see credits.py)."""
        p = self.perf
        return p is not None and p.credits is not None and p.burst_seconds is not None

    @property
    def burst_bandwidth(self) -> int | None:
        """The limit while credits last (the baseline's when it has none), bytes/s."""
        p = self.perf
        return round(p.burst_mibps * MiB) if p is not None and self.bucket and p.burst_mibps else self.bandwidth

    @property
    def bandwidth(self) -> int | None:
        """Our baseline limit, bytes/s (None: unthrottled)."""
        p = self.perf
        if p is None:
            return self.own[0] if self.own else None
        return round(p.mibps * MiB) if p.mibps else None

    @property
    def iops(self) -> int | None:
        """Our baseline IOPS limit at a deep queue (None: unthrottled)."""
        p = self.perf
        if p is None:
            return self.own[1] if self.own else None
        return round(p.iops) if p.iops else None

    @property
    def published(self) -> str:
        """The provider's or maker's figures, as published (with their source for a volume type)."""
        if self.volume:
            t = volumes.TYPES[self.volume]
            return f"{t.published} ({t.source.url}, as of {t.source.as_of})"
        return self.own[2] if self.own else ""


SIZE_PRICES_ONLY = ("its size: a disk's speed does not follow its size, so a size sets only the price (as the "
                    "volume type it is priced as, at that size)")
MEAN_IO = ("an I/O of up to 256 KiB counts as one by the mean request size of each 0.1 s, not request "
           "by request: a stream beside small random I/O gets up to a quarter more than the model")
DELAY_IOPS = ("the IOPS limit comes from a per-request delay x requests in flight (a request-rate limit counts "
              "requests in 64 KiB units, which would hold sequential I/O below this bandwidth), so latency at queue "
              "depth 1 is several times the device's")
SHARED = ("no jitter, no queueing effects of a shared network or spindle; every request of any size pays the "
          "same latency")

# Device.bandwidth is the rate nbdkit is given, which for magnetic, gp2 and io2-100 is 4-5% above the modelled limit
# and for hdd 13%: found by measurement, since writeback (buffered write + fsync) and cold read-ahead do not keep
# the rate filter's bucket busy and landed 9-12% under the limit at exactly it, while O_DIRECT streams stayed
# within 7% of it. hdd's reads and writes take separate delays (19 and 20 ms) for its 4 KiB IOPS; at 120 MiB/s
# its sequential reads are bound by the delay x requests in flight more than by the rate.
PROFILES: tuple[Profile, ...] = (
    Profile("magnetic", "EBS magnetic (standard), previous generation", Device(42 * MiB, 44, 2, write_latency_ms=42),
            volume="standard", size_gib=100,
            not_emulated=("the burst to hundreds of IOPS", "the spread of 40-200 IOPS: we give the average", SHARED)),
    Profile("gp2", "EBS gp2 SSD of 100 GiB: 300 IOPS baseline, bursting to 3,000 on its I/O credits",
            Device(128 * MiB, 0, 16, iops=3000), volume="gp2", size_gib=100,
            not_emulated=(MEAN_IO, "a modelled latency: at queue depth 1 a request takes what the stack takes")),
    Profile("gp3", "EBS gp3 SSD at its included baseline", Device(125 * MiB, 0, 16, iops=3000),
            volume="gp3", size_gib=100,
            not_emulated=("a modelled latency: at queue depth 1 a request takes what the stack takes (0.4-0.8 ms "
                          "here, with load), whatever its size",
                          "I/O is counted in 64 KiB units, not 256 KiB (the bandwidth binds first above 43 KiB, so "
                          "the limits are the same); a small write reads and writes 64 KiB of the image")),
    Profile("io2-100", "EBS io2 with 100 provisioned IOPS", Device(27 * MiB, 44, 2, write_latency_ms=42),
            volume="io2", size_gib=100, provisioned_iops=100,
            not_emulated=(DELAY_IOPS, "sub-millisecond latency at queue depth 1 (ours is 44 ms)")),
    Profile("io2-500", "EBS io2 with 500 provisioned IOPS", Device(128 * MiB, 9, 4),
            volume="io2", size_gib=100, provisioned_iops=500,
            not_emulated=(DELAY_IOPS, "sub-millisecond latency at queue depth 1 (ours is 9 ms)")),
    Profile("st1", "EBS st1 throughput HDD of 1 TiB: 40 MiB/s baseline, bursting to 250 on its credits",
            Device(250 * MiB, 0, 16, iops=500), volume="st1", size_gib=1024,
            not_emulated=("small random I/O is not penalised as on st1 (each counts as a full 1 MiB I/O)",
                          "a hard disk's latency: at queue depth 1 a request takes what the stack takes (the 500 "
                          "IOPS are a request-rate limit, so the bandwidth can switch between burst and baseline)")),
    Profile("sc1", "EBS sc1 cold HDD of 1 TiB: 12 MiB/s baseline, bursting to 80 on its credits",
            Device(80 * MiB, 19, 4), volume="sc1", size_gib=1024,
            not_emulated=("small random I/O is not penalised as on sc1 (each counts as a full 1 MiB I/O)",)),
    Profile("hdd", "a 7200 rpm hard disk with a deep queue", Device(136 * MiB, 19, 4, write_latency_ms=20),
            own=(120 * MiB, 250, "about 120 MiB/s sequential, 75-250 IOPS (with NCQ)"),
            not_emulated=("seek distance: every request costs the same, near or far", SHARED)),
    Profile("nvme", "a local NVMe SSD (instance store), unthrottled stand-in", Device(None, 0, 16),
            volume="instance-nvme",
            not_emulated=("the device's speed: this is as fast as nbdkit, FUSE and the host disk go (see the table)",)),
)


def profile(name: str) -> Profile:
    """A profile by name; StepFailed naming the choices when there is none."""
    for p in PROFILES:
        if p.name == name:
            return p
    raise StepFailed(f"no emulated disk called {name!r}; choose from {', '.join(p.name for p in PROFILES)}")
