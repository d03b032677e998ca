"""Every page kind and its terminal output explain their own words where they appear: compare its verdict words,
interval, p and CV; cost its front words (best value, tied, Pareto front, dominated) and intervals; compress
its ratio and level; the pipeline report its storage-bound rules, I/O share and I/O classes.  The pages and
tables come from real runs (one compare of `cat`, its cost, compress on a small VCF, three captured tasks).
"""

from __future__ import annotations

import html
import re

import pytest

pytestmark = pytest.mark.timeout(600)

KINDS = ("compare", "cost", "compress", "pipeline")


def _visible(page: str) -> str:
    """The page's text as a reader sees it (no scripts or styles, tags removed, entities decoded)."""
    page = re.sub(r"<(script|style)\b.*?</\1>", "", page, flags=re.S)
    return html.unescape(re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", page)))


def _tip(page: str, header: str) -> str:
    """The tooltip of the table header cell named `header` ('' when it has none)."""
    m = re.search(r"<th\b([^>]*)>" + re.escape(html.escape(header)) + "</th>", page)
    assert m, f"no header {header!r}"
    t = re.search(r'title="([^"]*)"', m.group(1))
    return html.unescape(t.group(1)) if t else ""


@pytest.fixture(scope="module")
def runs(page_runs) -> dict:
    """The shared runs (conftest.py's page_runs): each kind's page text and, as `KIND.txt`, its terminal table."""
    return {**{f"{k}.txt": page_runs[k] for k in KINDS}, **{k: page_runs[f"{k}.html"].read_text() for k in KINDS}}


def test_compare_explains_verdict_words_interval_and_columns(runs):
    page, text = runs["compare"], _visible(runs["compare"])
    assert "undecided: neither, more runs needed" in text
    assert "faster / slower: the 95% interval of the time ratio" in text
    assert "[low, high]: the range that difference lies in" in text
    assert "the difference of the runs' geometric means (the table's vs baseline compares medians" in text
    assert "standard deviation / mean (coefficient of variation)" in text
    assert "stage (inputs copied in" in text and "cache warm: inputs may already be in memory" in text
    assert "coefficient of variation" in _tip(page, "CV") and "95% confidence" in _tip(page, "95% CI of median")
    assert "two-sided test" in _tip(page, "p")
    term = " ".join(runs["compare.txt"].split())
    assert "undecided: neither" in term and "CV: standard deviation / mean" in term, runs["compare.txt"]


def test_cost_explains_front_words_and_intervals(runs):
    page, text = runs["cost"], _visible(runs["cost"])
    assert "the Pareto front joins the options no other option beats on both time and cost" in text
    for words in ("best value: the cheapest option", "tied: the runs cannot tell its time apart",
                  "dominated: another option is both faster and cheaper", "[low, high]: the 95% interval"):
        assert words in text, words
    assert "see below the table" in _tip(page, "front")
    assert "95% confidence" in _tip(page, "time [95% interval]")
    term = " ".join(runs["cost.txt"].split())
    assert "best value: the cheapest option" in term and "dominated: another option" in term, runs["cost.txt"]


def test_cost_says_once_what_it_left_unpriced(runs):
    """The input every option reads has no price: one note says so for all four options, on the page and in the
    terminal (it was repeated once per option)."""
    said = "is in every configuration and has no price"
    assert _visible(runs["cost"]).count(said) == 1
    assert " ".join(runs["cost.txt"].split()).count(said) == 1, runs["cost.txt"]


def test_compress_explains_ratio_and_level(runs):
    page, text = runs["compress"], _visible(runs["compress"])
    assert "codec:level: the codec and its level: higher levels usually give smaller files" in text
    assert "ratio: original size / compressed size" in text
    assert "indexable: BGZF, which tabix and samtools can index" in text
    assert "original size / compressed size" in _tip(page, "ratio")
    assert "level" in _tip(page, "codec:level")
    term = " ".join(runs["compress.txt"].split())
    assert "ratio: original size / compressed size" in term and "codec:level: the codec and its level" in term, \
        runs["compress.txt"]


def test_pipeline_explains_io_share_stake_and_classes(runs):
    page, text = runs["pipeline"], _visible(runs["pipeline"])
    assert "I/O %: share of the tasks' time spent in storage I/O" in text
    assert "the rule's storage I/O time, the most faster storage could save" in text
    assert "tiny: data calls under 4.0 KiB" in text and "random (backwards)" in text
    assert 'title="tasks killed or still running' in page  # the "partial" card's tooltip
    term = " ".join(runs["pipeline.txt"].split())
    assert "storage-bound: 25% or more of the rule's task time is storage I/O" in term, runs["pipeline.txt"]
    assert "I/O %: share of the tasks' time" in term
