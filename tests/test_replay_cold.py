"""A cold replay starts as a cold real run does: the whole page cache dropped between the layout and the timed part
(root), with the inodes and directories of the laid-out tree; without root, the laid-out files' pages only."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from conftest import iolens, unavailable

pytestmark = pytest.mark.timeout(300)


@pytest.fixture
def plan(tmp_path):
    """The plan of a traced `cat` of a laid-out input into an output it creates."""
    from iolens.capture.reader import read_capture
    from iolens.whatif.plan import build_plan

    (tmp_path / "in.dat").write_bytes(os.urandom(300_000))
    cap = tmp_path / "cat.iolens"
    r = iolens("profile", "--trace", "-o", cap, "--", "sh", "-c", "cat in.dat > out.dat", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    return build_plan(read_capture(cap))


@pytest.fixture
def bystander(tmp_path):
    """A file on a disk (never the replay's), read into the page cache: whether it is still there after a cold
    replay says whether the whole cache was dropped."""
    from iolens import pagecache

    d = Path("/var/tmp") if Path("/var/tmp").is_dir() else tmp_path
    p = d / f"iolens-test-bystander-{os.getpid()}"
    p.write_bytes(os.urandom(1 << 20))
    os.sync()
    pagecache.warm([p])
    if pagecache.resident_fraction([str(p)]) != 1.0:
        p.unlink()
        pytest.skip(f"{d} keeps no file in the page cache to drop (tmpfs?); cold needs a disk")
    yield str(p)
    p.unlink()


def test_the_cache_is_made_cold_after_the_layout_and_before_the_first_op(plan, tmp_path, monkeypatch):
    """The replayer holds after the layout until the page cache is in its state: the input is laid out then, and
    the step's output not yet created."""
    from iolens.whatif import replay as rp
    from iolens.workspace.target import resolve

    target = tmp_path / "t"
    target.mkdir()
    seen: list[tuple[list[int], list[Path]]] = []
    real = rp.make_cold

    def spy(files: list[str], method: str) -> str:
        seen.append(([p.stat().st_size for p in target.glob("iolens-bench-*/**/in.dat")],
                     list(target.glob("iolens-bench-*/**/out.dat"))))
        return real(files, method)

    monkeypatch.setattr(rp, "make_cold", spy)
    res = rp.replay_on(plan, resolve(str(target)), cache="cold")
    assert res.errors == 0, res.first_error
    assert seen == [([300_000], [])], seen  # once, the input laid out whole, the output not yet made
    assert res.cold in ("drop-caches", "fadvise")
    seen.clear()
    warm = rp.replay_on(plan, resolve(str(target)))  # warm: no hold, nothing dropped
    assert seen == [] and warm.cold is None and warm.errors == 0


def test_a_cold_replay_drops_the_whole_page_cache_as_root(plan, tmp_path, bystander):
    """As the benchmark's cold real runs do (pagecache.drop_caches): a file cached before, outside the replay, is
    gone from the cache after it, and so are the laid-out tree's inodes and directory entries."""
    from iolens import pagecache
    from iolens.whatif.replay import replay_on
    from iolens.workspace.target import resolve

    if os.geteuid() != 0:
        unavailable("dropping the whole page cache needs root (writes /proc/sys/vm/drop_caches)")
    target = tmp_path / "t"
    target.mkdir()
    res = replay_on(plan, resolve(str(target)), cache="cold")
    assert res.errors == 0, res.first_error
    assert res.cold == "drop-caches"
    assert (pagecache.resident_fraction([bystander]) or 0.0) < 0.5


def test_calibration_and_non_root_replays_evict_the_laid_out_files_only(plan, tmp_path, bystander, monkeypatch):
    """evict="fadvise" (the calibration's classes) and a replay without root leave the rest of the cache alone."""
    from iolens import pagecache
    from iolens.whatif.replay import replay_on
    from iolens.workspace.target import resolve

    target = tmp_path / "t"
    target.mkdir()
    res = replay_on(plan, resolve(str(target)), cache="cold", evict="fadvise")
    assert res.errors == 0 and res.cold == "fadvise"
    assert pagecache.resident_fraction([bystander]) == 1.0
    monkeypatch.setattr(os, "geteuid", lambda: 1000)
    res = replay_on(plan, resolve(str(target)), cache="cold")
    assert res.errors == 0 and res.cold == "fadvise"
    assert pagecache.resident_fraction([bystander]) == 1.0


def test_the_replay_command_says_how_the_cache_was_made_cold(tmp_path):
    """The JSON names the method; without root a note says what stayed cached."""
    import json

    (tmp_path / "in.dat").write_bytes(os.urandom(100_000))
    cap = tmp_path / "cat.iolens"
    assert iolens("profile", "--trace", "-o", cap, "--", "sh", "-c", "cat in.dat > out.dat",
                  cwd=tmp_path).returncode == 0
    target = tmp_path / "t"
    target.mkdir()
    r = iolens("replay", cap, "--on", target, "--cache", "cold", "--json", "-")
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    root = os.geteuid() == 0
    assert doc["schema_version"] == [1, 7]
    assert doc["targets"][0]["cold"] == ("drop-caches" if root else "fadvise")
    assert any("inodes and directories stayed cached" in n for n in doc["notes"]) is not root
