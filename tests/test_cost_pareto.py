"""The time-vs-cost front and the verdict sentence, on crafted points; the published surveys recomputed."""

from __future__ import annotations

import numpy as np
import pytest

from iolens.cost import prices as P
from iolens.cost.model import Usage, Workload, cost, parse_spec
from iolens.cost.pareto import Point, TimeOrder, best_value, cost_cmp, dominated_by, front, tradeoffs, verdict


def pts(**kw):
    return [Point(n, t, c) for n, (t, c) in kw.items()]


def test_front_marks_dominated_points():
    p = pts(a=(100, 1.0), b=(98, 1.1), c=(152, 1.09), d=(90, 2.0), e=(95, 2.5))
    dom = dominated_by(p)
    assert dom == {"a": None, "b": None, "c": "a", "d": None, "e": "d"}
    assert [x.name for x in front(p)] == ["d", "b", "a"]
    assert best_value(p).name == "a"


def test_equal_points_are_both_on_the_front_and_ties_go_to_the_faster():
    p = pts(a=(10, 1.0), b=(10, 1.0), c=(9, 1.0))
    assert dominated_by(p) == {"a": "c", "b": "c", "c": None}
    assert best_value(p).name == "c"


def test_verdict_names_the_best_value_and_what_faster_options_cost():
    p = pts(gp2=(100, 1.0), nvme=(98, 1.1), st1=(152, 1.09))
    assert verdict(p) == "gp2 is the best value; nvme is 2% faster for 10% more"
    t = tradeoffs(p)
    assert t[0]["cost_per_pct_saved"] == pytest.approx(0.1 / 2)


def test_verdict_with_several_faster_options_and_small_differences():
    p = pts(a=(100, 1.0), b=(99.5, 1.004), c=(50, 3.0))
    assert verdict(p) == "a is the best value; c is 50% faster for 200% more, b is 0.5% faster for 0.4% more"


def test_verdict_when_the_cheapest_is_also_the_fastest_or_alone():
    assert verdict(pts(a=(10, 1.0), b=(20, 2.0))) == "a is the best value and the fastest"
    assert verdict(pts(a=(10, 1.0))) == "a is the only option priced"
    assert verdict([]) == "nothing to compare"


# -- the published surveys, recomputed (docs/cost.md) ----------------------------------------------------------

@pytest.fixture(scope="module")
def snap():
    return P.load()


def month_cost(snap, spec, instance=None):
    """A machine busy all month (one month-long run), its storage held all month: the survey's basis."""
    c = cost(spec, [parse_spec(spec, snap)], Usage(wall_s=730 * 3600), Workload(always=True), snap, instance)
    return c.per_month


def test_case5_survey_cost_column_from_list_prices(snap):
    """Six volumes on m5.xlarge, the 150 GB NVMe on m5d.xlarge; the published ratios pin the unpublished gp2 size.

    Published: NVMe 10% more than gp2, st1 (500 GB) 109% of gp2's price.  Our model gives both only for a gp2
    volume of 92-97 GB, a plausible 100 GB-class default: the published arithmetic and ours agree."""
    nvme = month_cost(snap, "aws:ec2-instance-nvme")
    st1 = month_cost(snap, "aws:ebs-st1:size=500")
    assert nvme == pytest.approx(730 * 0.226)
    assert st1 == pytest.approx(730 * 0.192 + 500 * 0.045)
    fits = [g for g in range(1, 501)
            if round(100 * (nvme / month_cost(snap, f"aws:ebs-gp2:size={g}") - 1)) == 10
            and round(100 * st1 / month_cost(snap, f"aws:ebs-gp2:size={g}")) == 109]
    assert fits == list(range(92, 98))
    gp2 = month_cost(snap, "aws:ebs-gp2:size=95")
    # with the published relative times (NVMe 2% faster, st1 152% of the time) the verdict is the published one
    points = [Point("gp2", 100, gp2), Point("NVMe", 98, nvme), Point("st1", 152, st1)]
    assert verdict(points) == "gp2 is the best value; NVMe is 2% faster for 10% more"
    assert dominated_by(points)["st1"] == "gp2"


def test_case3_monthly_table(snap):
    """EFS $307 and EBS about $4 per day agree with 1 TiB of EFS Standard and 1.2 TiB of gp2; FSx for Lustre
    comes to $172 for its 1.2 TiB minimum at $0.14, a dollar above the published $171."""
    assert month_cost(snap, "aws:efs-standard:size=1024", "none") == pytest.approx(307.2)
    assert month_cost(snap, "aws:fsx-lustre-scratch2", "none") == pytest.approx(1200 * 0.14)
    assert month_cost(snap, "aws:fsx-lustre-scratch2:size=1228.8", "none") == pytest.approx(172.03, abs=0.01)
    per_day = month_cost(snap, "aws:ebs-gp2:size=1228.8", "none") / (730 / 24)
    assert per_day == pytest.approx(4.04, abs=0.01)


# -- with the runs' times: faster only when the interval says so, ties named ----------------------------------

def runs(seed, median, cv=0.05, n=10):
    rng = np.random.default_rng(seed)
    return tuple(float(x) for x in median * np.exp(rng.normal(0, cv, n)))


def measured(**kw):
    """name=(times, cost): points whose time is the median of seeded runs."""
    return [Point(n, float(np.median(t)), c, t) for n, (t, c) in kw.items()]


def test_identical_configurations_never_get_n_percent_faster():
    for seed in range(20):
        p = measured(a=(runs(2 * seed, 100.0), 1.0), b=(runs(2 * seed + 1, 100.0), 1.0))
        order = TimeOrder.of(p)
        v = verdict(p, order)
        assert "faster" not in v, v
        assert tradeoffs(p, order) == []
        best = best_value(p, order).name
        other = "b" if best == "a" else "a"
        assert v == f"{best} and {other} are tied on time and cost: either is the best value"
        assert "cheaper" not in v


def test_tied_options_the_cheaper_is_the_best_value():
    # the case: medians 24% apart from runs that cannot tell them apart
    slow, fast = (90.0, 150.0, 95.0, 160.0, 100.0), (70.0, 160.0, 76.0, 140.0, 80.0)
    p = measured(localize=(slow, 1.0), netfs=(fast, 17.74))
    order = TimeOrder.of(p)
    assert order.decisions[("netfs", "localize")].kind == "undecided"
    assert verdict(p, order) == "localize is the best value; netfs is tied with it on time and costs 1674% more"
    assert dominated_by(p, order) == {"localize": None, "netfs": "localize"}
    # without the runs the same medians would read as a trade-off
    assert verdict(pts(localize=(100.0, 1.0), netfs=(80.0, 17.74))).startswith(
        "localize is the best value; netfs is 20% faster")


def priced(name: str, times: tuple[float, ...], per_s: float) -> Point:
    """An option billed per second of its runs: its cost at the median and at the ends of its time's interval, as
    the cost report makes them."""
    from iolens.cost.report import time_interval

    span = time_interval(list(times))
    assert span is not None
    return Point(name, float(np.median(times)), float(np.median(times)) * per_s, times,
                 (span[0] * per_s, span[1] * per_s), span)


def test_costs_whose_intervals_overlap_are_tied_never_cheaper():
    """Two options on the same price whose times cannot be told apart: medians differ in $, intervals overlap."""
    for seed in range(10):
        p = [priced("a", runs(2 * seed, 100.0), 0.01), priced("b", runs(2 * seed + 1, 100.0), 0.01)]
        order = TimeOrder.of(p)
        v = verdict(p, order)
        assert "tied on time and on cost within their intervals: either is the best value" in v, v
        assert "cheaper" not in v and "faster" not in v and "more" not in v
        assert dominated_by(p, order) == {"a": None, "b": None}


def test_clearly_cheaper_and_faster_by_the_intervals_is_the_best_value():
    p = [priced("gp2", runs(1, 100.0), 0.01), priced("io2", runs(2, 60.0), 0.05)]
    order = TimeOrder.of(p)
    assert [cost_cmp(p[0], p[1]), cost_cmp(p[1], p[0])] == [-1, 1]
    v = verdict(p, order)
    assert v.startswith("gp2 is the best value; io2 is ") and " faster for " in v and "more" in v


def test_a_faster_option_tied_on_cost_is_the_best_value():
    """b is faster by its runs and its cost interval overlaps a's: b dominates a, though a is cheaper at the
    medians."""
    a = Point("a", 100.0, 1.00, tuple(runs(1, 100.0)), (0.95, 1.10))
    b = Point("b", 80.0, 1.02, tuple(runs(2, 80.0)), (0.97, 1.08))
    order = TimeOrder.of([a, b])
    assert best_value([a, b], order).name == "b"
    assert dominated_by([a, b], order) == {"a": "b", "b": None}
    assert verdict([a, b], order) == "b is the best value and the fastest"


def test_clearly_different_options_are_called_faster_with_the_interval():
    p = measured(gp2=(runs(1, 100.0), 1.0), nvme=(runs(2, 80.0), 1.3), st1=(runs(3, 150.0), 1.2))
    order = TimeOrder.of(p)
    (t,) = tradeoffs(p, order)
    d = order.decisions[("nvme", "gp2")]
    assert t["name"] == "nvme" and d.kind == "faster"
    assert t["faster"] == pytest.approx(1 - d.ratio) and t["faster_ci"] == pytest.approx([1 - d.high, 1 - d.low])
    assert 0 < t["faster_ci"][0] < t["faster"] < t["faster_ci"][1]
    lo, hi = (f"{100 * x:.0f}%" for x in t["faster_ci"])
    assert verdict(p, order) == (f"gp2 is the best value; nvme is {100 * t['faster']:.0f}% [{lo}, {hi}] faster "
                                 "for 30% more")
    assert dominated_by(p, order)["st1"] == "gp2"
    # three options, three pairs: each decided at 0.05 / 3 (Bonferroni)
    assert d.alpha == pytest.approx(0.05 / 3)


def test_report_carries_intervals_ties_and_assumptions(snap):
    from iolens.cost.inputs import Item
    from iolens.cost.report import build_report

    same = [Item(n, [parse_spec("aws:ebs-gp3", snap)], Usage(wall_s=float(np.median(t)), times=list(t)))
            for n, t in (("a", runs(5, 100.0)), ("b", runs(6, 100.0)))]
    rep = build_report(same, snap, Workload(runs_per_month=30), instance=None, held_for="run", source={}, notes=[])
    assert rep["tied"] == [n for n in ("a", "b") if n != rep["best_value"]]
    assert "faster" not in rep["verdict"] and rep["verdict"].endswith(
        "(assuming storage held for each run's wall time, aws:ebs-gp3 100 GB, 30 runs per month)")
    for o in rep["options"]:
        assert o["time_ci"][0] < o["time_s"] < o["time_ci"][1]
        assert o["per_run_ci"][0] < o["per_run"] < o["per_run_ci"][1]
        assert o["tied_with_best"] == (o["name"] != rep["best_value"]) and o["faster_than_best_ci"] is None


def test_options_tied_on_time_for_the_same_extra_cost_are_named_together():
    """Four options a phone shows in one short sentence: the tied pair once, the two dearer ones together."""
    for seed in range(5):
        p = measured(a=(runs(4 * seed, 100.0), 1.0), b=(runs(4 * seed + 1, 100.0), 1.0),
                     c=(runs(4 * seed + 2, 100.0), 10.31), d=(runs(4 * seed + 3, 100.0), 10.31))
        order = TimeOrder.of(p)
        v = verdict(p, order)
        best = best_value(p, order).name
        other = "b" if best == "a" else "a"
        assert v == (f"{best} and {other} are tied on time and cost: either is the best value; "
                     "c, d are tied with them on time and cost 931% more"), v
    # a different extra cost is its own clause
    p = measured(a=(runs(1, 100.0), 1.0), c=(runs(2, 100.0), 2.0), d=(runs(3, 100.0), 3.0))
    v = verdict(p, TimeOrder.of(p))
    assert v == ("a is the best value; c is tied with it on time and costs 100% more, "
                 "d is tied with it on time and costs 200% more"), v
