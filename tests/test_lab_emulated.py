"""The emulated disks as lab targets (`lab:magnetic` ... `lab:nvme`), as root: slow for every process with no
wrapper, for buffered writeback and cold buffered reads; `compare` and `bench` on them are slowed and say
`emulated: true` in JSON, HTML and the results store; `lab down` leaves nothing, also after SIGKILL of the servers.

One lab (small sparse images) serves the module; the last test kills servers and takes it down. The bounds are
loose (±40%) because the machine is shared; benchmarks/emulated_disks.py measures the calibration itself.
"""

from __future__ import annotations

import json
import os
import re
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import iolens, lab_up, unavailable

from iolens import pagecache
from iolens.lab import disks, nbd
from iolens.lab.state import process_start_time
from iolens.lab.sysops import loops_backed_by, mounts_under

pytestmark = [pytest.mark.root, pytest.mark.slow, pytest.mark.timeout(600)]

MiB = 1 << 20
DISKS = [p.name for p in disks.PROFILES]
TOLERANCE = 0.4
SECONDS = 0.8  # each timed transfer takes about this long at the target's limit


@pytest.fixture(scope="module")
def labdir(tmp_path_factory):
    why = nbd.missing() if os.geteuid() == 0 else []
    if why:
        unavailable("; ".join(why))
    yield from lab_up(tmp_path_factory, "emulated", "--only", ",".join(["tmpfs", *DISKS]), "--disk-size", "256M",
                      "--size", "96M")  # tmpfs: a 64 MiB file and the work directory's marker


def status(d: Path) -> dict:
    res = iolens("lab", "status", "--dir", d, "--json")
    assert res.returncode == 0, res.stderr
    return {t["name"]: t for t in json.loads(res.stdout)["targets"]}


def timed(argv: list[str]) -> float:
    t = time.monotonic()
    subprocess.run(argv, check=True, stdin=subprocess.DEVNULL)
    return time.monotonic() - t


def test_status_shows_each_disk_with_its_published_limits(labdir):
    by = status(labdir)
    for name in DISKS:
        t = by[name]
        p = disks.profile(name)
        assert t["status"] == "up" and t["healthy"], (name, t["problem"], t["error"])
        assert t["kind"] == "nbd" and t["emulated"] is True and t["emulation"] == "device"
        assert t["published"] == p.published and t["not_emulated"] == list(p.not_emulated)
        assert t["device"]["bandwidth"] == p.device.bandwidth and t["device"]["latency_ms"] == p.device.latency_ms
        assert t["loop_direct_io"] is True and t["size"] == 256 * MiB and t["cgroup"] is None
    assert by["st1"]["limits"] == {"read_bps": 40 * MiB, "write_bps": 40 * MiB, "read_iops": 500, "write_iops": 500}
    assert by["nvme"]["limits"] is None
    text = " ".join(iolens("lab", "status", "--dir", labdir).stdout.split())  # read across lines folded on a pipe
    assert "emulated: EBS sc1 cold HDD of 1 TiB: 12 MiB/s baseline, bursting to 80 on its credits: 12.0 MiB/s, 250 " \
        "IOPS (read and write, every process)" in text


def _write_sync_read(root: Path, n: int) -> tuple[float, float]:
    """Seconds to write n MiB buffered and sync them, and to read them back cold (plain dd and sync processes)."""
    f = root / f"timed-{os.getpid()}.bin"
    write = timed(["dd", "if=/dev/zero", f"of={f}", "bs=1M", f"count={n}", "status=none"])
    write += timed(["sync", str(f)])
    assert pagecache.evict(f)  # written back, so the pages can go: the read below misses the cache
    read = timed(["dd", f"if={f}", "of=/dev/null", "bs=1M", "status=none"])
    f.unlink()
    return write, read


@pytest.mark.parametrize("name", DISKS)
def test_buffered_write_sync_and_cold_read_take_the_time_the_limits_imply(labdir, name):
    """dd and sync as plain processes (no wrapper, no cgroup): the page cache absorbs the write, sync pays for it,
    and a read that misses the cache pays again. The limit is a cap: no attempt may be faster than it allows, and a
    busy shared machine can only slow an attempt down, so up to 3 attempts are made for the upper bound."""
    p = disks.profile(name)
    root = Path(status(labdir)[name]["path"])
    if p.bandwidth is None:  # nvme: unthrottled, as fast as the stack goes
        write, read = _write_sync_read(root, 32)
        print(f"lab:{name}: 32 MiB written + synced in {write:.2f} s, read cold in {read:.2f} s", file=sys.stderr)
        assert 32 / write > 40 and 32 / read > 40  # MiB/s: no emulated limit in the way (slow shared host aside)
        return
    bw = p.burst_bandwidth or p.bandwidth  # a new volume with credits runs at its burst
    n = max(4, round(SECONDS * bw / MiB))
    expected = n * MiB / bw
    # fixed costs on top: starting dd and sync, filling the page cache before writeback starts, and the journal
    # commit that sync waits for (a few requests in a row, each paying the device latency)
    upper = (1 + TOLERANCE) * expected + 0.25 + 4 * p.device.latency_ms / 1000
    writes, reads = [], []
    for _attempt in range(3):
        write, read = _write_sync_read(root, n)
        writes.append(write)
        reads.append(read)
        assert write > (1 - TOLERANCE) * expected and read > (1 - TOLERANCE) * expected, (write, read, expected)
        if write < upper and read < upper:
            break
    print(f"lab:{name}: {n} MiB written + synced in {' '.join(f'{w:.2f}' for w in writes)} s, read cold in "
          f"{' '.join(f'{r:.2f}' for r in reads)} s; the limit implies {expected:.2f} s", file=sys.stderr)
    assert min(writes) < upper and min(reads) < upper, (writes, reads, upper)


def test_compare_on_an_emulated_disk_is_slowed_with_no_wrapper_and_says_emulated(labdir, tmp_path):
    out, html, db = tmp_path / "c.json", tmp_path / "c.html", tmp_path / "store.sqlite"
    env = dict(os.environ, IOLENS_LAB_DIR=str(labdir))
    res = iolens("compare", "dd if=/dev/zero of={out:f} bs=1M count=64 status=none && sync {out:f}",
                 "--place", "out=lab:sc1,lab:tmpfs", "--runs", "3", "--json", out, "--html", html, "--db", db,
                 env=env)
    assert res.returncode == 0, res.stdout + res.stderr
    rep = json.loads(out.read_text())
    sc1, tmpfs = rep["results"]
    print(f"compare: lab:sc1 median {sc1['median']:.2f} s, lab:tmpfs {tmpfs['median']:.3f} s", file=sys.stderr)
    assert sc1["median"] > (1 - TOLERANCE) * 64 / 80  # 64 MiB at 80 MiB/s: a new sc1 bursts on its full bucket
    assert sc1["median"] > 3 * tmpfs["median"]
    (cmp,) = rep["comparisons"]
    assert cmp["name"] == "lab:tmpfs" and cmp["rel_diff"] < -0.8 and cmp["p_value"] is not None
    assert sc1["emulated"] is True and tmpfs["emulated"] is False
    (t,) = sc1["lab_targets"]
    assert t["key"] == "out" and t["target"] == "lab:sc1" and t["emulation"] == "device"
    assert t["limits"]["write_bps"] == 12 * MiB and t["credits"]["burst_mibps"] == 80
    assert tmpfs["lab_targets"][0]["target"] == "lab:tmpfs" and tmpfs["lab_targets"][0]["emulated"] is False
    page = html.read_text()
    assert re.search(r"<b( title='[^']+')?>emulated</b>: lab:sc1, EBS sc1 cold HDD", page), page[:2000]
    with sqlite3.connect(db) as con:
        rows = con.execute("SELECT target, metrics FROM results WHERE run_id = ?", (rep["store"]["run_id"],)).fetchall()
    stored = {target: json.loads(m) for target, m in rows}
    assert stored["out=lab:sc1"]["emulated"] is True and stored["out=lab:sc1"]["lab_targets"][0]["target"] == "lab:sc1"
    assert stored["out=lab:tmpfs"]["emulated"] is False


def test_bench_on_an_emulated_disk_runs_at_its_limit_and_says_emulated(labdir, tmp_path):
    out, db = tmp_path / "b.json", tmp_path / "store.sqlite"
    env = dict(os.environ, IOLENS_LAB_DIR=str(labdir))
    res = iolens("bench", "lab:io2-100", "--suite", "streams", "--threads", "1", "--size", "16M", "--runtime", "0.5",
                 "--json", out, "--db", db, "-q", env=env)
    assert res.returncode == 0, res.stdout + res.stderr
    doc = json.loads(out.read_text())
    (target,) = doc["targets"]
    assert target["name"] == "lab:io2-100" and target["emulated"] is True and target["emulation"] == "device"
    io2 = disks.profile("io2-100")
    assert target["lab"] == "io2-100" and target["lab_read_Bps"] == io2.bandwidth
    assert doc["results"] and all(r["emulated"] is True and r["target"] == "lab:io2-100" for r in doc["results"])
    limit = io2.bandwidth
    for r in doc["results"]:
        bps = (r["metrics"].get("throughput_Bps") or {}).get("mean")
        print(f"bench lab:io2-100 {r['test']}: {bps and bps / MiB:.1f} MiB/s (limit {limit / MiB:g})", file=sys.stderr)
        if bps and r["op"] in ("write", "read") and r["cache_state"] != "warm":
            assert bps < (1 + TOLERANCE) * limit  # the engine runs with no cgroup; the device slows it
    with sqlite3.connect(db) as con:
        rows = con.execute("SELECT target, metrics, provenance FROM results WHERE run_id = ?",
                           (doc["run_id"],)).fetchall()
    assert rows
    for target_name, metrics, prov in rows:
        assert target_name == "lab:io2-100" and json.loads(metrics)["emulated"] is True
        assert json.loads(prov)["target"]["emulated"] is True


def test_random_writes_the_page_cache_absorbed_are_not_called_synced(labdir, tmp_path):
    """4 KiB random writes to a small file on lab:gp3 (3,000 IOPS) with one fdatasync at the end: the cache takes
    many more writes than the device, so the phase is `buffered` and says why; `synced` only when the device's
    counters show it wrote the bytes, and then the rate is the device's."""
    out = tmp_path / "r.json"
    env = dict(os.environ, IOLENS_LAB_DIR=str(labdir))
    res = iolens("bench", "lab:gp3", "--suite", "random", "--size", "32M", "--runtime", "2", "--threads", "1,4",
                 "--json", out, "--no-store", "-q", env=env)
    assert res.returncode == 0, res.stdout + res.stderr
    doc = json.loads(out.read_text())
    writes = [r for r in doc["results"] if r["op"] == "randwrite"]
    assert writes
    for r in writes:
        m = r["metrics"]
        iops, dev = (m.get("iops") or {}).get("mean"), m.get("device_write_bytes")
        print(f"lab:gp3 {r['test']}: {iops and round(iops)} IOPS, {r['cache_state']}, device wrote {dev} of "
              f"{m.get('write_bytes')}; {r.get('notes')}", file=sys.stderr)
        if r["cache_state"] == "synced":
            assert dev and dev["mean"] >= 0.5 * m["write_bytes"]["mean"] and iops < 1.4 * 3000
        else:
            assert r["cache_state"] == "buffered"
            assert any("not synced" in n for n in r.get("notes") or []), r.get("notes")
    assert any(r["cache_state"] == "buffered" for r in writes)  # 2 s of 4 KiB writes overwrite a 32 MiB file


def _ours(labdir: Path) -> list[int]:
    """Live processes whose command line names the lab directory (nbdkit, nbdfuse)."""
    out = []
    for d in Path("/proc").iterdir():
        if d.name.isdigit():
            try:
                cmd = (d / "cmdline").read_bytes()
            except OSError:
                continue
            if str(labdir).encode() in cmd and process_start_time(int(d.name)) is not None:
                out.append(int(d.name))
    return out


def test_down_after_sigkill_of_the_servers_leaves_nothing(labdir):
    pids = _ours(labdir)
    # nbdkit + nbdfuse per disk, the IOPS server of those that have one (gp2, gp3), the credit controller of those
    # with burst credits (gp2, st1, sc1)
    assert len(pids) == sum(2 + bool(disks.profile(n).device.iops) + disks.profile(n).bucket for n in DISKS)
    with open(Path(status(labdir)["hdd"]["path"]) / "dirty.bin", "wb") as fh:
        fh.write(os.urandom(4 * MiB))  # dirty pages that will never reach the device
    state = labdir / "nbd"
    os.kill(int((state / "sc1" / "nbdkit.pid").read_text()), signal.SIGKILL)
    os.kill(int((state / "hdd" / "nbdfuse.pid").read_text()), signal.SIGKILL)
    os.kill(int((state / "gp3" / "nbdkit.pid").read_text()), signal.SIGKILL)
    os.kill(int((state / "gp3" / "nbdfuse.pid").read_text()), signal.SIGKILL)
    os.kill(int((state / "gp3" / "nbdkit-iops.pid").read_text()), signal.SIGKILL)  # gp3's IOPS server too
    time.sleep(0.3)
    by = status(labdir)
    assert by["sc1"]["healthy"] is False and by["sc1"]["problem"] == "nbdkit is not running"
    assert by["hdd"]["healthy"] is False and by["hdd"]["problem"] == "nbdfuse is not running"
    assert by["st1"]["healthy"] is True
    t = time.monotonic()
    res = iolens("lab", "down", "--dir", labdir)
    print(f"lab down after SIGKILL: {time.monotonic() - t:.1f} s", file=sys.stderr)
    assert res.returncode == 0, res.stdout + res.stderr
    assert not labdir.exists()
    assert mounts_under(labdir) == [] and str(labdir) not in Path("/proc/mounts").read_text()
    assert loops_backed_by(labdir) == []
    assert str(labdir) not in subprocess.run(["losetup", "-a"], capture_output=True, text=True).stdout
    assert _ours(labdir) == []
    res = iolens("lab", "down", "--dir", labdir)  # idempotent
    assert res.returncode == 0 and "nothing to do" in res.stdout
