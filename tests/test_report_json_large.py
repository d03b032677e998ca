"""A large report's JSON (over LARGE files, written compactly in parts, its file rows a column at a time) has the
file list as `json.dumps` writes it, whatever the rows hold: floats of every size and sign, zeros, values
that are not finite, None, names that are not UTF-8 or need escapes, and values of another type than their field's.
"""

from __future__ import annotations

import dataclasses
import json
import random

import pytest

from conftest import datapath
from iolens.analysis.report import build_report
from iolens.capture.reader import read_capture
from iolens.names import json_safe
from iolens.render import report_json as RJ


def _floats(rnd: random.Random) -> list[float]:
    edge = [0.0, -0.0, 1.0, -1.0, 1e-4, -1e-4, 9.99999999e-5, 0.99999999995, 0.9999999995, 999999999.4,
            999999999.5, 1e9, 1.5e9, 12.0, 5e-10, -5e-10, 1.5e-9, 2.5e-10, 1e-300, 1e300, 123456789.0, 0.1]
    return edge + [rnd.random() * 10 ** rnd.uniform(-12, 12) * rnd.choice((1, -1)) for _ in range(3000)]


@pytest.fixture(scope="module")
def big():
    rep = build_report(read_capture(datapath("report", "small.iolens")))
    rnd = random.Random(7)
    floats = _floats(rnd)
    names = ["/data/plain.bam", "/data/a \"quoted\", name\n.txt", "/data/\udcff\udcfenot-utf8.fq", "/d/é€😀.vcf",
             "/d/back\\slash\t\x1b[31m", "/d/\u202eevil"]
    base = rep.files[0]
    rows = []
    for i in range(RJ.LARGE + 500):
        f = floats[i % len(floats)]
        bd = {k: floats[(i * 7 + j) % len(floats)] if (i + j) % 3 else 0.0 for j, k in enumerate(base.breakdown)}
        row = dataclasses.replace(
            base, path=names[i % len(names)] + str(i), time_s=f, breakdown=bd, first_s=None if i % 5 else -f,
            last_s=floats[(i * 3) % len(floats)], times_read=None if i % 2 else abs(f),
            lifetime_s=f if i % 4 else None, tools=["samtools", "x\"y"][: i % 3], flags=["CREATED"] if i % 2 else [],
            text_format=None if i % 2 else "vcf", read_hist=[i, 0, 3], bytes_read=i * 4097, temporary=bool(i % 2))
        rows.append(row)
    rows[3].time_s = float("inf")  # written as null
    rows[4].last_s = float("nan")
    rows[5].breakdown = dict(rows[5].breakdown, sync=float("-inf"))
    rows[6].reads = True  # another type than the field's: written as the encoder writes it
    rows[7].time_s = 3  # an int where a float is expected
    rows[8].breakdown = {"read": 1, "write": 0.5}
    return dataclasses.replace(rep, files=rows)


def test_large_report_rows_are_the_text_of_the_encoder(big):
    """The file list is what json.dumps with the dataclass default writes (the text before rows went by column)."""
    whole = json_safe('"files": ' + RJ._dumps(big.files)).encode()
    got = b"".join(RJ.iter_json(big))
    assert got.count(whole) == 1
    for i in range(0, len(big.files), 701):  # any run of rows, wherever it starts
        assert RJ._rows(big.files[i : i + 701]) == RJ._dumps(big.files[i : i + 701])[1:-1]


def test_large_report_rows_carry_their_values(big):
    doc = json.loads(b"".join(RJ.iter_json(big)))
    assert len(doc["files"]) == len(big.files)
    assert doc["files"][3]["time_s"] is None and doc["files"][4]["last_s"] is None
    assert doc["files"][6]["reads"] is True and doc["files"][7]["time_s"] == 3
    assert doc["files"][22]["time_s"] == round(big.files[22].time_s, 9)


def test_a_large_report_rounds_everything_as_a_small_one_does(big):
    """Only the layout differs between the two ways of writing: every value outside the file list (totals, the
    timeline) is rounded the same (a large report wrote totals such as 90.99900000000001)."""
    rep = dataclasses.replace(big, totals={**big.totals, "wall_s": 90.99900000000001})  # an unrounded sum
    large = json.loads(b"".join(RJ.iter_json(rep)))
    small = json.loads(json.dumps(RJ.report_dict(rep), default=RJ._plain, allow_nan=False))
    assert len(large["files"]) > RJ.LARGE
    assert {k: v for k, v in large.items() if k != "files"} == {k: v for k, v in small.items() if k != "files"}
    assert "90.99900000000001" not in b"".join(RJ.iter_json(rep)).decode()
