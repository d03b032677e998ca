"""pagecache: eviction and mincore residency on a real file, and dropping the whole cache as root."""

from __future__ import annotations

import os
import subprocess

import pytest

from iolens import pagecache

MiB = 1 << 20


@pytest.fixture
def cached_file(tmp_path):
    """8 MiB written, flushed and read back, so it is in the page cache; skips where eviction cannot apply."""
    fs = subprocess.run(["stat", "-f", "-c", "%T", str(tmp_path)], capture_output=True, text=True).stdout.strip()
    if fs in ("tmpfs", "ramfs"):
        pytest.skip(f"{tmp_path} is on {fs}: its pages are the storage and cannot be evicted")
    path = tmp_path / "data"
    with open(path, "wb") as fh:
        fh.write(os.urandom(8 * MiB))
        fh.flush()
        os.fsync(fh.fileno())
    assert len(path.read_bytes()) == 8 * MiB
    return str(path)


def test_evict_drops_a_file_from_the_page_cache(cached_file):
    have, size = pagecache.resident_bytes(cached_file)
    assert size == 8 * MiB and have > size // 2
    assert pagecache.evict(cached_file) is True
    assert pagecache.resident_fraction([cached_file]) <= 0.05


def test_make_cold_falls_back_to_fadvise_without_root(cached_file, monkeypatch):
    monkeypatch.setattr(os, "geteuid", lambda: 1000)
    assert pagecache.drop_caches() is False
    assert pagecache.make_cold([cached_file], "auto") == "fadvise"
    assert pagecache.resident_fraction([cached_file]) <= 0.05


def test_files_that_cannot_be_checked_or_evicted(tmp_path):
    empty = tmp_path / "empty"
    empty.touch()
    assert pagecache.resident_bytes(empty) == (0, 0)
    assert pagecache.resident_fraction([str(empty)]) is None  # nothing to measure
    missing = str(tmp_path / "missing")
    assert pagecache.resident_bytes(missing) is None and pagecache.resident_fraction([missing, str(empty)]) is None
    assert pagecache.evict(missing) is False
    pagecache.fadvise_dontneed([missing])  # skipped, no error


def test_drop_caches_as_root(cached_file):
    if os.geteuid() != 0:
        pytest.skip("dropping the whole page cache needs root (writes /proc/sys/vm/drop_caches)")
    assert pagecache.resident_fraction([cached_file]) > 0.5
    assert pagecache.make_cold([cached_file], "drop-caches") == "drop-caches"
    assert pagecache.resident_fraction([cached_file]) <= 0.05


def test_warm_reads_evicted_files_back_under_a_directory(cached_file, tmp_path):
    sub = tmp_path / "sub"
    sub.mkdir()
    other = sub / "other"
    other.write_bytes(b"x" * MiB)
    pagecache.evict(cached_file)
    pagecache.evict(other)
    assert pagecache.resident_fraction([cached_file, str(other)]) <= 0.05
    assert pagecache.warm([str(tmp_path), str(tmp_path / "missing")]) == 9 * MiB
    assert pagecache.resident_fraction([cached_file, str(other)]) >= 0.95


def _scheme(root, k, state, aggr_us, action, age_min):
    ctx = root / str(k) / "contexts" / "0"
    (ctx / "monitoring_attrs" / "intervals").mkdir(parents=True)
    (root / str(k) / "state").write_text(state + "\n")
    (ctx / "monitoring_attrs" / "intervals" / "aggr_us").write_text(f"{aggr_us}\n")
    sch = ctx / "schemes" / "0"
    (sch / "access_pattern" / "age").mkdir(parents=True)
    (sch / "action").write_text(action + "\n")
    (sch / "access_pattern" / "age" / "min").write_text(f"{age_min}\n")


def test_proactive_reclaim_reads_the_shortest_pageout_age(tmp_path):
    root = tmp_path / "kdamonds"
    assert pagecache.proactive_reclaim(str(root)) is None  # no DAMON here
    root.mkdir()
    (root / "nr_kdamonds").write_text("3\n")
    _scheme(root, 0, "on", 5_000_000, "pageout", 12)   # idle 60 s -> paged out
    _scheme(root, 1, "on", 100_000, "stat", 1)         # a scheme that only counts
    _scheme(root, 2, "off", 100_000, "pageout", 10)    # not running
    assert pagecache.proactive_reclaim(str(root)) == 60.0
    (root / "0" / "state").write_text("off\n")
    assert pagecache.proactive_reclaim(str(root)) is None


def test_reclaim_is_off_inside_and_on_again_after_even_on_ctrl_c(tmp_path):
    root = tmp_path / "kdamonds"
    with pagecache.reclaim_paused(str(root)) as paused:
        assert paused is None  # no DAMON here: nothing to turn off
    root.mkdir()
    _scheme(root, 0, "on", 5_000_000, "pageout", 12)
    _scheme(root, 1, "on", 100_000, "stat", 1)       # only counts: left alone
    _scheme(root, 2, "off", 100_000, "pageout", 10)  # not running: left off
    state = {k: root / k / "state" for k in "012"}
    with pagecache.reclaim_paused(str(root)) as paused:
        assert paused is True
        assert [state[k].read_text().strip() for k in "012"] == ["off", "on", "off"]
        assert pagecache.proactive_reclaim(str(root)) is None
    assert [state[k].read_text().strip() for k in "012"] == ["on", "on", "off"]
    with pytest.raises(KeyboardInterrupt), pagecache.reclaim_paused(str(root)):
        assert state["0"].read_text().strip() == "off"
        raise KeyboardInterrupt
    assert pagecache.proactive_reclaim(str(root)) == 60.0
