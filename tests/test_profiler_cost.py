"""The profiler's cost per traced event, measured on this machine (iolens.whatif.overhead): what a replay takes out
of the recorded compute gaps.  Real profiled runs of the probe, not a model."""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.timeout(300)


def test_measured_costs_are_positive_and_a_path_costs_more():
    """Recording an event costs something, and one that names a path (made absolute, its file record looked up
    or made, a created file stat'ed) costs more than a 1-byte write's; neither is near a millisecond."""
    from iolens.whatif.overhead import measure

    cost = measure(pairs=5, n_ev=50_000, n_path=2000)
    assert 5 <= cost.pairs <= 20
    assert 0 < cost.event_ns < 20_000
    assert cost.event_ns < cost.path_ns < 200_000


def test_a_median_lost_in_noise_takes_more_pairs(monkeypatch):
    """Recording costs something: when the machine's noise puts the median difference at or below 0, more pairs
    are taken (up to four times as many) instead of storing 0 as the cost."""
    from iolens.whatif import overhead

    runs = iter(range(10_000))

    def fake(_d, n_ev, _n_path, profiled):  # the first 5 pairs: profiled faster by 1 ns an event; then 80 ns slower
        k = next(runs)
        if n_ev < 1000:
            return 0.0, 0.0  # the untimed warm-up runs
        slower = 80e-9 if k >= 12 else -1e-9
        return (1.0 + (slower * n_ev if profiled else 0.0)), 1.0 + (0.01 if profiled else 0.0)

    monkeypatch.setattr(overhead, "_run", fake)
    cost = overhead.measure(pairs=5, n_ev=100_000, n_path=4000)
    assert cost.event_ns > 0 and 5 < cost.pairs <= 20, cost
    # noise that never lifts: four times the pairs, then the 0 it measured
    monkeypatch.setattr(overhead, "_run", lambda _d, n_ev, _p, profiled: (1.0, 1.0))
    cost = overhead.measure(pairs=5, n_ev=100_000, n_path=4000)
    assert cost.event_ns == 0 and cost.pairs == 20


def test_the_cost_is_measured_once_per_host_and_reused(tmp_path):
    """`iolens replay` and `predict` take the profiler's cost measured on this host out of a capture taken here:
    measured on first use, stored in the results store, reused after (and measured again on request); a capture
    from another host keeps the defaults, measured elsewhere, and says so."""
    import socket

    from iolens.store import ResultsStore
    from iolens.whatif.overhead import COST_KIND, for_capture
    from iolens.whatif.plan import TRACE_EVENT_OVERHEAD_NS, TRACE_PATH_OVERHEAD_NS

    with ResultsStore(tmp_path / "db.sqlite") as store:
        ev, path, note = for_capture("another-host.example", store)
        assert (ev, path) == (TRACE_EVENT_OVERHEAD_NS, TRACE_PATH_OVERHEAD_NS) and "another host" in note
        assert store.runs(kind=COST_KIND) == []
        here = socket.gethostname()
        ev, path, note = for_capture(here, store)
        assert 0 < ev < path and "measured on this host" in note
        assert len(store.runs(kind=COST_KIND)) == 1
        assert for_capture(here, store)[:2] == (ev, path)  # reused, not measured again
        assert len(store.runs(kind=COST_KIND)) == 1
        for_capture(here, store, refresh=True)
        assert len(store.runs(kind=COST_KIND)) == 2


def test_replay_says_which_cost_it_took_out(tmp_path):
    """A replay names the cost it took out: measured here, or the defaults and why (a store it cannot use)."""
    import os

    from conftest import iolens

    from iolens.whatif.plan import TRACE_EVENT_OVERHEAD_NS

    env = dict(os.environ, IOLENS_DB=str(tmp_path / "db.sqlite"))
    (tmp_path / "t").mkdir()
    cap = tmp_path / "c.iolens"
    r = iolens("profile", "--trace", "-q", "-o", cap, "--", "sh", "-c", "echo x > f; cat f > g", cwd=tmp_path, env=env)
    assert r.returncode == 0, r.stderr
    r = iolens("replay", cap, "--on", tmp_path / "t", cwd=tmp_path, env=env)
    assert r.returncode == 0, r.stderr
    assert "note: the profiler's cost taken out of the gaps:" in r.stdout and "measured on this host" in r.stdout
    # a results store it cannot use does not stop a replay: the defaults, and why
    bad = tmp_path / "bad.sqlite"
    bad.write_bytes(b"not a database" * 100)
    r = iolens("replay", cap, "--on", tmp_path / "t", cwd=tmp_path, env=dict(env, IOLENS_DB=str(bad)))
    assert r.returncode == 0, r.stderr
    want = f"note: the profiler's cost taken out of the gaps: {TRACE_EVENT_OVERHEAD_NS} ns an event"
    assert want in r.stdout and "damaged" in r.stdout
    assert bad.read_bytes() == b"not a database" * 100  # left as it was
