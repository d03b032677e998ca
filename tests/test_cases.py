"""The five field cases (examples/cases/case*.sh) in short mode, as root, in one lab: each script must exit 0,
print a PASS line for each of its qualitative checks and no FAIL, a verdict line for each of its published claims
(examples/cases/claims.py) and no checked claim not reproduced, and leave an index.html that links every page it
produced (docs/cases.md).

One lab with every target the cases need serves the module, as in tests/test_lab_real.py; it is taken down after
the last case, and the teardown checks that nothing of it is left mounted.
"""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import lab_up
from test_case_claims import claims


pytestmark = [pytest.mark.root, pytest.mark.slow, pytest.mark.timeout(900)]

CASES_DIR = Path(__file__).resolve().parent.parent / "examples" / "cases"
TARGETS = ["tmpfs", "ext4", "xfs", "btrfs", "btrfs-lzo", "btrfs-zstd", "btrfs-zlib", "s3", "s3-rclone", "s3-remote",
           "netfs", "magnetic", "gp2", "gp3", "io2-100", "io2-500", "st1", "nvme", "moosefs", "gluster"]
NEEDED = ["losetup", "mkfs.ext4", "mkfs.xfs", "mkfs.btrfs", "compsize", "s3fs", "rclone", "sshfs", "sshd",
          "ssh-keygen", "versitygw", "toxiproxy-server", "nbdkit", "nbdfuse", "fusermount3", "minimap2", "samtools",
          "mfsmaster", "mfschunkserver", "mfsmount", "glusterd", "gluster", "glusterfs"]
# the checks each case must pass (names as printed: "PASS: NAME: ...")
CHECKS = {
    "case1_object_store": ["profiles-cover-kernel-bytes", "staged-fetches-once", "mount-reads-per-pass"],
    "case2_where_aligner_writes": [],
    "case3_shared_fs": ["s3-small-files", "netfs-small-files"],
    "case4_compression": ["binned-plain-btrfs-ratio", "binned-btrfs-lzo-smaller", "binned-btrfs-zstd-smaller",
                          "binned-btrfs-zlib-smaller", "compression-costs-cpu", "tmpfs-beats-gp3-iops"],
    "case5_profile_and_size": ["small-reads-dominate-on-slow-disk", "small-reads-minor-on-tmpfs",
                               "small-read-share-ratio", "interposer-recorded"],
}
CLAIM_IDS = {case: [c.id for c in claims.CLAIMS if c.case == case.split("_")[0]] for case in CHECKS}


@pytest.fixture(scope="module")
def labdir(tmp_path_factory):
    yield from lab_up(tmp_path_factory, "caseslab", "--only", ",".join(TARGETS), "--size", "512M", "--disk-size",
                      "512M", needed=NEEDED, check_down=True)


@pytest.mark.parametrize("case", list(CHECKS))
def test_case_short_mode(labdir, tmp_path, case):
    env = {**os.environ, "IOLENS_LAB_DIR": str(labdir), "IOLENS_CMD": f"{shlex.quote(sys.executable)} -m iolens"}
    work = tmp_path / case
    res = subprocess.run([str(CASES_DIR / f"{case}.sh"), str(work)], capture_output=True, text=True, env=env,
                         timeout=600)
    out = res.stdout
    print(out[-4000:], res.stderr[-4000:], file=sys.stderr)
    assert res.returncode == 0, res.stderr[-2000:]
    assert not re.search(r"^FAIL:", out, re.M)
    passed = set(re.findall(r"^PASS: ([\w-]+):", out, re.M))
    assert set(CHECKS[case]) <= passed, f"missing PASS lines: {set(CHECKS[case]) - passed}"
    verdicts = {i: v for v, i in re.findall(r"^(REPRODUCED|NOT REPRODUCED|UNDECIDED): ([\w-]+):", out, re.M)}
    assert set(verdicts) == set(CLAIM_IDS[case]), f"claims without a verdict: {set(CLAIM_IDS[case]) - set(verdicts)}"
    gated = {c.id for c in claims.CLAIMS if c.gate and c.id in verdicts}
    assert not [i for i in gated if verdicts[i] == "NOT REPRODUCED"]
    report = work / "report"
    index = (report / "index.html").read_text()
    links = set(re.findall(r'href="([^"]+)"', index))
    pages = {str(p.relative_to(report)) for p in report.rglob("*") if p.is_file() and p.name != "index.html"}
    assert any(p.endswith(".html") for p in pages)
    assert pages == links, f"not linked: {pages - links}; dangling: {links - pages}"
    for line in (report / "checks.txt").read_text().splitlines():
        assert line in out
