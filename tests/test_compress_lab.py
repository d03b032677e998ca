"""iolens compress --fs on the lab's real btrfs mounts: the on-disk ratio iolens reports is compsize's.

Needs root and `iolens lab up` with the btrfs targets; skipped otherwise (it never brings the lab up itself)."""

from __future__ import annotations

import json
import os
import re
import subprocess

import pytest

from conftest import iolens
from iolens.synth import fastq_text

pytestmark = [pytest.mark.root, pytest.mark.timeout(300)]
TARGETS = ["lab:btrfs", "lab:btrfs-lzo", "lab:btrfs-zstd", "lab:btrfs-zlib"]


def _up() -> bool:
    if os.geteuid() != 0:
        return False
    from iolens import lab
    try:
        for t in TARGETS:
            lab.resolve_target(t)
    except Exception:  # noqa: BLE001 - any reason the lab is not usable means skip
        return False
    return True


@pytest.mark.skipif(not _up(), reason="needs root and `iolens lab up` with the btrfs targets")
def test_fs_ratios_agree_with_compsize(tmp_path):
    fq = tmp_path / "reads.fq"
    fq.write_bytes(fastq_text(24 << 20, seed=9))
    r = iolens("compress", "--fs", ",".join(TARGETS), str(fq), "--no-store", "--json", str(tmp_path / "o.json"))
    assert r.returncode == 0, r.stderr
    doc = json.loads((tmp_path / "o.json").read_text())
    by = {f["target"]: f for f in doc["filesystems"]}
    assert by["lab:btrfs"]["on_disk"]["ratio"] == pytest.approx(1.0, abs=0.02)
    for t in TARGETS[1:]:
        assert by[t]["on_disk"]["ratio"] > 1.5, by[t]
    # compsize on a fresh copy agrees with what iolens reported
    from iolens import lab
    d = lab.resolve_target("lab:btrfs-zstd") / "iolens-compress-check"
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
