"""iolens compare with lab placements: inputs on the lab's S3 bucket read through its FUSE mount (direct)
or staged through the S3 API with boto3 (stage), outputs copied back through the S3 API."""

from __future__ import annotations

import json
import os
import sys

import pytest

from conftest import iolens, unavailable

pytestmark = [pytest.mark.root, pytest.mark.slow, pytest.mark.timeout(600)]


@pytest.fixture(scope="module")
def s3lab(tmp_path_factory):
    if os.geteuid() != 0:
        pytest.skip("the lab's FUSE mounts need root")
    if not os.path.exists("/dev/fuse"):
        unavailable("no /dev/fuse")
    from iolens.lab import tools

    if tools.missing(["versitygw", "s3fs"]):
        problems = tools.install(say=lambda m: print(m, file=sys.stderr))
        if tools.missing(["versitygw", "s3fs"]):
            unavailable(f"versitygw/s3fs missing after `iolens lab install`: {'; '.join(problems)}")
    d = tmp_path_factory.mktemp("lab") / "lab"
    res = iolens("lab", "up", "--only", "s3", "--dir", d)
    if res.returncode != 0:
        unavailable(f"iolens lab up --only s3 failed: {res.stderr.strip()[-500:]}")
    yield d
    iolens("lab", "down", "--dir", d)


def test_stage_from_lab_s3_goes_through_the_s3_api(s3lab, tmp_path, monkeypatch):
    from iolens import lab

    monkeypatch.setenv("IOLENS_LAB_DIR", str(s3lab))
    client = lab.s3_client("s3", root=s3lab)
    bucket = lab.s3_endpoint("s3", root=s3lab)["bucket"]
    prefix = f"cmp-{os.getpid()}"
    data = os.urandom(2 << 20)
    client.put_object(Bucket=bucket, Key=f"{prefix}/in.bin", Body=data)
    client.put_object(Bucket=bucket, Key=f"{prefix}/out/", Body=b"")  # a directory for the outputs
    out = tmp_path / "r.json"
    env = dict(os.environ, IOLENS_LAB_DIR=str(s3lab))
    res = iolens("compare", "cat {in} > {out:copy.bin}", "--input", f"in=lab:s3/{prefix}/in.bin",
                 "--place", f"out=lab:s3/{prefix}/out", "--strategy", "direct,stage", "--runs", "2",
                 "--keep-outputs", "--json", out, "--no-store", env=env)
    assert res.returncode == 0, res.stderr
    rep = json.loads(out.read_text())
    direct, stage = rep["results"]
    assert stage["phases"]["copy_via"] == "s3-api" and direct["phases"] is None
    assert stage["phases"]["copy_in_bytes"] == len(data) and stage["phases"]["copy_out_bytes"] == len(data)
    mount = lab.resolve_target("lab:s3", root=s3lab)
    assert rep["provenance"]["locations"][f"lab:s3/{prefix}/in.bin"]["fstype"] == "fuse.s3fs"
    assert direct["command"].startswith(f"cat {mount}/{prefix}/in.bin > {mount}/{prefix}/out/iolens-compare-")
    # the staged run's output was uploaded with the S3 API, under the kept output directory
    keys = [o["Key"] for o in client.list_objects_v2(Bucket=bucket, Prefix=f"{prefix}/out/")["Contents"]]
    staged = [k for k in keys if k.endswith("/copy.bin") and "/c1-" in k]
    assert len(staged) == 1
    assert client.get_object(Bucket=bucket, Key=staged[0])["Body"].read() == data
