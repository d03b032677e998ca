"""`iolens profile` as a user meets it: exit codes, errors, overwrites, unwritable places, secrets."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from conftest import iolens, unavailable
from helpers.capture import traced_calls
from iolens import _format as F
from iolens.capture.reader import read_capture
from iolens.native import preload_library

PF = {k: v for k, (v, _d) in F.PROC_FLAGS.items()}
FF = {k: v for k, (v, _d) in F.FILE_FLAGS.items()}


def test_version_and_help():
    assert iolens("--version").stdout.startswith("iolens, version")
    for sub in ("profile", "parse", "data"):
        res = iolens(sub, "--help")
        assert res.returncode == 0 and "Usage:" in res.stdout


def test_exit_status_passes_through(tmp_path):
    assert iolens("profile", "-q", "-o", tmp_path / "a.iolens", "--", "sh", "-c", "exit 42").returncode == 42
    res = iolens("profile", "-q", "-o", tmp_path / "b.iolens", "--", "sh", "-c", "kill -USR1 $$")
    assert res.returncode == 128 + signal.SIGUSR1


def test_a_signal_death_is_named(tmp_path):
    """`exit 138` alone did not say that the command was killed, nor by which signal."""
    res = iolens("profile", "-o", tmp_path / "a.iolens", "--", "sh", "-c", "kill -USR1 $$")
    assert res.returncode == 138 and "exit 138 (killed by SIGUSR1)," in res.stderr, res.stderr
    assert "exit 138 (killed by SIGUSR1)," in iolens("report", tmp_path / "a.iolens").stdout
    # a shell whose child was killed exits 128+N itself: only the convention says which signal
    res = iolens("profile", "-q", "-o", tmp_path / "b.iolens", "--", "sh", "-c", 'sh -c "kill -USR1 \\$\\$"; exit $?')
    assert res.returncode == 138, res.stderr
    assert "exit 138 (128+10: SIGUSR1)," in iolens("report", tmp_path / "b.iolens").stdout
    res = iolens("profile", "-o", tmp_path / "c.iolens", "--", "sh", "-c", "exit 3")
    assert "exit 3," in res.stderr


def test_command_not_found_is_one_line(tmp_path):
    res = iolens("profile", "-o", tmp_path / "x.iolens", "--", "no-such-tool-xyz", "--flag")
    assert res.returncode == 127
    assert res.stderr.strip() == "iolens: error: command not found: no-such-tool-xyz (not on PATH)"
    assert not (tmp_path / "x.iolens").exists()


def test_a_mistyped_option_is_named_as_one(tmp_path):
    """`--ouput` before `--` is passed on as the command; it was reported as `command not found: --ouput`."""
    out = tmp_path / "x.iolens"
    res = iolens("profile", "--ouput", out, "--", "true")
    assert res.returncode == 2 and not out.exists()
    assert res.stderr.startswith("iolens: error: no such option: --ouput (did you mean --output?)"), res.stderr
    assert "after --" in res.stderr and len(res.stderr.strip().splitlines()) == 1
    res = iolens("profile", "-o", out, "--", "-no-such-tool")  # after `--` a word is the command, whatever it is
    assert res.returncode == 127 and "command not found: -no-such-tool" in res.stderr


def test_existing_capture_is_never_overwritten(tmp_path):
    out = tmp_path / "keep.iolens"
    out.write_bytes(b"user data")
    res = iolens("profile", "-o", out, "--", "true")
    assert res.returncode == 2 and "already exists" in res.stderr and "Traceback" not in res.stderr
    assert out.read_bytes() == b"user data"


def test_an_output_directory_that_cannot_take_the_capture_is_refused_before_the_run(tmp_path):
    """The command ran and only a warning, lost above the summary, said that its capture could not be saved: an
    aligner's hours of profile gone.  Now a missing or read-only directory is one line, before anything runs."""
    ro = tmp_path / "ro"
    ro.mkdir()
    ro.chmod(0o500)
    marker = tmp_path / "ran"
    outs = [tmp_path / "missing" / "c.iolens"] + ([ro / "c.iolens"] if os.geteuid() != 0 else [])  # root writes
    try:
        for out in outs:
            res = iolens("profile", "--trace", "-o", out, "--", "sh", "-c", f"echo ok > {marker}")
            assert res.returncode == 2 and "Traceback" not in res.stderr, res.stderr
            lines = [ln for ln in res.stderr.splitlines() if ln.startswith("iolens: error:")]
            assert len(lines) == 1 and "cannot save the capture" in lines[0] and "was not run" in lines[0], lines
            assert not marker.exists() and not out.exists()
    finally:
        ro.chmod(0o700)


def _run_as(prefix: list[str], *args: object, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([*prefix, sys.executable, "-m", "iolens", *map(str, args)], capture_output=True, text=True,
                          cwd=cwd, timeout=120)


def test_unwritable_directory_says_why_and_create_it_only_when_missing(tmp_path):
    """`create it` was said for every directory that could not take the capture, an existing read-only one too."""
    res = iolens("profile", "-o", tmp_path / "missing" / "c.iolens", "--", "true")
    assert "directory " in res.stderr and "does not exist; create it or give -o" in res.stderr, res.stderr
    if not shutil.which("unshare"):
        unavailable("unshare (util-linux) is needed to mount a read-only filesystem")
    (tmp_path / "rofs").mkdir()
    mount = ["unshare", "-rm", "--propagation", "private", "sh", "-c", 'mount -t tmpfs -o ro tmpfs rofs && exec "$@"',
             "sh"]
    res = _run_as(mount, "profile", "-o", "rofs/c.iolens", "--", "true", cwd=tmp_path)
    if "mount" in res.stderr or "unshare" in res.stderr:
        unavailable(f"cannot mount a read-only tmpfs in a private namespace: {res.stderr.strip()}")
    assert res.returncode == 2 and "Traceback" not in res.stderr, res.stderr
    assert "directory rofs is on a read-only filesystem; give -o in a writable directory" in res.stderr, res.stderr
    assert "create it" not in res.stderr
    top = Path(tempfile.mkdtemp(prefix="iolens-ro-"))  # outside tmp_path, which another user cannot enter
    try:
        top.chmod(0o755)
        (top / "locked").mkdir(mode=0o500)
        prefix = (["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"] if os.geteuid() == 0 else [])
        if prefix and not shutil.which("setpriv"):
            unavailable("setpriv (util-linux) is needed to run as another user")
        res = _run_as(prefix, "profile", "-o", "locked/c.iolens", "--", "true", cwd=top)
        assert res.returncode == 2 and "Traceback" not in res.stderr, res.stderr
        assert "directory locked is not writable by you; give -o in a writable directory" in res.stderr, res.stderr
    finally:
        shutil.rmtree(top)


def test_unwritable_capture_dir_in_the_interposer(tmp_path):
    """The library itself, pointed at a directory it cannot write, warns and lets the program run."""
    env = dict(os.environ, LD_PRELOAD=str(preload_library()), IOLENS_DIR=str(tmp_path / "missing" / "dir"),
               IOLENS_PARENT_PID=str(os.getpid()))
    res = subprocess.run(["sh", "-c", "echo works"], env=env, capture_output=True, text=True, timeout=60)
    assert res.returncode == 0 and res.stdout == "works\n"
    assert "iolens: warning: cannot write the capture" in res.stderr


def test_secrets_are_redacted(tmp_path):
    out = tmp_path / "s.iolens"
    args = ["--password", "hunter2", "--token=abc123", "AWS_SECRET_ACCESS_KEY=wJalrXUtnFEMI",
            "https://user:pa55@host/x?X-Amz-Signature=deadbeef&part=1", "--threads", "4"]
    res = iolens("profile", "-q", "-o", out, "--", "sh", "-c", "true", *args,
                 env=dict(os.environ, AWS_SESSION_TOKEN="tok-42", TMPDIR=str(tmp_path)))
    assert res.returncode == 0
    raw = out.read_bytes()
    for secret in (b"hunter2", b"abc123", b"wJalrXUtnFEMI", b"pa55", b"deadbeef", b"tok-42"):
        assert secret not in raw
    p = read_capture(out).processes[0]
    assert p.argv[3:] == ["--password", "***", "--token=***", "AWS_SECRET_ACCESS_KEY=***",
                          "https://user:***@host/x?X-Amz-Signature=***&part=1", "--threads", "4"]
    assert p.env["AWS_SESSION_TOKEN"] == "***" and p.env["TMPDIR"] == str(tmp_path)
    # iolens's own record of the command uses the same rules as the interposer
    from iolens.redact import redact_argv

    assert read_capture(out).meta["command"][3:] == p.argv[3:] == redact_argv(args)


def test_sigkill_loses_at_most_the_end_fields(cprog, tmp_path):
    out = tmp_path / "k.iolens"
    target = tmp_path / "k.bin"
    proc = subprocess.Popen([sys.executable, "-m", "iolens", "profile", "-q", "-o", str(out), "--",
                             str(cprog("crash")), str(target), "sleep"], stdout=subprocess.PIPE, text=True)
    assert proc.stdout.readline() == "ready\n"
    time.sleep(0.2)
    children = subprocess.run(["pgrep", "-P", str(proc.pid)], capture_output=True, text=True).stdout.split()
    assert len(children) == 1
    os.kill(int(children[0]), signal.SIGKILL)
    assert proc.wait(timeout=60) == 128 + signal.SIGKILL
    proc.stdout.close()
    p = [p for p in read_capture(out).processes if p.exe.endswith("crash")][0]
    assert not p.finalized  # killed before it could say goodbye
    f = [f for f in p.files if f["path"] == str(target)][0]
    assert f["bytes_written"] == 1234  # but every counter it had is there


def test_file_limit_aggregates_per_directory(tmp_path):
    d = tmp_path / "many"
    d.mkdir()
    out = tmp_path / "m.iolens"
    res = iolens("profile", "-q", "--max-files", "20", "-o", out, "--", sys.executable, "-S", "-c",
                 f"import os\nfor i in range(60): open(os.path.join({str(d)!r}, f'f{{i}}'), 'w').write('x')")
    assert res.returncode == 0, res.stderr
    p = [p for p in read_capture(out).processes if "python" in p.exe][0]
    assert p.fields["flags"] & PF["OVERFLOW"]
    agg = [f for f in p.files if f["flags"] & FF["AGGREGATE"]]
    assert agg and agg[0]["path"] == f"{d}/*"
    named = [f for f in p.files if f["path"].startswith(str(d) + "/f")]
    assert len(named) + agg[0]["opens"] == 60
    assert sum(f["bytes_written"] for f in named) + agg[0]["bytes_written"] == 60


def test_trace_records_every_operation(cprog, tmp_path):
    out = tmp_path / "t.iolens"
    target = tmp_path / "t.bin"
    res = iolens("profile", "-q", "--trace", "-o", out, "--", cprog("rw_exact"), target, 50, 1000)
    assert res.returncode == 0, res.stderr
    p = [p for p in read_capture(out).processes if p.exe.endswith("rw_exact")][0]
    ev = p.events
    assert ev is not None and traced_calls(p) == sum(p.op_count) and len(ev) == p.trace_events
    ops = [n for n, _c in F.OPS]
    writes = ev[ev["op"] == ops.index("WRITE")]
    f = [f for f in p.files if f["path"] == str(target)][0]
    assert len(writes) == 50 and set(writes["file"]) == {f["index"]} and set(writes["size"]) == {1000}
    assert list(writes["offset"]) == [i * 1000 for i in range(50)]
    assert (ev["start_mono"][1:] >= ev["start_mono"][:-1]).all()


def test_summary_is_printed(tmp_path):
    res = iolens("profile", "-o", tmp_path / "s.iolens", "--", "sh", "-c", f"head -c 100000 /dev/zero > {tmp_path}/z")
    assert res.returncode == 0
    assert "Where the time went" in res.stderr and "attributed coverage" in res.stderr
    assert "Processes" in res.stderr and "capture:" in res.stderr
    assert "advice: " in res.stderr  # the report's top advice names itself in the summary


def test_io_from_an_allocator_and_early_constructors(cprog, tmp_path):
    """A preloaded calloc doing I/O (dlsym may call it mid-resolution) and a constructor doing I/O
    before the interposer's: the program runs normally and its I/O is still recorded."""
    import shutil

    lib = tmp_path / "liballocio.so"
    subprocess.run([shutil.which("cc") or "gcc", "-shared", "-fPIC", "-o", str(lib),
                    str(Path(__file__).parent / "native" / "allocio.c")], check=True)
    stage = tmp_path / "stage"
    stage.mkdir()
    target = tmp_path / "r.bin"
    for order in (f"{lib} {preload_library()}", f"{preload_library()} {lib}"):
        env = dict(os.environ, LD_PRELOAD=order, IOLENS_DIR=str(stage))
        res = subprocess.run([str(cprog("rw_exact")), str(target), "8", "512"], env=env, timeout=60)
        assert res.returncode == 0
    from iolens.capture.merge import merge_parts

    merge_parts(stage, tmp_path / "m.iolens", {})
    files = [f for p in read_capture(tmp_path / "m.iolens").processes for f in p.files if f["path"] == str(target)]
    assert len(files) == 2 and all(f["bytes_written"] == 8 * 512 for f in files)


def test_full_staging_space_never_crashes_the_program(tmp_path):
    """A nearly full staging filesystem: the program finishes normally; the recorder stops adding records."""
    if os.geteuid() != 0:
        import pytest

        pytest.skip("needs root to mount a small tmpfs")
    small = tmp_path / "small"
    small.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=400k", "tmpfs", str(small)], check=True)
    try:
        d = tmp_path / "files"
        d.mkdir()
        code = (f"import os\nfor i in range(3000): open(os.path.join({str(d)!r}, 'file-with-a-long-name-%05d' % i), "
                "'w').write('x')\nprint('done')")
        out = tmp_path / "full.iolens"
        res = iolens("profile", "-q", "-o", out, "--", sys.executable, "-S", "-c", code,
                     env=dict(os.environ, IOLENS_STAGING=str(small)))
        assert res.returncode == 0 and res.stdout == "done\n", res.stderr
        assert len(list(d.iterdir())) == 3000
        p = [p for p in read_capture(out).processes if "python" in p.exe][0]
        assert p.fields["flags"] & PF["OVERFLOW"]  # ran out of room: said so, did not crash
    finally:
        subprocess.run(["umount", str(small)], check=False)


def test_program_closing_every_descriptor_keeps_the_recorder(tmp_path):
    target = tmp_path / "after.txt"
    code = (f"import os\nos.closerange(3, 65536)\nfd = os.open({str(target)!r}, os.O_WRONLY | os.O_CREAT)\n"
            "os.write(fd, b'x' * 5000)\nos.close(fd)")
    out = tmp_path / "c.iolens"
    res = iolens("profile", "-q", "-o", out, "--", sys.executable, "-S", "-c", code)
    assert res.returncode == 0, res.stderr
    p = [p for p in read_capture(out).processes if "python" in p.exe][0]
    assert [f["bytes_written"] for f in p.files if f["path"] == str(target)] == [5000]


def test_timeline_coarsens_and_keeps_every_count(tmp_path):
    """A run longer than the initial 256 bins (about 2.1 s): bins double, nothing is lost."""
    target = tmp_path / "slow.txt"
    code = (f"import os, time\nfd = os.open({str(target)!r}, os.O_WRONLY | os.O_CREAT)\n"
            "t = time.time()\nwhile time.time() - t < 3.0:\n    os.write(fd, b'abc'); time.sleep(0.01)\nos.close(fd)")
    out = tmp_path / "t.iolens"
    res = iolens("profile", "-q", "-o", out, "--", sys.executable, "-S", "-c", code)
    assert res.returncode == 0, res.stderr
    p = [p for p in read_capture(out).processes if "python" in p.exe][0]
    tl = p.timeline
    assert tl["shift"] > F.TIMELINE_SHIFT0
    assert sum(tl["count"]) == sum(p.op_count)
    assert sum(tl["bytes_written"]) == p.bytes_written
    width = 2 ** tl["shift"]
    busy = [i for i in range(tl["nbins"]) if tl["bytes_written"][i]]
    assert (busy[-1] - busy[0] + 1) * width >= 2.5e9  # writes spread over the 3 s


def test_static_binary_is_said_to_be_invisible(tmp_path):
    import shutil

    import pytest

    src = tmp_path / "s.c"
    src.write_text('#include <stdio.h>\nint main(void){ FILE *f = fopen("/etc/hostname", "r"); '
                   'char b[64]; if (f) { fread(b, 1, sizeof b, f); fclose(f); } return 0; }\n')
    exe = tmp_path / "static"
    built = subprocess.run([shutil.which("cc") or "gcc", "-static", "-o", str(exe), str(src)], capture_output=True)
    if built.returncode != 0:
        pytest.skip(f"cannot link statically here (libc6-dev's libc.a missing?): {built.stderr[-200:]!r}")
    res = iolens("profile", "-o", tmp_path / "s.iolens", "--", exe)
    assert res.returncode == 0
    assert "no process was recorded: the command is statically linked" in res.stderr
