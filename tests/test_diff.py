"""iolens diff: the same command on two storages, matched per category and per file."""

from __future__ import annotations

import json
import os

import pytest

from conftest import datapath, iolens
from helpers.capture import build_capture, fil, proc, write_capture
from iolens.analysis.diff import diff_reports, match_files, mostly
from iolens.analysis.report import build_report

MiB = 1 << 20


def run(base: str, read_time: float, tmp_time: float, extra: bool = False):
    files = [fil(f"{base}/in.sam", reads=2048, read_size=MiB, read_time=read_time),
             fil(f"{base}/out.bam.tmp.0000.bam", writes=512, write_size=MiB, write_time=tmp_time, created=True,
                 deleted=True),
             fil(f"{base}/out.bam", writes=512, write_size=MiB, write_time=2.0, created=True)]
    if extra:
        files.append(fil(f"{base}/extra.log", writes=10, write_size=100, write_time=0.5, created=True))
    procs = [proc(1, ["samtools", "sort", "-o", "out.bam", "in.sam"], end=60.0, cpu=30.0, cwd=base, files=files)]
    return procs, {"cwd": base, "command": ["samtools", "sort", "-o", "out.bam", "in.sam"]}


def test_same_step_on_two_storages():
    ra = build_report(build_capture(*run("/mnt/nfs/run", 20.0, 8.0)))
    rb = build_report(build_capture(*run("/scratch/run", 4.0, 1.0, extra=True)))
    d = diff_reports(ra, rb)
    assert d.same_command
    cat = {c.name: c for c in d.categories}
    assert cat["streaming_read"].delta == pytest.approx(-16.0)
    assert cat["streaming_read"].ratio == pytest.approx(0.2)
    assert cat["streaming_write"].delta == pytest.approx(-7.0)
    files = {f.key: f for f in d.files}
    assert files["in.sam"].path_a == "/mnt/nfs/run/in.sam" and files["in.sam"].path_b == "/scratch/run/in.sam"
    assert files["in.sam"].delta_s == pytest.approx(-16.0)
    assert files["in.sam"].mount_a == "/mnt/nfs" and files["in.sam"].mount_b == "/scratch"
    assert files["extra.log"].path_a is None and files["extra.log"].time_b_s == pytest.approx(0.5)
    assert d.files[0].key == "in.sam"  # largest change first
    assert "temp_placement" in d.advice_fixed


def test_match_by_unique_file_name_when_directories_differ():
    a = build_report(build_capture([proc(1, ["x"], files=[fil("/a/1/ref.fa", reads=1, read_size=10)])], {"cwd": "/q"}))
    b = build_report(build_capture([proc(1, ["x"], files=[fil("/b/2/ref.fa", reads=1, read_size=10)])], {"cwd": "/r"}))
    pairs = match_files(a.files, b.files, "/q", "/r")
    assert [(k, fa.path, fb.path) for k, fa, fb in pairs] == [("ref.fa", "/a/1/ref.fa", "/b/2/ref.fa")]


def test_cli_diff_text_and_json(tmp_path):
    a = write_capture(tmp_path / "a.iolens", *run("/mnt/nfs/run", 20.0, 8.0))
    b = write_capture(tmp_path / "b.iolens", *run("/scratch/run", 4.0, 1.0))
    res = iolens("diff", a, b)
    assert res.returncode == 0, res.stderr
    assert "streaming reads" in res.stdout and "in.sam" in res.stdout and "-16.00 s" in res.stdout
    text = " ".join(res.stdout.split())
    res = iolens("diff", a, b, "--json", "-")
    d = json.loads(res.stdout)
    assert d["tag"] == "iolens-diff" and d["schema_version"] == [1, 1]
    fixed = d["advice_fixed"]
    assert "temp_placement" in fixed and d["advice_titles"]["temp_placement"].startswith("1 temp file cost")
    text = iolens("diff", a, b, env={**os.environ, "COLUMNS": "200"}).stdout
    # each rule by what it found, its id only beside that
    assert f"- {d['advice_titles']['temp_placement']} (rule temp_placement;" in text
    assert "(gone in B): temp_placement" not in text
    assert {c["name"]: c["delta"] for c in d["categories"]}["streaming_read"] == pytest.approx(-16.0)


def test_diff_of_a_capture_with_itself_changes_nothing():
    res = iolens("diff", datapath("report", "small.iolens"), datapath("report", "small.iolens"), "--json", "-")
    d = json.loads(res.stdout)
    assert all(c["delta"] == 0 for c in d["categories"])
    assert all(f["delta_s"] == 0 for f in d["files"])


def test_mostly_is_the_largest_change_and_nothing_without_one():
    """The "mostly" column: the class of a file's largest change either way, "-" with no change (a capture
    against itself labelled every file, even one only written or stat'd, "tiny reads")."""
    res = iolens("diff", datapath("report", "small.iolens"), datapath("report", "small.iolens"),
                 env={**os.environ, "COLUMNS": "200"})
    assert res.returncode == 0, res.stderr
    rows = [line.split("│") for line in res.stdout.splitlines() if line.count("│") == 5]
    files = [r for r in rows if r[3].strip() == "±0 µs"]
    assert len(files) >= 10 and {r[4].strip() for r in files} == {"-"}, res.stdout
    d = diff_reports(build_report(build_capture(*run("/mnt/nfs/run", 20.0, 8.0))),
                     build_report(build_capture(*run("/scratch/run", 4.0, 1.0))))
    by = {f.key: mostly(f) for f in d.files}
    assert by["in.sam"] == "streaming_read" and by["out.bam.tmp.0000.bam"] == "streaming_write"
    assert by["out.bam"] is None  # written only, and not changed: neither "reads" nor any class


def test_diff_reports_bad_input_in_one_line(tmp_path):
    bad = tmp_path / "bad.iolens"
    bad.write_bytes(b"nope")
    res = iolens("diff", datapath("report", "small.iolens"), bad)
    assert res.returncode == 3 and res.stderr.startswith("iolens: error:") and res.stderr.count("\n") == 1
