"""Small system operations the lab needs: commands, mounts, ports, processes, cgroups."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import threading
import time
from pathlib import Path
from typing import Callable

from iolens.errors import IolensError
from iolens.lab import tools
from iolens.lab.state import process_alive
from iolens.sysinfo import mounts


class StepFailed(IolensError):
    """One step of bringing up a target failed; `hint` says how to fix it."""

    def __init__(self, message: str, hint: str = ""):
        super().__init__(message)
        self.hint = hint


def run(argv: list[str], *, timeout: float = 120, env: dict | None = None) -> str:
    """Run a short command; StepFailed with its stderr if it fails."""
    exe = tools.find(argv[0]) or argv[0]
    try:
        proc = subprocess.run([exe, *argv[1:]], capture_output=True, text=True, timeout=timeout,
                              stdin=subprocess.DEVNULL, env=env)
    except FileNotFoundError:
        raise StepFailed(f"{argv[0]} is not installed", tools.install_hint(argv[0])) from None
    except subprocess.TimeoutExpired:
        raise StepFailed(f"`{' '.join(argv)}` did not finish in {timeout:.0f} s") from None
    if proc.returncode != 0:
        err = " ".join((proc.stderr or proc.stdout).strip().split())[:300]
        raise StepFailed(f"`{' '.join(argv)}` failed: {err or f'exit {proc.returncode}'}")
    return proc.stdout


def mount_at(path: Path | str) -> dict | None:
    """The (topmost) mount whose mountpoint is exactly `path`, or None."""
    p = str(path)
    found = None
    for m in mounts():
        if m["mountpoint"] == p:
            found = m
    return found


def mounts_under(root: Path) -> list[str]:
    prefix = str(root).rstrip("/") + "/"
    return [m["mountpoint"] for m in mounts() if m["mountpoint"].startswith(prefix)]


def _program(proc: subprocess.Popen) -> str:
    """The name of the program a Popen runs (for messages)."""
    args = proc.args
    first = args[0] if isinstance(args, (list, tuple)) else args
    return Path(str(first)).name


def wait_mounted(path: Path, proc: subprocess.Popen | None, log: Path, timeout: float = 20) -> dict:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        m = mount_at(path)
        if m is not None:
            return m
        if proc is not None and proc.poll() is not None:
            raise StepFailed(f"{_program(proc)} exited ({proc.returncode}) before mounting: {log_tail(log)}")
        time.sleep(0.1)
    raise StepFailed(f"{path} was not mounted after {timeout:.0f} s: {log_tail(log)}")


def wait_port(port: int, proc: subprocess.Popen, log: Path, timeout: float = 20, host: str = "127.0.0.1") -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise StepFailed(f"{_program(proc)} exited ({proc.returncode}) at start: {log_tail(log)}")
        try:
            with socket.create_connection((host, port), timeout=0.5):
                return
        except OSError:
            time.sleep(0.1)
    raise StepFailed(f"{_program(proc)} did not listen on {host}:{port} within {timeout:.0f} s: "
                     f"{log_tail(log)}")


def log_tail(log: Path, lines: int = 3) -> str:
    try:
        text = log.read_text(errors="replace").strip().splitlines()
    except OSError:
        return "(no log)"
    return " | ".join(text[-lines:]) or "(empty log)"


def free_port(preferred: int) -> int:
    """`preferred` if nothing listens there, else a free port from the kernel."""
    for port in (preferred, 0):
        s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        try:
            s.bind(("127.0.0.1", port))
            return s.getsockname()[1]
        except OSError:
            continue
        finally:
            s.close()
    raise StepFailed("no free TCP port on 127.0.0.1")


def stop_process(rec: dict, timeout: float = 5) -> bool:
    """SIGTERM, then SIGKILL, a process we started (identified by PID and start time). True if it is gone."""
    if not process_alive(rec):
        return True
    pid = rec["pid"]
    for sig, wait in ((signal.SIGTERM, timeout), (signal.SIGKILL, 2)):
        try:
            os.kill(pid, sig)
        except ProcessLookupError:
            return True
        deadline = time.monotonic() + wait
        while time.monotonic() < deadline:
            _reap(pid)
            if not process_alive(rec):
                return True
            time.sleep(0.05)
    return not process_alive(rec)


def _reap(pid: int) -> None:
    try:
        os.waitpid(pid, os.WNOHANG)
    except ChildProcessError:
        pass


def responsive(path: Path, timeout: float = 3) -> bool:
    """statvfs returns within `timeout` (a hung FUSE server would block forever)."""
    result: list[bool] = []

    def probe() -> None:
        try:
            os.statvfs(path)
            result.append(True)
        except OSError:
            result.append(False)

    t = threading.Thread(target=probe, daemon=True)
    t.start()
    t.join(timeout)
    return bool(result and result[0])


# -- cgroups (v1 blkio) ----------------------------------------------------------------------------------------

BLKIO = Path("/sys/fs/cgroup/blkio")


def blkio_available() -> str | None:
    """None when cgroup v1 blkio throttling is usable, else why not."""
    if not (BLKIO / "blkio.throttle.read_bps_device").exists():
        return ("no cgroup v1 blkio controller at /sys/fs/cgroup/blkio (this kernel or container uses cgroup v2 "
                "only; throttled targets need the v1 blkio hierarchy)")
    if not os.access(BLKIO, os.W_OK):
        return "the blkio cgroup hierarchy is not writable: run as root"
    return None


def make_throttle_cgroup(name: str, majmin: str, limits: dict) -> Path:
    why = blkio_available()
    if why:
        raise StepFailed(why)
    cg = BLKIO / name
    cg.mkdir(exist_ok=True)
    for key, value in limits.items():
        kind, unit = key.split("_")  # read_bps -> blkio.throttle.read_bps_device
        (cg / f"blkio.throttle.{kind}_{unit}_device").write_text(f"{majmin} {value}\n")
    return cg


def remove_cgroup(cg: Path) -> bool:
    if not cg.exists():
        return True
    try:
        pids = (cg / "cgroup.procs").read_text().split()
    except OSError:
        pids = []
    for pid in pids:  # move stragglers to the parent so the group can go
        try:
            (cg.parent / "cgroup.procs").write_text(pid)
        except OSError:
            pass
    try:
        cg.rmdir()
        return True
    except OSError:
        return False


def loop_backing_file(device: str) -> str | None:
    name = Path(device).name
    try:
        text = (Path("/sys/block") / name / "loop" / "backing_file").read_text().strip()
    except OSError:
        return None
    return text.removesuffix(" (deleted)")


def loops_backed_by(directory: Path) -> list[tuple[str, str]]:
    prefix = str(directory).rstrip("/") + "/"
    out = []
    for blk in Path("/sys/block").glob("loop*"):
        backing = loop_backing_file(blk.name)
        if backing and backing.startswith(prefix):
            out.append((f"/dev/{blk.name}", backing))
    return out


def unmount(path: str) -> bool:
    """Unmount `path` (FUSE or not); lazily if it stays busy. True when nothing is mounted there any more."""
    for _ in range(20):  # stacked mounts: unmount each layer
        m = mount_at(path)
        if m is None:
            return True
        attempts: list[list[str]] = []
        if m["fstype"].startswith("fuse") and os.geteuid() != 0:
            attempts += [["fusermount3", "-u", path], ["fusermount", "-u", path]]
        attempts += [["umount", path], ["umount", "-l", path]]
        for argv in attempts:
            exe = tools.find(argv[0])
            if exe is None:
                continue
            subprocess.run([exe, *argv[1:]], capture_output=True, stdin=subprocess.DEVNULL, timeout=60)
            if mount_at(path) is None or mount_at(path) != m:
                break
            time.sleep(0.2)
        if mount_at(path) == m:
            return False
    return mount_at(path) is None


def detach_loop(device: str, image: str) -> bool:
    """Detach `device` only while it is still backed by our image."""
    if loop_backing_file(device) != image:
        return True
    exe = tools.find("losetup") or "losetup"
    for _ in range(10):
        subprocess.run([exe, "-d", device], capture_output=True, stdin=subprocess.DEVNULL, timeout=30)
        if loop_backing_file(device) != image:
            return True
        time.sleep(0.3)  # a lazily unmounted filesystem lets go a moment later
    return False


# -- loop filesystems and network namespaces (shared by the kinds that need them) ----------------------------------

def loop_filesystem(image: Path, size: int, fstype: str, mnt: Path, record: Callable[[str, dict], None],
                    options: str | None = None) -> str:
    """A fresh sparse image of `size` bytes, attached to a loop device, formatted with `fstype` and mounted at `mnt`.
    `record("loop", {device, image})` and `record("mount", {path})` are called as each resource is made, so the
    caller can write it down before the next step. Returns the loop device."""
    mkfs = f"mkfs.{fstype}"
    for tool in ("losetup", mkfs):
        if tools.find(tool) is None:
            raise StepFailed(f"{tool} is not installed", tools.install_hint(tool))
    image.parent.mkdir(parents=True, exist_ok=True)
    with open(image, "wb") as fh:  # sparse: costs disk only as it is written
        fh.truncate(size)
    try:
        device = run(["losetup", "--find", "--show", "--direct-io=on", str(image)]).strip()
    except StepFailed:
        device = run(["losetup", "--find", "--show", str(image)]).strip()
    record("loop", {"device": device, "image": str(image)})
    run([mkfs, "-q", {"ext4": "-F", "xfs": "-f", "btrfs": "-f"}[fstype], device])
    mnt.mkdir(parents=True, exist_ok=True)
    run(["mount"] + (["-o", options] if options else []) + [device, str(mnt)])
    record("mount", {"path": str(mnt)})
    return device


def netns_path(name: str) -> Path:
    return Path("/run/netns") / name


def make_netns(name: str, host_if: str, ns_if: str, host_addr: str, ns_addr: str, prefix: int) -> None:
    """A network namespace `name` joined to this one by a veth pair: `host_if` here with `host_addr`, `ns_if` inside
    with `ns_addr` (both /prefix), and the namespace's loopback up."""
    if tools.find("ip") is None:
        raise StepFailed("ip is not installed", tools.install_hint("ip"))
    run(["ip", "netns", "add", name])
    run(["ip", "link", "add", host_if, "type", "veth", "peer", "name", ns_if])
    run(["ip", "link", "set", ns_if, "netns", name])
    run(["ip", "addr", "add", f"{host_addr}/{prefix}", "dev", host_if])
    run(["ip", "link", "set", host_if, "up"])
    inside = ["ip", "-n", name]
    run([*inside, "addr", "add", f"{ns_addr}/{prefix}", "dev", ns_if])
    run([*inside, "link", "set", ns_if, "up"])
    run([*inside, "link", "set", "lo", "up"])


def link_exists(name: str) -> bool:
    return Path("/sys/class/net", name).exists()


def remove_netns(name: str, host_if: str) -> list[str]:
    """Remove the veth pair (both ends go with the host's) and the namespace; what is left, if anything."""
    exe = tools.find("ip") or "ip"
    for argv, gone in (([exe, "link", "del", host_if], lambda: not link_exists(host_if)),
                       ([exe, "netns", "del", name], lambda: not netns_path(name).exists())):
        if gone():
            continue
        subprocess.run(argv, capture_output=True, stdin=subprocess.DEVNULL, timeout=30)
        deadline = time.monotonic() + 5
        while not gone() and time.monotonic() < deadline:  # the kernel removes a link a moment later
            time.sleep(0.1)
    left = []
    if link_exists(host_if):
        left.append(f"network interface {host_if} is still there")
    if netns_path(name).exists():
        left.append(f"network namespace {name} is still there")
    return left


def addresses_in_use() -> set[str]:
    """Every IPv4 address configured here (to pick a private pair that collides with none)."""
    out = run(["ip", "-4", "-o", "addr", "show"])
    return {f.split("/")[0] for line in out.splitlines() for f in line.split()[3:4]}


def pids_mentioning(text: str) -> list[int]:
    """Processes whose command line contains `text` (daemons that servers fork, unrecorded by us)."""
    me = os.getpid()
    found = []
    needle = text.encode()
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit() or int(proc.name) == me:
            continue
        try:
            if needle in (proc / "cmdline").read_bytes():
                found.append(int(proc.name))
        except OSError:
            continue
    return found
