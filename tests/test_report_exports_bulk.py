"""A large report's CSV, written a column at a time, is what the row-by-row writer writes, whatever the rows hold:
names with commas, quotes, newlines, escape sequences, bidi overrides and bytes that are not UTF-8; floats of every
size and sign, zeros, values that are not finite, None, and values of another type than their field's. And the
HTML page of a capture with thousands of files and processes stays under 1.5 MB.
"""

from __future__ import annotations

import csv
import dataclasses
import importlib.util
import io
import math
import random
import re
import sys
from pathlib import Path

import pytest

from conftest import datapath
from iolens.analysis.report import build_report
from iolens.capture.reader import read_capture
from iolens.names import csv_text
from iolens.render import report_csv as RC
from iolens.render.csvsafe import csv_bytes

NAMES = ["/data/plain.bam", "/data/a \"quoted\", name\n.txt", "/data/\udcff\udcfenot-utf8.fq", "/d/é€😀.vcf",
         "/d/back\\slash\t\x1b[31mred", "/d/\u202eevil", "/d/comma,only", "/d/\"", "/d/cr\rlf", "/d/bell\x07",
         "", "/d/semi;colon", "/d/\u2028line"]
FLOATS = [0.0, -0.0, 1.0, -1.0, 1e-4, 9.99999999e-5, 0.99999999995, 0.9999999995, 999999999.4, 999999999.5, 1e9,
          1.5e9, 5e-10, -5e-10, 2.5e-10, 1e-300, 1e300, 5e-324, 1 / 1024, 3 / 1024, 0.1, 123456789.0,
          float("nan"), float("inf"), float("-inf")]


def _floats(rnd: random.Random, n: int) -> list[float]:
    return FLOATS + [rnd.random() * 10 ** rnd.uniform(-12, 12) * rnd.choice((1, -1)) for _ in range(n)]


def _row_by_row(rep) -> bytes:
    """The straightforward writer: each row's cells made by the row function, each written by csv.writer."""
    return csv_bytes(RC.columns(), map(RC._row_maker(), rep.files))


@pytest.fixture(scope="module")
def big():
    rep = build_report(read_capture(datapath("report", "small.iolens")))
    rnd = random.Random(11)
    floats = _floats(rnd, 3000)
    base = rep.files[0]
    rows = []
    for i in range(RC._PART + 1500):  # more than one part
        f = floats[i % len(floats)]
        bd = {k: floats[(i * 7 + j) % len(floats)] if (i + j) % 3 else 0.0 for j, k in enumerate(base.breakdown)}
        rows.append(dataclasses.replace(
            base, path=NAMES[i % len(NAMES)] + str(i), mount=NAMES[(i // 3) % len(NAMES)], time_s=f, breakdown=bd,
            first_s=None if i % 5 else -f, last_s=floats[(i * 3) % len(floats)], times_read=None if i % 2 else abs(f),
            lifetime_s=f if i % 4 else None, tools=["samtools", "x\"y", "a,b", "\x1b]8;;", "\udcff"][: i % 6],
            flags=["CREATED"] if i % 2 else [], text_format=None if i % 2 else "vcf", read_hist=[i, 0, 3][: 1 + i % 3],
            write_hist=[7, i], bytes_read=i * 4097, temporary=bool(i % 2), reads=-i))
    return dataclasses.replace(rep, files=rows)


def test_csv_by_column_is_the_row_writers_bytes(big):
    assert RC._by_column(big.files[: RC._PART]) is not None  # the rows above are written a column at a time
    got = b"".join(RC.iter_csv(big))
    assert got == _row_by_row(big)


def test_csv_of_values_of_another_type_than_their_fields_is_the_row_writers(big):
    odd = [dataclasses.replace(big.files[i]) for i in range(40)]
    odd[1].time_s = 3  # an int where a float is expected
    odd[2].reads = 2.5  # a float where an int is
    odd[3].size = True
    odd[4].breakdown = {**odd[4].breakdown, "sync": 1}
    odd[5].tools = [1, 2.5, None]  # a list's items are written as text, whatever they are: still by column
    odd[6].read_hist = [True, 2]
    odd[7].kind = 7
    odd[8].created = 1
    odd[9].path = None
    for i, r in enumerate(odd[1:10], 1):
        rep = dataclasses.replace(big, files=[*odd[:1], r, *odd[10:]])
        assert (RC._by_column(rep.files) is None) == (i not in (5, 6)), r  # else written row by row, as before
        assert b"".join(RC.iter_csv(rep)) == _row_by_row(rep)
    mixed = dataclasses.replace(big, files=[*big.files, *odd])  # one part by column, the last one row by row
    assert b"".join(RC.iter_csv(mixed)) == _row_by_row(mixed)


def test_csv_rows_read_back(big):
    text = b"".join(RC.iter_csv(big)).decode("utf-8", "surrogateescape")
    rows = list(csv.DictReader(io.StringIO(text, newline="")))
    assert len(rows) == len(big.files)
    for row, f in zip(rows, big.files):
        assert row["path"] == csv_text(f.path) and row["tools"] == csv_text(";".join(f.tools))
        assert row["reads"] == str(f.reads) and row["read_hist"] == ";".join(map(str, f.read_hist))
        t = float(row["time_s"])
        assert (math.isnan(t) and math.isnan(f.time_s)) or t == float(f"{f.time_s:.9g}")
        assert row["sync_s"] == f"{f.breakdown['sync']:.9f}"
        assert row["first_s"] == ("" if f.first_s is None else f"{f.first_s:.9g}")
        assert "\n" not in row["path"] and "\x1b" not in row["path"]


def _scale_capture():
    bench = Path(__file__).resolve().parents[1] / "benchmarks"
    spec = importlib.util.spec_from_file_location("report_scale", bench / "report_scale.py")
    assert spec and spec.loader
    mod = importlib.util.module_from_spec(spec)
    sys.path.insert(0, str(bench))
    try:
        spec.loader.exec_module(mod)
    finally:
        sys.path.remove(str(bench))
    return mod.make_capture


def test_html_page_of_a_large_capture_stays_under_the_limit(tmp_path):
    """4,000 files and 400 processes: both tables cut to what fits, each saying how many it shows of how many."""
    from iolens.render.report_html import render_html

    cap = tmp_path / "big.iolens"
    _scale_capture()(cap, 400, 4000)
    rep = build_report(read_capture(str(cap)))
    page = render_html(rep).decode()
    assert len(page.encode()) < 1_500_000
    files = re.search(r'<table class="sortable" id="files">(.*?)</table>', page, re.S).group(1)
    procs = re.search(r'<table class="sortable" id="processes">(.*?)</table>', page, re.S).group(1)
    shown_files, shown_procs = files.count("<tr>") - 1, procs.count("<tr>") - 1  # less the header row
    assert 100 < shown_files < 4000 and 50 < shown_procs < 400
    assert f"Showing the {shown_files:,} files with the most I/O time of 4,000" in page
    assert f"Showing the first {shown_procs:,} of 400 processes" in page
