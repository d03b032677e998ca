"""`iolens lab` without the real components: errors a user meets, the catalogue, the state file."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import pytest
from conftest import iolens

from iolens import lab
from iolens.errors import TargetError, UsageError
from iolens.lab import state as st
from iolens.lab.catalog import TARGETS, parse_only
from iolens.lab.tools import DEBIAN_PACKAGES

HERE = Path(__file__).resolve().parent


def test_apt_list_matches_the_tools_catalogue():
    listed = HERE.parent / "dev" / "apt-packages.d" / "lab.txt"
    if not listed.exists():
        pytest.skip(f"{listed} is not here (tests run outside the source tree)")
    lines = [ln.strip() for ln in listed.read_text().splitlines() if ln.strip() and not ln.startswith("#")]
    assert sorted(lines) == DEBIAN_PACKAGES


def test_catalogue_names_kinds_and_limits():
    assert {"tmpfs", "ext4", "xfs", "btrfs", "btrfs-zstd", "btrfs-zstd1", "btrfs-zstd9", "btrfs-lzo", "btrfs-zlib",
            "throttle", "magnetic", "gp2",
            "gp3", "io2-100", "io2-500", "st1", "sc1", "hdd", "nvme", "s3", "s3-rclone", "s3-remote", "netfs",
            "netfs-remote", "moosefs", "gluster"} == set(TARGETS)
    for t in TARGETS.values():
        if t.throttle:  # sequential 1 MiB O_DIRECT I/O is 2 requests per MiB: the byte rate must govern it
            assert t.throttle.iops >= 2 * t.throttle.bps / (1 << 20), t.name
            assert t.emulated and t.emulation == "cgroup"
    assert [t.name for t in parse_only("lab:s3, ext4")] == ["ext4", "s3"]
    with pytest.raises(UsageError, match="not a lab target; choose from tmpfs"):
        parse_only("ext5")


def test_catalogue_names_fit_every_place_a_name_is_written():
    """`lab:NAME[/sub]`, `--only a,b`, `--place k=lab:NAME,...`, `--config LABEL:k=lab:NAME` and cost's
    `PROVIDER:OPTION` split on ':', ',', '=' and '/': a name is lower-case letters, digits and inner dashes only,
    so a zstd level is a suffix (`btrfs-zstd9`), not `btrfs-zstd:9`."""
    for name in TARGETS:
        assert re.fullmatch(r"[a-z0-9]+(-[a-z0-9]+)*", name), name
    assert [t.name for t in parse_only("btrfs-zstd9,lab:btrfs-zstd1")] == ["btrfs-zstd1", "btrfs-zstd9"]
    assert {n: TARGETS[n].mount_options for n in ("btrfs-zstd1", "btrfs-zstd", "btrfs-zstd9")} == {
        "btrfs-zstd1": "compress=zstd:1", "btrfs-zstd": "compress=zstd:3", "btrfs-zstd9": "compress=zstd:9"}
    with pytest.raises(UsageError, match="lab:btrfs-zstd takes no size"):  # a colon is for a volume's size
        parse_only("btrfs-zstd:9")


def test_resolve_target_without_a_lab(tmp_path):
    assert lab.resolve_target("/scratch/x") == Path("/scratch/x")
    with pytest.raises(TargetError, match=r"lab:ext4: no lab is up: looked in .*nolab \(--dir\); for a lab "
                                          r"brought up with `--dir X`, set IOLENS_LAB_DIR=X .*; or run "
                                          r"`iolens lab up --only ext4`"):
        lab.resolve_target("lab:ext4", root=tmp_path / "nolab")
    with pytest.raises(UsageError, match="lab:nope is not a lab target"):
        lab.resolve_target("lab:nope", root=tmp_path)
    info = lab.target_info("lab:st1", root=tmp_path / "nolab")
    assert info["status"] == "down" and info["emulated"] and info["limits"]["read_bps"] == 40 << 20
    assert info["path"] is None and info["healthy"] is None
    with pytest.raises(TargetError, match="not an S3 target"):
        lab.s3_endpoint("ext4", root=tmp_path)
    with pytest.raises(TargetError, match="lab:s3 is not up"):
        lab.s3_endpoint("s3", root=tmp_path)


def test_resolve_target_reports_a_failed_target(tmp_path):
    state = st.empty_state(tmp_path)
    state["targets"]["s3"] = {"status": "failed", "fstype": "fuse.s3fs", "kind": "s3fs", "path": None,
                              "error": "the S3 server versitygw is not installed", "hint": "run `iolens lab install`"}
    st.save(tmp_path, state)
    with pytest.raises(TargetError, match=r"lab:s3 did not come up: the S3 server versitygw is not installed "
                                          r"\(run `iolens lab install`\)"):
        lab.resolve_target("lab:s3", root=tmp_path)
    with pytest.raises(TargetError, match="lab:ext4 is not part of the lab"):
        lab.resolve_target("lab:ext4", root=tmp_path)


def test_state_from_a_newer_iolens_is_refused(tmp_path):
    (tmp_path / "state.json").write_text(json.dumps({"tag": st.TAG, "schema_version": [9, 0]}))
    with pytest.raises(UsageError, match="newer iolens"):
        st.load(tmp_path)
    (tmp_path / "state.json").write_text("{}")
    with pytest.raises(UsageError, match="not an iolens lab state file"):
        st.load(tmp_path)


def test_cli_errors_are_one_line(tmp_path):
    res = iolens("lab", "up", "--only", "ext5", "--dir", tmp_path / "l")
    assert res.returncode == 2 and res.stderr.startswith("iolens: error: lab:ext5 is not a lab target")
    assert "Traceback" not in res.stderr
    res = iolens("lab", "up", "--size", "lots", "--dir", tmp_path / "l")
    assert res.returncode == 2 and "write a size such as 512M" in res.stderr
    busy = tmp_path / "busy"
    busy.mkdir()
    (busy / "mine.txt").write_text("user data")
    res = iolens("lab", "up", "--only", "tmpfs", "--dir", busy)
    assert res.returncode == 2 and "already holds files (mine.txt" in res.stderr
    assert (busy / "mine.txt").read_text() == "user data"
    res = iolens("lab", "run", "--dir", tmp_path / "none", "st1", "--", "true")
    assert res.returncode == 5 and "lab:st1 is not up" in res.stderr


def test_down_without_a_lab_is_a_no_op(tmp_path):
    for _ in range(2):
        res = iolens("lab", "down", "--dir", tmp_path / "never")
        assert res.returncode == 0 and "nothing to do" in res.stdout
    res = iolens("lab", "status", "--dir", tmp_path / "never", "--json")
    doc = json.loads(res.stdout)
    assert doc["tag"] == "iolens-lab-status" and doc["schema_version"] == [1, 3] and doc["lab_up"] is False
    assert [t["status"] for t in doc["targets"]] == ["down"] * len(TARGETS)


def test_missing_component_says_what_and_others_still_come_up(tmp_path):
    """No versitygw anywhere: lab:s3 fails with the install command; lab:tmpfs still comes up (as root)."""
    env = dict(os.environ, IOLENS_LAB_CACHE=str(tmp_path / "emptycache"),
               PATH=os.pathsep.join(p for p in os.environ["PATH"].split(os.pathsep)
                                    if not (Path(p) / "versitygw").exists()))
    d = tmp_path / "lab"
    try:
        res = iolens("lab", "up", "--only", "tmpfs,s3", "--dir", d, "--size", "16M", env=env)
        assert res.returncode == 5, res.stderr
        assert "FAILED  lab:s3" in res.stdout
        assert "the S3 server versitygw is not installed (run `iolens lab install`" in res.stdout
        assert res.stderr.strip().startswith("iolens: error: ")
        assert len(res.stderr.strip().splitlines()) == 1
        doc = json.loads(iolens("lab", "status", "--dir", d, "--json", env=env).stdout)
        by = {t["name"]: t for t in doc["targets"]}
        assert by["s3"]["status"] == "failed" and "iolens lab install" in by["s3"]["hint"]
        if os.geteuid() == 0:
            assert by["tmpfs"]["status"] == "up" and by["tmpfs"]["healthy"] is True
            assert lab.resolve_target("lab:tmpfs", root=d).is_dir()
        else:
            assert by["tmpfs"]["status"] == "failed" and "needs root" in by["tmpfs"]["error"]
    finally:
        res = iolens("lab", "down", "--dir", d, env=env)
    assert res.returncode == 0, res.stderr
    assert not d.exists()


def test_a_lab_up_with_dir_is_the_lab_in_use_until_down(tmp_path, monkeypatch):
    """`lab up --dir X` is remembered: `bench lab:NAME`, `lab status` and `lab down` find X without IOLENS_LAB_DIR;
    once it is down, the error says where it looked and how to point at a lab elsewhere."""
    if os.geteuid() != 0:
        pytest.skip("lab:tmpfs mounts a tmpfs, which needs root")
    monkeypatch.delenv("IOLENS_LAB_DIR", raising=False)
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    d = tmp_path / "elsewhere" / "lab"
    try:
        res = iolens("lab", "up", "--only", "tmpfs", "--dir", d, "--size", "16M")
        assert res.returncode == 0, res.stderr
        assert lab.resolve_target("lab:tmpfs") == d / "mnt" / "tmpfs"
        assert json.loads(iolens("lab", "status", "--json").stdout)["dir"] == str(d)
        res = iolens("bench", "lab:tmpfs", "--size", "4M", "--files", "6", "--runtime", "0.1", "-q", "--no-store",
                     "--json", "-")
        assert res.returncode == 0, res.stderr
        assert str(d / "mnt" / "tmpfs") in res.stdout, res.stdout[:600]
        monkeypatch.setenv("IOLENS_LAB_DIR", str(tmp_path / "other"))  # the variable still wins
        assert "looked in " + str(tmp_path / "other") + " (IOLENS_LAB_DIR)" in iolens("bench", "lab:tmpfs").stderr
        monkeypatch.delenv("IOLENS_LAB_DIR")
    finally:
        res = iolens("lab", "down")  # no --dir: the lab in use
        if d.exists():  # not found: take it down where it is, then fail below
            iolens("lab", "down", "--dir", d)
    assert res.returncode == 0 and f"lab in {d} is down" in res.stdout, res.stdout + res.stderr
    assert not d.exists() and not (tmp_path / "state" / "iolens" / "lab-in-use").exists()
    res = iolens("bench", "lab:tmpfs")
    err = res.stderr.strip()
    assert res.returncode == 5 and len(err.splitlines()) == 1, err
    default = tmp_path / "state" / "iolens" / "lab"
    assert f"looked in {default} (the default lab directory)" in err and "set IOLENS_LAB_DIR=X" in err, err
    assert "No lab: looked in" in iolens("lab", "status").stdout.replace("no lab", "No lab")


@pytest.fixture
def toy_kind(monkeypatch):
    """A kind added the way every kind is: one `register_kind` row (plus a catalogue target that uses it).

    Its "mount" is a directory holding a marker file, so up, status and down run without root or servers."""
    from iolens.lab import catalog, kinds

    calls: list[str] = []

    def start(job, target, info):
        calls.append("start")
        mnt = job.mountpoint(target.name)
        (mnt / "marker").write_text("up")
        info.update(path=str(mnt))

    def check(kind, info, state):
        calls.append("check")
        ok = (Path(info["path"]) / "marker").exists()
        return ok, None if ok else "the marker is gone"

    def stop(root, state, name):
        calls.append("stop")
        (root / "mnt" / name / "marker").unlink(missing_ok=True)

    kinds.register_kind(kinds.Kind("toydir", start, check=check, stop=stop, tools=("true",)))
    monkeypatch.setitem(catalog.TARGETS, "toy", catalog.Target("toy", "toydir", "none", "a plain directory"))
    try:
        yield calls
    finally:
        kinds.KINDS.pop("toydir", None)


def test_a_kind_registered_in_one_place_goes_up_is_checked_and_comes_down(toy_kind, tmp_path):
    from iolens.lab.down import down
    from iolens.lab.kinds import KINDS
    from iolens.lab.status import collect
    from iolens.lab.up import Settings, up

    root = tmp_path / "lab"
    said: list[str] = []
    assert KINDS["toydir"].needs == ("true",)
    state = up(root, parse_only("lab:toy"), Settings(), said.append)
    assert state["targets"]["toy"]["status"] == "up" and toy_kind == ["start"]
    assert lab.resolve_target("lab:toy", root=root) == root / "mnt" / "toy"
    by = {t["name"]: t for t in collect(root)["targets"]}
    assert by["toy"]["healthy"] is True and by["toy"]["kind"] == "toydir"
    (root / "mnt" / "toy" / "marker").unlink()
    by = {t["name"]: t for t in collect(root)["targets"]}
    assert by["toy"]["healthy"] is False and by["toy"]["problem"] == "the marker is gone"
    with pytest.raises(TargetError, match="lab:toy is not healthy: the marker is gone"):
        lab.resolve_target("lab:toy", root=root)
    del toy_kind[:]
    up(root, parse_only("toy"), Settings(), said.append)  # broken: stopped its way, then started again
    assert toy_kind == ["check", "stop", "start"]
    assert down(root, said.append) == [] and not root.exists()
    assert toy_kind[-1] == "stop"


def test_every_target_has_a_registered_kind_and_s3_comes_from_the_kind():
    from iolens.lab.kinds import KINDS

    assert {t.kind for t in TARGETS.values()} <= set(KINDS)
    assert [n for n in TARGETS if lab.is_s3(n)] == ["s3", "s3-rclone", "s3-remote"]
    assert KINDS["loop"].needs == ("root", "losetup") and KINDS["s3fs"].needs == ("versitygw", "s3fs")


def test_emulated_disks_come_from_the_profiles_and_say_what_they_cannot_do():
    """Each volume of the catalogue is a lab target of kind nbd whose limits, published figures and caveats are its
    profile's (disks.PROFILES), not a copy."""
    from iolens.lab import disks, nbd

    for p in disks.PROFILES:
        t = TARGETS[p.name]
        assert t.kind == "nbd" and t.emulated and t.emulation == "device" and t.fstype == "ext4"
        assert t.emulates == p.emulates
        e = lab.emulation(f"lab:{p.name}/some/dir")
        assert e["target"] == f"lab:{p.name}" and e["emulated"] is True and e["emulation"] == "device"
        assert e["published"] == p.published and e["not_emulated"] == list(p.not_emulated)
        if p.bandwidth:
            assert e["limits"] == {"read_bps": p.bandwidth, "write_bps": p.bandwidth, "read_iops": p.iops,
                                   "write_iops": p.iops}
        else:
            assert e["limits"] is None
        assert p.size <= 4 << 30  # sparse, and small enough for a shared machine
    for name in ("gp2", "st1", "sc1"):  # burst credits, emulated by a controller (test_lab_credits.py)
        assert lab.emulation(f"lab:{name}")["credits"]["credits"]["capacity"] > 0
    assert lab.emulation("lab:gp3")["credits"] is None
    assert lab.emulation("/scratch") is None
    assert lab.emulation("lab:ext4")["emulated"] is False
    assert lab.emulation("lab:throttle")["emulation"] == "cgroup"
    from iolens.lab.kinds import KINDS

    assert KINDS["nbd"].needs == ("root", *nbd.NEEDS)


def test_nbd_status_and_run_say_the_device_is_slow_for_everyone(tmp_path):
    res = iolens("lab", "run", "--dir", tmp_path / "none", "sc1", "--", "true")
    assert res.returncode == 5 and "lab:sc1 is not up" in res.stderr
    res = iolens("lab", "up", "--only", "sc1", "--dir", tmp_path / "l", "--disk-size", "1M")
    if os.geteuid() == 0:
        assert res.returncode == 5 and "an emulated disk needs at least 16 MiB" in res.stdout
    else:
        assert res.returncode == 5 and "needs root" in res.stdout
    iolens("lab", "down", "--dir", tmp_path / "l")


def test_a_target_whose_start_died_half_way_is_stopped_by_down(toy_kind, tmp_path, monkeypatch):
    """`up` records a target (status "starting") before its kind starts it, so `down` stops it its kind's way even
    when the start died with something other than a StepFailed (as a killed `up` would leave it)."""
    from iolens.lab import kinds
    from iolens.lab.down import down
    from iolens.lab.up import Settings, up

    def start(job, target, info):
        toy_kind.append("start")
        (job.mountpoint(target.name) / "marker").write_text("half")
        raise RuntimeError("killed half-way")

    monkeypatch.setitem(kinds.KINDS, "toydir", kinds.Kind("toydir", start, stop=kinds.KINDS["toydir"].stop))
    root = tmp_path / "lab"
    with pytest.raises(RuntimeError):
        up(root, parse_only("toy"), Settings(), lambda m: None)
    assert st.load(root)["targets"]["toy"]["status"] == "starting"
    assert down(root, lambda m: None) == [] and toy_kind[-1] == "stop" and not root.exists()


def test_install_steps_say_how_far_they_got(tmp_path, monkeypatch):
    """A long install step prints a line every HEARTBEAT_S seconds with what it counted, silent phases included;
    a failing one names its log. The step here is a script that writes what `go install -v` writes."""
    from iolens.errors import IolensError
    from iolens.lab import tools

    step = tmp_path / "go"
    step.write_text("#!/bin/sh\necho 'go: downloading example.org/a v1.0.0'\n"
                    "echo 'go: downloading example.org/b v1.0.0'\nsleep 0.5\n"
                    "echo example.org/a\nsleep 0.5\nexit ${FAIL:-0}\n")
    step.chmod(0o755)
    monkeypatch.setattr(tools, "HEARTBEAT_S", 0.2)
    said: list[str] = []
    tools._run([str(step)], tmp_path / "install.log", None, said.append, "[2/3]")
    assert said and all(line.startswith("  [2/3] ") and line.endswith("s so far") for line in said), said
    assert "2 modules downloaded" in said[-1] and "1 packages compiled" in said[-1], said
    assert "example.org/a" in (tmp_path / "install.log").read_text()
    with pytest.raises(IolensError, match=r"failed \(exit 3\): .*full log in .*install.log"):
        tools._run([str(step)], tmp_path / "install.log", dict(os.environ, FAIL="3"))


def test_install_announces_its_steps_and_is_silent_when_done(tmp_path, monkeypatch):
    from iolens.lab import tools

    monkeypatch.setenv("IOLENS_LAB_CACHE", str(tmp_path / "cache"))
    go_tools = [t for t in tools.TOOLS.values() if t.go]
    assert [s.split(" (")[0] for s in tools.plan(apt=False)] == [f"build {t.name}" for t in go_tools]
    bin_dir = tmp_path / "cache" / "bin"
    bin_dir.mkdir(parents=True)
    for t in go_tools:  # as a finished build leaves them
        (bin_dir / t.name).write_text("")
        (bin_dir / f".{t.name}.version").write_text(f"{t.go}\n")
    said: list[str] = []
    assert tools.plan(apt=False) == [] and tools.install(apt=False, say=said.append) == [] and said == []
    (bin_dir / f".{go_tools[0].name}.version").write_text("an older version\n")
    real_which = tools.shutil.which
    monkeypatch.setattr(tools.shutil, "which", lambda name, **kw: None if name == "go" else real_which(name, **kw))
    problems = tools.install(apt=False, say=said.append)  # a machine without Go
    assert said[0].startswith("lab install: 1 steps, about 5 minutes") and "log in" in said[0], said
    assert said[1].startswith(f"lab install: [1/1] build {go_tools[0].name} from its Go module"), said
    assert problems == [f"cannot build {go_tools[0].name}: Go is not installed (`apt-get install golang-go`, "
                        "Go >= 1.22)"]


def test_install_dry_run_names_the_targets_waiting_and_installs_nothing(tmp_path):
    env = dict(os.environ, IOLENS_LAB_CACHE=str(tmp_path / "cache"))
    res = iolens("lab", "install", "--dry-run", "--no-apt", env=env)
    assert res.returncode == 0, res.stderr
    assert "lab:s3, lab:s3-rclone, lab:s3-remote need versitygw, not installed" in res.stdout, res.stdout
    assert "would take 2 steps (about 5 minutes, once): build versitygw" in res.stdout, res.stdout
    assert not (tmp_path / "cache" / "bin").exists() or not list((tmp_path / "cache" / "bin").iterdir())
