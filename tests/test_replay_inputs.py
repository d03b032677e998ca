"""What a user can get wrong around `iolens replay` and `iolens predict`: a capture that is no file, outputs that
would replace something that is not the command's to replace, a target too small, a stop from outside.  Each is one
line on stderr, never a traceback, and nothing of the user's is lost."""

from __future__ import annotations

import contextlib
import os
import signal
import stat
import subprocess
import sys
import time
from pathlib import Path

import pytest

from conftest import _absolute_pythonpath, iolens, unavailable

pytestmark = pytest.mark.timeout(300)


def one_line(res: subprocess.CompletedProcess) -> str:
    """The single `iolens: error:` line of a failed command (no traceback)."""
    assert res.returncode != 0, res.stdout
    assert "Traceback" not in res.stderr, res.stderr
    errors = [ln for ln in res.stderr.splitlines() if ln.startswith("iolens: error:")]
    assert len(errors) == 1, res.stderr
    return errors[0]


def small_files(tmp_path: Path, n: int) -> Path:
    """A traced step that writes, lists, reads back and removes n small files."""
    d = tmp_path / "step"
    d.mkdir()
    out = tmp_path / "sf.iolens"
    r = iolens("profile", "--trace", "-o", out, "--", "sh", "-c",
               f"i=0; while [ $i -lt {n} ]; do echo $i > f$i; i=$((i+1)); done; ls >/dev/null; cat f* >/dev/null; "
               "rm f*", cwd=d)
    assert r.returncode == 0, r.stderr
    return out


@pytest.fixture
def cap(tmp_path) -> Path:
    return small_files(tmp_path, 300)


def test_a_capture_that_is_no_regular_file_is_refused_at_once(tmp_path):
    """/dev/zero once filled memory (read whole before its first 8 bytes were checked), a FIFO hung for good, and
    a symbolic link loop ended in a traceback."""
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    (tmp_path / "loop1").symlink_to(tmp_path / "loop2")
    (tmp_path / "loop2").symlink_to(tmp_path / "loop1")
    (tmp_path / "t").mkdir()
    for path, says in (("/dev/zero", "not a regular file"), (fifo, "not a regular file"),
                       (tmp_path / "loop1", "cannot read the capture file")):
        for cmd in ("replay", "predict"):
            t0 = time.monotonic()
            res = iolens(cmd, path, "--on", tmp_path / "t", timeout=60)
            assert says in one_line(res), (cmd, path, res.stderr)
            assert time.monotonic() - t0 < 30


def test_outputs_never_replace_a_layout_list_or_a_special_file(cap, tmp_path):
    """--fio-iolog FILE also writes FILE.layout: an existing one is refused like any output (it was replaced
    without --force, a capture named so emptied); a FIFO or a device is refused even with --force (it was replaced
    by a regular file)."""
    kept = tmp_path / "io.layout"
    kept.write_bytes(b"precious")
    res = iolens("replay", cap, "--fio-iolog", tmp_path / "io")
    assert "already exists" in one_line(res) and kept.read_bytes() == b"precious"
    assert not (tmp_path / "io").exists()
    fifo = tmp_path / "out.fifo"
    os.mkfifo(fifo)
    for args in (("--json", fifo, "--force"), ("--fio-iolog", fifo, "--force")):
        res = iolens("replay", cap, "--on", tmp_path, *args)
        assert "not a regular file" in one_line(res)
        assert stat.S_ISFIFO(os.stat(fifo).st_mode)
    assert "needs a file name" in one_line(iolens("replay", cap, "--fio-iolog", "-"))
    assert "empty name" in one_line(iolens("replay", cap, "--on", ""))
    assert "empty name" in one_line(iolens("predict", cap, "--on", ""))
    assert "--home" in one_line(iolens("predict", cap, "--on", tmp_path, "--home", tmp_path / "absent"))


@contextlib.contextmanager
def small_tmpfs(tmp_path: Path, size: str):
    """A tmpfs of `size` mounted at tmp_path/small for the block's length (needs root)."""
    if os.geteuid() != 0:
        unavailable("needs root to mount a small tmpfs")
    small = tmp_path / "small"
    small.mkdir()
    if subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(small)],
                      capture_output=True).returncode:
        unavailable("cannot mount a tmpfs here")
    try:
        yield small
    finally:
        subprocess.run(["umount", str(small)], check=False)


def test_failed_operations_and_a_failed_target_are_said_and_the_others_kept(tmp_path):
    """On a tmpfs too small for 2,000 files of a page each (the byte count fits; tmpfs gives each file a page), the
    replay's creates fail: the table is printed (for the good target too), and the command says how many failed
    and why, and exits non-zero, rather than showing the failed replay's times as the step's."""
    with small_tmpfs(tmp_path, "5500k") as small:
        cap = small_files(tmp_path, 2000)
        good = tmp_path / "good"
        good.mkdir()
        res = iolens("replay", cap, "--on", small, "--on", good, "--json", tmp_path / "r.json")
        line = one_line(res)
        assert "replayed operations failed (first: " in line and "No space left" in line, line
        import json

        doc = json.loads((tmp_path / "r.json").read_text())
        by = {Path(t["target"]).name: t for t in doc["targets"]}
        assert by["small"]["errors"] > 0 and "No space left" in by["small"]["first_error"]
        assert by["good"]["errors"] == 0 and by["good"]["wall_s"] > 0
        assert "good" in res.stdout  # the good target's row is printed
        assert not list(small.iterdir()) and not list(good.iterdir())  # both replay directories removed


def slow_replay(tmp_path: Path, sleep_s: int, **popen) -> tuple[Path, Path, subprocess.Popen]:
    """A capture of a step that sleeps `sleep_s` between two writes, and its replay started on a new target, once
    the replay's directory is there: (capture, target, the replay's process)."""
    d = tmp_path / "step"
    d.mkdir()
    out = tmp_path / "slow.iolens"
    r = iolens("profile", "--trace", "-o", out, "--", "sh", "-c", f"echo a > a; sleep {sleep_s}; cat a > b", cwd=d)
    assert r.returncode == 0, r.stderr
    target = tmp_path / "t"
    target.mkdir()
    env = _absolute_pythonpath(dict(os.environ))
    proc = subprocess.Popen([sys.executable, "-m", "iolens", "replay", str(out), "--on", str(target)], env=env,
                            **popen)
    deadline = time.monotonic() + 30
    while not list(target.iterdir()) and time.monotonic() < deadline:  # the replay's directory exists
        time.sleep(0.05)
    return out, target, proc


def test_a_replay_stopped_by_sigterm_cleans_up_and_says_so(tmp_path):
    """SIGTERM (a batch system's stop) mid-replay: exit 143 with one line, the replay directory removed."""
    _out, target, proc = slow_replay(tmp_path, 6, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    time.sleep(1.0)
    proc.send_signal(signal.SIGTERM)
    _stdout, err = proc.communicate(timeout=60)
    assert proc.returncode == 128 + signal.SIGTERM, err
    assert "Traceback" not in err and "stopped by SIGTERM" in err, err
    assert not list(target.iterdir())


def test_a_partial_capture_replays_without_a_fidelity(cap, tmp_path):
    """A capture cut short replays what came before the cut; against the whole run's wall time a fidelity would
    be meaningless, so none is given, and a note says why.  The exit status is 3, as for every command that reads
    a partial capture."""
    import json

    cut = tmp_path / "cut.iolens"
    data = cap.read_bytes()
    cut.write_bytes(data[: len(data) * 3 // 4])
    res = iolens("replay", cut, "--on", cap.parent / "step", "--json", "-")
    assert res.returncode == 3, res.stderr
    if not res.stdout:  # the cut took the trace: one line that says so
        assert "no trace is left before the damage" in one_line(res)
        return
    assert "what came before it" in res.stderr and "Traceback" not in res.stderr
    doc = json.loads(res.stdout)
    assert any("partial" in n for n in doc["notes"])
    assert all(t["fidelity"] is None for t in doc["targets"])


def test_ctrl_c_while_a_work_directory_is_removed_does_not_leave_it_behind(tmp_path):
    """A Ctrl-C that lands while a replay's (or a benchmark's) directory of 20,000 files is being removed: the
    removal finishes, then the interrupt goes on.  Blocking the signal held it off the main thread only, and
    Python's handler still broke into the removal (14,212 files were left once)."""
    import threading

    from iolens.workspace.rails import WorkDirs

    d = tmp_path / "iolens-bench-x"
    d.mkdir()
    for i in range(20_000):
        (d / f"f{i}").touch()
    wd = WorkDirs()
    wd.dirs["x"] = d
    threading.Timer(0.01, os.kill, (os.getpid(), signal.SIGINT)).start()
    with pytest.raises(KeyboardInterrupt):
        wd.remove_all()
        time.sleep(2)  # the interrupt, when it came before the removal began
    assert not d.exists() and not wd.problems


def test_the_same_target_twice_is_refused_before_anything_runs(cap, tmp_path):
    """`--on /tmp/x --on /tmp/x/` replayed (and calibrated) the same directory twice, under two names, as if they
    were two kinds of storage."""
    t = tmp_path / "t"
    t.mkdir()
    for cmd in ("replay", "predict"):
        line = one_line(iolens(cmd, cap, "--on", t, "--on", f"{t}/", timeout=60))
        assert f"{t}/ is the same directory as {t}; give each target once" in line, line
        assert list(t.iterdir()) == []  # refused before any replay directory was made


def test_an_output_never_replaces_the_capture_it_is_made_from(cap, tmp_path):
    """`--json c.iolens --force` (or --fio-iolog, or a FILE.layout that is the capture) replaced the capture the
    command was reading, exit 0: the user's only copy of a long run's profile gone."""
    t = tmp_path / "t"
    t.mkdir()
    before = cap.read_bytes()
    layout_named = tmp_path / "c3.layout"
    layout_named.write_bytes(before)
    for args in (["replay", cap, "--on", t, "--json", cap], ["predict", cap, "--on", t, "--json", cap],
                 ["replay", cap, "--fio-iolog", cap], ["replay", layout_named, "--fio-iolog", tmp_path / "c3"],
                 ["report", cap, "--html", cap], ["diff", cap, cap, "--json", cap]):
        line = one_line(iolens(*args, "--force", timeout=60))
        assert "is a file this command reads" in line, (args, line)
    assert cap.read_bytes() == before and layout_named.read_bytes() == before


def test_the_space_a_replay_asks_for_is_its_peak_not_every_write(tmp_path):
    """A step that rewrites one 2 MB file ten times needs 4 MB at most (the input laid out, and its copy); asked
    for 22 MB (every write summed), a 12 MB tmpfs was refused though the replay fits it."""
    from iolens.capture.reader import read_capture
    from iolens.whatif.plan import build_plan
    from iolens.whatif.schedule import peak_bytes

    (tmp_path / "ref.fa").write_bytes(os.urandom(2 << 20))
    cap = tmp_path / "rw.iolens"
    res = iolens("profile", "-q", "--trace", "-o", cap, "--", "sh", "-c",
                 "for i in 1 2 3 4 5 6 7 8 9 10; do cat ref.fa > x.fa; done; cat x.fa > y.fa; rm x.fa; "
                 "cat ref.fa > z.fa", cwd=tmp_path)
    assert res.returncode == 0, res.stderr
    plan = build_plan(read_capture(cap))
    assert peak_bytes(plan) == 3 * (2 << 20)  # ref.fa, x.fa, y.fa at once; z.fa after x.fa is gone
    with small_tmpfs(tmp_path, "12m") as small:
        res = iolens("replay", cap, "--on", small)
        assert res.returncode == 0, res.stderr


def test_what_a_replay_killed_with_sigkill_left_is_removed_by_the_next(tmp_path):
    """SIGKILL leaves no cleanup to run: the replay directory on the target and the job directory (its op list,
    48 bytes an op) stayed, and the next replay neither removed nor mentioned them, as bench does."""
    import tempfile

    from iolens import workdirs

    out, target, proc = slow_replay(tmp_path, 4, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                    start_new_session=True)
    time.sleep(0.5)
    os.killpg(proc.pid, signal.SIGKILL)  # the command and its replayer
    proc.wait(timeout=60)
    jobs = [d for d in workdirs.candidates(tempfile.gettempdir(), "iolens-replay-")
            if (workdirs.read_marker(d) or {}).get("pid") == proc.pid]
    assert list(target.iterdir()) and jobs, "nothing was left behind to clean"
    res = iolens("replay", out, "--on", target)
    assert res.returncode == 0, res.stderr
    assert "iolens: note: removed " in res.stderr and " leftover directories of iolens runs that were killed" \
        in res.stderr
    assert not list(target.iterdir()) and not any(j.exists() for j in jobs)
