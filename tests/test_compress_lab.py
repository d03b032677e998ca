"""iolens compress --fs on the lab's real btrfs mounts: the on-disk ratio iolens reports is compsize's.

Needs root. Uses the btrfs targets of the default lab when they are up; otherwise it brings up a lab of its own with
just those targets for the module and takes it down after (as tests/test_lab_real.py does), so it runs in CI."""

from __future__ import annotations

import json
import os
import re
import subprocess

import sys

import pytest

from conftest import iolens, unavailable
from iolens.synth import fastq_text

pytestmark = [pytest.mark.root, pytest.mark.timeout(300)]
TARGETS = ["lab:btrfs", "lab:btrfs-lzo", "lab:btrfs-zstd", "lab:btrfs-zlib"]
NEEDED = ["losetup", "mkfs.btrfs", "compsize"]


def _default_lab_up() -> bool:
    from iolens import lab
    try:
        for t in TARGETS:
            lab.resolve_target(t)
    except Exception:  # noqa: BLE001 - any reason the default lab is not usable means: bring up our own
        return False
    return True


@pytest.fixture(scope="module")
def labdir(tmp_path_factory):
    """The lab directory holding the btrfs targets: None for the default lab, else one of our own."""
    if os.geteuid() != 0:
        pytest.skip("the lab's loop devices and mounts need root")
    if _default_lab_up():
        yield None
        return
    from iolens.lab import tools
    from iolens.lab.sysops import mounts_under
    if tools.missing(NEEDED):
        problems = tools.install(say=lambda m: print(m, file=sys.stderr))
        if tools.missing(NEEDED):
            unavailable(f"missing {', '.join(tools.missing(NEEDED))} after `iolens lab install`: {'; '.join(problems)}")
    d = tmp_path_factory.mktemp("compresslab") / "lab"
    res = iolens("lab", "up", "--dir", d, "--only", ",".join(t.removeprefix("lab:") for t in TARGETS), "--size", "384M")
    try:
        if res.returncode != 0:
            unavailable(f"`iolens lab up` of the btrfs targets failed: {res.stderr.strip()}")
        yield d
    finally:
        iolens("lab", "down", "--dir", d)
        assert not mounts_under(d)


def test_fs_ratios_agree_with_compsize(tmp_path, labdir):
    env = {**os.environ, **({"IOLENS_LAB_DIR": str(labdir)} if labdir else {})}
    fq = tmp_path / "reads.fq"
    fq.write_bytes(fastq_text(24 << 20, seed=9))
    r = iolens("compress", "--fs", ",".join(TARGETS), str(fq), "--no-store", "--json", str(tmp_path / "o.json"),
               env=env)
    assert r.returncode == 0, r.stderr
    doc = json.loads((tmp_path / "o.json").read_text())
    by = {f["target"]: f for f in doc["filesystems"]}
    assert by["lab:btrfs"]["on_disk"]["ratio"] == pytest.approx(1.0, abs=0.02)
    for t in TARGETS[1:]:
        assert by[t]["on_disk"]["ratio"] > 1.5, by[t]
    # compsize on a fresh copy agrees with what iolens reported
    from iolens import lab
    d = lab.resolve_target("lab:btrfs-zstd", root=labdir) / "iolens-compress-check"
    d.mkdir()
    try:
        (d / fq.name).write_bytes(fq.read_bytes())
        os.sync()
        out = subprocess.run(["compsize", "-b", str(d)], capture_output=True, text=True, check=True).stdout
        m = re.search(r"^TOTAL\s+\d+%\s+(\d+)\s+(\d+)", out, re.M)
        assert m
        theirs = int(m.group(2)) / int(m.group(1))
        assert by["lab:btrfs-zstd"]["on_disk"]["ratio"] == pytest.approx(theirs, rel=0.01)
    finally:
        subprocess.run(["rm", "-rf", str(d)])
