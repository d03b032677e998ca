"""Process images in a replay: a replay of a step that starts many short processes wakes only the threads that
wait for each start and end."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from conftest import iolens

pytestmark = pytest.mark.timeout(300)


def profile(tmp_path: Path, argv: list[str]) -> Path:
    out = tmp_path / "step.iolens"
    r = iolens("profile", "-q", "--trace", "-o", out, "--", *argv, cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    return out


def test_a_shell_loops_children_are_woken_only_by_their_own_start_and_end(tmp_path):
    """A shell that runs 150 short children one after another: each child's replay thread waits for its process
    to start, and the shell for each to end.  Each start and end wakes the threads waiting for that process only:
    woken on every start and end, the 150 waiting threads took ~150 x 150 context switches, and each child
    started 0.2-0.3 ms late (a count of the replayer's own switches, not a time, is what this checks)."""
    from iolens.bench.targets import resolve
    from iolens.capture.reader import read_capture
    from iolens.whatif.plan import build_plan
    from iolens.whatif.replay import replay_on

    n = 150
    (tmp_path / "small").write_bytes(b"x" * 100)
    cap = read_capture(profile(tmp_path, ["sh", "-c", f"i=0; while [ $i -lt {n} ]; do cat small >/dev/null; "
                                                      "i=$((i+1)); done"]))
    plan = build_plan(cap)
    assert plan.processes == n + 1
    target = tmp_path / "t"
    target.mkdir()
    res = replay_on(plan, resolve(str(target)))
    assert res.errors == 0 and res.dependency_timeouts == 0
    switches = res.raw["voluntary_switches"] + res.raw["involuntary_switches"]
    # a few per child (its start, its parent's wait, the 50 ms re-checks), not one per waiting thread
    assert switches < 20 * n, switches
