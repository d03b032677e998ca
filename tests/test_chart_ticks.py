"""The compress chart's log axis: a few round ticks inside the points' span, never plotly's one-digit labels
between powers of ten, which collided at 390 px when the speeds spanned about a decade."""

from __future__ import annotations

import math

import pytest

from iolens.render.compress_html import log_ticks


@pytest.mark.parametrize("span", [(9.5, 1200.0), (150.0, 900.0), (2.1, 3.5), (0.5, 20000.0), (30.0, 45.0),
                                  (0.013, 0.9), (80.0, 8000.0)])
def test_a_few_round_ticks_inside_the_span(span):
    ticks = log_ticks([span[0], (span[0] + span[1]) / 2, span[1]])
    assert 2 <= len(ticks) <= 5, ticks
    assert all(span[0] <= t <= span[1] for t in ticks), ticks
    assert ticks == sorted(ticks) and len(set(ticks)) == len(ticks)
    mantissas = {round(t / 10 ** math.floor(math.log10(t)), 6) for t in ticks}
    assert mantissas <= {m / 2 for m in range(2, 20)}, ticks  # round values


def test_less_than_a_decade_gets_more_than_two_ticks():
    # the compress page's decompression speeds: 1, 2, 5 steps gave 500 and 1000 only, the left third bare
    assert log_ticks([225.0, 600.0, 1040.0]) == [300.0, 500.0, 700.0, 900.0]
    assert len(log_ticks([150.0, 900.0])) >= 3


def test_over_a_decade_only_powers_of_ten_and_a_single_speed_has_one_tick():
    assert log_ticks([3.0, 40000.0]) == [10.0, 100.0, 1000.0, 10000.0]
    assert log_ticks([7.0, 7.0]) == [7.0]
    assert log_ticks([]) == []
