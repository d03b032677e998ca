"""The analysis layer's seams: one model, process images keyed by their index, op sets from the format."""

from __future__ import annotations

import subprocess
import sys

from helpers.capture import build_capture, fil, proc
from iolens import _format as F
from iolens.analysis import advice as A
from iolens.analysis import model as M
from iolens.analysis.report import Report, build_report, top_advice
from iolens.analysis.summary import summarize
from iolens.render import compare_html, htmlsafe, report_html


def exec_chain_at_one_instant():
    """sh execs cat within the same nanosecond: two images of one pid with one start time."""
    return build_capture([
        proc(10, ["sh", "-c", "exec cat x"], start=0.0, end=0.0, execed=True,
             files=[fil("/data/a", reads=1, read_size=10)]),
        proc(10, ["cat", "x"], start=0.0, end=2.0, files=[fil("/data/x", reads=100, read_size=4096, read_time=0.5)]),
    ])


def test_images_of_one_pid_starting_together_each_keep_their_row():
    r = build_report(exec_chain_at_one_instant())
    assert [(p.index, p.name) for p in r.processes] == [(0, "sh"), (1, "cat")]
    assert r.processes[1].bytes_read == 100 * 4096 and r.processes[0].bytes_read == 10


def test_summary_tree_and_report_rows_are_the_same_images_in_the_same_order():
    cap = build_capture([
        proc(1, ["sh", "run.sh"], start=0, end=10, wait=8),
        proc(3, ["gzip"], ppid=1, start=5, end=9, files=[fil("/data/b.gz", writes=10, write_size=1 << 16)]),
        proc(2, ["cat"], ppid=1, start=1, end=4, files=[fil("/data/a", reads=10, read_size=1 << 16)]),
    ])
    tree = summarize(cap).tree
    rows = build_report(cap).processes
    assert [(s.pid, s.depth, s.start_s, s.own_s) for s in tree] == [(p.pid, p.depth, p.start_s, p.own_s) for p in rows]
    assert [p.name for p in rows] == ["sh", "cat", "gzip"]


def test_op_sets_come_from_the_format_once():
    meta = {n for n, c in F.OPS if c == "META"}
    assert M.SYNC_OPS == {n for n, c in F.OPS if c == "SYNC"}
    assert {"OPEN", "STAT", "READDIR", "GETDENTS", "UNLINK", "RENAME"} <= M.META_OPS <= meta
    assert A.META_OPS is M.META_OPS and A.SYNC_OPS is M.SYNC_OPS


def test_advice_reads_the_model_without_importing_the_report_builder():
    code = "import sys, iolens.analysis.advice; print('iolens.analysis.report' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60)
    assert out.stdout.strip() == "False"
    # top_advice takes a capture or a built report
    cap = exec_chain_at_one_instant()
    assert top_advice(cap, n=5) == top_advice(build_report(cap), n=5)
    assert isinstance(build_report(cap, advise=False), Report)


def test_one_html_escape_for_every_page():
    assert htmlsafe.esc('<a href="x">&\'') == "&lt;a href=&quot;x&quot;&gt;&amp;&#x27;"
    assert report_html._h is htmlsafe.esc_line and compare_html.esc is htmlsafe.esc
    assert htmlsafe.esc("a\nb") == "a\nb" and htmlsafe.esc_line("a\nb") == "a\\nb"
    assert "<" not in htmlsafe.script_json({"p": "</script><b>"})
