"""The lab's real shared filesystems, as root: MooseFS (master and two chunk servers in a network namespace of the
lab's) and GlusterFS (glusterd and a replica-2 volume on 127.0.0.1), each with two FUSE clients of one volume.

One lab serves the module: up and healthy, two clients that see each other's writes, the bytes on the servers'
own storage, bench (one client and one rank per client) and compare on both, and, last, `lab down` after kill -9
of their servers, which must leave nothing behind: no process, mount, loop device, network namespace, state
directory, nor anything in the system directories GlusterFS would write to.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import iolens, lab_status as status, lab_up

from iolens import lab
from iolens.lab import sharedfs
from iolens.lab.catalog import TARGETS
from iolens.lab.state import lab_id
from iolens.lab.sysops import link_exists, loops_backed_by, mounts_under, netns_path, pids_mentioning
from iolens.sysinfo import mounts

pytestmark = [pytest.mark.root, pytest.mark.slow, pytest.mark.timeout(600)]

NAMES = ("moosefs", "gluster")
NEEDED = sorted({*sharedfs.MFS_NEEDS, *sharedfs.GLUSTER_NEEDS})
MiB = 1 << 20


def _system_files() -> dict[str, list[str]]:
    """What is in the system directories GlusterFS writes to when left alone."""
    out = {}
    for d in sharedfs.GLUSTER_DIRS:
        out[d] = sorted(str(p) for p in Path(d).rglob("*")) if Path(d).is_dir() else []
    return out


@pytest.fixture(scope="module")
def system_before():
    return _system_files()


@pytest.fixture(scope="module")
def labdir(tmp_path_factory, system_before):
    yield from lab_up(tmp_path_factory, "shared", "--only", ",".join(NAMES), "--size", "320M", needed=NEEDED)


def test_both_are_up_with_their_servers_and_two_clients(labdir):
    by = status(labdir)
    for name in NAMES:
        t = by[name]
        assert (t["status"], t["healthy"], t["problem"]) == ("up", True, None), t
        assert t["clients"] == [str(p) for p in sharedfs.client_paths(labdir, name)]
        for c in t["clients"]:
            assert [m["fstype"] for m in mounts() if m["mountpoint"] == c][-1] == TARGETS[name].fstype
        assert lab.client_paths(f"lab:{name}/x", root=labdir) == [Path(c) / "x" for c in t["clients"]]
    mfs = by["moosefs"]
    assert [s["name"] for s in mfs["servers"]] == ["mfsmaster", "mfschunkserver 1", "mfschunkserver 2"]
    ns = f"iolens-{lab_id(labdir)}"
    assert all(s["netns"] == ns for s in mfs["servers"]) and netns_path(ns).exists()
    gl = by["gluster"]
    assert [s["name"] for s in gl["servers"]] == ["glusterd", "brick brick1", "brick brick2"]
    assert all(s["address"].startswith("127.0.0.1:") for s in gl["servers"])
    text = " ".join(iolens("lab", "status", "--dir", labdir).stdout.split())  # read across lines folded on a pipe
    assert "server: mfsmaster on " in text and f"in network namespace {ns}" in text
    assert "clients: " in text and "server: glusterd on 127.0.0.1:24007" in text


@pytest.mark.parametrize("name", NAMES)
def test_two_clients_see_each_others_writes(labdir, name):
    a, b = sharedfs.client_paths(labdir, name)
    d = f"rw-{os.getpid()}"
    (a / d).mkdir()
    data = os.urandom(MiB + 3)
    (a / d / "from-a").write_bytes(data)
    assert (b / d / "from-a").read_bytes() == data
    with open(b / d / "from-a", "ab") as fh:  # b appends, a reads the whole
        fh.write(b"tail")
    assert (a / d / "from-a").read_bytes() == data + b"tail"
    (b / d / "from-b").write_text("b wrote this\n")
    assert (a / d / "from-b").read_text() == "b wrote this\n"
    os.rename(a / d / "from-b", a / d / "renamed")
    # names and attributes may be cached by the other client for up to a second (MooseFS's mfsattrcacheto and
    # mfsdirentrycacheto), as on the real systems: what it sees must catch up within a few
    assert _eventually(lambda: sorted(os.listdir(b / d)) == ["from-a", "renamed"])
    for f in ("from-a", "renamed"):
        (b / d / f).unlink()
    assert _eventually(lambda: os.listdir(a / d) == [])
    (b / d).rmdir()
    assert _eventually(lambda: not (a / d).exists())


def _eventually(cond, timeout: float = 5) -> bool:
    deadline = time.monotonic() + timeout
    while not cond():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.1)
    return True


def test_the_bytes_live_on_the_servers_storage(labdir):
    """MooseFS keeps each chunk on both chunk servers (goal 2); GlusterFS each file on both bricks."""
    data = os.urandom(2 * MiB)
    for name in NAMES:
        f = sharedfs.client_paths(labdir, name)[0] / "placed.bin"
        with open(f, "wb") as fh:
            fh.write(data)
            os.fsync(fh.fileno())
    d = sharedfs.state_dir(labdir, "moosefs")
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:  # the second copy is made by the chunk servers, a moment later
        held = [sum(p.stat().st_size for p in (d / f"cs{i}" / "chunks").rglob("chunk_*")) for i in (1, 2)]
        if all(h >= len(data) for h in held):
            break
        time.sleep(0.3)
    assert all(h >= len(data) for h in held), held
    g = sharedfs.state_dir(labdir, "gluster")
    for i in (1, 2):
        assert (g / f"brick{i}" / "brick" / "placed.bin").read_bytes() == data
    for name in NAMES:
        (sharedfs.client_paths(labdir, name)[0] / "placed.bin").unlink()


def test_bench_names_each_target_and_what_it_stands_in_for(labdir, tmp_path):
    out = tmp_path / "b.json"
    env = dict(os.environ, IOLENS_LAB_DIR=str(labdir))
    res = iolens("bench", "lab:moosefs", "lab:gluster", "--suite", "random", "--runtime", "0.3", "--size", "8M",
                 "--threads", "1", "--no-store", "-q", "--json", out, env=env)
    assert res.returncode == 0, res.stderr
    doc = json.loads(out.read_text())
    facts = {t["name"]: t for t in doc["targets"]}
    assert facts["lab:moosefs"]["fstype"] == "fuse.mfs" and facts["lab:gluster"]["fstype"] == "fuse.glusterfs"
    for name in NAMES:
        assert facts[f"lab:{name}"]["stands_in_for"] == TARGETS[name].option
        ran = [r for r in doc["results"] if r["target"] == f"lab:{name}"]
        assert ran and all(r["metrics"]["iops"]["mean"] > 0 for r in ran), ran[:1]


@pytest.mark.parametrize("name", NAMES)
def test_bench_clients_runs_one_rank_per_client_mount(labdir, tmp_path, name):
    """Also that a shared file deleted through one client and made again under the same name through the other
    does not fail (GlusterFS's client gave ESTALE when every layout reused one name)."""
    if not (os.environ.get("PATH") and subprocess.run(["which", "mpirun"], capture_output=True).returncode == 0):
        pytest.skip("mpirun is not installed (openmpi-bin); tests/test_bench_mpi.py covers --clients itself")
    out = tmp_path / "m.json"
    env = dict(os.environ, IOLENS_LAB_DIR=str(labdir))
    p = subprocess.run([sys.executable, "-m", "iolens", "bench", f"lab:{name}", "--clients", "2", "--suite",
                        "streams", "--runtime", "2", "--size", "8M", "--no-store", "-q", "--json", str(out)],
                       capture_output=True, text=True, env=env, timeout=300)
    assert p.returncode == 0, p.stderr
    doc = json.loads(out.read_text())
    assert doc["client_paths"] == [str(c) for c in sharedfs.client_paths(labdir, name)]
    assert doc["stand_in"]["volume"] == TARGETS[name].option
    by = {r["phase"]: r for r in doc["results"]}
    wrote = [c["bytes"] for c in by["file-per-client write"]["clients"]]
    read = by["file-per-client read (neighbour)"]["clients"]
    assert [c["reads_rank"] for c in read] == [1, 0]
    for c, neighbour in zip(read, [wrote[1], wrote[0]]):
        # each read what the other client wrote, or (stopped by the stonewall on a loaded machine) a part of it
        assert c["bytes"] == neighbour or (c["stonewalled"] and 0 < c["bytes"] < neighbour), (c, neighbour)
    for layout in ("shared-file", "strided-file"):
        assert by[f"{layout} read (neighbour)"]["bytes"] > 0
    assert not doc["warnings"]


def test_compare_places_outputs_on_both_and_names_the_stand_ins(labdir, tmp_path):
    out = tmp_path / "c.json"
    env = dict(os.environ, IOLENS_LAB_DIR=str(labdir))
    res = iolens("compare", "head -c 1000000 /dev/zero > {out:x.bin}", "--place", "out=lab:moosefs,lab:gluster",
                 "--runs", "2", "--json", out, "--no-store", "-q", env=env)
    assert res.returncode == 0, res.stderr
    doc = json.loads(out.read_text())
    seen = {r["lab_targets"][0]["target"]: r for r in doc["results"]}
    for name in NAMES:
        r = seen[f"lab:{name}"]
        assert r["ok_runs"] == 2 and r["lab_targets"][0]["volume"] == TARGETS[name].option
    assert doc["provenance"]["locations"]["lab:gluster"]["fstype"] == "fuse.glusterfs"


def test_down_after_kill_9_of_the_servers_leaves_nothing(labdir, system_before):
    state = json.loads((labdir / "state.json").read_text())
    procs = state["processes"]
    for key in ("mfsmaster:moosefs", "mfschunkserver-1:moosefs", "glusterd:gluster"):
        os.kill(procs[key]["pid"], signal.SIGKILL)
    bricks = pids_mentioning(str(sharedfs.state_dir(labdir, "gluster") / "brick1") + "/")
    assert bricks, "no brick process of the volume"
    os.kill(bricks[0], signal.SIGKILL)
    time.sleep(0.5)
    by = status(labdir)
    assert not by["moosefs"]["healthy"] and not by["gluster"]["healthy"]
    assert "not running" in by["moosefs"]["problem"] and "glusterd" in by["gluster"]["problem"]
    res = iolens("lab", "down", "--dir", labdir)
    assert res.returncode == 0, res.stderr
    assert not labdir.exists()
    assert not mounts_under(labdir) and not loops_backed_by(labdir)
    assert not pids_mentioning(str(labdir) + "/")
    lid = lab_id(labdir)
    assert not netns_path(f"iolens-{lid}").exists() and not link_exists(f"io{lid}h")
    assert _system_files() == system_before
