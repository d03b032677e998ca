"""The one resolver of storage targets (iolens.resolve): a directory, a lab target with its size, the null sink;
and no module but the lab catalogue reads the `lab:` prefix."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from iolens import resolve
from iolens.errors import UsageError

SRC = Path(resolve.__file__).parent


def test_a_directory_a_sized_lab_target_and_the_null_sink():
    d = resolve.parse("~/scratch")
    assert d.kind == "dir" and d.target is None and d.option is None and d.path() == Path.home() / "scratch"
    r = resolve.parse("lab:gp2:500G/run1/tmp")
    assert r.kind == "lab" and r.lab == "gp2:500G" and r.sub == "run1/tmp" and r.emulated
    assert r.option == "aws:ebs-gp2:size=500"
    e = r.emulation()
    assert e is not None and e["target"] == "lab:gp2:500G" and e["volume"] == "aws:ebs-gp2:size=500"
    assert e["limits"]["read_iops"] == 1500 and e["credits"]["burst_iops"] == 3000
    assert resolve.parse("lab:tmpfs").option == "aws:ec2-instance-nvme" and not resolve.parse("lab:tmpfs").emulated
    assert resolve.parse("null").kind == "null"
    with pytest.raises(UsageError, match="lab:nope is not a lab target"):
        resolve.parse("lab:nope")


def test_no_module_but_the_catalogue_reads_the_lab_prefix():
    pattern = re.compile(r"""(startswith|removeprefix)\(\s*["']lab:|["']lab:["']\)|spec\[4:\]""")
    readers = sorted(str(p.relative_to(SRC)) for p in SRC.rglob("*.py") if pattern.search(p.read_text()))
    assert readers == [], readers
