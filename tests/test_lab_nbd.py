"""Emulated disks (iolens.lab.nbd), as root: slow for buffered writeback and cold reads of any process, and a
teardown that leaves nothing behind, also after nbdkit or nbdfuse was killed.

The bounds are loose (±35%); benchmarks/emulated_disks.py measures the calibration itself.
"""

from __future__ import annotations

import mmap
import os
import random
import signal
import subprocess
import threading
import time
from pathlib import Path

import pytest
from conftest import unavailable

from iolens.lab import credits, disks, nbd
from iolens.lab.sysops import loops_backed_by, mount_at

pytestmark = [pytest.mark.root, pytest.mark.slow, pytest.mark.timeout(300)]

MiB = 1 << 20
RATE = 20 * MiB
DEVICE = nbd.Device(RATE, 2, 2)  # 20 MiB/s, 2 ms per request


@pytest.fixture
def disk(tmp_path):
    if os.geteuid() != 0:
        pytest.skip("loop devices and mounts need root")
    why = nbd.missing()
    if why:
        unavailable("; ".join(why))
    state, mnt = tmp_path / "state", tmp_path / "mnt"
    info = nbd.up(state, mnt, DEVICE, size=512 * MiB)
    yield state, mnt, info
    nbd.down(state, mnt)


def drop_caches() -> None:
    os.sync()
    Path("/proc/sys/vm/drop_caches").write_text("3\n")


def assert_gone(state: Path, mnt: Path, pids: list[int]) -> None:
    assert nbd.leftovers(state, mnt) == []
    proc_mounts = Path("/proc/mounts").read_text()
    assert str(mnt) not in proc_mounts and str(state) not in proc_mounts
    attached = subprocess.run(["losetup", "-a"], capture_output=True, text=True).stdout
    assert str(state) not in attached
    assert loops_backed_by(state) == []
    for pid in pids:
        try:
            stat = Path(f"/proc/{pid}/stat").read_text()
        except OSError:
            continue
        assert stat[stat.rindex(")") + 2] == "Z", f"pid {pid} still runs"  # reaped or a zombie, not running


def test_up_reports_the_stack(disk):
    _state, mnt, info = disk
    assert info["healthy"] and info["path"] == str(mnt)
    assert info["loop_direct_io"] is True
    assert info["bandwidth"] == RATE and info["latency_ms"] == 2
    assert mount_at(mnt)["fstype"] == "ext4"
    assert set(info["processes"]) == {"nbdkit", "nbdfuse"}


def test_buffered_write_and_cold_read_take_the_time_the_rate_implies(disk):
    """dd from a plain process (no wrapper, no cgroup): the page cache absorbs the write, sync pays for it."""
    _state, mnt, _info = disk
    n = 60
    expected = n * MiB / RATE
    drop_caches()
    t = time.monotonic()
    subprocess.run(["dd", "if=/dev/zero", f"of={mnt}/f", "bs=1M", f"count={n}", "status=none"], check=True)
    subprocess.run(["sync"], check=True)
    write = time.monotonic() - t
    drop_caches()
    t = time.monotonic()
    subprocess.run(["dd", f"if={mnt}/f", "of=/dev/null", "bs=1M", "status=none"], check=True)
    read = time.monotonic() - t
    assert 0.65 * expected < write < 1.35 * expected, (write, expected)
    assert 0.65 * expected < read < 1.35 * expected, (read, expected)


def test_teardown_leaves_nothing(disk):
    state, mnt, info = disk
    (mnt / "f").write_bytes(b"x" * MiB)
    pids = list(info["processes"].values())
    assert nbd.down(state, mnt) == []
    assert_gone(state, mnt, pids)
    assert nbd.down(state, mnt) == []  # idempotent


@pytest.mark.parametrize("victim", ["nbdkit", "nbdfuse"])
def test_teardown_after_sigkill(disk, victim):
    state, mnt, info = disk
    with open(mnt / "f", "wb") as fh:
        fh.write(b"x" * MiB)  # dirty pages that can no longer reach the device
    pids = list(info["processes"].values())
    os.kill(info["processes"][victim], signal.SIGKILL)
    time.sleep(0.2)
    assert not nbd.status(state)["healthy"]
    assert nbd.down(state, mnt) == []
    assert_gone(state, mnt, pids)


IOPS_DEVICE = nbd.Device(RATE, 0, 16, iops=400)  # 20 MiB/s, 400 requests/s from the IOPS server, no delay


def rand_reads(path: Path, seconds: float, threads: int = 8) -> float:
    """4 KiB O_DIRECT reads at random offsets from `threads` threads: requests per second."""
    blocks = path.stat().st_size // 4096
    done = [0] * threads
    stop = time.monotonic() + seconds

    def worker(i: int) -> None:
        buf = mmap.mmap(-1, 4096)  # page-aligned, as O_DIRECT needs
        fd = os.open(path, os.O_RDONLY | os.O_DIRECT)
        rng = random.Random(i)
        try:
            while time.monotonic() < stop:
                os.preadv(fd, [buf], rng.randrange(blocks) * 4096)
                done[i] += 1
        finally:
            os.close(fd)

    t = time.monotonic()
    pool = [threading.Thread(target=worker, args=(i,)) for i in range(threads)]
    for th in pool:
        th.start()
    for th in pool:
        th.join()
    return sum(done) / (time.monotonic() - t)


def test_the_iops_server_caps_small_requests_and_not_the_bandwidth(tmp_path):
    """Device.iops: a second nbdkit counts each request as 64 KiB, so 4 KiB reads run at the request rate while
    1 MiB reads still run at the bandwidth; killing the IOPS server still leaves nothing behind."""
    if os.geteuid() != 0:
        pytest.skip("loop devices and mounts need root")
    if nbd.missing():
        unavailable("; ".join(nbd.missing()))
    state, mnt = tmp_path / "state", tmp_path / "mnt"
    try:
        info = nbd.up(state, mnt, IOPS_DEVICE, size=512 * MiB)
        assert info["healthy"] and info["iops"] == 400
        assert set(info["processes"]) == {"nbdkit", "nbdkit-iops", "nbdfuse"}
        subprocess.run(["dd", "if=/dev/urandom", f"of={mnt}/f", "bs=1M", "count=40", "conv=fsync", "status=none"],
                       check=True)
        drop_caches()
        iops = rand_reads(mnt / "f", 2.0)
        assert 0.65 * 400 < iops < 1.35 * 400, iops
        drop_caches()
        t = time.monotonic()
        subprocess.run(["dd", f"if={mnt}/f", "of=/dev/null", "bs=1M", "iflag=direct", "status=none"], check=True)
        read = time.monotonic() - t
        expected = 40 * MiB / RATE
        assert 0.65 * expected < read < 1.35 * expected, (read, expected)
        pids = list(info["processes"].values())
        os.kill(info["processes"]["nbdkit-iops"], signal.SIGKILL)
        time.sleep(0.2)
        assert not nbd.status(state)["healthy"]
    finally:
        assert nbd.down(state, mnt) == []
    assert_gone(state, mnt, pids)


def test_a_failed_bring_up_removes_what_it_made(tmp_path):
    if os.geteuid() != 0:
        pytest.skip("loop devices and mounts need root")
    if nbd.missing():
        unavailable("; ".join(nbd.missing()))
    state, mnt = tmp_path / "state", tmp_path / "mnt"
    with pytest.raises(nbd.StepFailed):
        nbd.up(state, mnt, DEVICE, size=512 * MiB, fstype="ext4", mount_options="no-such-option")
    assert_gone(state, mnt, [])


def test_catalogue():
    names = [p.name for p in disks.PROFILES]
    assert len(names) == len(set(names))
    for want in ("magnetic", "gp2", "gp3", "io2-100", "io2-500", "st1", "sc1", "hdd", "nvme"):
        assert disks.profile(want).name == want
    for name in ("gp2", "st1", "sc1"):  # burst credits, switched by a controller (test_lab_credits.py)
        assert disks.profile(name).bucket and not any("credit" in n for n in disks.profile(name).not_emulated)
    assert not disks.profile("gp3").bucket
    assert disks.profile("gp3").iops == 3000 and disks.profile("gp3").bandwidth == 125 * MiB
    assert all(p.size <= 4 << 30 for p in disks.PROFILES)
    with pytest.raises(nbd.StepFailed, match="choose from"):
        disks.profile("io3")
    assert "rate=167772160" in nbd.Device(RATE, 2, 2).nbdkit_args(Path("img"))  # the filter counts bits
    iops = nbd.Device(125 * MiB, 0, 16, iops=3000)
    assert iops.nbdkit_args(Path("img"), Path("iops.sock"))[-4:-2] == ["nbd", "socket=iops.sock"]
    assert f"rate={3000 * 64 * 1024 * 8}" in iops.iops_args(Path("img")) and "minblock=65536" in iops.iops_args(
        Path("img"))
    # where 64 KiB units would hold a stream below the bandwidth, the controller counts I/Os of up to io_kib as one
    st1 = nbd._iops_control(Path("d"), disks.profile("st1").device, None, 1024)
    assert st1 is not None and (st1["iops"], st1["smallest"], st1["largest"]) == (500, 64 << 10, 1 << 20)
    assert nbd._iops_control(Path("d"), disks.profile("gp3").device, None, 256) is None  # 3,000 x 64 KiB > 125 MiB/s
    gp2 = credits.Bucket.from_perf(disks.profile("gp2").perf)
    assert nbd._iops_control(Path("d"), disks.profile("gp2").device, gp2, 256) is not None  # its IOPS switch
    assert disks.profile("gp3").device.iops == 3000 and disks.profile("gp3").device.latency_ms == 0
    args = disks.profile("magnetic").device.nbdkit_args(Path("img"))
    assert "delay-read=44ms" in args and "delay-write=42ms" in args  # random writes + fsync ran 6-11% slow at 44
    assert "delay-write=2ms" in DEVICE.nbdkit_args(Path("img"))  # the read latency, unless a write one is set


def test_sockets_of_a_deep_lab_fit_a_unix_socket_path(tmp_path):
    """A lab under a deep directory: the disk's sockets go to a short directory named after its state directory
    (the same one every time), both in one place; a shallow lab keeps them in its state directory."""
    from iolens.lab import nbd

    deep = tmp_path / ("d" * 60) / ("e" * 60) / "magnetic"
    socks = [nbd._path(deep, n) for n in ("nbd.sock", "iops.sock")]
    assert all(len(str(s).encode()) <= nbd.SUN_PATH_MAX for s in socks)
    assert socks[0].parent == socks[1].parent != deep
    assert socks == [nbd._path(deep, n) for n in ("nbd.sock", "iops.sock")]
    shallow = Path("/tmp/lab/magnetic")
    assert nbd._path(shallow, "nbd.sock") == shallow / "nbd.sock"
