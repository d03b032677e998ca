"""The report tells the truth: end-of-file reads, programs the loader maps, exec chains, partial captures."""

from __future__ import annotations

import io
import json
import re
import shutil

import pytest
from rich.console import Console

from conftest import iolens
from helpers.capture import build_capture, capture_bytes, fil, hist_bin, proc, write_capture
from iolens import _format as F
from iolens.analysis.processes import chain_rows
from iolens.analysis.report import build_report
from iolens.analysis.summary import summarize
from iolens.capture.reader import decode, read_capture
from iolens.render.report_html import render_html
from iolens.render.report_json import render_json
from iolens.render.report_text import render_report_text
from iolens.render.summary_text import render_summary

pytestmark = pytest.mark.timeout(120)
MiB = 1 << 20


def text(r) -> str:
    buf = io.StringIO()
    render_report_text(r, Console(file=buf, width=160, color_system=None, highlight=False))
    return buf.getvalue()


def read_classes(r, path):
    f = next(f for f in r.files if f.path == path)
    return {k: v for k, v in f.breakdown.items() if k.endswith("_read") and v > 0}


# ---- the empty read at end of file ---------------------------------------------------------------


def dd_file(eof_reads: int = 1, opens: int = 1):
    hist = [0] * F.HIST_BINS
    hist[hist_bin(4096)] = 10240
    hist[0] = eof_reads
    return fil("/data/f", reads=10240 + eof_reads, read_size=4096, read_hist=hist, bytes_read=10240 * 4096,
               read_time=0.5, opens=opens)


@pytest.mark.parametrize("eof", [0, 1])
def test_dd_4k_stream_is_small_with_or_without_its_eof_read(eof):
    r = build_report(build_capture([proc(10, ["dd", "if=f", "bs=4096"], end=1.0, files=[dd_file(eof)])]))
    assert set(read_classes(r, "/data/f")) == {"small_read"}
    f = next(f for f in r.files if f.path == "/data/f")
    assert f.reads == 10240 + eof  # the empty read is still a call


def test_short_reads_beyond_one_per_open_still_count_as_tiny():
    r = build_report(build_capture([proc(10, ["x"], end=1.0, files=[dd_file(eof_reads=50)])]))
    assert read_classes(r, "/data/f").get("tiny_read", 0) > 0


def test_a_file_of_only_short_reads_stays_tiny():
    r = build_report(build_capture([proc(10, ["x"], end=1.0, files=[
        fil("/data/g", reads=1, read_size=0, read_time=0.1)])]))
    assert set(read_classes(r, "/data/g")) == {"tiny_read"}


def test_real_dd_with_its_eof_read_is_small(profiled, tmp_path):
    shutil.which("dd") or pytest.skip("no dd")
    data = tmp_path / "f.bin"
    data.write_bytes(b"\1" * (10240 * 4096))
    res, cap = profiled(["dd", f"if={data}", "of=/dev/null", "bs=4096"])
    assert res.returncode == 0, res.stderr
    rec = next(f for p in cap.processes for f in p.files if f["path"] == str(data))
    assert rec["read_hist"][0] == 1 and rec["reads"] == 10241  # the capture holds the empty read
    r = build_report(cap)
    assert set(read_classes(r, str(data))) == {"small_read"}


# ---- programs the loader maps ----------------------------------------------------------------------


def loader_capture():
    return build_capture([
        proc(10, ["bash", "-c", "samtools sort in.sam"], end=0.01, execed=True, files=[
            fil("/usr/bin/samtools", stats=1, meta_time=2e-6)]),
        proc(10, ["samtools", "sort", "in.sam"], exe="/usr/bin/samtools", start=0.01, end=5.0, files=[
            fil("/usr/lib/x86_64-linux-gnu/libhts.so.3", stats=1, meta_time=3e-6),
            fil("/data/in.sam", reads=100, read_size=1 << 16, read_time=1.0),
            fil("/data/tool.so", reads=10, read_size=4096, read_time=0.1)]),  # read as data: a real file row
    ])


def test_programs_are_left_out_of_top_files_but_kept_in_json():
    r = build_report(loader_capture())
    out = text(r)
    top = out.split("Top files by I/O time")[1].split("Phases")[0]
    assert "/data/in.sam" in top and "/data/tool.so" in top
    assert "/usr/bin/samtools" not in top and "libhts.so.3" not in top
    d = json.loads(render_json(r))
    prog = {f["path"]: f["program"] for f in d["files"]}
    assert prog["/usr/bin/samtools"] and prog["/usr/lib/x86_64-linux-gnu/libhts.so.3"]
    assert not prog["/data/in.sam"] and not prog["/data/tool.so"]
    page = render_html(r, plotly_js="").decode()
    files_table = page.split('id="files"')[1].split("</table>")[0]
    assert "/data/in.sam" in files_table and "/usr/bin/samtools" not in files_table
    summary_top = [f.path for f in summarize(loader_capture()).top_files]
    assert "/usr/bin/samtools" not in summary_top and "/data/in.sam" in summary_top


# ---- exec chains ---------------------------------------------------------------------------------


def chain_capture():
    """bash forks minimap2 at 0.1 s, waits for it, then execs samtools sort at 4 s, which forks nothing."""
    return build_capture([
        proc(100, ["bash", "-c", "minimap2 ref.fa r.fq > aln.sam && samtools sort aln.sam"], start=0.0, end=4.0,
             execed=True, wait=3.8),
        proc(101, ["minimap2", "ref.fa", "r.fq"], ppid=100, start=0.1, end=3.9,
             files=[fil("/data/aln.sam", writes=100, write_size=1 << 16, write_time=0.5)]),
        proc(100, ["samtools", "sort", "aln.sam"], start=4.0, end=7.0,
             files=[fil("/data/aln.sam", reads=100, read_size=1 << 16, read_time=0.4)]),
        proc(102, ["gzip"], ppid=100, start=5.0, end=6.0),  # forked by samtools sort
    ], {"parent_pid": 1})


def test_exec_chain_is_one_process_with_children_under_the_image_that_forked_them():
    r = build_report(chain_capture())
    rows = [(p.name, p.depth, p.parent_index, p.exec_from) for p in r.processes]
    assert rows == [("bash", 0, None, None), ("minimap2", 1, 0, None), ("samtools sort", 0, None, 0),
                    ("gzip", 1, 2, None)]
    assert r.processes[0].chain == ["bash", "samtools sort"] and r.processes[0].chain_indices == [0, 2]
    chains = chain_rows(r.processes)
    assert [(c.label, c.depth) for c in chains] == [("bash → samtools sort", 0), ("minimap2", 1), ("gzip", 1)]
    assert chains[0].start_s == 0 and chains[0].wall_s == pytest.approx(7.0)
    out = text(r)
    tree = out.split("Phases (process tree)")[1].split("Advice")[0]
    lines = [ln for ln in tree.splitlines() if "[" in ln]
    assert lines[0].lstrip().startswith("bash → samtools sort [100]")
    assert lines[1].startswith("  minimap2 [101]") and lines[2].startswith("  gzip [102]")
    d = json.loads(render_json(r))
    assert d["processes"][1]["parent_index"] == 0 and d["processes"][2]["chain"] == ["bash", "samtools sort"]


def test_summary_tree_shows_the_chain_as_one_process():
    buf = io.StringIO()
    render_summary(summarize(chain_capture()), Console(file=buf, width=160, color_system=None))
    tree = buf.getvalue().split("Processes")[1]
    lines = [ln for ln in tree.splitlines() if "[" in ln]
    assert lines[0].startswith("bash → samtools [100]")  # the summary names images by their executable
    assert lines[1].startswith("  minimap2 [101]") and lines[2].startswith("  gzip [102]")


def test_html_gantt_has_a_row_per_process_a_bar_per_image_and_titles():
    page = render_html(build_report(chain_capture()), plotly_js="").decode()
    data = json.loads(re.search(r'id="iolens-data">(.*?)</script>', page, re.S).group(1))
    ph = data["phases"]
    assert [r.strip() for r in ph["rows"]] == ["bash → samtools sort [100]", "minimap2 [101]", "gzip [102]"]
    assert [(b["row"], b["name"]) for b in ph["bars"]] == [(0, "bash"), (0, "samtools sort"), (1, "minimap2"),
                                                            (2, "gzip")]
    gantt = page.split("// phases:")[1].split("// per mount")[0]
    assert 'xaxis:{title:{text:"seconds from the start"}' in gantt and "text:B.map" in gantt
    # the rows and the colours are said in the section's note, which wraps at any width (an axis title does not)
    note = page.split("<h2>Phases</h2>")[1].split("</p>")[0]
    assert "One row per process (its exec chain" in note and 'class="grad"' in note and "storage I/O" in note
    assert "bash → samtools sort [100]" in page.split('id="processes"')[1]


def test_real_bash_exec_chain(profiled, tmp_path):
    res, cap = profiled(["bash", "-c", "cat /dev/null > out.txt && sleep 0.2 && exec cat out.txt"])
    assert res.returncode == 0, res.stderr
    r = build_report(cap)
    chains = chain_rows(r.processes)
    root = chains[0]
    assert root.label == "bash → cat" and root.depth == 0
    kids = [c for c in chains[1:] if c.depth == 1]
    assert [c.label.rsplit(" → ", 1)[-1] for c in kids] == ["cat", "sleep"]  # forked by bash, by start
    assert all(r.processes[[p.index for p in r.processes].index(c.images[0])].parent_index == root.images[0]
               for c in kids)


# ---- partial captures and OVERFLOW -----------------------------------------------------------------


def record_offsets(data: bytes) -> list[int]:
    from iolens.capture.container import FILE_HDR, REC_HDR

    pos, out = FILE_HDR.unpack_from(data, 0)[3], []
    while pos + REC_HDR.size <= len(data):
        kid, _v, size = REC_HDR.unpack_from(data, pos)
        if kid == 0:
            break
        out.append(pos)
        pos += REC_HDR.size + size
    return out


@pytest.fixture(scope="module")
def real_capture(tmp_path_factory):
    d = tmp_path_factory.mktemp("real")
    (d / "f.bin").write_bytes(b"x" * (4 * MiB))
    cap = d / "run.iolens"
    script = "cat f.bin > g.bin && cat g.bin > /dev/null && wc -c f.bin"
    res = iolens("profile", "-q", "-o", cap, "--", "bash", "-c", script, cwd=d)
    assert res.returncode == 0, res.stderr
    return cap


def test_real_capture_cut_at_several_offsets_is_reported_partial(real_capture, tmp_path):
    data = real_capture.read_bytes()
    whole = iolens("report", real_capture, "--json", "-")
    assert whole.returncode == 0 and json.loads(whole.stdout)["capture"]["partial"] is False
    assert json.loads(whole.stdout)["capture"]["partial_at_byte"] is None
    offs = record_offsets(data)
    files = [o for o in offs if data[o] == F.KINDS["FILE"][0]]
    points = [offs[len(offs) // 2] + 20, offs[-1] + 12]  # mid-record
    points += [o for o in offs if data[o] == F.KINDS["PROC"][0]][1:]  # at record boundaries: whole images lost
    points.append(files[-1])  # at a boundary inside the last image: its last file record lost
    for at in points:
        cut = tmp_path / f"cut{at}.iolens"
        cut.write_bytes(data[:at])
        res = iolens("report", cut, "--json", tmp_path / f"cut{at}.json", "--html", tmp_path / f"cut{at}.html")
        assert res.returncode == 3, (at, res.stderr)
        assert "Traceback" not in res.stderr and "reporting what came before it" in res.stderr
        assert "PARTIAL CAPTURE at byte" in res.stdout, at
        cap = json.loads((tmp_path / f"cut{at}.json").read_text())["capture"]
        assert cap["partial"] is True and cap["complete"] is False
        assert 0 < cap["partial_at_byte"] <= at and cap["partial_reason"]
        assert "PARTIAL CAPTURE at byte" in (tmp_path / f"cut{at}.html").read_text()
        assert "static binary" not in res.stdout


def test_partial_coverage_advice_names_the_cut_not_static_binaries():
    procs = [
        proc(10, ["bash", "-c", "cat a > b"], end=2.0, wait=1.5, kernel_read=200 * MiB, kernel_written=0,
             children=[{"pid": 11, "status": 0, "end": 1.9}]),
        proc(11, ["cat", "a"], ppid=10, start=0.1, end=1.9,
             files=[fil("/data/a", reads=1600, read_size=1 << 16, read_time=0.5)]),
    ]
    data = capture_bytes(procs, {"parts": 2})
    second = [o for o in record_offsets(data) if data[o] == F.KINDS["PROC"][0]][1]
    r = build_report(decode(data[:second], "cut.iolens"))  # cut at a record boundary: the reader sees no damage
    assert r.capture["partial"] and "1 of the 2 process images" in r.capture["partial_reason"]
    cov = next(a for a in r.advice if a.rule == "low_coverage")
    said = " ".join([cov.title, cov.fix, *cov.evidence])
    assert "partial" in cov.title and "static" not in said and "mmap" not in said


def test_overflow_reaches_the_report_as_itself(tmp_path):
    procs = [proc(10, ["find", "/data"], end=2.0, kernel_read=64 * MiB,
                  files=[fil("/data/a", reads=10, read_size=4096, read_time=0.1)])]
    data = bytearray(capture_bytes(procs))
    # set OVERFLOW on the PROC record's flags (the second u64 after pid, ppid)
    from iolens.capture.container import REC_HDR

    at = next(o for o in record_offsets(bytes(data)) if data[o] == F.KINDS["PROC"][0]) + REC_HDR.size
    off = next(o for n, _t, _c, o in F.LAYOUTS["PROC"][3] if n == "flags")
    flags = int.from_bytes(data[at + off: at + off + 8], "little") | F.PROC_FLAGS["OVERFLOW"][0]
    data[at + off: at + off + 8] = flags.to_bytes(8, "little")
    path = tmp_path / "o.iolens"
    path.write_bytes(bytes(data))
    r = build_report(read_capture(path))
    assert r.capture["overflow_processes"] == 1 and r.processes[0].overflow and not r.capture["partial"]
    assert "OVERFLOW" in text(r)
    cov = next(a for a in r.advice if a.rule == "low_coverage")
    ev = " ".join(cov.evidence)
    assert "OVERFLOW" in ev and "static binary" not in ev
    res = iolens("report", path)
    assert res.returncode == 0


def test_whole_crafted_capture_is_not_partial(tmp_path):
    path = write_capture(tmp_path / "w.iolens", [proc(10, ["true"])], {"parts": 1})
    res = iolens("report", path, "--json", "-")
    assert res.returncode == 0
    cap = json.loads(res.stdout)["capture"]
    assert (cap["partial"], cap["partial_at_byte"], cap["partial_reason"]) == (False, None, None)
