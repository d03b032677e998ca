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
    assert cost.pairs == 5
    assert 0 < cost.event_ns < 20_000
    assert cost.event_ns < cost.path_ns < 200_000
