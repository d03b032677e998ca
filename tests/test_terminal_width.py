"""Terminal output fits the terminal: run each command with COLUMNS=80 and COLUMNS=200 in a subprocess.

At 80 columns no line is longer than 80 characters and no table row wraps: a table has as many lines at
80 columns as at 200 (where nothing needs to wrap), and the report's tables have one line per row.  At
200 columns the wider layout (more columns) is used.  Every command's output also fits 60, 80 and 120 columns
with its answer there and the columns it left out named, and nothing is left out or cut on a pipe (no COLUMNS),
where no escape is written either and prose (every line outside a table) is wrapped at 80 columns.
"""

from __future__ import annotations

import os
import re

import pytest

from conftest import datapath, iolens

CAPTURE = datapath("report", "small.iolens")
STORE = datapath("bench", "store-v1.sqlite")


def run(*args, columns: int, env_extra: dict[str, str] | None = None, **kw) -> str:
    env = {**os.environ, **(env_extra or {}), "COLUMNS": str(columns)}
    env.pop("LINES", None)
    res = iolens(*args, env=env, **kw)
    assert res.returncode == 0, res.stderr
    return res.stdout + res.stderr


def rows(text: str) -> list[str]:
    """The lines of table bodies (rich draws its column separators with │)."""
    return [line for line in text.splitlines() if "│" in line]


def fits(text: str, width: int = 80) -> None:
    long = [line for line in text.splitlines() if len(line) > width]
    assert long == [], f"lines over {width} columns:\n" + "\n".join(long)


def header(text: str, first: str) -> str:
    return next(line for line in text.splitlines() if line.startswith(first) and "┃" in line)


def check(narrow: str, wide: str) -> None:
    fits(narrow)
    assert len(rows(narrow)) == len(rows(wide)) > 0, "a table row wrapped at 80 columns"
    assert max(map(len, wide.splitlines())) > 80, "the 200-column run did not use the width"


def test_report_at_80_and_200_columns():
    from iolens.analysis.report import build_report
    from iolens.capture.reader import read_capture

    narrow, wide = (run("report", CAPTURE, columns=c) for c in (80, 200))
    check(narrow, wide)
    r = build_report(read_capture(CAPTURE))
    shown_files = len([f for f in r.files if f.kind in ("file", "aggregate")][:10])
    categories = sum(1 for v in r.breakdown.values() if v > 0) + 1
    assert len(rows(narrow)) == categories + len(r.mounts) + shown_files + len(r.processes[:25])
    # the wide layout has every column, the narrow one fewer
    assert header(wide, "file").count("┃") > header(narrow, "file").count("┃")
    assert "pattern" in header(wide, "file") and "calls" in header(wide, "file")
    assert header(narrow, "process").count("┃") >= 4  # wall, I/O, read, written still there
    for name in ("aln.bam.tmp.0000.bam", "r1.fq.gz", "samtools flagstat"):
        assert name in narrow  # ellipsized at the left, the file name stays


def test_diff_at_60_columns(tmp_path):
    # a capture against itself: every change "-", so the whole table takes 77 columns and 60 must give way
    narrow, wide = (run("diff", CAPTURE, CAPTURE, columns=c) for c in (60, 200))
    fits(narrow, 60)
    assert len(rows(narrow)) == len(rows(wide)) > 0, "a table row wrapped at 60 columns"
    assert max(map(len, wide.splitlines())) > 60, "the 200-column run did not use the width"
    assert "storage A -> B" in header(wide, "file") and "storage A -> B" not in header(narrow, "file")
    assert "not shown at 60 columns: storage A -> B" in " ".join(narrow.split())


def test_results_list_and_bench_show_at_80_columns(tmp_path):
    db = tmp_path / "r.sqlite"
    db.write_bytes(STORE.read_bytes())
    narrow, wide = (run("results", "list", "--db", db, columns=c) for c in (80, 200))
    fits(narrow)
    assert len(rows(narrow)) == len(rows(wide)) > 0
    for line in rows(narrow):  # a timestamp is never cut in two
        assert any(ch.isdigit() for ch in line)
    ids = [line.split("│")[1].strip() for line in rows(narrow)]
    narrow, wide = (run("results", "show", ids[0], "--db", db, columns=c) for c in (80, 200))
    fits(narrow)
    assert len(rows(narrow)) == len(rows(wide)) > 0  # bench cells are 3 lines by design, never more


@pytest.fixture(scope="module")
def compare_runs(tmp_path_factory):
    d = tmp_path_factory.mktemp("cmp")
    (d / "in.bin").write_bytes(os.urandom(1 << 20))
    for sub in ("first_placement_directory", "second_placement_directory"):
        (d / sub).mkdir()
    out = {}
    for c in (60, 80, 200):
        out[c] = run("compare", "cat {in} > {out:copy.bin}", "--input", f"in={d / 'in.bin'}",
                     "--place", f"out={d / 'first_placement_directory'},{d / 'second_placement_directory'}",
                     "--runs", "3", "--warmup", "0", "--no-store", "--seed", "3", columns=c, cwd=d)
    return out


def test_compare_at_60_80_and_200_columns(compare_runs):
    narrow, wide = compare_runs[80], compare_runs[200]
    check(narrow, wide)
    fits_cells(compare_runs[60], 60)
    assert "median" in compare_runs[60] and "second_placement" in compare_runs[60]
    head = header(narrow, "configuration")
    assert head.index("median") < head.index("vs baseline") < head.index(" p ")  # verdict columns first
    assert "min … max" in header(wide, "configuration") and "min … max" not in head


def test_compare_title_says_what_was_timed(compare_runs):
    for text in compare_runs.values():
        assert "Wall time per run (the command)" in text  # direct only: nothing was copied
        assert "copy-in" not in text


def test_compare_says_what_its_per_run_columns_mean(compare_runs):
    for text in compare_runs.values():
        flat = " ".join(text.split())
        assert "inputs cached: share of the input files' bytes in memory just before a run (-: not known" in flat
        assert "storage write / read: bytes the storage devices wrote and read" in flat, text


def test_profile_summary_at_80_columns(tmp_path):
    deep = tmp_path / ("a_rather_long_directory_name_" * 3)
    deep.mkdir()
    src = tmp_path / "in.bin"
    src.write_bytes(os.urandom(1 << 20))
    cmd = f"cp {src} {deep}/copy.bin && gzip -c {src} > {deep}/copy.gz"
    narrow, wide = (run("profile", "-o", tmp_path / f"p{c}.iolens", "--", "sh", "-c", cmd, columns=c)
                    for c in (80, 200))
    # the command line is prose and may wrap; everything from the first table on must fit
    body = narrow[narrow.index("Where the time went"):]
    fits(body)
    title = "Where the time went (summed over processes, excluding waits for children)"
    assert title in body.splitlines()[0]  # the title is one line
    assert len(rows(narrow)) == len(rows(wide)) > 0
    assert "copy.bin" in narrow and "copy.gz" in narrow


@pytest.fixture(scope="module")
def traced_step(tmp_path_factory):
    """A traced capture of a step that makes, lists, reads and removes small files, with a directory to play
    its target and home, and a results store of its own (predict stores its calibrations there)."""
    d = tmp_path_factory.mktemp("whatif")
    (d / "in.dat").write_bytes(os.urandom(200_000))
    step = "mkdir sf && for i in 1 2 3 4 5 6 7 8; do cat in.dat > sf/f$i; done; ls sf > list; cat sf/* > all; rm -r sf"
    res = iolens("profile", "--trace", "-o", d / "step.iolens", "--", "sh", "-c", step, cwd=d)
    assert res.returncode == 0, res.stderr
    (d / "target_directory_with_a_long_name").mkdir()
    return d, {"IOLENS_DB": str(d / "results.db")}


def test_predict_at_80_and_200_columns(traced_step):
    d, env = traced_step
    target = d / "target_directory_with_a_long_name"
    narrow, wide = (run("predict", d / "step.iolens", "--on", target, "--home", d, columns=c, cwd=d,
                        env_extra=env) for c in (80, 200))
    check(narrow, wide)
    fits_cells(run("predict", d / "step.iolens", "--on", target, "--home", d, columns=60, cwd=d, env_extra=env), 60)
    assert "I/O share" in header(wide, "target") and "I/O share" not in header(narrow, "target")
    # a column left out says so (it was silent: a user could not tell a figure was missing)
    assert "not shown at 80 columns: I/O share" in narrow and "not shown at" not in wide
    for text in (narrow, wide):  # the largest classes of each target, each with its figure (the line may fold
        # after "classes:", by the length of the target's path)
        assert re.search(r"largest classes: [a-z ()]+ \d+\.\d{3} s", " ".join(text.split())), text
    assert "the model cannot see:" in narrow


def test_replay_at_80_and_200_columns(traced_step):
    d, env = traced_step
    target = d / "target_directory_with_a_long_name"
    narrow, wide, sixty = (run("replay", d / "step.iolens", "--on", target, "--on", d, columns=c, cwd=d,
                               env_extra=env) for c in (80, 200, 60))
    check(narrow, wide)
    fits_cells(sixty, 60)
    assert "fidelity" in sixty
    assert "STREAM" in header(wide, "target") and "fidelity" in header(narrow, "target")
    assert ("STREAM" in header(narrow, "target")) != ("not shown at 80 columns:" in narrow and "STREAM" in narrow)
    assert re.search(r"│ +[+-]\d+\.\d%$", rows(narrow)[1]), rows(narrow)  # the capture's own storage: fidelity
    for text in (narrow, wide, sixty):  # the class columns are said under the table, beside fidelity
        flat = " ".join(text.split())
        assert "READ: time in reads; WRITE: time in writes; META: time in metadata calls" in flat, text
        assert "STREAM: time waiting on pipes and sockets" in flat and "fidelity: the replay's wall time" in flat


@pytest.mark.parametrize("command", ["predict", "replay"])
def test_json_says_what_the_terminal_says_beside_the_numbers(traced_step, command):
    """The words beside the numbers (what the columns and fidelity mean, what each target was compared with,
    notes on a target, what the model cannot see) are in the JSON too, as the terminal says them (one run writes
    both)."""
    import json

    d, env = traced_step
    out = d / f"{command}-words.json"
    targets = ["--on", d / "target_directory_with_a_long_name", "--home" if command == "predict" else "--on", d]
    text = " ".join(run(command, d / "step.iolens", *targets, "--json", out, "--force", columns=200, cwd=d,
                        env_extra=env).split())
    doc = json.loads(out.read_text())
    words = [*doc["terms"].values(), *doc.get("notes", []), *doc.get("target_notes", []), *doc.get("cannot_see", [])]
    assert words and all(" ".join(w.split()) in text for w in words), (words, text)
    if command == "replay":
        assert set(doc["terms"]) == {"READ", "WRITE", "META", "SYNC", "STREAM", "fidelity"} and doc["schema_version"] \
            == [1, 7]
        assert "time waiting on pipes and sockets" in doc["terms"]["STREAM"]
        assert "near 0 means the replay reproduces the step" in doc["terms"]["fidelity"]
    else:
        assert any("compared with the home storage's" in m for m in doc["terms"].values()), doc["terms"]
        assert "the page cache state: assumed warm for the inputs (--cache)" in doc["cannot_see"]
        assert any(n.startswith("the profiler's cost taken out") for n in doc["notes"]), doc["notes"]


def test_fold_keeps_a_figure_with_its_unit_and_label_and_hangs_its_continuations():
    from iolens.render.terminal import fold

    text = "  sf.iolens: wall 0.074 s = compute 0.022 s + storage I/O 0.034 s + profiler 0.018 s"
    # "... profiler 0.018" would fit in 83 and leave its unit alone below; "... profiler" would fit in 80
    for width in (83, 80):
        assert fold(text, width, "  ") == ["  sf.iolens: wall 0.074 s = compute 0.022 s + storage I/O 0.034 s +",
                                           "    profiler 0.018 s"]
    assert fold("took (compute -1.5 s) now", 20, "") == ["took", "  (compute -1.5 s)", "  now"]
    assert fold("", 80) == [""]
    # a word longer than a line starts a line of its own: broken after a separator at a terminal's width, whole on
    # a pipe (UNBOUNDED: wrapped at 80 columns), never mid-word
    path = "/data/" + "genomics-project/" * 4 + "calls.vcf"
    assert fold(f"written to {path} today", 40, "") == ["written to", "  /data/genomics-project/", "  genomics-project/"
                                                    "genomics-project/", "  genomics-project/calls.vcf today"]
    assert fold(f"written to {path} today", 4096, "") == ["written to", f"  {path}", "  today"]
    # under a deep indent (doctor's 19 columns) a path that would run past 80 moves left until it fits, whole; one
    # longer than the whole line keeps the indent
    deep = "/venv/" + "x" * 60 + "/_native"  # 74 columns: 19 + 74 > 80
    assert fold(f"native parts ok {deep}", 4096, " " * 17) == ["native parts ok", " " * 6 + deep]
    assert fold(f"native parts ok {deep}{deep}", 4096, " " * 17) == ["native parts ok", " " * 19 + deep + deep]


def test_prose_on_a_pipe_wraps_at_80_and_tables_keep_their_width(monkeypatch):
    import io

    from rich.padding import Padding

    from iolens.render.terminal import Col, FitTable, console

    monkeypatch.delenv("COLUMNS", raising=False)
    monkeypatch.delenv("IOLENS_TERMINAL", raising=False)
    buf = io.StringIO()
    con = console(file=buf)  # not a terminal: a pipe's width
    path = "/scratch" * 12
    con.print("  " + "some words " * 6 + "took 1.5 s " + "then more " * 3 + path + " and the end" + " x" * 30)
    t = FitTable([Col("name", "left"), Col("note", "left", wrap=True)])
    t.add_row("a", "a long note " * 12)
    con.print(t)
    lines = buf.getvalue().splitlines()
    prose, table = lines[:lines.index(next(ln for ln in lines if "┃" in ln)) - 1], lines[-3:]
    assert prose[0].startswith("  some") and all(ln.startswith("    ") for ln in prose[1:]), prose
    assert all(len(ln) <= 80 or ln.strip() == path for ln in prose) and f"    {path}" in prose, prose
    assert any("took 1.5 s" in ln for ln in prose), prose  # a figure kept with its unit
    assert any(("a long note " * 12).strip() in ln for ln in table), table  # one line per row: not wrapped
    buf.seek(0), buf.truncate()
    con.print(Padding("an indented line " * 8, (0, 0, 0, 2)))  # as compare prints its key
    indented = buf.getvalue().splitlines()
    assert len(indented) > 1 and indented[0].startswith("  an") and indented[1].startswith("    "), indented
    assert not [ln for ln in indented if ln != ln.rstrip()], indented  # no padding out to the prose width


# ---- every command at 60, 80 and 120 columns, and on a pipe ------------------------------------------------------

WIDTHS = (60, 80, 120)
NOTE = re.compile(r"not shown at (\d+) columns: (.+?) \((\d+) columns show them\)", re.S)


def fits_cells(text: str, width: int) -> None:
    from rich.cells import cell_len

    long = [line for line in text.splitlines() if cell_len(line) > width]
    assert long == [], f"lines over {width} columns:\n" + "\n".join(long)


TABLE = re.compile(r"[│┃━─╇╋┼]")


def _in_table(line: str) -> bool:
    """A line of a table: drawn with its rules, padded to its width (a title), or cells apart by wide gaps."""
    return bool(TABLE.search(line)) or line != line.rstrip() or len(re.findall(r"\S {2,}\S", line)) >= 2


def prose_fits(text: str, width: int = 80) -> None:
    """Every line outside a table (`_in_table`, or the title above its header) fits `width`, or is one word too
    long for any line (a path) on a line of its own."""
    lines = text.splitlines()
    long = [line for i, line in enumerate(lines)
            if len(line) > width and not _in_table(line) and not (i + 1 < len(lines) and _in_table(lines[i + 1]))
            and len(line.split()) > 1]
    assert long == [], f"prose over {width} columns on a pipe:\n" + "\n".join(long)


def at_widths(args: list, answers: list[str], *, count: tuple[str, int] | None = None,
              widths: tuple[int, ...] = WIDTHS, **kw) -> dict[int | None, str]:
    """The command at each width and on a pipe without COLUMNS: no line over the width, the answers there, no
    escape anywhere, and every column left out named (a header of the full-width output) with the width that
    shows it."""
    env = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "LINES")}
    env.update(kw.pop("env_extra", {}))
    full = iolens(*args, env=env, **kw)
    assert full.returncode in (0, 3), full.stderr
    out: dict[int | None, str] = {None: full.stdout}
    for w in widths:
        res = iolens(*args, env={**env, "COLUMNS": str(w)}, **kw)
        assert res.returncode in (0, 3), res.stderr
        text = res.stdout
        fits_cells(text, w)
        flat = re.sub(r"\s+", " ", text)
        for a in answers:
            assert a in flat, f"{a!r} missing at {w} columns:\n{text}"
        if count:  # in the tables' cells
            cells = " ".join(line for line in text.splitlines() if "│" in line)
            assert len(re.findall(count[0], cells)) == count[1], f"{count} at {w} columns:\n{text}"
        for m in NOTE.finditer(flat):
            assert int(m[1]) == w and int(m[3]) > w, m[0]
            for name in m[2].split(", "):
                assert name in full.stdout, name
        out[w] = text
    for text in out.values():
        assert "\x1b" not in text, "an escape on a pipe"
    assert "not shown at" not in full.stdout  # on a pipe nothing is left out
    prose_fits(full.stdout)
    return out


def test_report_and_diff_at_every_width():
    at_widths(["report", CAPTURE], ["Where the time went", "aln.bam", "samtools"])
    out = at_widths(["diff", CAPTURE, CAPTURE], ["Totals", "change", "B/A"])
    assert "not shown at 60 columns:" in out[60]


def test_results_list_and_show_at_every_width(tmp_path):
    db = tmp_path / "r.sqlite"
    db.write_bytes(STORE.read_bytes())
    out = at_widths(["results", "list", "--db", db], ["bench", "/scratch"])  # the targets column stays
    assert "before-upgrade" in out[120] and "not shown" not in out[120]
    at_widths(["results", "show", "1", "--db", db], ["/scratch", "seq-read t1", "cold-evicted", "520 MB/s"])


def test_bench_and_its_stored_run_at_every_width(tmp_path):
    names = ["a_target_directory", "another_target_dir", "third"]
    for n in names:
        (tmp_path / n).mkdir()
    db = tmp_path / "b.sqlite"
    res = iolens("bench", *names, "--suite", "classic", "--size", "1M", "--files", "4", "--runtime", "0.1",
                 "--threads", "1", "--db", db, "-q", env={**os.environ, "COLUMNS": "80"}, cwd=tmp_path)
    assert res.returncode == 0, res.stderr
    fits_cells(res.stdout, 80)
    flat = re.sub(r"\s+", " ", res.stdout)
    assert all(n in flat for n in names)
    # the device share of every cold read is whole (was cut to "cold-evicted · device …" at 80 columns)
    assert len(re.findall(r"device \d+%", flat)) == 2 * len(names) and "…" not in res.stdout, res.stdout
    at_widths(["results", "show", "1", "--db", db], names + ["seq-read t1", "files-read t1"],
              count=(r"\d+%", 2 * len(names)))


def test_cost_at_every_width():
    args = ["cost", "--option", "gp2=300", "--option", "aws:ec2-instance-nvme=294", "--option", "st1=456",
            "--held-for", "always", "--no-store"]
    out = at_widths(args, ["gp2", "aws:ec2-instance-nvme", "st1", "best value", "$ per month"])
    assert "largest parts" in out[None]
    listed = at_widths(["cost", "--list"], ["Priced options", "lab targets:"], widths=(60,))
    # the shipped price list named as the warnings and the page name it, not by its installed path
    assert all("the price list shipped with iolens" in " ".join(t.split()) and "prices.json" not in t
               for t in listed.values()), listed[60]


def test_compress_at_every_width(tmp_path):
    f = tmp_path / "reads.txt"
    f.write_bytes(b"".join(b"@r%d\nACGTTGCAACGT\n+\nIIIIIIIIIIII\n" % i for i in range(20000)))
    at_widths(["compress", f, "--codecs", "zlib:1,lz4:1", "--threads", "1", "--no-store", "-q"],
              ["zlib:1", "lz4:1", "ratio", "comp MiB/s"])


def test_lab_status_at_every_width(tmp_path):
    from iolens.lab import state as st

    state = st.empty_state(tmp_path)
    state["targets"]["s3"] = {"status": "failed", "fstype": "fuse.s3fs", "kind": "s3fs", "path": None,
                              "error": "the S3 server versitygw is not installed", "hint": "run `iolens lab install`"}
    st.save(tmp_path, state)
    at_widths(["lab", "status", "--dir", tmp_path], ["lab:s3", "versitygw is not installed", "not set up:"])
    # no lab there: the line that says where it looked and how to point at another folds as well (it was one line
    # of about 200 columns at every width)
    at_widths(["lab", "status", "--dir", tmp_path / "none"], ["no lab:", "IOLENS_LAB_DIR", "iolens lab up"])


def _unfolded(text: str) -> str:
    """`text` with a line broken after a separator (, / = : ;) joined to the next, then every space run one space:
    a path broken anywhere else (mid-word) is not whole in it."""
    return re.sub(r"\s+", " ", re.sub(r"(?<=[,/=:;])\n +", "", text))


def test_lab_status_keeps_long_paths_whole_at_every_width(tmp_path):
    """A lab in a deep directory: at 60, 80 and 120 columns every path is there, broken (if at all) only after a
    separator, never mid-word, and no line is over the width; on a pipe each path is whole on one line."""
    from iolens.lab import state as st

    root = tmp_path / "a-rather-long-directory-for-the-lab" / "of-a-genomics-project-2026" / "iolens-lab"
    root.mkdir(parents=True)
    mnt = root / "mnt" / "xfs-with-a-long-mount-point-name"
    tool = root / "cache" / "bin" / "versitygw"
    state = st.empty_state(root)
    state["targets"]["xfs"] = {"status": "up", "path": str(mnt)}
    state["targets"]["s3"] = {"status": "failed", "path": None, "error": f"the S3 server is not installed at {tool}",
                              "hint": "run `iolens lab install`"}
    st.save(root, state)
    out = at_widths(["lab", "status", "--dir", root], ["lab:xfs", "lab:s3", "not set up:"])
    for w, text in out.items():
        flat = _unfolded(text)
        for path in (str(root), str(mnt), str(tool)):
            assert path in flat, f"{path} cut or broken mid-word at {w or 'pipe'} columns:\n{text}"
    assert {str(root), str(mnt), str(tool)} <= {w.strip("() ") for line in out[None].splitlines()
                                                 for w in line.split()}, out[None]


def test_lists_of_codecs_and_thresholds_at_every_width():
    """`compress --list` and `report --thresholds` were lines aligned by hand, 170 columns at every width."""
    out = at_widths(["compress", "--list"], ["zlib", "bgzf", "zstd", "bzip2-cli", "what a level means", "by default:"])
    assert "gzip, gz" in out[None] and "1/3/9/19" in out[60]  # the names users type; the levels --full measures
    out = at_widths(["report", "--thresholds"], ["small_bytes", "65536", "coverage_bytes", "meaning"])
    assert "16777216" in out[60] and "e+" not in out[None]  # a value as --set takes it


def test_data_synth_at_every_width(tmp_path):
    """The files it wrote, each path whole (broken, if at all, after a separator), and what it made; it printed
    66 columns and more at every width."""
    out_dir = tmp_path / "synthetic-inputs-for-the-alignment-step" / "of-a-genomics-project"
    out = at_widths(["data", "synth", "-o", out_dir, "--ref-size", "100000", "--pairs", "200", "--force"],
                    ["ref.fa", "reads_1.fq.gz", "reads_2.fq.gz", "substitution error rate"])
    for w, text in out.items():
        assert all(str(out_dir / n) in _unfolded(text) for n in ("ref.fa", "reads_1.fq.gz")), (w, text)


def test_pipeline_report_and_diff_dir_at_every_width(tmp_path):
    from pipeline_helpers import prolog, run_task

    cap = tmp_path / "cap"
    pro = prolog(tmp_path, cap)
    for name, cmd in (("sort_reads_by_name_and_position", "seq 1 20000 > a.txt"), ("index", "seq 1 10 > b.txt")):
        assert run_task(pro, cmd, dict(os.environ, SLURM_JOB_ID="7", SLURM_JOB_NAME=name), tmp_path).wait() == 0
    at_widths(["report", cap], ["sort_reads_by", "index", "I/O %", "hosts:"])  # a long name may fold
    at_widths(["diff", cap, cap], ["sort_reads_by", "time A", "time B", "change"])


def test_escapes_only_on_a_terminal_and_never_with_no_color():
    import pty
    import subprocess
    import sys

    def on_terminal(env: dict[str, str]) -> bytes:
        master, slave = pty.openpty()
        p = subprocess.Popen([sys.executable, "-m", "iolens", "report", str(CAPTURE)], stdout=slave,
                             stderr=subprocess.DEVNULL, env=env)
        os.close(slave)
        data = b""
        while True:
            try:
                chunk = os.read(master, 65536)
            except OSError:
                break
            if not chunk:
                break
            data += chunk
        p.wait()
        os.close(master)
        return data

    env = {k: v for k, v in os.environ.items() if k not in ("NO_COLOR", "FORCE_COLOR", "TERM")}
    env.update(COLUMNS="100", TERM="xterm-256color")
    assert b"\x1b[" in on_terminal(env)  # bold titles on a terminal
    plain = on_terminal({**env, "NO_COLOR": "1"})
    assert b"\x1b[" not in plain and b"Where the time went" in plain
    # a launcher's rank told that the output is not a terminal (mpirun gives it a pseudo-terminal) writes none
    assert b"\x1b[" not in on_terminal({**env, "IOLENS_TERMINAL": "no"})


def test_doctor_at_every_width():
    """The details fold under themselves with the native parts' directory whole, or broken after a separator
    (textwrap broke it at its hyphen: 'site-' / 'packages')."""
    import json

    checks = json.loads(iolens("doctor", "--json").stdout)["checks"]
    where = next(c["detail"] for c in checks if c["name"] == "native parts").split()[-1]
    out = at_widths(["doctor"], ["iolens", "interposer", "native parts"])
    for w, text in out.items():
        assert where in _unfolded(text), (w, where, text)
