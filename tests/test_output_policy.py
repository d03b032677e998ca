"""One output policy for every command that writes a file: refuse an existing file unless --force, '-' is
stdout, outputs are checked before any work, and no partial file stays behind."""

from __future__ import annotations

import json
import os

import pytest

from conftest import iolens
from helpers.capture import fil, proc, write_capture
from iolens.errors import UsageError
from iolens.output import check_outputs, write_output


@pytest.fixture
def capture(tmp_path):
    return write_capture(tmp_path / "c.iolens", [proc(10, ["cat", "in"], files=[fil("/data/in", reads=4,
                                                                                  read_size=4096)])])


def test_report_html_refuses_an_existing_file_and_force_overwrites(tmp_path, capture):
    page = tmp_path / "r.html"
    page.write_text("mine")
    res = iolens("report", "-q", capture, "--html", page)
    assert res.returncode == 2 and page.read_text() == "mine"
    assert res.stderr.strip() == (f"iolens: error: --html {page} already exists; choose another name or remove it, "
                                  "or pass --force to overwrite")
    res = iolens("report", "-q", capture, "--html", page, "--force")
    assert res.returncode == 0, res.stderr
    assert page.read_text().startswith("<!DOCTYPE html>")


def test_every_writing_command_refuses_before_doing_any_work(tmp_path, capture):
    taken = tmp_path / "taken.json"
    taken.write_text("keep")
    for args in (["report", "-q", capture, "--json", taken],
                 ["report", "-q", capture, "--csv", taken],
                 ["diff", capture, capture, "--json", taken],
                 ["results", "export", "--db", tmp_path / "r.sqlite", "-o", taken],
                 ["bench", "null", "--size", "1M", "--no-store", "-q", "--json", taken]):
        res = iolens(*args)
        assert res.returncode == 2 and "already exists" in res.stderr and "Traceback" not in res.stderr, args
        assert taken.read_text() == "keep", args
    assert not (tmp_path / "r.sqlite").exists()


def test_two_outputs_on_one_path_and_missing_directory(tmp_path, capture):
    res = iolens("report", "-q", capture, "--json", tmp_path / "x", "--csv", tmp_path / "x")
    assert res.returncode == 2 and "both write" in res.stderr
    res = iolens("report", "-q", capture, "--json", tmp_path / "no" / "such" / "r.json")
    assert res.returncode == 2 and "does not exist; create it or give --json" in res.stderr
    res = iolens("report", "-q", capture, "--json", "-", "--csv", "-")
    assert res.returncode == 2 and "standard output" in res.stderr
    res = iolens("report", "-q", capture, "--json", tmp_path)
    assert res.returncode == 2 and "is a directory" in res.stderr


def test_dash_is_stdout(capture):
    res = iolens("report", "-q", capture, "--json", "-")
    assert res.returncode == 0 and json.loads(res.stdout)["tag"] == "iolens-report"


def test_write_is_atomic_and_leaves_nothing_on_error(tmp_path, monkeypatch):
    target = tmp_path / "out.bin"
    write_output(target, b"one")
    with pytest.raises(UsageError, match="already exists"):
        write_output(target, b"two")
    assert target.read_bytes() == b"one"
    write_output(target, b"two", force=True)
    assert target.read_bytes() == b"two"

    def boom(*_a, **_k):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "replace", boom)
    with pytest.raises(UsageError, match="No space left on device"):
        write_output(target, b"three", force=True)
    assert target.read_bytes() == b"two"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out.bin"]  # no temporary file left behind


def test_check_outputs_accepts_new_files_and_force(tmp_path):
    (tmp_path / "a").write_text("x")
    check_outputs({"--a": tmp_path / "a", "--b": tmp_path / "b", "--c": None}, force=True)
    with pytest.raises(UsageError, match="--a"):
        check_outputs({"--a": tmp_path / "a"})
