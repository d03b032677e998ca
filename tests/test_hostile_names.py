"""Hostile file names in every output.

A real program (Python) creates, writes and reads files whose names hold bytes that are not UTF-8, terminal escape
sequences (clear screen, window title, an OSC-8 link), a newline, text that looks like rich markup, a bidi override,
HTML, and a very long name.  Then: the terminal outputs (profile summary, report, diff, parse) carry no ESC or BEL
byte, no raw bidi override and no row split by a newline, and show each name visibly; `--json` is valid UTF-8 JSON
that gives every name back byte for byte; `--csv` parses with its stated encoding and gives every name back; the
HTML page escapes the names and loads without running them.
"""

from __future__ import annotations

import csv
import io
import json
import os
import re
import sys

import pytest

from conftest import iolens

NAMES = [
    b"bad\xff.txt",
    b"\x1b[2J.txt",
    b"\x1b]0;title\x07.txt",
    b"\x1b]8;;https:x\x1b\\link\x1b]8;;\x1b\\.txt",
    b"new\nline.txt",
    b"[red]c.iolens",
    b"[bold",
    "\u202eevil.txt".encode(),
    b"<script>alert(1).txt",
    b'<img src=x onerror="window.pwned=1">.txt',
    b"L" * 240,
]
# how the terminal shows each name (iolens.names.shown)
SHOWN = [
    "bad\\xff.txt",
    "\\e[2J.txt",
    "\\e]0;title\\x07.txt",
    "\\e]8;;https:x\\e\\link\\e]8;;\\e\\.txt",
    "new\\nline.txt",
    "[red]c.iolens",
    "[bold",
    "\\u202eevil.txt",
    "<script>alert(1).txt",
]
WIDE = {"COLUMNS": "600"}  # wide enough that no name is ellipsized

PROGRAM = """
import os, sys
os.chdir(sys.argv[1])
for name in {names!r}:
    fd = os.open(name, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    for _ in range(400):
        os.write(fd, b"x" * 512)
    os.close(fd)
    fd = os.open(name, os.O_RDONLY)
    while os.read(fd, 512):
        pass
    os.close(fd)
"""


def run(*args, env=None):
    """iolens as bytes, so that any raw byte that reaches the terminal is seen."""
    return iolens(*args, text=False, env={**os.environ, **(env or {})})


def clean(out: bytes) -> None:
    """Nothing in `out` drives a terminal: no ESC, BEL or other C0 control but newline, no raw bidi control."""
    assert b"\x1b" not in out and b"\x07" not in out
    assert not re.search(rb"[\x00-\x08\x0b-\x1f\x7f]", out)
    text = out.decode("utf-8")  # and it is valid UTF-8
    assert not re.search("[\u202a-\u202e\u2066-\u2069\x80-\x9f]", text)
    assert "\nline.txt" not in text  # a newline in a name never splits a line


def names_in(paths) -> set[bytes]:
    return {os.path.basename(os.fsencode(p)) for p in paths}


@pytest.fixture(scope="module")
def hostile(tmp_path_factory):
    d = tmp_path_factory.mktemp("hostile")
    work = d / "work"
    work.mkdir()
    cap = d / "run.iolens"
    res = run("profile", "--trace", "-o", cap, "--", sys.executable, "-c", PROGRAM.format(names=NAMES), work,
              env=WIDE)
    assert res.returncode == 0, res.stderr
    assert set(NAMES) <= set(os.listdir(os.fsencode(work)))
    return d, cap, res


def test_the_display_form():
    from iolens.names import json_safe, shown, utf8

    assert [shown(os.fsdecode(n)) for n in NAMES[:9]] == SHOWN
    assert shown("plain ü 漢字 name.bam") == "plain ü 漢字 name.bam"
    assert shown("a\u00a0b") == "a\u00a0b"  # a no-break space stays a space
    assert shown("\r\t\x00\x7f\x9b\u2028\ufeff\U000e0001") == "\\r\\t\\x00\\x7f\\x9b\\u2028\\ufeff\\U000e0001"
    assert shown("a\nb\tc\x1b", lines=True) == "a\nb\tc\\e"
    assert json.loads(json_safe(json.dumps({"p": "bad\udcff"}, ensure_ascii=False))) == {"p": "bad\udcff"}
    assert utf8("bad\udcff.txt") == b"bad\xff.txt" and utf8("x\ud800") == b"x\\ud800"


def test_rich_never_reads_a_name_as_markup():
    from rich.text import Text

    from iolens.render.terminal import Col, FitTable, console

    con = console(file=io.StringIO(), force_terminal=False)
    t = FitTable([Col("file", "left", flex="left"), Col("n")])
    t.add_row("[red]c.iolens", "[bold")
    t.add_row(Text("a\x1b[2Jb\nc"), "1")
    con.print(t)
    con.print("[red]c.iolens :smile:")
    out = con.file.getvalue()
    assert "[red]c.iolens" in out and "[bold" in out and ":smile:" in out
    assert "a\\e[2Jb\\nc" in out and "\x1b" not in out


def test_profile_summary(hostile):
    _d, _cap, res = hostile
    clean(res.stdout)
    clean(res.stderr)
    err = res.stderr.decode()
    assert "Top files by I/O time" in err
    assert any(s in err for s in SHOWN)


def test_report_terminal(hostile):
    _d, cap, _res = hostile
    res = run("report", cap, "--top", "100", env=WIDE)
    assert res.returncode == 0, res.stderr
    clean(res.stdout)
    clean(res.stderr)
    out = res.stdout.decode()
    for s in SHOWN:
        assert s in out, s
    assert "L" * 60 in out


def test_report_json_round_trips_every_name(hostile):
    _d, cap, _res = hostile
    res = run("report", cap, "--json", "-")
    assert res.returncode == 0, res.stderr
    text = res.stdout.decode("utf-8")  # valid UTF-8
    assert "bad\\udcff.txt" in text  # the byte that is not UTF-8, as a surrogate escape
    doc = json.loads(text)
    assert set(NAMES) <= names_in(f["path"] for f in doc["files"])
    clean(res.stderr)


def test_report_csv_parses_with_its_stated_encoding(hostile, tmp_path):
    from iolens.names import csv_text

    _d, cap, _res = hostile
    out = tmp_path / "files.csv"
    res = run("report", cap, "-q", "--csv", out, "--json", tmp_path / "r.json")
    assert res.returncode == 0, res.stderr
    with open(out, encoding="utf-8", errors="surrogateescape", newline="") as f:
        rows = list(csv.DictReader(f))
    # every name in its one field, control characters spelled out as in the terminal, other text as it is
    assert {os.fsencode(csv_text(os.fsdecode(n))) for n in NAMES} <= names_in(r["path"] for r in rows)
    assert len(rows) == len(json.loads((tmp_path / "r.json").read_text())["files"])  # no row split
    raw = out.read_bytes()
    assert b"bad\xff.txt" in raw  # the name's own bytes
    assert not re.search(rb"[\x00-\x09\x0b-\x1f\x7f]", raw) and "\u202e".encode() not in raw
    assert "surrogateescape" in iolens("report", "--help").stdout  # the encoding is stated


CSV_NAMES = {  # a name as a program made it -> the CSV field it must come back as
    "esc\x1b[2Jclear.txt": "esc\\e[2Jclear.txt",
    "\x1b]8;;https://x.example\x1b\\osc8\x1b]8;;\x1b\\.txt": "\\e]8;;https://x.example\\e\\osc8\\e]8;;\\e\\.txt",
    "bell\x07.txt": "bell\\x07.txt",
    "carriage\rreturn.txt": "carriage\\rreturn.txt",
    "\u202eevil.txt": "\\u202eevil.txt",
    "new\nline.txt": "new\\nline.txt",
    "a,comma.txt": "a,comma.txt",
    'a "quoted" name.txt': 'a "quoted" name.txt',
    'mixed, "all"\r\n\x1b.txt': 'mixed, "all"\\r\\n\\e.txt',
    "plain ü 漢字 name.bam": "plain ü 漢字 name.bam",
    "bad\udcff.txt": "bad\udcff.txt",  # a byte that is not UTF-8 keeps its byte
}


def test_csv_escapes_control_characters_and_quotes_per_rfc4180(tmp_path):
    """A crafted capture whose file names hold ESC sequences, an OSC 8 link, BEL, CR, a bidi override, a newline,
    commas and quotes: the CSV has no raw control byte, every row parses back with Python's csv module to one
    field per name, and printable text (commas, quotes, accents, a byte that is not UTF-8) comes back exactly."""
    from helpers.capture import fil, proc, write_capture

    files = [fil(f"/data/{name}", reads=3, read_size=4096, read_time=0.01) for name in CSV_NAMES]
    cap = write_capture(tmp_path / "c.iolens", [proc(10, ["tool"], start=0, end=1, files=files)])
    out = tmp_path / "f.csv"
    res = run("report", cap, "-q", "--csv", out)
    assert res.returncode == 0, res.stderr
    raw = out.read_bytes()
    assert not re.search(rb"[\x00-\x09\x0b-\x1f\x7f]", raw), "a raw control byte (or CR) in the CSV"
    text = raw.decode("utf-8", "surrogateescape")
    assert not re.search("[\u202a-\u202e\u2066-\u2069\x80-\x9f]", text)
    assert len(text.splitlines()) == 1 + len(CSV_NAMES)  # a header, then one line per file: no row split
    with open(out, encoding="utf-8", errors="surrogateescape", newline="") as f:
        rows = list(csv.DictReader(f))
    got = sorted(r["path"] for r in rows if r["path"].startswith("/data/"))
    assert got == sorted(f"/data/{field}" for field in CSV_NAMES.values())
    assert '"/data/a ""quoted"" name.txt"' in text and '"/data/a,comma.txt"' in text  # RFC 4180 quoting


def test_results_csv_spells_out_control_characters():
    from iolens.render.bench_export import CSV_FIELDS, results_csv

    runs = [{"id": 1, "kind": "bench", "label": "x\x1b]0;t\x07\r\n,\"y\"", "host": "h\u202e",
             "results": [{"target": "/mnt/a,b", "name": "seq\rread", "metrics": {"read_mib_s": 1.5}}]}]
    raw = results_csv(runs)
    assert not re.search(rb"[\x00-\x09\x0b-\x1f\x7f]", raw) and "\u202e".encode() not in raw
    (row,) = list(csv.DictReader(io.StringIO(raw.decode(), newline="")))
    assert list(row) == CSV_FIELDS
    assert (row["label"], row["host"], row["target"], row["name"]) == (
        'x\\e]0;t\\x07\\r\\n,"y"', "h\\u202e", "/mnt/a,b", "seq\\rread")


def test_report_html_escapes_names(hostile, tmp_path):
    _d, cap, _res = hostile
    out = tmp_path / "r.html"
    res = run("report", cap, "-q", "--html", out)
    assert res.returncode == 0, res.stderr
    page = out.read_bytes().decode("utf-8")
    assert "<script>alert(1)" not in page and "<img src=x" not in page
    assert "&lt;script&gt;alert(1).txt" in page and "bad\\xff.txt" in page and "\\e[2J.txt" in page
    assert "\x1b" not in page and "\u202e" not in page
    data = re.search(r'<script type="application/json" id="iolens-data">(.*?)</script>', page, re.S)
    assert data is not None
    json.loads(data.group(1))


def test_report_html_page_loads_and_runs_no_name(hostile, tmp_path):
    helpers = pytest.importorskip("helpers.browser")
    _d, cap, _res = hostile
    out = tmp_path / "r.html"
    assert run("report", cap, "-q", "--html", out).returncode == 0
    try:
        ctx = helpers.load_page(out, screenshot=tmp_path / "r.png", width=1280, height=800)
        page = ctx.__enter__()
    except Exception as err:  # no browser on this machine
        pytest.skip(f"no headless browser: {err}")
    try:
        assert page.console_errors == []
        assert page.evaluate("() => window.pwned === undefined")
        assert page.evaluate("() => document.querySelectorAll('img').length") == 0
        assert page.evaluate("() => document.body.textContent.includes('<script>alert(1).txt')")
    finally:
        ctx.__exit__(None, None, None)


def test_chrome_trace_and_diff(hostile, tmp_path):
    _d, cap, _res = hostile
    res = run("report", cap, "-q", "--chrome-trace", tmp_path / "t.json")
    assert res.returncode == 0, res.stderr
    doc = json.loads((tmp_path / "t.json").read_bytes().decode("utf-8"))
    files = {e["args"].get("file") for e in doc["traceEvents"] if e.get("args", {}).get("file")}
    assert set(NAMES) <= names_in(files)
    res = run("diff", cap, cap, "--top", "100", env=WIDE)
    assert res.returncode == 0, res.stderr
    clean(res.stdout)
    clean(res.stderr)
    assert "\\e[2J.txt" in res.stdout.decode()
    res = run("diff", cap, cap, "--json", "-")
    assert res.returncode == 0, res.stderr
    assert set(NAMES) <= names_in(f["key"] for f in json.loads(res.stdout.decode("utf-8"))["files"])


def test_parse(hostile):
    _d, cap, _res = hostile
    res = run("parse", cap)
    assert res.returncode == 0, res.stderr
    clean(res.stdout)
    res = run("parse", cap, "--json")
    assert res.returncode == 0, res.stderr
    doc = json.loads(res.stdout.decode("utf-8"))
    assert set(NAMES) <= names_in(f["path"] for p in doc["processes"] for f in p["files"])


@pytest.mark.parametrize("name", [b"\x1b]0;pwn\x07[red]x\n\xff" + "\u202e.iolens".encode(), b"[bold.iolens"])
def test_a_capture_whose_own_name_is_hostile(hostile, tmp_path, name):
    _d, cap, _res = hostile
    path = os.path.join(os.fsencode(tmp_path), name)
    data = cap.read_bytes()
    with open(path, "wb") as f:
        f.write(data)
    res = run("report", os.fsdecode(path), "--top", "3", "--html", tmp_path / "r.html", "--json", tmp_path / "r.json")
    assert res.returncode == 0, res.stderr
    clean(res.stdout)
    clean(res.stderr)
    assert os.fsencode(json.loads((tmp_path / "r.json").read_text())["capture"]["path"]) == name
    with open(path, "wb") as f:  # cut short: the warning names the file
        f.write(data[: len(data) * 2 // 3])
    res = run("report", os.fsdecode(path), "-q")
    assert res.returncode == 3
    clean(res.stderr)
    assert "warning" in res.stderr.decode() or "error" in res.stderr.decode()
    os.unlink(path)  # missing: one line
    res = run("report", os.fsdecode(path))
    assert res.returncode == 3
    clean(res.stderr)
    assert res.stderr.count(b"\n") == 1 and b"Traceback" not in res.stderr


def test_bench_table_shows_hostile_target_names():
    from rich.console import Console

    from iolens.render.bench_table import render_bench

    bad = "/mnt/\x1b[2J[red]x\udcff\u202e"
    row = {"target": bad, "test": "seq-read t1", "op": "read", "primary_metric": "throughput_Bps",
           "cache_state": "warm", "warnings": [f"w {bad}"], "notes": [f"n\n{bad}"],
           "metrics": {"throughput_Bps": {"mean": 812e6, "sd": None}}}
    doc = {"targets": [{"name": bad, "fstype": "xfs", "mount_options": "rw,\x1b]0;t\x07", "source": "[bold"}],
           "results": [row], "suites": ["classic"], "repeat": 1, "warnings": [], "run_id": 7, "db": bad}
    con = Console(file=io.StringIO(), width=200, force_terminal=True, color_system=None)
    render_bench(doc, con)
    out = con.file.getvalue()
    assert "\\e[2J[red]x\\xff\\u202e" in out and "[bold" in out and "rw,\\e]0;t\\x07" in out
    clean(out.encode())
