"""The lab's targets, listed once: what each is built from (its kind, see kinds.py), what it emulates, its limits.

The emulated disks (kind `nbd`) take everything they say about themselves (what they emulate, the published
limits, ours, what is not emulated) from their profile in disks.PROFILES; nothing is restated here.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from iolens import volumes
from iolens.lab import disks, nbd

MiB = 1 << 20


@dataclass(frozen=True)
class Limits:
    """Bandwidth and IOPS limits, the same for reads and writes (a blkio throttle, or an emulated disk's)."""

    bps: int
    iops: int

    def as_dict(self) -> dict:
        return {"read_bps": self.bps, "write_bps": self.bps, "read_iops": self.iops, "write_iops": self.iops}


@dataclass(frozen=True)
class Target:
    name: str
    kind: str  # a row of kinds.KINDS: how the target is started, checked and stopped
    fstype: str  # what the mount shows (fuse types as the kernel names them)
    emulates: str
    mkfs: str | None = None  # loop: the filesystem to make
    mount_options: str | None = None
    throttle: Limits | None = None  # loop targets under a cgroup v1 blkio throttle (`lab run` only)
    remote: bool = False  # network targets: through toxiproxy
    disk: str | None = None  # nbd: the emulated disk's profile (a name in disks.PROFILES)
    notes: tuple[str, ...] = field(default_factory=tuple)
    volume: str = "instance-nvme"  # the volume type (iolens.volumes) it is priced as; emulated disks: the profile's
    size_gib: float | None = None  # the modelled size (None: the volume type's default)
    iops: float | None = None  # provisioned IOPS, for volume types that take them
    throughput: float | None = None  # provisioned MiB/s, likewise
    base: str | None = None  # a sized target (lab:gp2:500G): the catalogue target it is made from

    @property
    def option(self) -> str:
        """The priced option this target stands for (size and provisioned figures included), for `iolens cost`."""
        return volumes.TYPES[self.volume].spec(self.size_gib, self.iops, self.throughput)

    @property
    def profile(self) -> disks.Profile | None:
        if not self.disk:
            return None
        p = disks.profile(self.disk)
        return p.at(self.size_gib, self.iops, self.throughput) if self.base else p

    @property
    def limits(self) -> Limits | None:
        """The limits we emulate: the throttle's, or the emulated disk's (None when unthrottled)."""
        p = self.profile
        if p is not None:
            return Limits(p.bandwidth, p.iops) if p.bandwidth and p.iops else None
        return self.throttle

    @property
    def emulated(self) -> bool:
        return self.throttle is not None or self.remote or self.disk is not None

    @property
    def emulation(self) -> str | None:
        """Where the emulation acts: "device" (every process), "cgroup" (its processes only), "network"."""
        if self.disk:
            return "device"
        if self.throttle:
            return "cgroup"
        return "network" if self.remote else None


THROTTLE_NOTE = ("legacy, for O_DIRECT experiments: the limits hold only for processes in the target's cgroup "
                 "(`iolens lab run throttle -- CMD`, and `bench`, which runs its engine there) and only for O_DIRECT "
                 "or fsync'd I/O; buffered writeback and cached reads escape them, and `compare` runs outside it")
IOPS_NOTE = ("IOPS count block requests of up to 512 KiB, so large sequential I/O uses 2 per MiB; the IOPS limit is "
             "set high enough that the byte rate governs sequential I/O")
EMULATED_NOTE = ("emulated at the device (nbdkit rate + delay, nbdfuse, loop, ext4): slow for every process, for "
                 "buffered writeback and for reads that miss the page cache; no wrapper is needed")
# Targets that are no volume type of a provider are priced as the nearest one, and say so.
HDD_AS = ("st1", 3 * 1024)  # the hard disk: a 3 TiB st1 has its 120 MiB/s as its baseline
PRICED_AS = {"hdd": ("priced as a 3 TiB st1 volume, whose baseline is this disk's 120 MiB/s",),
             "tmpfs": ("priced as the instance with local NVMe: a RAM disk costs the instance's memory",),
             "throttle": ("priced as a 1 TiB st1 volume, whose baseline is this throttle's 40 MiB/s and 500 IOPS",)}
EMULATED_DISKS = tuple(
    Target(p.name, "nbd", "ext4", p.emulates, disk=p.name,
           notes=(EMULATED_NOTE, f"published: {p.published}", *(f"not emulated: {n}" for n in p.not_emulated),
                  *PRICED_AS.get(p.name, ())),
           volume=p.volume or HDD_AS[0], size_gib=p.size_gib if p.volume else HDD_AS[1], iops=p.provisioned_iops)
    for p in disks.PROFILES
)


def _compressed(name: str, option: str, what: str) -> Target:
    """A btrfs loop target mounted with compress=OPTION."""
    return Target(name, "loop", "btrfs", f"transparent filesystem compression, {what}", mkfs="btrfs",
                  mount_options=f"compress={option}", notes=("on-disk ratio: `compsize DIR` (after sync)",))


SHARED_NOTE = ("a real distributed filesystem with one fresh volume per `lab up`; a second client mounts the same "
               "volume (`clients` in `lab status`, one rank per client under `bench --clients`)")
REMOTE_NOTE = "latency and bandwidth are added by toxiproxy per TCP connection, not as a shared link cap"

TARGETS: dict[str, Target] = {
    t.name: t
    for t in [
        Target("tmpfs", "tmpfs", "tmpfs", "a RAM disk", notes=PRICED_AS["tmpfs"]),
        Target("ext4", "loop", "ext4", "a local disk with ext4", mkfs="ext4"),
        Target("xfs", "loop", "xfs", "a local disk with XFS", mkfs="xfs"),
        Target("btrfs", "loop", "btrfs", "a local disk with btrfs", mkfs="btrfs"),
        _compressed("btrfs-zstd", "zstd:3", "zstd level 3"),
        _compressed("btrfs-zstd1", "zstd:1", "zstd level 1 (fastest)"),
        _compressed("btrfs-zstd9", "zstd:9", "zstd level 9"),
        _compressed("btrfs-lzo", "lzo", "lzo (like ZFS lz4)"),
        _compressed("btrfs-zlib", "zlib:6", "zlib level 6 (like ZFS gzip-6)"),
        Target("throttle", "loop", "ext4",
               "legacy: a blkio throttle of 40 MiB/s and 500 IOPS on the O_DIRECT and fsync'd I/O of the processes "
               "in its cgroup", mkfs="ext4", throttle=Limits(40 * MiB, 500),
               notes=(THROTTLE_NOTE, IOPS_NOTE, *PRICED_AS["throttle"]), volume="st1", size_gib=1024),
        *EMULATED_DISKS,
        Target("s3", "s3fs", "fuse.s3fs", "an S3 bucket read through a FUSE client (s3fs), same region",
               notes=("versitygw on 127.0.0.1; objects are plain files in the lab directory",), volume="s3"),
        Target("s3-rclone", "rclone", "fuse.rclone",
               "Mountpoint-for-S3 semantics: new files written sequentially; no random writes, no append",
               notes=("rclone mount --vfs-cache-mode off --dir-cache-time 1s: objects written through the S3 API "
                      "show up within a second",), volume="s3"),
        Target("s3-remote", "s3fs", "fuse.s3fs", "cloud object storage a few ms away, through s3fs",
               remote=True, notes=(REMOTE_NOTE,), volume="s3"),
        Target("netfs", "sshfs", "fuse.sshfs", "a network filesystem (sshfs to a private sshd on loopback)",
               notes=("SFTP semantics, not NFS: no kernel NFS client or server on this kernel",), volume="efs"),
        Target("moosefs", "moosefs", "fuse.mfs",
               "a parallel shared filesystem (MooseFS, LizardFS's parent): a metadata master and two chunk servers "
               "keeping every chunk twice, read and written by two FUSE clients",
               notes=(SHARED_NOTE, "servers in a network namespace of the lab's, over a veth pair: no network "
                      "distance, no contention from other tenants"), volume="fsx-lustre"),
        Target("gluster", "gluster", "fuse.glusterfs",
               "a replicated shared filesystem (GlusterFS): a volume of two bricks, each file on both, read and "
               "written by two FUSE clients",
               notes=(SHARED_NOTE, "glusterd and its bricks on 127.0.0.1: no network distance, no contention from "
                      "other tenants"), volume="efs"),
        Target("netfs-remote", "sshfs", "fuse.sshfs", "a remote network share (sshfs through toxiproxy)",
               remote=True, notes=(REMOTE_NOTE,), volume="efs"),
    ]
}

PREFIX = "lab:"


def split(spec: str) -> tuple[str, str] | None:
    """`lab:NAME[:SIZE...][/sub/path]` -> (NAME[:SIZE...], sub/path); None when spec does not name a lab target.
    The one place the prefix is read (iolens.resolve builds on it)."""
    if not isinstance(spec, str) or not spec.startswith(PREFIX):
        return None
    name, _, sub = spec[len(PREFIX):].partition("/")
    return name, sub


def lookup(name: str) -> Target:
    """A target by name, with or without the `lab:` prefix: NAME, or NAME:SIZE[:iops=N][:throughput=MiBps] for an
    emulated disk (lab:gp2:500G, lab:st1:2T, lab:gp3:100G:iops=6000, lab:hdd:2T). NAME may also be the volume type
    an emulated disk stands for (lab:standard:100G is lab:magnetic at 100 GiB, lab:io2:100G:iops=4000 lab:io2-100
    with 4,000 IOPS). The size and provisioned figures set the limits (the volume model's), the price and what
    `cost` assumes; the name the target gets (its results' name) carries them."""
    from iolens.errors import UsageError

    bare = name[len(PREFIX):] if name.startswith(PREFIX) else name
    head, _, rest = bare.partition(":")
    target = TARGETS.get(head) or TARGETS.get(VOLUME_ALIASES.get(head, ""))
    if target is None:
        raise UsageError(f"lab:{head} is not a lab target; choose from {', '.join(TARGETS)} (or a volume type: "
                         f"{', '.join(VOLUME_ALIASES)})")
    if not rest:
        return target
    size, iops, tp = _sizing(bare, rest)
    if target.disk is None:
        raise UsageError(f"lab:{head} takes no size; sizes apply to the emulated disks "
                         f"({', '.join(t.name for t in EMULATED_DISKS)}), e.g. lab:gp2:500G")
    size = size if size is not None else target.size_gib
    canonical = ":".join([head, *([f"{size:g}G"] if size is not None else []),
                          *([f"iops={iops:g}"] if iops is not None else []),
                          *([f"throughput={tp:g}"] if tp is not None else [])])
    sized = replace(target, name=canonical, base=target.name, size_gib=size,
                    iops=iops if iops is not None else target.iops, throughput=tp)
    try:
        profile = sized.profile
        option = sized.option
    except (nbd.StepFailed, volumes.SizeError) as err:
        raise UsageError(f"lab:{bare}: {err}") from None
    assert profile is not None
    return replace(sized, emulates=profile.emulates_at(), notes=(
        EMULATED_NOTE, f"published: {profile.published}", *(f"not emulated: {n}" for n in profile.not_emulated),
        *([f"priced as {option}"] if profile.volume is None else [])))


# A volume type an emulated disk stands for names it too (lab:standard:100G, lab:io2:100G:iops=4000): the first
# profile of that type.
VOLUME_ALIASES = {v: next(t.name for t in EMULATED_DISKS if t.volume == v and t.disk and disks.profile(t.disk).volume)
                  for v in dict.fromkeys(p.volume for p in disks.PROFILES if p.volume) if v not in TARGETS}


UNITS = {"G": 1, "GIB": 1, "GB": 1, "T": 1024, "TIB": 1024, "TB": 1024}


def _sizing(bare: str, rest: str) -> tuple[float | None, float | None, float | None]:
    """SIZE[:iops=N][:throughput=M] -> (GiB, IOPS, MiB/s); UsageError saying how to write it."""
    from iolens.errors import UsageError

    size = iops = tp = None
    for part in rest.split(":"):
        key, eq, val = part.partition("=")
        try:
            if not eq:
                num = part.rstrip("GgTtIiBb")
                size = float(num) * UNITS[part[len(num):].upper() or "G"]
            elif key == "iops":
                iops = float(val)
            elif key == "throughput":
                tp = float(val)
            else:
                raise ValueError(key)
        except (ValueError, KeyError):
            raise UsageError(f"lab:{bare}: write lab:NAME:SIZE[:iops=N][:throughput=MiBps], e.g. lab:gp2:500G, "
                             "lab:st1:2T or lab:gp3:100G:iops=6000") from None
    return size, iops, tp


def parse_only(text: str | None) -> list[Target]:
    """--only a,b,lab:c -> targets, in catalogue order."""
    if not text:
        return list(TARGETS.values())
    wanted = [lookup(part.strip()) for part in text.split(",") if part.strip()]
    names = {t.name for t in wanted}
    return [t for t in TARGETS.values() if t.name in names] + [t for t in wanted if t.base]
