"""The volume catalogue (iolens.volumes): its performance model against the provider's published rules, and its
agreement with the lab's targets, their emulation and their prices."""

from __future__ import annotations

import pytest

from iolens import volumes as V
from iolens.cost import prices as P
from iolens.cost.inputs import LAB_OPTIONS, spec_for
from iolens.cost.model import Usage, Workload, cost, parse_spec
from iolens.lab import disks
from iolens.lab.catalog import TARGETS

MiB = 1 << 20


@pytest.fixture(scope="module")
def snap():
    return P.load()


def test_every_lab_target_has_a_price_and_every_price_names_a_lab_target(snap):
    assert set(LAB_OPTIONS) == set(TARGETS)
    for name, spec in LAB_OPTIONS.items():
        st = spec_for(name, snap, None)
        assert st is not None and st.spec.startswith(TARGETS[name].option.split(":size")[0]), (name, spec)
        assert spec_for(f"lab:{name}", snap, None) == st
    for t in V.TYPES.values():  # every volume type is priced by the snapshot
        snap.option(t.option)


def test_every_emulated_disk_states_the_limits_of_its_volume_type_at_its_size():
    for p in disks.PROFILES:
        if p.volume is None:
            assert p.own is not None, p.name
            continue
        perf = V.perf(p.volume, p.size_gib, p.provisioned_iops)
        assert p.bandwidth == (round(perf.mibps * MiB) if perf.mibps else None), p.name
        assert p.iops == (round(perf.iops) if perf.iops else None), p.name
        assert V.TYPES[p.volume].source.url in p.published and V.TYPES[p.volume].source.as_of in p.published
        assert TARGETS[p.name].option == V.TYPES[p.volume].spec(p.size_gib, p.provisioned_iops)


def test_gp2_follows_its_size_and_bursts_below_one_tib():
    small = V.perf("gp2", 10)
    assert (small.iops, small.burst_iops, small.mibps, small.burst_mibps) == (100, 3000, 25, 128)
    assert small.credits is not None and small.credits.capacity == small.credits.initial == 5.4e6
    assert small.credit_rate == 100
    assert small.burst_seconds == pytest.approx(5.4e6 / 2900)  # about 31 minutes at full burst
    mid = V.perf("gp2", 500)
    assert (mid.iops, mid.burst_iops, mid.burst_mibps) == (1500, 3000, 250)
    assert mid.burst_seconds == pytest.approx(3600)
    big = V.perf("gp2", 2000)  # 6,000 IOPS baseline: above the burst, so no credits
    assert (big.iops, big.burst_iops, big.credits, big.burst_seconds) == (6000, None, None, None)
    assert V.perf("gp2", 10_000).iops == 16_000


def test_st1_and_sc1_scale_per_tib_to_their_caps():
    st1 = V.perf("st1", 2048)
    assert (st1.mibps, st1.burst_mibps, st1.iops) == (80, 500, 500)
    assert st1.credits is not None and st1.credits.capacity == 2 * 1024 * 1024  # 2 TiB of credits, in MiB
    assert V.perf("st1", 16 * 1024).mibps == 500
    sc1 = V.perf("sc1", 1024)
    assert (sc1.mibps, sc1.burst_mibps) == (12, 80)
    assert V.perf("sc1", 16 * 1024).burst_mibps == 250


def test_provisioned_figures_are_checked_against_the_size():
    assert V.perf("io2", 100, iops=4000).iops == 4000
    assert V.perf("gp3", 100, iops=6000, throughput=500).mibps == 500
    with pytest.raises(V.SizeError, match="500 per GiB"):
        V.perf("gp3", 10, iops=6000)
    with pytest.raises(V.SizeError, match="0.25 MiB/s per IOPS"):
        V.perf("gp3", 100, throughput=1000)
    with pytest.raises(V.SizeError, match="125 to 16384 GiB"):
        V.perf("st1", 100)
    with pytest.raises(V.SizeError, match="no provisioned iops"):
        V.perf("gp2", 100, iops=500)


def test_a_size_change_moves_the_limits_and_the_price_together(snap):
    t = V.TYPES["gp2"]
    use, wl = Usage(wall_s=3600), Workload(held_for_s=3600)
    small, big = (cost("gp2", [parse_spec(t.spec(s), snap)], use, wl, snap) for s in (100, 500))
    assert V.perf("gp2", 500).iops == 5 * V.perf("gp2", 100).iops
    storage = [sum(ch.per_run for ch in c.charges if "capacity" in ch.what) for c in (small, big)]
    assert storage[1] == pytest.approx(5 * storage[0])


def test_cost_assumes_the_catalogue_size_when_none_is_given(snap):
    for t in V.TYPES.values():
        st = spec_for(t.option, snap, None)
        assert st is not None
        if t.default_gib is not None:
            assert st.size_gb == t.default_gib, t.name
    assert spec_for("aws:ebs-st1", snap, 250).size_gb == 250  # --size still wins


def test_a_sized_lab_target_moves_its_emulated_limits_and_its_price_together(snap):
    from iolens.errors import UsageError
    from iolens.lab.catalog import lookup

    small, big = lookup("lab:st1"), lookup("lab:st1:2T")
    assert big.name == "st1:2048G" and big.option == "aws:ebs-st1:size=2048"
    assert (small.profile.bandwidth, big.profile.bandwidth) == (40 * MiB, 80 * MiB)
    assert big.profile.device.bandwidth == 2 * small.profile.device.bandwidth  # the burst: 250 -> 500 MiB/s
    assert spec_for("lab:st1:2T", snap, None).size_gb == 2048
    gp2 = lookup("gp2:500G")
    assert gp2.profile.iops == 1500 and gp2.profile.device.iops == 3000
    assert spec_for("lab:gp2:500G", snap, None).size_gb == 500
    gp3 = lookup("lab:gp3:200G:iops=6000:throughput=500")
    assert gp3.option == "aws:ebs-gp3:size=200:iops=6000:throughput=500" and gp3.profile.device.iops == 6000
    assert "500 MiB/s" in gp3.emulates
    for bad, why in (("tmpfs:100G", "takes no size"), ("st1:100G", "125 to 16384 GiB"),
                     ("gp2:1T:iops=5", "no provisioned iops"), ("gp2:huge", "write lab:NAME:SIZE"),
                     ("standard:2T", "1 to 1024 GiB"), ("io2:10G:iops=20000", "IOPS are 100 to 10000"),
                     ("nvme:100G", "comes with its instance"), ("hdd:100G", "125 to 16384"),
                     ("hdd:2T:iops=400", "no provisioned figures")):
        with pytest.raises(UsageError, match=why):
            lookup(bad)


def test_magnetic_io2_and_hdd_take_sizes_that_set_their_limits_price_and_name(snap):
    """Sizes on the disks whose IOPS come from a calibrated delay, and on the hard disk, through the resolver that
    every command uses; a volume type names the disk that stands for it (lab:standard, lab:io2)."""
    from iolens import resolve

    mag = resolve.parse("lab:standard:500G/run")
    assert mag.lab == "standard:500G" and mag.option == "aws:ebs-standard:size=500" and mag.sub == "run"
    assert mag.target is not None and mag.target.profile.device == disks.profile("magnetic").device  # same model
    assert "of 500 GiB" in mag.target.emulates
    assert spec_for("lab:standard:500G", snap, None).size_gb == 500
    assert spec_for("lab:magnetic:200G", snap, None).size_gb == 200

    io2 = resolve.parse("lab:io2:100G:iops=4000")
    assert io2.lab == "io2:100G:iops=4000" and io2.option == "aws:ebs-io2:size=100:iops=4000"
    dev = io2.target.profile.device
    assert (dev.iops, dev.latency_ms, dev.bandwidth) == (4000, 0, round(4000 * 0.256 * MiB))  # a rate, no delay
    e = io2.emulation()
    assert e is not None and e["target"] == "lab:io2:100G:iops=4000" and e["limits"]["read_iops"] == 4000
    assert e["volume"] == "aws:ebs-io2:size=100:iops=4000"
    assert any("request-rate limit" in n for n in e["not_emulated"])
    kept = resolve.parse("lab:io2-500:300G").target  # its own provisioned IOPS at another size: the same device
    assert kept.option == "aws:ebs-io2:size=300:iops=500" and kept.profile.device == disks.profile("io2-500").device
    cheap, dear = (spec_for(f"lab:io2:100G:iops={n}", snap, None) for n in (1000, 4000))
    use, wl = Usage(wall_s=3600), Workload(held_for_s=3600)
    totals = [sum(ch.per_run for ch in cost("io2", [parse_spec(st.spec, snap)], use, wl, snap).charges
                  if "capacity" not in ch.what) for st in (cheap, dear)]
    assert totals[1] > totals[0]  # more provisioned IOPS, a higher price

    hdd = resolve.parse("lab:hdd:6T").target
    assert hdd.name == "hdd:6144G" and hdd.option == "aws:ebs-st1:size=6144"
    assert hdd.limits == TARGETS["hdd"].limits  # a disk's speed does not follow its size: the price does
    assert any("priced as aws:ebs-st1:size=6144" in n for n in hdd.notes)
