"""The lab's targets, listed once: what each is built from (its kind, see kinds.py), what it emulates, its limits."""

from __future__ import annotations

from dataclasses import dataclass, field

MiB = 1 << 20


@dataclass(frozen=True)
class Limits:
    """blkio throttle limits, applied to both reads and writes."""

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
    limits: Limits | None = None  # throttled loop targets
    remote: bool = False  # network targets: through toxiproxy
    notes: tuple[str, ...] = field(default_factory=tuple)

    @property
    def emulated(self) -> bool:
        return self.limits is not None or self.remote


THROTTLE_NOTE = ("limits hold only for processes in the target's cgroup (`iolens lab run NAME -- CMD`) and only for "
                 "O_DIRECT or fsync'd I/O; buffered writeback and cached reads escape them")
IOPS_NOTE = ("IOPS count block requests of up to 512 KiB, so large sequential I/O uses 2 per MiB; the IOPS limit is "
             "set high enough that the byte rate governs sequential I/O")
REMOTE_NOTE = "latency and bandwidth are added by toxiproxy per TCP connection, not as a shared link cap"

TARGETS: dict[str, Target] = {
    t.name: t
    for t in [
        Target("tmpfs", "tmpfs", "tmpfs", "a RAM disk"),
        Target("ext4", "loop", "ext4", "a local disk with ext4", mkfs="ext4"),
        Target("xfs", "loop", "xfs", "a local disk with XFS", mkfs="xfs"),
        Target("btrfs", "loop", "btrfs", "a local disk with btrfs", mkfs="btrfs"),
        Target("btrfs-zstd", "loop", "btrfs", "transparent filesystem compression, zstd level 3",
               mkfs="btrfs", mount_options="compress=zstd:3",
               notes=("on-disk ratio: `compsize DIR` (after sync)",)),
        Target("btrfs-lzo", "loop", "btrfs", "transparent filesystem compression, lzo (like ZFS lz4)",
               mkfs="btrfs", mount_options="compress=lzo",
               notes=("on-disk ratio: `compsize DIR` (after sync)",)),
        Target("btrfs-zlib", "loop", "btrfs", "transparent filesystem compression, zlib level 6 (like ZFS gzip-6)",
               mkfs="btrfs", mount_options="compress=zlib:6",
               notes=("on-disk ratio: `compsize DIR` (after sync)",)),
        Target("hdd", "loop", "ext4", "a 7200 rpm hard disk with a deep queue: 120 MiB/s, 250 IOPS", mkfs="ext4",
               limits=Limits(120 * MiB, 250), notes=(THROTTLE_NOTE, IOPS_NOTE)),
        Target("gp2", "loop", "ext4", "an EBS gp2 volume under 170 GiB while bursting: 128 MiB/s, 3000 IOPS",
               mkfs="ext4", limits=Limits(128 * MiB, 3000), notes=(THROTTLE_NOTE,)),
        Target("st1", "loop", "ext4", "an EBS st1 volume of 1 TiB at baseline: 40 MiB/s, 500 IOPS", mkfs="ext4",
               limits=Limits(40 * MiB, 500), notes=(THROTTLE_NOTE,)),
        Target("s3", "s3fs", "fuse.s3fs", "an S3 bucket read through a FUSE client (s3fs), same region",
               notes=("versitygw on 127.0.0.1; objects are plain files in the lab directory",)),
        Target("s3-rclone", "rclone", "fuse.rclone",
               "Mountpoint-for-S3 semantics: new files written sequentially; no random writes, no append",
               notes=("rclone mount --vfs-cache-mode off --dir-cache-time 1s: objects written through the S3 API "
                      "show up within a second",)),
        Target("s3-remote", "s3fs", "fuse.s3fs", "cloud object storage a few ms away, through s3fs",
               remote=True, notes=(REMOTE_NOTE,)),
        Target("netfs", "sshfs", "fuse.sshfs", "a network filesystem (sshfs to a private sshd on loopback)",
               notes=("SFTP semantics, not NFS: no kernel NFS client or server on this kernel",)),
        Target("netfs-remote", "sshfs", "fuse.sshfs", "a remote network share (sshfs through toxiproxy)",
               remote=True, notes=(REMOTE_NOTE,)),
    ]
}

def lookup(name: str) -> Target:
    """A target by name, with or without the `lab:` prefix."""
    from iolens.errors import UsageError

    bare = name[4:] if name.startswith("lab:") else name
    try:
        return TARGETS[bare]
    except KeyError:
        raise UsageError(f"lab:{bare} is not a lab target; choose from {', '.join(TARGETS)}") from None


def parse_only(text: str | None) -> list[Target]:
    """--only a,b,lab:c -> targets, in catalogue order."""
    if not text:
        return list(TARGETS.values())
    wanted = {lookup(part.strip()).name for part in text.split(",") if part.strip()}
    return [t for t in TARGETS.values() if t.name in wanted]
