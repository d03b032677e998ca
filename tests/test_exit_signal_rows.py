"""A process killed by a signal is named by its signal in every process table (terminal report, end-of-run
summary, HTML report), as the run's header names the command's: `SIGSEGV`, not the bare 139 a shell would also
return from `exit 139`."""

from __future__ import annotations

import re

import pytest

from conftest import iolens
from iolens.analysis.report import build_report

SCRIPT = 'sh -c "kill -SEGV \\$\\$"; exit 139'


@pytest.fixture
def killed(profiled, tmp_path):
    """A profiled bash whose child sh dies of SIGSEGV and which then exits 139 itself (no signal)."""
    res, cap = profiled(["bash", "-c", SCRIPT])
    assert cap is not None, res.stderr
    return res, cap, sorted(tmp_path.glob("run*.iolens"))[-1]


def _row(text: str, name: str) -> str:
    rows = [line for line in text.splitlines() if re.search(rf"\b{name} \[\d+\]", line)]
    assert rows, text
    return rows[0]


def test_rows_name_the_signal(killed, tmp_path):
    res, cap, path = killed
    rep = build_report(cap)
    dead = [p for p in rep.processes if p.exit_signal is not None]
    assert [(p.exit_status, p.exit_signal) for p in dead] == [(139, 11)], [(p.name, p.exit_status, p.ended)
                                                                          for p in rep.processes]
    child = dead[0].name  # sh (dash on Debian)

    out = iolens("report", path, check=True).stdout
    assert _row(out, child).rstrip().endswith("SIGSEGV"), out
    assert _row(out, "bash").rstrip().endswith("139"), out  # bash's own exit 139 is a status, not a signal

    summary = iolens("profile", "-o", tmp_path / "again.iolens", "--", "bash", "-c", SCRIPT, cwd=tmp_path).stderr
    assert _row(summary, child).rstrip().endswith("SIGSEGV"), summary
    assert _row(summary, "bash").rstrip().endswith("139"), summary

    page = tmp_path / "r.html"
    iolens("report", path, "--html", page, check=True)
    html = page.read_text()
    assert re.search(rf"{child} \[\d+\]</td>(?:<td[^>]*>[^<]*</td>){{9}}<td[^>]*>SIGSEGV</td>", html), \
        re.findall(r"<tr>.{0,600}", html)[:4]
