"""The kinds of lab target, listed once: what each needs, how to start, check and stop one.

A kind is one row of KINDS.  `up` calls its `start` (with the bring-up job, which offers the shared components:
the S3 server, toxiproxy, sshd, FUSE mounts), `status` its `check`, and `down` (and a rebuild) its `stop`.
A new kind is a `register_kind(Kind(...))` here plus the targets in catalog.py that use it; nothing else names
kinds.  Every resource a kind makes goes through the job (`spawn`, `add_mount`, `state["loops"]`,
`state["cgroups"]`), or into a record of the kind's own under the lab directory (the emulated disks: nbd.py's
`nbd/NAME/nbd.json`), so it is recorded before `up` moves on; the target itself is recorded (status "starting")
before its kind starts it, so `down` can stop it its kind's way even after a crash.
"""

from __future__ import annotations

import os
import pwd
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable

from iolens.errors import IolensError
from iolens.lab import credits, nbd, sharedfs
from iolens.lab import state as st
from iolens.lab.state import lab_id
from iolens.lab.sysops import (
    StepFailed,
    detach_loop,
    loop_filesystem,
    make_throttle_cgroup,
    mount_at,
    responsive,
    run,
    stop_process,
    unmount,
)

if TYPE_CHECKING:
    from iolens.lab.catalog import Target
    from iolens.lab.up import Up

BUCKET = "iolens-lab"
ACCESS_KEY = "iolenslab"
MIN_SIZE = {"xfs": 300 << 20, "btrfs": 128 << 20, "ext4": 16 << 20}

# start(job, target, info): bring one target up, filling `info` (path, ...); StepFailed says why it cannot.
StartFn = Callable[["Up", "Target", dict[str, Any]], None]
# check(kind, info, state) -> (healthy, problem) for a target recorded as up.
CheckFn = Callable[["Kind", dict[str, Any], dict[str, Any]], tuple[bool, "str | None"]]
# stop(root, state, name): undo one target's own resources; never raises. It may return what it could not remove
# (None or [] when all is gone); `down` reports that with whatever else is left.
StopFn = Callable[[Path, dict[str, Any], str], "list[str] | None"]


# -- how to check and stop (shared by the built-in kinds) -------------------------------------------------------

def check_mounted(kind: Kind, info: dict[str, Any], state: dict[str, Any]) -> tuple[bool, str | None]:
    """Mounted with the right filesystem, its processes and the kind's servers alive, cgroup present, answering."""
    path = info["path"]
    m = mount_at(path) if path else None
    if m is None:
        return False, f"{path} is not mounted"
    if m["fstype"] != info["fstype"]:
        return False, f"{path} is mounted as {m['fstype']}, not {info['fstype']}"
    procs = state.get("processes", {})
    needed = [k for k in procs if k.endswith(f":{info['name']}")] + list(kind.servers)
    if info["emulated"] and kind.servers:
        needed.append("toxiproxy")
    for key in needed:
        rec = procs.get(key)
        if rec is None or not st.process_alive(rec):
            return False, f"{key} is not running"
    if info["cgroup"] and not Path(info["cgroup"]).is_dir():
        return False, f"cgroup {info['cgroup']} is gone"
    if not responsive(Path(path)):
        return False, f"{path} does not answer (hung mount?)"
    return True, None


def release(root: Path, state: dict[str, Any], name: str) -> None:
    """Unmount a target, stop its own processes (FUSE clients) and detach its loop device, as recorded."""
    mnt = str(root / "mnt" / name)
    for key, rec in list(state["processes"].items()):
        if key.endswith(f":{name}"):
            unmount(mnt)
            stop_process(rec)
            del state["processes"][key]
    unmount(mnt)
    image = str(root / "images" / f"{name}.img")
    for loop in list(state["loops"]):
        if loop["image"] == image and detach_loop(loop["device"], image):
            state["loops"].remove(loop)


# -- how to start -------------------------------------------------------------------------------------------------

def start_tmpfs(job: Up, target: Target, info: dict[str, Any]) -> None:
    mnt = job.mountpoint(target.name)
    if mount_at(mnt) is None:
        run(["mount", "-t", "tmpfs", "-o", f"size={job.settings.size},mode=1777", "iolens-lab-tmpfs", str(mnt)])
        job.add_mount(mnt)
    info.update(path=str(mnt), size=job.settings.size)


def start_loop(job: Up, target: Target, info: dict[str, Any]) -> None:
    assert target.mkfs
    size = job.settings.size
    if size < MIN_SIZE[target.mkfs]:
        raise StepFailed(f"{target.mkfs} needs an image of at least {MIN_SIZE[target.mkfs] >> 20} MiB",
                         f"use --size {MIN_SIZE[target.mkfs] >> 20}M or more")
    mnt = job.mountpoint(target.name)
    image = job.root / "images" / f"{target.name}.img"
    device = loop_filesystem(image, size, target.mkfs, mnt, job.record, target.mount_options)
    direct = Path(f"/sys/block/{Path(device).name}/loop/dio").read_text().strip() == "1"
    os.chmod(mnt, 0o1777)
    majmin = Path(f"/sys/block/{Path(device).name}/dev").read_text().strip()
    info.update(path=str(mnt), loop=device, majmin=majmin, image=str(image), size=size, loop_direct_io=direct,
                mount_options=target.mount_options, cgroup=None)
    if target.throttle:
        cg = Path("/sys/fs/cgroup/blkio") / f"iolens-lab-{lab_id(job.root)}-{target.name}"
        job.state["cgroups"].append(str(cg))
        job.save()
        make_throttle_cgroup(cg.name, majmin, target.throttle.as_dict())
        info.update(cgroup=str(cg), limits=target.throttle.as_dict())


def nbd_dir(root: Path, name: str) -> Path:
    """Where an emulated disk keeps its image, socket, pidfiles, logs and record (nbd.json)."""
    return root / "nbd" / name


def start_nbd(job: Up, target: Target, info: dict[str, Any]) -> None:
    """An emulated disk (nbd.py): the target's profile, an ext4 image of --disk-size (else the profile's size)."""
    profile = target.profile
    assert profile is not None
    size = job.settings.disk_size or profile.size
    if size < MIN_SIZE["ext4"]:
        raise StepFailed(f"an emulated disk needs at least {MIN_SIZE['ext4'] >> 20} MiB",
                         f"use --disk-size {MIN_SIZE['ext4'] >> 20}M or more")
    mnt = job.mountpoint(target.name)
    perf = profile.perf
    bucket = credits.Bucket.from_perf(perf, job.settings.credits, job.settings.time_scale) if perf else None
    disk = nbd.up(nbd_dir(job.root, target.name), mnt, profile.device, size=size,  # removes what it made on failure
                  bucket=bucket, io_kib=perf.io_kib if perf else None)
    if bucket is not None:
        info.update(credits={"unit": bucket.unit, "capacity": bucket.capacity, "start": bucket.balance,
                             "baseline": bucket.baseline, "burst": bucket.burst},
                    time_scale=bucket.time_scale)
    limits = target.limits
    info.update(path=disk["path"], loop=disk["loop"], loop_direct_io=disk["loop_direct_io"], image=disk["image"],
                size=size, cgroup=None, disk=profile.name, nbd_dir=str(nbd_dir(job.root, target.name)),
                limits=limits.as_dict() if limits else None,
                device={k: disk[k] for k in ("bandwidth", "latency_ms", "write_latency_ms", "concurrency",
                                             "connections", "iops", "read_ahead_kb")})


def check_nbd(kind: Kind, info: dict[str, Any], state: dict[str, Any]) -> tuple[bool, str | None]:
    """Every layer of the emulated disk there and answering: nbdkit, nbdfuse, the loop device, the mount."""
    disk = nbd.status(nbd_dir(Path(state["dir"]), info["name"]))
    if disk["healthy"]:
        return True, None
    for server in ("nbdkit", *(["nbdkit-iops"] if disk["iops"] else []), "nbdfuse"):
        if server not in disk["processes"]:
            return False, f"{server} is not running"
    if not disk["path"] or mount_at(disk["path"]) is None:
        return False, f"{info['path']} is not mounted"
    return False, f"{info['path']} does not answer (hung mount?)"


def stop_nbd(root: Path, state: dict[str, Any], name: str) -> list[str]:
    """Take the emulated disk down (also after its servers were killed); what is left, if anything."""
    return nbd.down(nbd_dir(root, name), root / "mnt" / name)


def start_s3fs(job: Up, target: Target, info: dict[str, Any]) -> None:
    job.component("s3", job.start_s3)
    port = job.state["ports"]["s3"]
    if target.remote:
        job.component("toxiproxy", job.start_toxiproxy)
        port = job.proxy("s3", "s3-proxy", job.state["ports"]["s3"])
    mnt = job.mountpoint(target.name)
    opts = f"url=http://127.0.0.1:{port},use_path_request_style,passwd_file={job.root / 's3' / 'passwd'}"
    if job.is_root:
        opts += ",allow_other"
    job.fuse(target, mnt, ["s3fs", BUCKET, str(mnt), "-f", "-o", opts])
    info.update(path=str(mnt), bucket=BUCKET, endpoint_url=f"http://127.0.0.1:{port}")
    job.state["s3"][target.name] = {"endpoint_url": f"http://127.0.0.1:{port}", "bucket": BUCKET}


def start_rclone(job: Up, target: Target, info: dict[str, Any]) -> None:
    job.component("s3", job.start_s3)
    port = job.state["ports"]["s3"]
    conf = job.root / "s3" / "rclone.conf"
    conf.write_text("[lab]\ntype = s3\nprovider = Other\n"
                    f"access_key_id = {ACCESS_KEY}\nsecret_access_key = {job.state['settings']['s3_secret']}\n"
                    f"endpoint = http://127.0.0.1:{port}\nregion = us-east-1\nforce_path_style = true\n")
    conf.chmod(0o600)
    mnt = job.mountpoint(target.name)
    argv = ["rclone", "--config", str(conf), "mount", f"lab:{BUCKET}", str(mnt), "--vfs-cache-mode", "off",
            "--dir-cache-time", "1s", "--cache-dir", str(job.root / "cache" / "rclone")]
    if job.is_root:
        argv.append("--allow-other")
    env = {k: v for k, v in os.environ.items() if k != "AWS_CA_BUNDLE"}  # a set bundle breaks rclone
    job.fuse(target, mnt, argv, env=env)
    info.update(path=str(mnt), bucket=BUCKET, endpoint_url=f"http://127.0.0.1:{port}", vfs_cache_mode="off",
                dir_cache_time="1s")
    job.state["s3"][target.name] = {"endpoint_url": f"http://127.0.0.1:{port}", "bucket": BUCKET}


def start_sshfs(job: Up, target: Target, info: dict[str, Any]) -> None:
    job.component("sshd", job.start_sshd)
    port = job.state["ports"]["sshd"]
    if target.remote:
        job.component("toxiproxy", job.start_toxiproxy)
        port = job.proxy("ssh", "ssh-proxy", port)
    export = job.root / "netfs" / "export"
    mnt = job.mountpoint(target.name)
    ssh = job.root / "ssh"
    user = pwd.getpwuid(os.geteuid()).pw_name
    opts = (f"IdentityFile={ssh / 'client_key'},StrictHostKeyChecking=no,UserKnownHostsFile=/dev/null,"
            "BatchMode=yes,LogLevel=ERROR")
    if job.is_root:
        opts += ",allow_other"
    job.fuse(target, mnt, ["sshfs", f"{user}@127.0.0.1:{export}", str(mnt), "-f", "-p", str(port), "-o", opts])
    info.update(path=str(mnt), export=str(export), ssh_port=port)


# -- the table ----------------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Kind:
    name: str
    start: StartFn
    check: CheckFn = check_mounted
    stop: StopFn = release
    root: bool = False                # mounts itself: needs root
    servers: tuple[str, ...] = ()     # shared processes (by state key) its targets need alive
    tools: tuple[str, ...] = ()       # programs it runs itself
    s3: bool = False                  # an S3 bucket behind the mount: lab.s3_endpoint works for it

    def healthy(self, info: dict[str, Any], state: dict[str, Any]) -> tuple[bool, str | None]:
        return self.check(self, info, state)

    @property
    def needs(self) -> tuple[str, ...]:
        """What the kind needs, in bring-up order."""
        return (("root",) if self.root else ()) + self.servers + self.tools


KINDS: dict[str, Kind] = {}


def register_kind(kind: Kind) -> Kind:
    if kind.name in KINDS:
        raise ValueError(f"lab kind {kind.name!r} is registered twice")
    KINDS[kind.name] = kind
    return kind


def kind_of(name: str) -> Kind:
    try:
        return KINDS[name]
    except KeyError:
        raise IolensError(f"{name!r} is not a lab target kind this iolens knows; "
                          f"it knows {', '.join(KINDS)}") from None


register_kind(Kind("tmpfs", start_tmpfs, root=True))
register_kind(Kind("loop", start_loop, root=True, tools=("losetup",)))
register_kind(Kind("s3fs", start_s3fs, servers=("versitygw",), tools=("s3fs",), s3=True))
register_kind(Kind("rclone", start_rclone, servers=("versitygw",), tools=("rclone",), s3=True))
register_kind(Kind("sshfs", start_sshfs, servers=("sshd",), tools=("sshfs",)))
register_kind(Kind("nbd", start_nbd, check=check_nbd, stop=stop_nbd, root=True, tools=nbd.NEEDS))
register_kind(Kind("moosefs", sharedfs.start_moosefs, check=sharedfs.check, stop=sharedfs.stop_moosefs, root=True,
                   tools=sharedfs.MFS_NEEDS))
register_kind(Kind("gluster", sharedfs.start_gluster, check=sharedfs.check, stop=sharedfs.stop, root=True,
                   tools=sharedfs.GLUSTER_NEEDS))
