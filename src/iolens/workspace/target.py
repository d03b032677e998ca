"""Storage targets that bench, replay and predict write on: resolve what the user named, refuse what is unsafe,
and describe what it is.

A target is a directory on a mounted filesystem, `lab:NAME` (a target of `iolens lab`), or `null` (no storage:
the engine's own overhead).  Block and character devices, pseudo filesystems and read-only or missing paths are
refused with one-line errors.
"""

from __future__ import annotations

import os
import stat
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Callable

from iolens import lab
from iolens import resolve as where_is
from iolens.errors import TargetError, UsageError
from iolens.sysinfo import dev_string, mount_of

# Filesystems that are not storage: writing benchmark files there is a mistake.
PSEUDO_FS = {"proc", "sysfs", "devtmpfs", "devpts", "cgroup", "cgroup2", "debugfs", "tracefs", "securityfs",
             "pstore", "bpf", "configfs", "fusectl", "mqueue", "hugetlbfs", "autofs", "binfmt_misc", "efivarfs",
             "nsfs", "rpc_pipefs"}
MEMORY_FS = {"tmpfs", "ramfs"}
NETWORK_FS_PREFIX = ("fuse", "nfs", "cifs", "smb", "9p", "ceph", "lustre", "glusterfs", "beegfs", "gpfs", "virtiofs")

# FUSE clients of object stores: a bucket has no size, and their statfs returns a placeholder (s3fs: 2^64 bytes,
# rclone: 1 PiB for a remote that cannot say).  A total at least this large on one is not a free-space figure.
OBJECT_STORE_FS = {"fuse.s3fs", "fuse.rclone", "fuse.goofys", "fuse.mountpoint-s3", "fuse.geesefs", "fuse.gcsfuse",
                   "fuse.blobfuse", "fuse.blobfuse2"}
OBJECT_STORE_PLACEHOLDER = 1 << 50
ANY_PLACEHOLDER = 1 << 60  # 1 EiB: no mounted filesystem is that large; whatever says so has no real figure

# Plausible upper limits of a device class for reads (bytes/s, 4 KiB random reads/s at queue depth 1).
# A "cold" read faster than this came from a cache.  Generous on purpose: the point is to catch RAM speed.
DEVICE_LIMITS: dict[str, tuple[float | None, float | None]] = {
    "hdd": (350e6, 600.0),
    "ssd": (700e6, None),        # SATA/SAS: 6 Gb/s link
    "nvme": (16e9, None),        # PCIe 5 x4
    "virtual": (16e9, None),     # virtio/xen: backing unknown, so the NVMe bound
    "loop": (16e9, None),
    "ram": (None, None),         # zram, pmem, brd: memory speed is real
    "memory": (None, None),      # tmpfs: the pages are the storage
    "network": (None, None),     # link speed unknown
    "unknown": (16e9, None),
}


@dataclass
class Target:
    spec: str                      # as the user gave it
    kind: str                      # "dir" | "null"
    path: Path | None = None       # resolved directory (None for null)
    lab: str | None = None         # lab target name, when given as lab:NAME
    fstype: str | None = None
    mount_options: str | None = None
    mountpoint: str | None = None
    source: str | None = None      # what the mount table says is mounted (e.g. /dev/vda1)
    device: str | None = None      # kernel block device name (e.g. vda, nvme0n1), when there is one
    device_model: str | None = None
    device_class: str = "unknown"
    rotational: bool | None = None
    free_bytes: int | None = None
    total_bytes: int | None = None
    free_inodes: int | None = None
    free_unknown: str | None = None      # why free space is unknown (an object store's placeholder statfs)
    compression: str | None = None       # what a compressing filesystem compresses with (btrfs compress=ALG)
    plausible_read_Bps: float | None = None
    plausible_read_iops: float | None = None
    limit_source: str | None = None
    dev_stat: str | None = None          # the block device's kernel counters (/sys/dev/block/MAJ:MIN/stat)
    lab_read_Bps: float | None = None    # throttle of a lab target
    lab_read_iops: float | None = None
    emulated: bool = False               # a lab target that emulates storage (its name is `lab`)
    emulation: str | None = None         # where: "device" (every process), "cgroup", "network" (lab.emulation)
    stands_in_for: str | None = None     # a lab target: the priced option it stands in for (lab.emulation's volume)
    notes: list[str] = field(default_factory=list)
    preexec: Callable[[], None] | None = field(default=None, repr=False, compare=False)

    @property
    def name(self) -> str:
        return self.spec

    def facts(self) -> dict[str, Any]:
        """Provenance of this target as plain data (every key present)."""
        d = asdict(self)
        d.pop("preexec", None)
        d["path"] = str(self.path) if self.path else None
        d["name"] = self.spec
        return d

    def refresh_space(self) -> None:
        if self.path is None:
            return
        try:
            st = os.statvfs(self.path)
        except OSError as err:
            raise TargetError(f"{self.spec}: cannot read free space: {err.strerror}") from None
        self.free_bytes = st.f_bavail * st.f_frsize
        self.total_bytes = st.f_blocks * st.f_frsize
        self.free_inodes = st.f_favail if st.f_files else None
        self.free_unknown = placeholder_space(self.fstype, self.total_bytes)
        if self.free_unknown:
            self.free_bytes = self.total_bytes = None


def placeholder_space(fstype: str | None, total_bytes: int) -> str | None:
    """Why a statfs total is a placeholder rather than a size (an object store has no size), else None."""
    if (fstype or "") in OBJECT_STORE_FS and total_bytes >= OBJECT_STORE_PLACEHOLDER:
        return f"unlimited: {fstype} is an object store, its statfs size is a placeholder"
    if total_bytes >= ANY_PLACEHOLDER:
        return f"unlimited: {fstype or 'the filesystem'} reports a placeholder size"
    return None


def compression_of(mount_options: str | None) -> str | None:
    """The algorithm a btrfs mount compresses with (compress=ALG or compress-force=ALG), else None."""
    for opt in (mount_options or "").split(","):
        key, _, alg = opt.strip().partition("=")
        if key in ("compress", "compress-force") and alg.split(":")[0] not in ("no", "none"):
            return alg or "zlib"  # a bare `compress` means zlib
    return None


def _sys_read(path: Path) -> str | None:
    try:
        return path.read_text().strip()
    except OSError:
        return None


def _block_info(majmin: str) -> dict[str, Any]:
    """Name, model, rotational flag and class of a block device (whole disk for partitions)."""
    base = Path("/sys/dev/block") / majmin
    if not base.exists():
        return {}
    real = base.resolve()
    disk = real.parent if (real / "partition").exists() else real
    name = disk.name
    info: dict[str, Any] = {"device": name}
    rot = _sys_read(disk / "queue" / "rotational")
    info["rotational"] = rot == "1" if rot is not None else None
    model = _sys_read(disk / "device" / "model")
    vendor = _sys_read(disk / "device" / "vendor")
    if model:
        info["device_model"] = f"{vendor} {model}".strip() if vendor and vendor not in model else model
    if name.startswith("nvme"):
        cls = "nvme"
    elif name.startswith(("vd", "xvd")):
        cls = "virtual"
        info["device_model"] = info.get("device_model") or "virtio disk"
    elif name.startswith("loop"):
        cls = "loop"
        backing = _sys_read(disk / "loop" / "backing_file")
        if backing:
            info["device_model"] = f"loop on {backing}"
            info["backing_file"] = backing
    elif name.startswith(("zram", "ram", "pmem")):
        cls = "ram"
    elif info["rotational"]:
        cls = "hdd"
    elif info["rotational"] is False:
        cls = "ssd"
    else:
        cls = "unknown"
    info["device_class"] = cls
    return info


def _blkio_throttle(majmin: str) -> float | None:
    """The read bytes/s throttle on this device for this process's blkio cgroup (v1), if any."""
    try:
        lines = Path("/proc/self/cgroup").read_text().splitlines()
    except OSError:
        return None
    for line in lines:
        parts = line.split(":", 2)
        if len(parts) == 3 and "blkio" in parts[1].split(","):
            f = Path("/sys/fs/cgroup/blkio") / parts[2].lstrip("/") / "blkio.throttle.read_bps_device"
            text = _sys_read(f)
            for row in (text or "").splitlines():
                dev, _, val = row.partition(" ")
                if dev == majmin and val.strip().isdigit():
                    return float(val)
    return None


def describe_path(t: Target) -> None:
    """Fill in filesystem, device and plausible limits for a directory target."""
    assert t.path is not None
    m = mount_of(t.path)
    if m:
        t.fstype = m["fstype"]
        opts = f"{m['options']},{m.get('super_options') or ''}".split(",")
        t.mount_options = ",".join(dict.fromkeys(o for o in opts if o))
        t.mountpoint = m["mountpoint"]
        t.source = m["source"]
        t.compression = compression_of(t.mount_options) or t.compression
    info: dict[str, Any] = {}
    majmin = m["dev"] if m else None
    if majmin and not majmin.startswith("0:"):
        info = _block_info(majmin)
    elif t.source and t.source.startswith("/dev/"):
        try:  # btrfs and others report an anonymous st_dev; the source names the device
            rdev = os.stat(t.source).st_rdev
            majmin = dev_string(rdev)
            info = _block_info(majmin)
        except OSError:
            pass
    if info.get("device_class") == "loop" and info.get("backing_file"):
        # a loop device is as fast as what holds its backing file
        backing = Path(info["backing_file"])
        inner = mount_of(backing.parent) if backing.parent.exists() else None
        if inner and not inner["dev"].startswith("0:"):
            under = _block_info(inner["dev"])
            if under.get("device_class"):
                info["device_class_under"] = under["device_class"]
        elif inner and inner["fstype"] in MEMORY_FS:
            info["device_class_under"] = "memory"
    t.device = info.get("device")
    t.device_model = info.get("device_model")
    if info and majmin and (Path("/sys/dev/block") / majmin / "stat").exists():
        t.dev_stat = str(Path("/sys/dev/block") / majmin / "stat")
    t.rotational = info.get("rotational")
    fstype = t.fstype or ""
    if fstype in MEMORY_FS:
        t.device_class = "memory"
    elif fstype.startswith(NETWORK_FS_PREFIX):
        t.device_class = "network"
    else:
        t.device_class = info.get("device_class", "unknown")
    cls_for_limit = info.get("device_class_under", t.device_class) if t.device_class == "loop" else t.device_class
    t.plausible_read_Bps, t.plausible_read_iops = DEVICE_LIMITS.get(cls_for_limit, DEVICE_LIMITS["unknown"])
    if t.plausible_read_Bps and t.device_class == "loop":  # named by what holds the file, when that is known
        holder = info.get("device_class_under")
        t.limit_source = f"loop file on a {holder} device" if holder else "loop device, its backing unknown"
    elif t.plausible_read_Bps:
        t.limit_source = f"{cls_for_limit} device class"
    throttle = _blkio_throttle(majmin) if majmin else None
    if throttle and (t.plausible_read_Bps is None or throttle < t.plausible_read_Bps):
        t.plausible_read_Bps = throttle
        t.limit_source = "blkio throttle of this process's cgroup"
    if t.device_class == "memory":
        t.notes.append(f"{fstype} keeps files in RAM: reads and writes run at memory speed and cannot be evicted")


def _apply_lab(t: Target) -> None:
    where = where_is.parse(t.spec)
    t.path = where.path()  # TargetError (one line) when the lab or the target is not up
    assert where.lab is not None
    t.lab = where.lab
    info = lab.target_info(where.lab)
    t.preexec = lab.preexec(where.lab)
    emulation = lab.emulation(t.spec) or {}
    t.emulated, t.emulation = bool(emulation.get("emulated")), emulation.get("emulation")
    t.stands_in_for = emulation.get("volume")
    if info.get("emulates"):
        t.notes.append(f"lab:{t.lab} emulates {info['emulates']}")
    t.compression = compression_of(info.get("mount_options"))  # the catalogue's, until the mount table says
    limits = info.get("limits") or {}
    if limits.get("read_bps"):
        t.lab_read_Bps = float(limits["read_bps"])
        t.lab_read_iops = float(limits["read_iops"]) if limits.get("read_iops") else None


def resolve_each(specs: list[str] | tuple[str, ...]) -> list[Target]:
    """resolve() of each spec, refusing one that names the same directory as an earlier one (`/tmp` and `/tmp/`):
    it would be measured twice under two names."""
    targets: list[Target] = []
    seen: dict[str, str] = {}
    for spec in specs:
        t = resolve(spec)
        key = str(t.path) if t.path else t.spec
        if key in seen:
            raise UsageError(f"{spec} is the same directory as {seen[key]}; give each target once")
        seen[key] = spec
        targets.append(t)
    return targets


def resolve(spec: str) -> Target:
    """A checked Target for what the user typed; TargetError (one line) when it cannot be benchmarked."""
    if spec == "null":
        return Target(spec="null", kind="null", fstype="null", device_class="none",
                      notes=["no storage: measures the engine's own per-operation overhead"])
    if not spec.strip():
        raise TargetError("a target was given an empty name; give a directory or lab:NAME")
    t = Target(spec=spec, kind="dir")
    if where_is.is_lab(spec):
        _apply_lab(t)
    else:
        t.path = Path(spec).expanduser()
    assert t.path is not None
    try:
        st = os.stat(t.path)
    except FileNotFoundError:
        raise TargetError(f"{spec}: no such directory; create it, or give a directory on the storage to test") from None
    except PermissionError:
        raise TargetError(f"{spec}: permission denied") from None
    except OSError as err:
        raise TargetError(f"{spec}: {err.strerror}") from None
    if stat.S_ISBLK(st.st_mode):
        raise TargetError(f"{spec} is a block device; iolens bench never writes to raw disks: give a directory on "
                          "a filesystem mounted from it")
    if stat.S_ISCHR(st.st_mode):
        raise TargetError(f"{spec} is a character device; give a directory (or `null` for no storage)")
    if not stat.S_ISDIR(st.st_mode):
        raise TargetError(f"{spec} is not a directory; iolens writes its test files inside a directory on the "
                          "storage: give one")
    t.path = t.path.resolve()
    describe_path(t)
    if (t.fstype or "") in PSEUDO_FS:
        raise TargetError(f"{spec} is on {t.fstype}, which is not storage; give a directory on a real filesystem")
    if t.lab_read_Bps and (t.plausible_read_Bps is None or t.lab_read_Bps < t.plausible_read_Bps):
        t.plausible_read_Bps = t.lab_read_Bps
        t.plausible_read_iops = t.lab_read_iops
        t.limit_source = f"lab:{t.lab} throttle"
    try:
        vfs = os.statvfs(t.path)
    except OSError as err:
        raise TargetError(f"{spec}: cannot read its filesystem: {err.strerror}") from None
    if vfs.f_flag & os.ST_RDONLY:
        raise TargetError(f"{spec} is on a read-only filesystem; give a directory on storage iolens may write to "
                          "(it writes only in a new directory there, removed afterwards)")
    if not os.access(t.path, os.W_OK | os.X_OK):
        raise TargetError(f"{spec} is not writable by this user; give a directory you can write to")
    t.refresh_space()
    return t
