"""iolens doctor: one screen of what this machine supports, and the same as JSON."""

from __future__ import annotations

import json

from conftest import iolens


def test_doctor_fits_one_plain_screen_and_finds_the_interposer_working():
    res = iolens("doctor")
    assert res.returncode == 0, res.stderr
    lines = res.stdout.splitlines()
    assert "\x1b" not in res.stdout  # not a terminal: no escapes
    assert all(len(line) <= 80 for line in lines), [line for line in lines if len(line) > 80]
    assert len(lines) <= 24
    assert lines[0].startswith("iolens ")
    interposer = next(line for line in lines if "interposer " in line)
    assert interposer.startswith("ok") and "123457 bytes read" in interposer


def test_doctor_json_has_tag_version_and_every_check():
    res = iolens("doctor", "--json")
    assert res.returncode == 0, res.stderr
    d = json.loads(res.stdout)
    assert d["tag"] == "iolens-doctor" and d["schema_version"] == [1, 0]
    assert d["ok"] is True
    assert set(d["host"]) == {"iolens_version", "python", "executable", "machine", "kernel", "libc"}
    names = [c["name"] for c in d["checks"]]
    assert {"native parts", "interposer", "FUSE", "root", "lab tools"} <= set(names)
    for c in d["checks"]:
        assert set(c) == {"name", "state", "detail", "essential"} and c["state"] in ("ok", "no", "info")
    assert {c["name"]: c["state"] for c in d["checks"]}["interposer"] == "ok"
