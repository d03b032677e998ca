"""Block devices emulated at the device: slow for every process, for buffered writeback and cache-missing reads.

A sparse image, formatted before it is served, is served by nbdkit's file plugin through its `rate` filter (a
bandwidth cap, one token bucket per direction) and `delay` filter (a fixed service time per read or write request),
with `--threads` bounding the requests in service at once. nbdfuse exposes the export as a file, a loop device
(`--direct-io=on`, so no second page cache) turns it into a block device, and the filesystem on it is mounted where
the caller asks. The kernel's page cache and writeback then sit above a slow device, as on a real one.

Device model: a request of n bytes takes `latency + n / bandwidth` (the bandwidth shared by all requests in
service), and a bounded number of requests is in service at once, so the IOPS limit is about
`requests in service / latency`. How many requests are in service is not simply what nbdkit is given: nbdfuse
uses CONNECTIONS connections to nbdkit with `concurrency` threads each, but FUSE and nbdfuse keep only about 2.6
(1 thread), 4 (2 threads) or 4.8 (4 threads) requests in flight here. So each profile's latency and concurrency
were found by measurement (benchmarks/emulated_disks.py; docs/lab.md has the table), not computed. Large requests
(the stack issues up to 1 MiB) reach the bandwidth because several are in service while one waits its latency.
The delay filter takes whole milliseconds (nbdkit 1.32 reads "1.5ms" as 1 ms and refuses "1500us"), and requests
in flight depend on CPU time, so a high IOPS limit cannot be set this way: a profile with Device.iops gets a hard
request-rate limit from a second nbdkit instead (see Device.iops_args), and needs no delay.

Every process is recorded (pid, start time, pidfile) in the state directory before the next step, so `down` removes
exactly what `up` made, also after `up` failed half-way or after nbdkit or nbdfuse was killed.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Callable

from iolens.lab import credits
from iolens.lab import state as st
from iolens.lab import tools
from iolens.lab.sysops import StepFailed, log_tail, loops_backed_by, mount_at, responsive, run, stop_process

MiB = 1 << 20
GiB = 1 << 30
NEEDS = ("nbdkit", "nbdfuse", "losetup", "fusermount3")
STATE_FILE = "nbd.json"
BURSTINESS_S = 0.1  # rate filter bucket, in seconds of the rate; nbdkit's default (2 s) lets 2 s of data through free
CONNECTIONS = 4  # nbdfuse's connections to nbdkit (its default multi-conn)
IOPS_BLOCK = 64 * 1024  # the IOPS server counts each request as at least this many bytes (blocksize's largest)
SERVERS = ("nbdkit", "nbdkit-iops")  # the device's server, and the IOPS server under it (Device.iops only)
SOCKETS = ("nbd.sock", "iops.sock", credits.STATE)  # paths on our processes' command lines (the controller's last)
SUN_PATH_MAX = 107  # a Unix socket's path, in bytes (sun_path less its NUL)


def _path(state_dir: Path, name: str) -> Path:
    """Where one of SOCKETS lives: in the disk's state directory, or, where that would make a socket's path longer
    than a Unix socket can have (a lab under a deep directory), in a short directory named after the state
    directory (so every later command finds it again), removed at `down`."""
    longest = max((n for n in SOCKETS if n != credits.STATE), key=len)  # both sockets in one place
    if name == credits.STATE or len(str(state_dir / longest).encode()) <= SUN_PATH_MAX:
        return state_dir / name
    digest = hashlib.sha256(str(state_dir).encode()).hexdigest()[:16]
    return Path(tempfile.gettempdir()) / f"iolens-nbd-{digest}" / name
RATE_FILES = ("rate", "iops.rate")  # the rate files the controller writes: the bandwidth, the IOPS server's
IOPS_BURST_S = 0.02  # the IOPS server's bucket: 60 requests at 3,000/s, so a short run is not 5% fast
READ_AHEAD_KB = 4096  # the loop device's read-ahead, which is the filesystem's: large sequential reads, few requests
MKFS = {"ext4": ["mkfs.ext4", "-q", "-F", "-E", "lazy_itable_init=0,lazy_journal_init=0"],
        "xfs": ["mkfs.xfs", "-q", "-f"], "btrfs": ["mkfs.btrfs", "-q", "-f"]}


@dataclass(frozen=True)
class Device:
    """What nbdkit is told: the emulated device's bandwidth, per-request latency and concurrency."""

    bandwidth: int | None = None  # bytes/s, reads and writes each; None: unthrottled
    latency_ms: int = 0  # added to every read and write request (nbdkit's delay filter takes whole ms)
    concurrency: int = 16  # nbdkit --threads, per connection
    connections: int = CONNECTIONS  # nbdfuse -C: connections to nbdkit (FUSE's requests are spread over them)
    iops: int | None = None  # a token bucket on requests, in a second nbdkit (see iops_args); None: none
    write_latency_ms: int | None = None  # for write requests instead, when set (see the profiles)

    def __post_init__(self) -> None:
        if self.bandwidth is not None and self.bandwidth < 64 * 1024:
            raise ValueError(f"bandwidth {self.bandwidth} B/s is below 64 KiB/s")
        for ms in (self.latency_ms, self.write_ms):
            if not 0 <= ms <= 10_000 or int(ms) != ms:
                raise ValueError(f"latency {ms} ms must be a whole number of ms in 0..10000")
        if not 1 <= self.concurrency <= 64:
            raise ValueError(f"concurrency {self.concurrency} must be in 1..64")
        if not 1 <= self.connections <= 16:
            raise ValueError(f"connections {self.connections} must be in 1..16")

    @property
    def write_ms(self) -> int:
        return self.latency_ms if self.write_latency_ms is None else self.write_latency_ms

    def nbdkit_args(self, image: Path, iops_socket: Path | None = None, rate_file: Path | None = None) -> list[str]:
        """Filters and plugin arguments, outermost filter first; the file, or the IOPS server at iops_socket.
        rate_file: the bandwidth is re-read from it (the credit controller's)."""
        args = ["--threads", str(self.concurrency)]
        params = []
        if self.bandwidth:
            args.append("--filter=rate")
            params += [f"rate={self.bandwidth * 8}", f"burstiness={BURSTINESS_S}"]  # the filter counts bits
            params += [f"rate-file={rate_file}"] if rate_file else []
        if self.latency_ms or self.write_ms:
            args.append("--filter=delay")
            params += [f"delay-read={self.latency_ms}ms", f"delay-write={self.write_ms}ms"]
        plugin = ["nbd", f"socket={iops_socket}"] if self.iops and iops_socket else ["file", str(image)]
        return [*args, *plugin, *params]

    def iops_args(self, image: Path, rate_file: Path | None = None) -> list[str]:
        """The IOPS server: a hard limit on requests per second that does not depend on how many are in flight.

        nbdkit has no request-rate filter, and its rate filter (one per server) is the device's bandwidth. So a
        second nbdkit, behind the first, serves the file through `blocksize` (every request rounded up to
        IOPS_BLOCK, a write's head and tail read first) and `rate` at iops x IOPS_BLOCK: a small request costs one
        token of IOPS_BLOCK bytes, a large one its size. With rate_file, the controller (credits.py) re-writes that
        rate as iops x the mean request, up to the largest I/O the provider counts as one, so a stream is not held
        to iops x IOPS_BLOCK.
        """
        assert self.iops
        return ["--filter=blocksize", "--filter=rate", "file", str(image), f"minblock={IOPS_BLOCK}",
                f"rate={self.iops * IOPS_BLOCK * 8}", f"burstiness={IOPS_BURST_S}",
                *([f"rate-file={rate_file}"] if rate_file else [])]


# -- bring-up ---------------------------------------------------------------------------------------------------


def missing() -> list[str]:
    """Why an emulated disk cannot be made here (empty when it can)."""
    why = [f"{t} is not installed ({tools.install_hint(t) or 'apt-get install ' + t})"
           for t in NEEDS if tools.find(t) is None]
    if os.geteuid() != 0:
        why.append("loop devices and mounts need root")
    if not os.path.exists("/dev/fuse"):
        why.append("/dev/fuse is missing (no FUSE in this kernel or container)")
    return why


def up(state_dir: Path, mountpoint: Path, device: Device, *, size: int = 2 * GiB, fstype: str = "ext4",
       mount_options: str | None = None, read_ahead_kb: int = READ_AHEAD_KB,
       bucket: credits.Bucket | None = None, io_kib: int | None = None) -> dict[str, Any]:
    """Make an emulated disk in `state_dir` and mount it at `mountpoint`. Returns what `status` reports.

    With a bucket, a controller (credits.py) switches the limit its unit names between burst and baseline: the
    IOPS server's rate for I/O credits (Device.iops is then the burst), the bandwidth for throughput credits
    (Device.bandwidth is then the calibrated burst rate). io_kib: the largest I/O the provider counts as one; where
    the IOPS server's fixed unit would hold a stream below the bandwidth, or a bucket switches its IOPS, the
    controller counts requests of up to that size as one (see credits.py).

    On failure everything made so far is removed again and StepFailed says which step failed.
    """
    problems = missing()
    if problems:
        raise StepFailed(problems[0], "run `iolens lab install` as root")
    if fstype not in MKFS:
        raise StepFailed(f"cannot make {fstype}; choose from {', '.join(MKFS)}")
    if bucket is not None and not (device.iops if bucket.unit == "io" else device.bandwidth):
        raise StepFailed(f"a bucket of {bucket.unit} credits needs a device with that limit to switch")
    state_dir = Path(state_dir).absolute()
    mountpoint = Path(mountpoint).absolute()
    if mount_at(mountpoint) is not None:
        raise StepFailed(f"{mountpoint} is already mounted")
    state_dir.mkdir(parents=True, exist_ok=True)
    mountpoint.mkdir(parents=True, exist_ok=True)
    rec: dict[str, Any] = {"device": asdict(device), "size": size, "fstype": fstype, "mountpoint": str(mountpoint),
                           "processes": {}, "loop": None}
    _save(state_dir, rec)
    try:
        return _up(state_dir, mountpoint, device, rec, size, fstype, mount_options, read_ahead_kb, bucket,
                   io_kib)
    except BaseException:
        down(state_dir)
        raise


def _up(state_dir: Path, mnt: Path, device: Device, rec: dict, size: int, fstype: str, mount_options: str | None,
        read_ahead_kb: int, bucket: credits.Bucket | None, io_kib: int | None) -> dict[str, Any]:
    image = state_dir / "disk.img"
    with open(image, "wb") as fh:  # sparse: costs disk only as it is written
        fh.truncate(size)
    mkfs = MKFS[fstype]
    if tools.find(mkfs[0]) is None:
        raise StepFailed(f"{mkfs[0]} is not installed", tools.install_hint(mkfs[0]))
    run([*mkfs, str(image)], timeout=300)  # before serving: formatting does not pay the emulated limits

    # nbdkit daemonizes (no -f): in the foreground it exits with its parent (the parent's death sends it SIGTERM),
    # so a lab brought up by one command would stop serving when that command exits.
    bw_rate = state_dir / RATE_FILES[0] if bucket and bucket.unit == "MiB" else None
    iops = _iops_control(state_dir, device, bucket, io_kib)
    iops_rate = Path(iops["file"]) if iops else None
    conf = state_dir / credits.STATE
    if bucket is not None or iops is not None:  # the starting limits, before the servers read them
        credits.configure(conf, "", bucket, bw_rate, _bytes_per_unit(device, bucket), iops)
    iops_sock = _path(state_dir, "iops.sock") if device.iops else None
    servers = [("nbdkit-iops", iops_sock, device.iops_args(image, iops_rate))] if iops_sock else []
    sock = _path(state_dir, "nbd.sock")
    sock.parent.mkdir(mode=0o700, exist_ok=True)
    for key, path, args in [*servers, ("nbdkit", sock, device.nbdkit_args(image, iops_sock, bw_rate))]:
        path.unlink(missing_ok=True)
        _daemon(state_dir, rec, key, ["nbdkit", "-U", str(path), "--pidfile", str(state_dir / f"{key}.pid"),
                                      "--log=stderr", *args])
        _wait(path.exists, state_dir, rec, key)

    fuse = state_dir / "fuse"
    fuse.mkdir(exist_ok=True)
    _spawn(state_dir, rec, "nbdfuse", ["nbdfuse", "-C", str(device.connections), "-P",
                                       str(state_dir / "nbdfuse.pid"), str(fuse), "--unix", str(sock)])
    _wait(lambda: (state_dir / "nbdfuse.pid").exists() and mount_at(fuse) is not None, state_dir, rec, "nbdfuse")

    backing = fuse / "nbd"
    try:
        loop = run(["losetup", "--find", "--show", "--direct-io=on", str(backing)]).strip()
    except StepFailed:
        loop = run(["losetup", "--find", "--show", str(backing)]).strip()
    rec["loop"] = loop
    _save(state_dir, rec)
    queue = Path("/sys/block") / Path(loop).name / "queue"
    (queue / "read_ahead_kb").write_text(f"{read_ahead_kb}\n")
    run(["mount", *(["-o", mount_options] if mount_options else []), loop, str(mnt)])
    os.chmod(mnt, 0o1777)
    direct = (Path("/sys/block") / Path(loop).name / "loop" / "dio").read_text().strip() == "1"
    rec.update(loop_direct_io=direct, read_ahead_kb=read_ahead_kb, image=str(image), mount_options=mount_options)
    _save(state_dir, rec)
    if bucket is not None or iops is not None:
        credits.configure(conf, loop, bucket, bw_rate, _bytes_per_unit(device, bucket), iops)
        _spawn(state_dir, rec, "credits", [sys.executable, "-m", "iolens.lab.credits", str(conf)])
        rec.update(credits=bucket is not None, controller=True)
        _save(state_dir, rec)
    return status(state_dir)


def _iops_control(state_dir: Path, device: Device, bucket: credits.Bucket | None,
                  io_kib: int | None) -> dict[str, Any] | None:
    """What the controller does with the IOPS server (None: nothing): switch its IOPS with an I/O bucket, and count
    requests of up to io_kib as one where IOPS_BLOCK units would hold a stream below the device's bandwidth."""
    if not device.iops:
        return None
    largest = max(IOPS_BLOCK, (io_kib or 0) * 1024)
    switches = bucket is not None and bucket.unit == "io"
    if not switches and (largest == IOPS_BLOCK or device.iops * IOPS_BLOCK >= (device.bandwidth or 0)):
        return None
    return {"file": str(state_dir / RATE_FILES[1]), "iops": device.iops, "smallest": IOPS_BLOCK, "largest": largest}


def _bytes_per_unit(device: Device, bucket: credits.Bucket | None) -> float:
    """What the bandwidth's rate file counts per MiB of throughput credits: the device's calibrated bytes per
    modelled MiB (Device.bandwidth is the calibrated burst rate); 0 without such a bucket."""
    if bucket is None or bucket.unit != "MiB":
        return 0.0
    assert device.bandwidth
    return device.bandwidth / bucket.burst


def _start(state_dir: Path, key: str, argv: list[str]) -> tuple[subprocess.Popen, Path]:
    """Start argv (found among the lab's tools) in its own session, its output appended to STATE/KEY.log."""
    exe = tools.find(argv[0])
    if exe is None:
        raise StepFailed(f"{argv[0]} is not installed", tools.install_hint(argv[0]))
    log = state_dir / f"{key}.log"
    with open(log, "ab") as fh:
        proc = subprocess.Popen([exe, *argv[1:]], stdin=subprocess.DEVNULL, stdout=fh, stderr=subprocess.STDOUT,
                                start_new_session=True, cwd=state_dir)
    return proc, log


def _spawn(state_dir: Path, rec: dict, key: str, argv: list[str]) -> None:
    proc, log = _start(state_dir, key, argv)
    rec["processes"][key] = {"pid": proc.pid, "start_time": st.process_start_time(proc.pid), "argv0": argv[0],
                             "log": str(log)}
    _save(state_dir, rec)
    _children[proc.pid] = proc


def _daemon(state_dir: Path, rec: dict, key: str, argv: list[str], timeout: float = 20) -> None:
    """Start a server that forks into the background and writes its pidfile (STATE/KEY.pid); record the daemon."""
    proc, log = _start(state_dir, key, argv)
    try:
        code = proc.wait(timeout=timeout)  # the foreground process exits once the daemon serves
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
        raise StepFailed(f"{key} did not go into the background after {timeout:.0f} s: {log_tail(log)}") from None
    if code != 0:
        raise StepFailed(f"{key} exited ({code}) at start: {log_tail(log)}")
    deadline = time.monotonic() + timeout
    while True:  # the daemon writes the pidfile a moment after its parent has exited
        pid = _pidfile(state_dir, key)
        if pid is not None and _ours(state_dir, pid):
            break
        if time.monotonic() > deadline:
            raise StepFailed(f"{key} wrote no pidfile of a running server in {timeout:.0f} s: {log_tail(log)}")
        time.sleep(0.02)
    rec["processes"][key] = {"pid": pid, "start_time": st.process_start_time(pid), "argv0": argv[0], "log": str(log)}
    _save(state_dir, rec)


# Popen objects of the servers this process started, so that their exit statuses are collected (no zombies).
_children: dict[int, subprocess.Popen] = {}


def _wait(ready: Callable[[], object], state_dir: Path, rec: dict, key: str, timeout: float = 20) -> None:
    deadline = time.monotonic() + timeout
    proc = _children.get(rec["processes"][key]["pid"])
    while time.monotonic() < deadline:
        if ready():
            return
        if proc is not None and proc.poll() is not None:
            raise StepFailed(f"{key} exited ({proc.returncode}) at start: {log_tail(state_dir / f'{key}.log')}")
        time.sleep(0.05)
    raise StepFailed(f"{key} was not ready after {timeout:.0f} s: {log_tail(state_dir / f'{key}.log')}")


def _save(state_dir: Path, rec: dict) -> None:
    tmp = state_dir / f".{STATE_FILE}.tmp"
    tmp.write_text(json.dumps(rec, indent=1) + "\n")
    tmp.replace(state_dir / STATE_FILE)


def _load(state_dir: Path) -> dict:
    try:
        return json.loads((Path(state_dir) / STATE_FILE).read_text())
    except (OSError, ValueError):
        return {"processes": {}, "loop": None, "mountpoint": None}


# -- status and teardown ----------------------------------------------------------------------------------------


def status(state_dir: Path) -> dict[str, Any]:
    """What is up: path, loop device, limits, processes; `healthy` when every layer is there and answers."""
    state_dir = Path(state_dir).absolute()
    rec = _load(state_dir)
    mnt = rec.get("mountpoint")
    m = mount_at(mnt) if mnt else None
    procs = {k: _alive(state_dir, k, r) for k, r in rec.get("processes", {}).items()}
    wanted = {"nbdkit", "nbdfuse"} | ({"nbdkit-iops"} if (rec.get("device") or {}).get("iops") else set()) | (
        {"credits"} if rec.get("controller") or rec.get("credits") else set())
    healthy = bool(mnt and m and all(procs.values()) and set(procs) == wanted and responsive(Path(mnt)))
    dev = rec.get("device") or {}
    return {"path": mnt, "healthy": healthy, "loop": rec.get("loop"), "fstype": rec.get("fstype"),
            "size": rec.get("size"), "image": rec.get("image"), "loop_direct_io": rec.get("loop_direct_io"),
            "read_ahead_kb": rec.get("read_ahead_kb"), "mount_options": rec.get("mount_options"),
            "bandwidth": dev.get("bandwidth"), "latency_ms": dev.get("latency_ms"),
            "write_latency_ms": dev["write_latency_ms"] if dev.get("write_latency_ms") is not None
            else dev.get("latency_ms"),
            "concurrency": dev.get("concurrency"), "connections": dev.get("connections", CONNECTIONS),
            "iops": dev.get("iops"),
            "credits": credits.read_state(state_dir / credits.STATE) if rec.get("credits") else None,
            "processes": {k: rec["processes"][k]["pid"] for k, alive in procs.items() if alive}}


def _alive(state_dir: Path, key: str, rec: dict | None) -> bool:
    proc = _children.get((rec or {}).get("pid", -1))
    if proc is not None:
        proc.poll()  # collect a dead child's status
    if rec and st.process_alive(rec):
        return True
    pid = _pidfile(state_dir, key)
    return pid is not None and _ours(state_dir, pid)


def _pidfile(state_dir: Path, key: str) -> int | None:
    try:
        return int((state_dir / f"{key}.pid").read_text().strip())
    except (OSError, ValueError):
        return None


def _ours(state_dir: Path, pid: int) -> bool:
    """A live (not zombie) process whose command line names one of our sockets: never kill a recycled PID."""
    if st.process_start_time(pid) is None:
        return False
    try:
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return False
    return any(str(_path(state_dir, s)).encode() in cmdline for s in SOCKETS)


def leftovers(state_dir: Path, mountpoint: Path | None = None) -> list[str]:
    """Everything of this disk still present: mounts, loop devices, processes (empty when all is gone)."""
    state_dir = Path(state_dir).absolute()
    rec = _load(state_dir)
    out = []
    for path in filter(None, {str(mountpoint) if mountpoint else None, rec.get("mountpoint"), str(state_dir / "fuse")}):
        if mount_at(path) is not None:
            out.append(f"{path} is still mounted")
    out += [f"{dev} is still attached to {img}" for dev, img in loops_backed_by(state_dir)]
    for key in ("credits", "nbdfuse", *SERVERS):
        if _alive(state_dir, key, rec.get("processes", {}).get(key)):
            out.append(f"{key} is still running")
    if not any(p.endswith("still running") for p in out):
        out += [f"process {pid} still serves the disk in {state_dir}" for pid in _strays(state_dir)]
    return out


def _strays(state_dir: Path) -> list[int]:
    """Live processes with our socket as an argument: servers whose record and pidfile were lost (a start cut
    short before the daemon wrote its pidfile)."""
    needles = {str(_path(state_dir, s)).encode() for s in SOCKETS}
    found = []
    for d in Path("/proc").iterdir():
        if not d.name.isdigit() or int(d.name) == os.getpid():
            continue
        try:
            args = (d / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if needles & set(args) and st.process_start_time(int(d.name)) is not None:
            found.append(int(d.name))
    return found


def down(state_dir: Path, mountpoint: Path | None = None) -> list[str]:
    """Take the disk in `state_dir` down, in reverse order, whatever state it is in. Returns what is left (empty: all
    gone). Idempotent; works after nbdkit or nbdfuse was killed (their I/O fails, so nothing waits on them)."""
    state_dir = Path(state_dir).absolute()
    rec = _load(state_dir)
    mnt = str(mountpoint.absolute()) if mountpoint else rec.get("mountpoint")
    fuse = state_dir / "fuse"
    procs = rec.get("processes", {})
    _kill(state_dir, "credits", procs.get("credits"))
    if mount_at(fuse) is not None and not responsive(fuse, timeout=5):
        _kill(state_dir, "nbdfuse", procs.get("nbdfuse"))  # a hung FUSE server: killing it aborts the connection
    # 1. the filesystem (lazily if it is busy or its device is gone)
    if mnt:
        _unmount(mnt)
    # 2. the loop device(s) on the FUSE file
    for dev, _img in loops_backed_by(state_dir):
        for _ in range(20):
            _quiet(["losetup", "-d", dev])
            if dev not in dict(loops_backed_by(state_dir)):
                break
            time.sleep(0.25)  # a lazily unmounted filesystem lets go a moment later
    # 3. the FUSE mount (nbdfuse exits when it is unmounted), then the servers
    _unmount(str(fuse), fuse=True)
    _kill(state_dir, "nbdfuse", procs.get("nbdfuse"))
    for key in SERVERS:
        _kill(state_dir, key, procs.get(key))
    for pid in _strays(state_dir):
        _kill(state_dir, "", {"pid": pid, "start_time": st.process_start_time(pid)})
    problems = leftovers(state_dir, Path(mnt) if mnt else None)
    if not problems:
        for name in ("disk.img", *RATE_FILES, *(f"{k}.pid" for k in (*SERVERS, "nbdfuse")), STATE_FILE):
            (state_dir / name).unlink(missing_ok=True)
        for name in SOCKETS:
            _path(state_dir, name).unlink(missing_ok=True)
        short = _path(state_dir, "nbd.sock").parent
        if short != state_dir:
            shutil.rmtree(short, ignore_errors=True)
        shutil.rmtree(fuse, ignore_errors=True)
    return problems


def _unmount(path: str, fuse: bool = False) -> None:
    attempts = ([["fusermount3", "-u", path]] if fuse else []) + [["umount", path], ["umount", "-l", path]]
    for argv in attempts:
        if mount_at(path) is None:
            return
        _quiet(argv)


def _quiet(argv: list[str], timeout: float = 60) -> None:
    try:
        run(argv, timeout=timeout)
    except StepFailed:
        pass


def _kill(state_dir: Path, key: str, rec: dict | None) -> None:
    if rec and st.process_alive(rec):
        stop_process(rec)
    pid = _pidfile(state_dir, key)
    if pid is not None and _ours(state_dir, pid):  # started by an earlier run whose record was lost
        for sig in (signal.SIGTERM, signal.SIGKILL):
            try:
                os.kill(pid, sig)
            except ProcessLookupError:
                break
            for _ in range(40):
                if not _ours(state_dir, pid):
                    break
                time.sleep(0.05)
    proc = _children.pop((rec or {}).get("pid", -1), None)
    if proc is not None:
        try:
            proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            pass
