"""The btrfs zstd levels of the lab (`lab:btrfs-zstd1`, `lab:btrfs-zstd` = level 3, `lab:btrfs-zstd9`), as root:
each target mounts with its level, and the level changes what the filesystem stores (compsize, after fsync).

On FASTQ text btrfs compresses 128 KiB chunks and rounds each to 4 KiB: levels 1 and 3 both store 32 KiB per
chunk (4.00x) and level 9 stores 28 KiB (4.55x) here, so the test asks level 9 for strictly more than level 1.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import iolens, lab_up

from iolens import lab
from iolens.synth import fastq_text

pytestmark = [pytest.mark.root, pytest.mark.slow, pytest.mark.timeout(300)]

MiB = 1 << 20
LEVELS = {"btrfs-zstd1": 1, "btrfs-zstd": 3, "btrfs-zstd9": 9}


@pytest.fixture(scope="module")
def labdir(tmp_path_factory):
    yield from lab_up(tmp_path_factory, "zstdlevels", "--only", ",".join(LEVELS), "--size", "256M",
                      needed=["losetup", "mkfs.btrfs", "compsize"], check_down=True)


def _on_disk(path) -> tuple[int, int]:
    out = subprocess.run(["compsize", "-b", str(path)], capture_output=True, text=True, check=True).stdout
    m = re.search(r"^TOTAL\s+\d+%\s+(\d+)\s+(\d+)", out, re.M)
    assert m, out
    return int(m[1]), int(m[2])  # disk usage, uncompressed


def test_each_level_is_mounted_with_its_level(labdir):
    res = iolens("lab", "status", "--dir", labdir, "--json")
    assert res.returncode == 0, res.stderr
    by = {t["name"]: t for t in json.loads(res.stdout)["targets"]}
    for name, level in LEVELS.items():
        assert by[name]["status"] == "up" and by[name]["healthy"], by[name]
        assert by[name]["mount_options"] == f"compress=zstd:{level}"
        opts = [ln.split()[3] for ln in Path("/proc/mounts").read_text().splitlines()
                if ln.split()[1] == by[name]["path"]][-1]
        assert f"compress=zstd:{level}" in opts.split(","), opts  # what the kernel applied


def test_a_higher_level_stores_the_same_fastq_in_less(labdir):
    data = fastq_text(24 * MiB, seed=3)
    ratios = {}
    for name in LEVELS:
        f = lab.resolve_target(f"lab:{name}", root=labdir) / "reads.fq"
        with open(f, "wb") as fh:
            fh.write(data)
            os.fsync(fh.fileno())
        disk, raw = _on_disk(f)
        assert abs(raw - len(data)) < 8192
        ratios[name] = raw / disk
        f.unlink()
    print("btrfs zstd ratios on FASTQ:", {k: round(v, 2) for k, v in ratios.items()}, file=sys.stderr)
    assert ratios["btrfs-zstd1"] > 2.5
    assert ratios["btrfs-zstd9"] >= ratios["btrfs-zstd"] >= ratios["btrfs-zstd1"]
    assert ratios["btrfs-zstd9"] > 1.05 * ratios["btrfs-zstd1"]  # the level matters
