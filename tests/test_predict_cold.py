"""A cold cell's first touches of existing files: counted from the capture (COLD_KINDS), priced by the cold
calibration's premiums (whatif/coldtree.py), and left out where the step created the file or the cell is warm."""

from __future__ import annotations

import os
import sys

import pytest

from conftest import iolens

pytestmark = pytest.mark.timeout(300)


def test_first_touches_of_existing_files_are_counted_once(tmp_path):
    """`cat` of 6 existing files twice, through a shell's glob, then a file the step makes and reads back: the 6
    files are read cold once each (the second cat finds them cached), the directory listed once by the glob; the
    made file is in the cache whatever the cell's state."""
    from iolens.capture.reader import read_capture
    from iolens.whatif.predict import cold_touches, step_model

    (tmp_path / "tree").mkdir()
    for i in range(6):
        (tmp_path / "tree" / f"f{i}").write_text(f"{i}\n" * 100)
    cap_path = tmp_path / "cat.iolens"
    r = iolens("profile", "--trace", "-o", cap_path, "--", "sh", "-c",
               "cat tree/* > all; cat tree/* > all2; echo new > made; cat made > /dev/null", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    cap = read_capture(cap_path)
    got = cold_touches(cap)
    assert got["cold_read"] == 6, got
    assert 7 <= got["cold_inode"] <= 10, got  # the files, their directory, the work directory and its parents
    assert 6 <= got["cold_list"] <= 10, got  # one listing: the 6 entries and the dots, not the glob's two
    assert {k: step_model(cap).class_n[k] for k in got} == got


def test_cold_premiums_are_added_only_where_the_calibration_has_them():
    """The cold calibration's premium per first touch is added once per touch (over the overlap); a warm
    calibration has none, and a home storage calibrated cold too takes its own premium off (the change between
    the storages)."""
    from iolens.whatif.calibration import CLASSES
    from iolens.whatif.predict import StepModel, predict

    zero = dict.fromkeys(CLASSES, 0.0)
    counts = dict.fromkeys(CLASSES, 0) | {"read_small": 100, "cold_inode": 100, "cold_read": 100, "cold_list": 102}
    m = StepModel(wall_s=1.0, io_wall_s=0.5, class_s=dict(zero, read_small=0.5), class_n=counts, traced=True,
                  overlap=1.0)
    home = dict(zero, read_small=1e-3)
    warm = predict(m, dict(home), home, "t")
    assert warm.wall_s == pytest.approx(1.0)
    cold = dict(home, cold_inode=1e-4, cold_read=1e-3, cold_list=1e-6)
    p = predict(m, cold, home, "t")
    assert p.io_delta_s == pytest.approx(100 * 1e-4 + 100 * 1e-3 + 102 * 1e-6)
    assert p.class_s["cold_read"] == pytest.approx(0.1)
    assert predict(m, cold, dict(home, cold_read=4e-4), "t").io_delta_s == pytest.approx(
        100 * 1e-4 + 100 * 6e-4 + 102 * 1e-6)
    two = StepModel(**(m.__dict__ | {"overlap": 2.0}))
    assert predict(two, cold, home, "t").io_delta_s == pytest.approx(p.io_delta_s / 2)
    # a model from before the counts (a stored JSON) predicts as it did
    old = StepModel(**(m.__dict__ | {"class_n": dict.fromkeys(CLASSES, 0) | {"read_small": 100}}))
    assert predict(old, cold, home, "t").wall_s == pytest.approx(1.0)


def test_premiums_are_cold_less_warm_per_entry_or_file():
    from iolens.whatif.coldtree import premiums

    got = premiums([3_000_000, 2_000_000, 50_000_000], [200_000, 1_000_000, 60_000_000], 100)
    assert got == pytest.approx({"cold_list": 2.8e-3 / 102, "cold_inode": 1e-5, "cold_read": 0.0})


def test_a_cold_calibration_prices_the_first_touches_and_a_warm_one_does_not(tmp_path):
    """calibrate in the cold state runs the cold-tree part (a tree laid out, the cache dropped, a child timing the
    passes) and keeps its premiums; the warm state has none; the target is left empty either way."""
    from iolens.workspace.target import resolve
    from iolens.whatif.calibration import CAL_CLASSES, calibrate
    from iolens.whatif.coldtree import COLD_KINDS

    target = tmp_path / "t"
    target.mkdir()
    got = calibrate(resolve(str(target)), cache="cold")
    assert set(got) == set(CAL_CLASSES) | set(COLD_KINDS), got
    assert all(got[k] >= 0 for k in COLD_KINDS), got
    assert list(target.iterdir()) == []
    assert not set(COLD_KINDS) & set(calibrate(resolve(str(target)), cache="warm"))


def test_random_small_reads_are_their_own_class(tmp_path):
    """200 preads at shuffled 4 KiB blocks, then 100 in sequence: the first are read_random (cold, each a request
    to the disk), the others read_small (readahead serves them); the calibration's random reads are no sequence."""
    from iolens.capture.reader import read_capture
    from iolens.whatif.calibration import _cal_plan
    from iolens.whatif.engine import op_codes
    from iolens.whatif.predict import step_model

    (tmp_path / "data.bin").write_bytes(os.urandom(8 << 20))
    (tmp_path / "rr.py").write_text(
        "import os, random\nfd = os.open('data.bin', os.O_RDONLY)\nblocks = list(range(1, 2048))\n"
        "random.Random(1).shuffle(blocks)\nfor b in blocks[:200]:\n    os.pread(fd, 4096, b * 4096 + 1)\n"
        "for i in range(100):\n    os.pread(fd, 4096, i * 4096)\n")
    cap_path = tmp_path / "rr.iolens"
    r = iolens("profile", "--trace", "-o", cap_path, "--", sys.executable, "rr.py", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    m = step_model(read_capture(cap_path))
    assert 200 <= m.class_n["read_random"] <= 210, m.class_n  # and the script's own reads, if not from 0
    assert m.class_n["read_small"] >= 99, m.class_n
    ops = _cal_plan("read_random").ops
    reads = ops[ops["op"] == op_codes()["READ"]]
    assert len(reads) == 4096 and not (reads["offset"][1:] == reads["offset"][:-1] + 4096).all()


def test_a_model_stored_before_a_class_was_added_still_predicts():
    """A model from an earlier run's JSON (benchmarks/whatif_corpus.py --rescore) has no count for a class added
    since (read_random, the cold kinds): it predicts as that class's ops were none."""
    from iolens.whatif.calibration import CLASSES
    from iolens.whatif.predict import StepModel, predict

    old = [c for c in CLASSES if c != "read_random"]
    m = StepModel(wall_s=1.0, io_wall_s=0.5, class_s=dict.fromkeys(old, 0.0) | {"read_small": 0.5},
                  class_n=dict.fromkeys(old, 0) | {"read_small": 100}, traced=True, overlap=1.0)
    cal = dict.fromkeys(CLASSES, 1e-3)
    assert predict(m, dict(cal, read_small=2e-3), cal, "t").io_delta_s == pytest.approx(0.1)
