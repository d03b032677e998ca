"""Pure parts of bench: cache-state classification, plausibility warnings, suite footprints, sizes, rendering."""

from __future__ import annotations

import pytest
from rich.console import Console

from iolens.bench import cache, suites
from iolens.bench.metrics import METRIC_KEYS, from_phase
from iolens.workspace.rails import check_space
from iolens.workspace.target import Target
from iolens.errors import TargetError, UsageError
from iolens.render.bench_export import results_csv
from iolens.render.bench_table import fmt_count, fmt_rate, render_bench


def group(op="read", **kw):
    g = {"op": op, "engine": "psync", "threads": 1, "bs": 1 << 20, "sync": "none", "direct_requested": False,
         "direct_used": False, "direct_refused": False, "bytes": 100 << 20, "ops": 100, "sync_s": 0.0,
         "latency_ns": {"count": 100, "min": 1000, "mean": 2000.0, "max": 9000, "p50": 1800.0, "p90": 3000.0,
                        "p99": 8000.0, "p99.9": 9000.0},
         "series_bytes": [100 << 20], "series_ops": [100],
         "per_thread": [{"thread": 0, "bytes": 100 << 20, "ops": 100, "start_s": 0.0, "first_done_s": 0.01,
                         "last_done_s": 0.5, "end_s": 0.5, "cpu_s": 0.1}]}
    g.update(kw)
    return g


def phase(*groups, **cache_kw):
    c = {"evict_requested": True, "evicted": True, "dropped": False, "drop_requested": False,
         "resident_fraction": 0.0}
    c.update(cache_kw)
    return {"name": "p", "wall_s": 0.5, "cpu_user_s": 0.01, "cpu_sys_s": 0.04, "cache": c,
            "groups": list(groups) or [group()]}


@pytest.mark.parametrize("ph,state", [
    (phase(group(direct_used=True)), "cold-direct"),
    (phase(), "cold-evicted"),
    (phase(resident_fraction=0.9), "warm"),
    (phase(evicted=False, evict_requested=False), "warm"),
    (phase(resident_fraction=None), "cold-evicted"),
    (phase(group("write", sync="fdatasync")), "synced"),
    (phase(group("write")), "buffered"),
    (phase(group("stat")), "warm"),
    (phase(group("stat"), dropped=True), "cold-evicted"),
    (phase(group("create")), "buffered"),
    (phase(group("randread", engine="null")), "none"),
])
def test_cache_state(ph, state):
    assert cache.state_of(ph) == state


def disk(**kw) -> Target:
    t = Target(spec="/data", kind="dir", fstype="ext4", device_class="hdd", plausible_read_Bps=350e6,
               plausible_read_iops=600.0, limit_source="hdd device class")
    for k, v in kw.items():
        setattr(t, k, v)
    return t


def test_a_read_faster_than_the_device_is_flagged():
    ph = phase()  # 100 MiB in 0.5 s = 210 MB/s: plausible for a disk
    assert cache.plausibility("seq-read", disk(), ph, "cold-evicted", from_phase(ph)) == []
    fast = phase(group(bytes=2 << 30))  # 4.3 GB/s from an HDD: a cache
    w = cache.plausibility("seq-read", disk(), fast, "cold-evicted", from_phase(fast))
    assert len(w) == 1 and "faster than hdd device class allows" in w[0] and "--direct" in w[0]
    rr = phase(group("randread", bs=4096, bytes=100_000 * 4096, ops=100_000))
    w = cache.plausibility("rand", disk(), rr, "cold-evicted", from_phase(rr))
    assert w and ("IOPS" in w[0] or "faster" in w[0])


def test_failed_eviction_is_a_warning_and_tmpfs_a_note():
    warm = phase(resident_fraction=0.8)
    w = cache.plausibility("seq-read", disk(plausible_read_Bps=None), warm, "warm", from_phase(warm))
    assert w and "read warm" in w[0]
    tmpfs = disk(fstype="tmpfs", device_class="memory", plausible_read_Bps=None, plausible_read_iops=None)
    assert cache.plausibility("seq-read", tmpfs, warm, "warm", from_phase(warm)) == []
    assert any("pages are the storage" in n for n in cache.notes_for(warm, "warm", tmpfs))


def on_device(ph, read_bytes, write_bytes=0):
    ph["devices"] = [{"read_bytes": read_bytes, "write_bytes": write_bytes, "read_ios": 1, "write_ios": 0}]
    return ph


def test_the_device_counters_overrule_mincore():
    cold = on_device(phase(), 100 << 20)  # mincore says evicted, the device delivered every byte
    assert cache.state_of(cold, disk()) == "cold-evicted"
    assert from_phase(cold)["device_read_bytes"] == 100 << 20
    # mincore says evicted, but the device delivered 10 of 100 MiB: the rest came from a cache
    lied = on_device(phase(), 10 << 20)
    assert cache.state_of(lied, disk()) == "warm"
    w = cache.plausibility("seq-read", disk(plausible_read_Bps=None), lied, "warm", from_phase(lied))
    assert len(w) == 1 and "delivered only 10% of the bytes read" in w[0]
    notes = cache.notes_for(lied, "warm", disk(device="vda"))
    assert any("vda) delivered only 10.0 MiB of the 100.0 MiB read" in n for n in notes), notes
    # too small to judge, or no block device: mincore alone decides
    small = on_device(phase(group(bytes=8 << 20)), 0)
    assert cache.state_of(small, disk()) == "cold-evicted"
    assert cache.state_of(phase(), disk()) == "cold-evicted" and from_phase(phase())["device_read_bytes"] is None


def test_synced_means_the_device_took_the_data():
    """A write phase with a sync is `synced` only when the device's counters show it wrote (most of) the bytes:
    random writes to a small file overwrite pages in the cache, and the one sync at the end writes only the last
    copy, so their rate is the page cache's and is labelled `buffered`, with the counters in a note."""
    took = on_device(phase(group("write", sync="fdatasync")), 0, 100 << 20)
    assert cache.state_of(took, disk()) == "synced"
    absorbed = on_device(phase(group("randwrite", sync="fdatasync")), 0, 4 << 20)
    assert cache.state_of(absorbed, disk()) == "buffered"
    notes = cache.notes_for(absorbed, "buffered", disk(device="loop3"))
    assert any("not synced: the device (loop3) wrote only 4.0 MiB of the 100.0 MiB written" in n for n in notes)
    assert cache.state_of(on_device(phase(group("randwrite", sync="fdatasync", bytes=8 << 20)), 0, 0),
                          disk()) == "synced"  # too small to judge
    assert cache.state_of(phase(group("randwrite", sync="fdatasync")), disk()) == "synced"  # no counters


def test_compressing_filesystems_are_judged_only_on_random_content():
    btrfs = disk(fstype="btrfs", mount_options="rw,relatime,compress=zstd:3")
    fastq = on_device(phase(group(content="fastq")), 30 << 20)  # 100 MiB of FASTQ in 30 MiB on disk: fine
    assert cache.state_of(fastq, btrfs) == "cold-evicted"
    rnd = on_device(phase(group(content="random")), 30 << 20)  # random data does not shrink: a cache
    assert cache.state_of(rnd, btrfs) == "warm"
    assert cache.state_of(on_device(phase(group(content="zeros")), 0), disk(fstype="zfs")) == "cold-evicted"
    # the same FASTQ read on ext4 is judged
    assert cache.state_of(fastq, disk()) == "warm"


def test_metrics_from_a_phase():
    m = from_phase(phase())
    assert set(m) == set(METRIC_KEYS)
    assert m["wall_s"] == pytest.approx(0.5)
    assert m["throughput_Bps"] == pytest.approx((100 << 20) / 0.5)
    assert m["read_Bps"] == m["throughput_Bps"] and m["write_Bps"] is None
    assert m["lat_p99_us"] == pytest.approx(8.0)
    assert m["cpu_per_op_us"] == pytest.approx(0.05 / 100 * 1e6)
    mixed = from_phase(phase(group("read"), group("write", bytes=50 << 20)))
    assert mixed["read_Bps"] and mixed["write_Bps"] and mixed["bytes"] == 150 << 20


@pytest.mark.parametrize("text,value", [("4096", 4096), ("64M", 64 << 20), ("1.5G", 3 << 29), ("2GiB", 2 << 30),
                                        ("500k", 500 << 10)])
def test_parse_size(text, value):
    assert suites.parse_size(text) == value


@pytest.mark.parametrize("bad", ["", "abc", "-1M", "0"])
def test_parse_size_rejects(bad):
    with pytest.raises(UsageError):
        suites.parse_size(bad)


def test_default_scale_follows_free_space_and_caps():
    small = suites.default_scale(suites.Options(), [2 << 30], [1000])
    assert 64 << 20 <= small.size <= (2 << 30) // 20  # a twentieth of the free space
    big = suites.default_scale(suites.Options(), [10 << 40], [10**9])
    assert big.size <= 1 << 30 and big.files <= 1000 and big.meta_files == 10_000
    assert suites.default_scale(suites.Options(size=5 << 20), [1 << 40], [None]).size == 5 << 20


def test_footprint_is_the_peak_not_the_sum():
    sc = suites.Scale(size=64 << 20, files=10, meta_files=100, runtime=0.1, bs=1 << 20)
    tests = suites.build("classic", "/t", sc, suites.Options(threads=[1, 4]))
    peak_b, peak_i = suites.footprint(tests)[0]
    assert peak_b == 64 << 20  # each test removes its files before the next
    assert peak_i >= 10
    g = suites.build("genomics", "/a", sc, suites.Options(), others=["/b"])
    fp = suites.footprint(g)
    assert set(fp) == {0, 1} and fp[1][0] > 0


def test_space_check_refuses_with_a_reason():
    t = Target(spec="/x", kind="dir")
    t.path = None
    check_space(t, 1 << 50, 0, "x")  # null-like targets have no space to check
    t = Target(spec="/tmp", kind="dir")
    from pathlib import Path

    t.path = Path("/tmp")
    with pytest.raises(TargetError, match="needs .* and .* is free, of which .* is kept spare; use --size"):
        check_space(t, 1 << 60, 0, "the classic suite")


def doc():
    row = {"target": "/a", "test": "seq-read t1", "op": "read", "threads": 1, "bs": 1 << 20, "content": None,
           "primary_metric": "throughput_Bps", "cache_state": "cold-evicted", "warnings": ["w1"], "notes": [],
           "metrics": {"throughput_Bps": {"mean": 812e6, "sd": 8e6, "n": 3, "values": [1, 2, 3]},
                       "iops": {"mean": 774.0, "sd": None, "n": 3, "values": []},
                       "lat_p99_us": {"mean": 2500.0, "sd": None, "n": 3, "values": []},
                       "bytes": {"mean": 100e6, "sd": None, "n": 3, "values": []},
                       "device_read_bytes": {"mean": 99e6, "sd": None, "n": 3, "values": []}}}
    return {"targets": [{"name": "/a", "fstype": "xfs", "mount_options": "rw,noatime", "source": "/dev/sdb1",
                         "device_model": "Samsung SSD", "device_class": "ssd", "free_bytes": 1 << 30,
                         "total_bytes": 2 << 30, "plausible_read_Bps": 700e6, "limit_source": "ssd"},
                        {"name": "/b", "fstype": "tmpfs"}],
            "results": [row], "suites": ["classic"], "repeat": 3, "warnings": [], "run_id": 7, "db": None}


def test_table_has_targets_side_by_side():
    c = Console(record=True, width=160)
    render_bench(doc(), c)
    out = c.export_text()
    for s in ("/a", "/b", "xfs", "rw,noatime", "Samsung SSD", "812 MB/s ±1.0%", "cold-evicted", "p99 2.5 ms",
              "mean ± SD of 3 runs", "warning: w1", "iolens results show 7", "cold-evicted · device 99%"):
        assert s in out, s
    # the plausible read row's words are said under the table
    assert "plausible read: the fastest a read from the target's kind of device can be" in " ".join(out.split())


def test_units():
    assert fmt_rate(1.5e9) == "1.5 GB/s" and fmt_rate(812e6) == "812 MB/s" and fmt_rate(None) == "-"
    assert fmt_count(821_037, "IOPS") == "821k IOPS" and fmt_count(42, "IOPS") == "42 IOPS"


def test_csv_has_one_row_per_metric():
    runs = [{"id": 1, "kind": "bench", "created": "c", "host": "h", "results": [
        {"target": "/a", "name": "t", "cache_state": "warm", "provenance": {"target": {"fstype": "ext4"}},
         "metrics": {"metrics": {"iops": {"mean": 5.0, "sd": 1.0, "n": 2}, "wall_s": {"mean": 1.0, "n": 1}}}}]}]
    text = results_csv(runs).decode()
    lines = text.strip().splitlines()
    assert lines[0].startswith("run_id,kind,created") and len(lines) == 3
    assert lines[1].split(",")[12] == "iops"  # METRICS order: iops before wall_s
