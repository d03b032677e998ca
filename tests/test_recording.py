"""`Recording` used directly (as replay, predict or a pipeline wrapper would), staging on RAM, `profile --force`."""

from __future__ import annotations

import os
import signal
import tempfile
from pathlib import Path

import pytest

from conftest import iolens
from iolens import _format as F
from iolens.capture import record
from iolens.capture.reader import read_capture
from iolens.capture.record import RECORDER_VAR, Recording, recorder_dir, staging_base, staging_dir
from iolens.sysinfo import mount_of

SHM_USABLE = os.path.isdir("/dev/shm") and os.access("/dev/shm", os.W_OK | os.X_OK)


def _reads_of(cap, path):
    return [f for p in cap.processes for f in p.files if f["path"] == str(path)]


def test_recording_cat_of_a_file_has_the_read(tmp_path):
    src = tmp_path / "in.txt"
    src.write_bytes(b"x" * 12345)
    out = tmp_path / "cat.iolens"
    result = Recording(["cat", str(src)], output=out, env=dict(os.environ, LC_ALL="C"), cwd=tmp_path).run()
    assert result.status == 0 and result.error is None
    assert result.path == out and out.exists()
    assert result.wall_s > 0
    files = _reads_of(result.capture, src)
    assert files and sum(f["bytes_read"] for f in files) == 12345
    saved = read_capture(out)
    assert sum(f["bytes_read"] for f in _reads_of(saved, src)) == 12345
    assert saved.meta["exit_status"] == 0 and saved.meta["cwd"] == str(tmp_path)
    assert saved.meta["command"] == ["cat", str(src)]
    assert not list(tmp_path.glob(".cat.iolens.*"))  # no temporary file left beside it


def test_recording_without_output_keeps_the_capture_in_memory_only(tmp_path):
    rec = Recording(["sh", "-c", "exit 3"], cwd=tmp_path)
    result = rec.run()
    assert result.status == 3 and result.path is None and result.capture is not None
    assert result.capture.meta["exit_status"] == 3
    assert list(tmp_path.iterdir()) == []
    assert rec.stage is None  # staging removed


def test_recording_reports_death_by_signal_in_shell_convention(tmp_path):
    result = Recording(["sh", "-c", "kill -TERM $$"], cwd=tmp_path).run()
    assert result.status == 128 + signal.SIGTERM


def test_recording_environment_then_finish_for_a_command_started_elsewhere(tmp_path):
    """compare's way: ask for the environment, run the command by other means, then finish."""
    import subprocess

    src = tmp_path / "data"
    src.write_bytes(b"y" * 4096)
    rec = Recording(["/bin/sh", "-c", f"cat {src}"], preload_var="IOLENS_COMPARE_PRELOAD")
    env = rec.environment()
    assert "IOLENS_COMPARE_PRELOAD" in env and env.get("LD_PRELOAD") == os.environ.get("LD_PRELOAD")
    env["LD_PRELOAD"] = env.pop("IOLENS_COMPARE_PRELOAD")
    proc = subprocess.run(["/bin/sh", "-c", f"cat {src}"], env=env, stdout=subprocess.DEVNULL, timeout=60)
    result = rec.finish(proc.returncode, 0.1)
    assert result.capture is not None and result.capture.meta["wall_s"] == 0.1
    assert sum(f["bytes_read"] for f in _reads_of(result.capture, src)) == 4096


def test_recording_never_replaces_a_file_unless_asked(tmp_path):
    out = tmp_path / "taken.iolens"
    out.write_bytes(b"mine")
    result = Recording(["true"], output=out).run()
    assert result.status == 0 and result.path is None and result.error
    assert out.read_bytes() == b"mine"
    result = Recording(["true"], output=out, overwrite=True).run()
    assert result.error is None and read_capture(out).meta["command"] == ["true"]


# -- staging -----------------------------------------------------------------------------------------------------

@pytest.mark.skipif(not SHM_USABLE, reason="/dev/shm is not writable here")
def test_staging_goes_to_dev_shm_when_unset(monkeypatch):
    monkeypatch.delenv("IOLENS_STAGING", raising=False)
    monkeypatch.setenv("TMPDIR", "/tmp")
    assert staging_base() == ("/dev/shm", None)
    rec = Recording(["true"])
    env = rec.environment()
    stage = str(rec.stage)
    try:
        assert stage.startswith("/dev/shm/iolens-") and recorder_dir(env[RECORDER_VAR]) == stage
        assert mount_of(stage)["fstype"] == "tmpfs"
    finally:
        rec.close()
    assert not os.path.exists(stage)


def test_the_launcher_adds_two_variables_and_keeps_an_empty_ld_preload(monkeypatch):
    """Every variable costs the command argument space (docs/design.md, "Recording a command"): the launcher adds
    LD_PRELOAD and one variable of its own, and an empty LD_PRELOAD of the user's keeps its separator."""
    monkeypatch.delenv("LD_PRELOAD", raising=False)
    for trace, max_files, user, preload in ((False, None, None, "{lib}"), (True, 500, "", "{lib} "),
                                            (False, None, "a.so:b.so", "{lib} a.so:b.so")):
        env = {"PATH": os.environ["PATH"]} | ({} if user is None else {"LD_PRELOAD": user})
        rec = Recording(["true"], trace=trace, max_files=max_files, env=env)
        try:
            added = rec.environment()
            assert set(added) - set(env) <= {"LD_PRELOAD", RECORDER_VAR} and set(env) <= set(added)
            assert added["LD_PRELOAD"] == preload.format(lib=rec.lib)
            assert added[RECORDER_VAR] == f"{os.getpid()}{'t' if trace else ''}{'m500' if max_files else ''}{rec.stage}"
        finally:
            rec.close()


def test_staging_honours_iolens_staging(monkeypatch, tmp_path):
    monkeypatch.setenv("IOLENS_STAGING", str(tmp_path))
    d = staging_dir()
    assert d.parent == tmp_path


@pytest.mark.skipif(not SHM_USABLE, reason="needs a tmpfs to stand in for $XDG_RUNTIME_DIR")
def test_staging_falls_back_to_a_tmpfs_runtime_dir(monkeypatch, tmp_path):
    monkeypatch.delenv("IOLENS_STAGING", raising=False)
    monkeypatch.setattr(record, "SHM", str(tmp_path / "no-shm"))
    runtime = Path(tempfile.mkdtemp(dir="/dev/shm"))  # stands in for a tmpfs /run/user/UID
    try:
        monkeypatch.setenv("XDG_RUNTIME_DIR", str(runtime))
        assert staging_base() == (str(runtime), None)
    finally:
        runtime.rmdir()


def test_staging_on_disk_says_so_in_one_line(monkeypatch, tmp_path):
    if mount_of(tmp_path)["fstype"] in record.RAM_FSTYPES:
        pytest.skip("the temporary directory is on tmpfs here")
    monkeypatch.delenv("IOLENS_STAGING", raising=False)
    monkeypatch.setattr(record, "SHM", str(tmp_path / "no-shm"))
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(tmp_path))  # not RAM-backed
    monkeypatch.setenv("TMPDIR", str(tmp_path))
    monkeypatch.setattr(tempfile, "tempdir", None)  # read $TMPDIR again
    notes: list[str] = []
    d = staging_dir(notes.append)
    assert d.parent == tmp_path
    assert len(notes) == 1 and "\n" not in notes[0] and "RAM-backed" in notes[0] and str(tmp_path) in notes[0]


# -- profile -o and the output policy ------------------------------------------------------------------------------

def test_profile_force_overwrites_an_existing_capture(tmp_path):
    out = tmp_path / "again.iolens"
    out.write_bytes(b"old capture")
    res = iolens("profile", "-q", "-o", out, "--", "sh", "-c", "exit 0")
    assert res.returncode == 2 and "--force" in res.stderr and out.read_bytes() == b"old capture"
    res = iolens("profile", "-q", "--force", "-o", out, "--", "sh", "-c", "exit 5")
    assert res.returncode == 5, res.stderr
    cap = read_capture(out)
    assert cap.complete and cap.meta["exit_status"] == 5
    assert out.read_bytes()[: len(F.MAGIC)] == F.MAGIC
    assert sorted(p.name for p in tmp_path.iterdir()) == ["again.iolens"]  # no temporary file left
