"""The charge model against hand-computed costs, one kind of charge at a time (prices of the shipped snapshot)."""

from __future__ import annotations

import pytest

from iolens.cost import prices as P
from iolens.cost.model import Usage, Workload, cost, graduated, parse_spec
from iolens.cost.prices import GB, MONTH_S, PriceError

MONTH = 730 * 3600


@pytest.fixture(scope="module")
def snap():
    return P.load()


def charge(c, what):
    found = [ch for ch in c.charges if what in ch.what]
    assert len(found) == 1, [ch.what for ch in c.charges]
    return found[0]


def test_provisioned_gp3_with_extra_iops_and_throughput_held_two_hours(snap):
    st = parse_spec("aws:ebs-gp3:size=500:iops=6000:throughput=250", snap)
    c = cost("gp3", [st], Usage(wall_s=600), Workload(runs_per_month=10, held_for_s=7200), snap)
    frac = 7200 / MONTH
    assert charge(c, "capacity").per_run == pytest.approx(500 * 0.08 * frac)
    assert charge(c, "capacity").per_month == pytest.approx(500 * 0.08 * frac * 10)
    # only what is above the included 3,000 IOPS and 125 MiB/s is billed
    assert charge(c, "IOPS").quantity == 3000
    assert charge(c, "IOPS").per_run == pytest.approx(3000 * 0.005 * frac)
    assert charge(c, "throughput").per_run == pytest.approx(125 * 0.04 * frac)
    assert charge(c, "instance").per_run == pytest.approx(600 / 3600 * 0.192)  # m5.xlarge, the AWS default
    assert c.per_run == pytest.approx(0.1963835, abs=1e-6)
    assert sum(c.shares().values()) == pytest.approx(1.0)


def test_gp3_within_the_included_iops_pays_none(snap):
    c = cost("gp3", [parse_spec("aws:ebs-gp3:size=100", snap)], Usage(wall_s=60), Workload(), snap, "none")
    assert charge(c, "IOPS").per_run == 0 and charge(c, "throughput").per_run == 0
    assert c.instance is None and c.parts()["compute"] == 0


def test_io2_iops_are_graduated(snap):
    tiers = snap.option("aws:ebs-io2").prices["iops"].tiers
    assert graduated(tiers, 40000) == pytest.approx(32000 * 0.065 + 8000 * 0.0455)
    assert graduated(tiers, 70000) == pytest.approx(32000 * 0.065 + 32000 * 0.0455 + 6000 * 0.03185)
    c = cost("io2", [parse_spec("aws:ebs-io2:size=100:iops=40000", snap)], Usage(wall_s=60),
             Workload(always=True), snap)
    assert charge(c, "IOPS").per_month == pytest.approx(2444.0)


def test_short_run_is_billed_the_minimum_60_seconds(snap):
    c = cost("gp2", [parse_spec("aws:ebs-gp2:size=100", snap)], Usage(wall_s=10), Workload(), snap)
    assert charge(c, "capacity").per_run == pytest.approx(100 * 0.10 * 60 / MONTH)
    assert "minimum 60 s" in charge(c, "capacity").basis


def test_volume_below_its_minimum_size_is_billed_at_the_minimum(snap):
    c = cost("st1", [parse_spec("aws:ebs-st1:size=10", snap)], Usage(wall_s=3600), Workload(always=True), snap)
    assert charge(c, "capacity").quantity == 125 and charge(c, "capacity").per_month == pytest.approx(125 * 0.045)


def test_stored_requests_retrieval_minimum_duration_and_object_size(snap):
    st = parse_spec("aws:s3-standard-ia", snap)
    use = Usage(wall_s=3600, read_bytes=2 * GB, written_bytes=GB, object_sizes=[1024] * 10 + [GB],
                write_requests=1000, read_requests=5000)
    c = cost("ia", [st], use, Workload(), snap, "none")
    billed_gb = (10 * 128 * 1024 + GB) / GB  # ten 1 KiB objects are billed as 128 KiB each
    month_part = 30 * 86400 / MONTH  # held for one hour, billed the 30-day minimum
    assert charge(c, "stored").quantity == pytest.approx(billed_gb)
    assert charge(c, "stored").per_run == pytest.approx(billed_gb * 0.0125 * month_part)
    assert "minimum 30 days" in charge(c, "stored").basis and "10 objects raised" in charge(c, "stored").basis
    assert charge(c, "write requests").per_run == pytest.approx(1000 / 1000 * 0.01)
    assert charge(c, "read requests").per_run == pytest.approx(5000 / 1000 * 0.001)
    assert charge(c, "retrieval").per_run == pytest.approx(2 * 0.01)
    assert c.per_run == pytest.approx(0.012343817 + 0.01 + 0.005 + 0.02, abs=1e-8)


def test_object_count_without_sizes_raises_the_stored_bytes(snap):
    use = Usage(wall_s=60, written_bytes=1000 * 1024, objects=1000)  # 1000 objects of 1 KiB
    c = cost("gir", [parse_spec("aws:s3-glacier-ir", snap)], use, Workload(always=True), snap, "none")
    assert charge(c, "stored").quantity == pytest.approx(1000 * 128 * 1024 / GB)


def test_requests_are_estimated_from_bytes_in_8_mib_parts(snap):
    use = Usage(wall_s=60, written_bytes=20 << 20, read_bytes=0)
    c = cost("s3", [parse_spec("aws:s3-standard", snap)], use, Workload(), snap, "none")
    assert charge(c, "write requests").quantity == 3
    assert charge(c, "read requests").quantity == 0
    assert "estimated" in charge(c, "write requests").basis


def test_glacier_restore_requests(snap):
    use = Usage(wall_s=60, read_bytes=GB, read_requests=2000, write_requests=0)
    c = cost("g", [parse_spec("aws:s3-glacier-flexible", snap)], use, Workload(), snap, "none")
    assert charge(c, "restore").per_run == pytest.approx(2 * 0.05)
    assert charge(c, "retrieval").per_run == pytest.approx(0.01)


def test_efs_bills_stored_bytes_and_data_moved(snap):
    use = Usage(wall_s=3600, read_bytes=10 * GB, written_bytes=4 * GB)
    c = cost("efs", [parse_spec("aws:efs-standard", snap)], use, Workload(runs_per_month=3), snap, "none")
    assert charge(c, "data read").per_run == pytest.approx(0.30)
    assert charge(c, "data written").per_run == pytest.approx(0.24)
    assert charge(c, "data written").per_month == pytest.approx(0.72)
    assert charge(c, "stored").per_run == pytest.approx(4 * 0.30 * 3600 / MONTH)


def test_magnetic_bills_every_io(snap):
    use = Usage(wall_s=60, read_bytes=GB, written_bytes=GB)
    c = cost("mag", [parse_spec("aws:magnetic:size=100", snap)], use, Workload(), snap, "none")
    assert charge(c, "I/O requests").quantity == 8192  # 2 GiB in 256 KiB I/Os
    assert charge(c, "I/O requests").per_run == pytest.approx(8192 / 1e6 * 0.05)


def test_tiered_disk_takes_the_smallest_tier_that_fits(snap):
    c = cost("p", [parse_spec("azure:disk-premium-ssd:size=100", snap)], Usage(wall_s=60),
             Workload(runs_per_month=10, always=True), snap, "none")
    assert "128 GB tier" in charge(c, "disk").what
    assert charge(c, "disk").per_month == pytest.approx(19.71)
    assert charge(c, "disk").per_run == pytest.approx(1.971)


def test_compute_is_wall_time_and_local_nvme_brings_its_instance(snap):
    c = cost("nvme", [parse_spec("aws:ec2-instance-nvme", snap)], Usage(wall_s=3600), Workload(runs_per_month=5),
             snap)
    assert c.instance.type == "m5d.xlarge"
    assert c.per_run == pytest.approx(0.226) and c.per_month == pytest.approx(5 * 0.226)
    big = cost("nvme", [parse_spec("aws:ec2-instance-nvme:instance=m6id.8xlarge", snap)], Usage(wall_s=1800),
               Workload(), snap)
    assert big.per_run == pytest.approx(0.5 * 1.8984)


def test_local_nvme_cannot_drop_its_instance(snap):
    with pytest.raises(PriceError, match="priced through its instance type"):
        cost("nvme", [parse_spec("aws:ec2-instance-nvme", snap)], Usage(wall_s=60), Workload(), snap, "none")


def test_local_nvme_held_all_month_keeps_the_instance_up(snap):
    c = cost("nvme", [parse_spec("aws:ec2-instance-nvme", snap)], Usage(wall_s=3600),
             Workload(runs_per_month=100, always=True), snap)
    assert charge(c, "kept running").per_month == pytest.approx(630 * 0.226)
    assert c.per_month == pytest.approx(730 * 0.226)


@pytest.mark.parametrize("spec, message", [
    ("aws:ebs-gp9", "no priced option 'aws:ebs-gp9'"),
    ("gp3", "is not an option"),
    ("aws:ebs-gp3:speed=4", "'speed=4' is not one of"),
    ("aws:ebs-gp2:iops=500", "has no provisioned-IOPS price"),
    ("aws:ebs-gp3:size=-1", "size must be a number"),
    ("aws:ebs-gp3:instance=m5d.xlarge", "local (instance) storage only"),
    ("aws:ec2-instance-nvme:instance=m9.huge", "no instance price 'aws:m9.huge'"),
])
def test_bad_specs_are_one_line(snap, spec, message):
    with pytest.raises(PriceError, match=None) as err:
        parse_spec(spec, snap)
    assert message in str(err.value) and "\n" not in str(err.value)


def test_month_is_730_hours():
    assert MONTH_S == 730 * 3600
