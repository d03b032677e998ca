"""Threads that wait for threads: a worker created for one job and joined is replayed after its creator's op and
before its joiner's next one, so a slower target delays the joiner as it did the real step (samtools sort's spills
on a slow disk)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from conftest import iolens

pytestmark = pytest.mark.timeout(300)


def test_a_joined_thread_holds_back_its_joiner_and_a_pool_thread_does_not(cprog, tmp_path):
    """tests/native/fork_join.c: three spill threads, each created and joined by the main thread, and a pool thread
    that writes while the main thread writes.  Each spill thread gets an AFTER on the main thread's op before it
    (its creation) and the main thread's next op an AFTER on the spill's last op (the join); the pool thread
    neither.  Each spill's fdatasync is then made 150 ms slower in the plan, as a slow disk would: the main thread
    waits for each, and no spill starts before the main thread's op it followed."""
    from iolens.workspace.target import resolve
    from iolens.capture.reader import read_capture
    from iolens.whatif.engine import log_dtype, op_codes
    from iolens.whatif.plan import build_plan
    from iolens.whatif.replay import replay_on

    c = op_codes()
    cap = tmp_path / "fj.iolens"
    work = tmp_path / "w"
    work.mkdir()
    r = iolens("profile", "-q", "--trace", "-o", cap, "--", cprog("fork_join"), work)
    assert r.returncode == 0, r.stderr
    plan = build_plan(read_capture(cap))
    ops = plan.ops
    syncs = ops[ops["op"] == c["FDATASYNC"]]
    spills = sorted(set(int(t) for t in syncs["thread"]))
    assert len(spills) == 3, spills
    writes = ops[ops["op"] == c["WRITE"]]
    main = int(writes["thread"][np.argmax(np.bincount(writes["thread"]))])  # 24 writes
    pool = sorted(set(int(t) for t in writes["thread"]) - {main, *spills})
    assert len(pool) == 1, pool
    after = ops[ops["op"] == c["AFTER"]]
    joins_ = after[after["thread"] == main]
    assert sorted(joins_["obj"]) == spills, after
    for s in spills:
        mine = np.nonzero(ops["thread"] == s)[0]
        assert ops["op"][mine[0]] == c["START"] and ops["op"][mine[1]] == c["AFTER"], ops[mine[:3]]
        assert ops["obj"][mine[1]] == main and ops["thread"][ops["offset"][mine[1]]] == main
        # the join waits for the spill's last op
        j = joins_[joins_["obj"] == s]
        assert int(j["offset"][0]) == mine[-1]
    assert not (after["thread"] == pool[0]).any() and not (after["obj"] == pool[0]).any()

    slow = plan.ops.copy()
    slow["gap"][slow["op"] == c["FDATASYNC"]] += 150_000_000
    plan.ops = slow
    target = tmp_path / "t"
    target.mkdir()
    log = tmp_path / "fj.log"
    res = replay_on(plan, resolve(str(target)), log=str(log))
    assert res.errors == 0 and res.dependency_timeouts == 0
    lg = np.fromfile(log, dtype=log_dtype())
    assert res.wall_s >= 0.45  # three 150 ms spills, one after another
    for j in np.nonzero((slow["op"] == c["AFTER"]) & (slow["thread"] == main))[0]:
        waited_for = int(slow["offset"][j])
        assert lg["start"][j + 1] >= lg["end"][waited_for], "the main thread went on before the join"
    for s in spills:
        mine = np.nonzero(slow["thread"] == s)[0]
        created_after = int(slow["offset"][mine[1]])
        assert lg["start"][mine[2]] >= lg["end"][created_after], "a spill ran before its creation"


def test_an_after_op_must_name_an_op_of_another_thread(tmp_path: Path):
    """The replayer refuses a job whose AFTER names its own thread or an index past the other thread's ops."""
    from iolens.whatif.engine import op_codes
    from iolens.whatif.replay import ReplayError, replay_on
    from iolens.workspace.target import resolve
    from test_replay_cpu import crafted

    c = op_codes()
    target = tmp_path / "t"
    target.mkdir()
    for bad in ((c["AFTER"], 0, 0, 0, 0, 0), (c["AFTER"], 0, 1, 9, 0, 0)):
        rows = [(c["START"], 0, 0, 0, 0, 0), bad, (c["START"], 1, 0, 0, 0, 0), (c["EXIT"], 1, 0, 0, 0, 0)]
        with pytest.raises(ReplayError, match="AFTER op names no op"):
            replay_on(crafted(rows, [0, 0], 1), resolve(str(target)))
