"""The profiled program is never harmed: exit status, stdout, stderr and the files it writes are the same with
and without the profiler, under resource limits (RLIMIT_FSIZE, RLIMIT_NOFILE), with descriptors anywhere in the
program's range, with the environment it would see unprofiled, and vfork from threads stays cheap."""

from __future__ import annotations

import json
import os
import shlex
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from conftest import iolens, tool, unavailable
from iolens import _format as F
from iolens.capture.reader import read_capture

PF = {k: v for k, (v, _d) in F.PROC_FLAGS.items()}

# Launches argv as `iolens profile` does (a Python parent, descriptors closed, the same exit-status rule),
# so the only difference between the two runs is the profiler.
LAUNCH = ("import subprocess, sys; r = subprocess.run(sys.argv[1:]).returncode; "
          "sys.exit(r if r >= 0 else 128 - r)")


def environment(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("IOLENS_")}
    if env.get("PYTHONPATH"):
        env["PYTHONPATH"] = os.pathsep.join(os.path.abspath(p) for p in env["PYTHONPATH"].split(os.pathsep) if p)
    env.update(extra)
    return env


def tree(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def both(tmp_path: Path, argv: list, env: dict[str, str] | None = None, *extra: str):
    """Run argv plainly in plain/ and profiled in prof/; assert the program saw no difference.
    Returns (profiled result, capture)."""
    env = env or environment()
    argv = [str(a) for a in argv]
    plain_dir, prof_dir = tmp_path / "plain", tmp_path / "prof"
    plain_dir.mkdir()
    prof_dir.mkdir()
    plain = subprocess.run([sys.executable, "-c", LAUNCH, *argv], cwd=plain_dir, env=env, capture_output=True,
                           stdin=subprocess.DEVNULL, timeout=300)
    cap_path = tmp_path / "c.iolens"
    prof = iolens("profile", "-q", "-o", cap_path, *extra, "--", *argv, cwd=prof_dir, env=env, text=False,
                  stdin=subprocess.DEVNULL, timeout=300)
    assert prof.stderr == plain.stderr
    assert prof.stdout == plain.stdout
    assert prof.returncode == plain.returncode
    assert tree(prof_dir) == tree(plain_dir)
    return prof, read_capture(cap_path)


def images(cap, name: str):
    return [p for p in cap.processes if os.path.basename(p.exe) == name]


# ---- RLIMIT_FSIZE: the recorder's own files never raise SIGXFSZ ----

def test_ulimit_f_many_files_recorder_full_not_killed(tmp_path):
    # 64 KiB is the size of a fresh part: touch's records cannot grow it, and touch must not die for that
    res, cap = both(tmp_path, ["bash", "-c", "ulimit -f 64; touch f{1..1500}; echo $?; ls | wc -l"])
    assert res.stdout == b"0\n1500\n"
    touch = images(cap, "touch")
    assert len(touch) == 1 and touch[0].flags & PF["OVERFLOW"]  # records were lost, and the capture says so
    assert touch[0].flags & PF["EXITED"] and touch[0].exit_status == 0


def test_ulimit_f_below_one_part(tmp_path):
    (tmp_path / "in.txt").write_text("hello\n")
    res, _cap = both(tmp_path, ["bash", "-c", f"ulimit -f 60; cat {tmp_path / 'in.txt'}"])
    assert res.stdout == b"hello\n"


@pytest.mark.parametrize("how,expect", [("ign", b"written=2048 EFBIG caught=0\n"),
                                        ("catch", b"written=2048 EFBIG caught=1\n")])
def test_program_own_sigxfsz_still_delivered(cprog, tmp_path, how, expect):
    res, _cap = both(tmp_path, ["bash", "-c", f"ulimit -f 2; exec {cprog('fdcheck')} grow 5000 {how}"])
    assert res.stdout == expect


def test_program_killed_by_own_sigxfsz(cprog, tmp_path):
    res, _cap = both(tmp_path, ["bash", "-c", f"ulimit -f 2; exec {cprog('fdcheck')} grow 5000 die"])
    assert res.returncode == 128 + 25  # SIGXFSZ, as without the profiler


def test_ulimit_f_trace_file(tmp_path):
    # --trace writes 64 KiB blocks of events: past the limit they are counted lost, the program runs on
    res, cap = both(tmp_path, ["bash", "-c", "ulimit -f 64; dd if=/dev/zero of=/dev/null bs=1 count=6000 2>/dev/null; "
                               "echo ok"], None, "--trace")
    assert res.stdout == b"ok\n"
    dd = images(cap, "dd")
    assert len(dd) == 1 and dd[0].flags & PF["TRACE_LOST"]


# ---- descriptors: the recorder holds none of the program's ----

# Each program starts under the limit (exec), as a job under a batch scheduler's limit does.

def test_ulimit_n_64_exec_3(tmp_path):
    res, _cap = both(tmp_path, ["bash", "-c", "ulimit -n 64; exec bash -c 'exec 3>o.txt; echo y >&3; cat o.txt'"])
    assert res.stdout == b"y\n" and res.returncode == 0


@pytest.mark.parametrize("fd", [960, 1023])
def test_exec_high_fd_limit_1024(tmp_path, fd):
    res, _cap = both(tmp_path, ["bash", "-c", f"ulimit -n 1024; exec bash -c "
                                f"'exec {fd}>o.txt; echo y >&{fd}; exec {fd}>&-; cat o.txt'"])
    assert res.stdout == b"y\n"


@pytest.mark.parametrize("fd", [3, 960, 1023])
def test_close_never_opened_is_ebadf(cprog, tmp_path, fd):
    res, _cap = both(tmp_path, ["bash", "-c", f"ulimit -n 1024; exec {cprog('fdcheck')} close {fd}"])
    assert res.stdout == b"close=-1 EBADF\n"


def test_thread_cancelled_in_a_hooked_call_unwinds(cprog, tmp_path):
    res, _cap = both(tmp_path, [cprog("cancel_unwind")])
    assert res.stdout == b"cleanup ran\ncancelled=1\n"


@pytest.mark.parametrize("limit,fd", [(1024, 960), (64, 3), (64, 63)])
def test_dup2_onto_any_descriptor(cprog, tmp_path, limit, fd):
    res, _cap = both(tmp_path, ["bash", "-c", f"ulimit -n {limit}; exec {cprog('fdcheck')} dup2 {fd}"])
    assert res.stdout == b"through\nclose=0\n"


@pytest.mark.parametrize("limit", [64, 1024])
def test_opens_until_emfile(cprog, tmp_path, limit):
    res, _cap = both(tmp_path, ["bash", "-c", f"ulimit -n {limit}; exec {cprog('fdcheck')} emfile"])
    assert res.stdout == f"opens={limit - 3} EMFILE\n".encode()


@pytest.mark.parametrize("limit", [64, 1024])
def test_proc_self_fd_listing(cprog, tmp_path, limit):
    res, _cap = both(tmp_path, ["bash", "-c", f"ulimit -n {limit}; exec {cprog('fdcheck')} list"])
    assert res.stdout == b"0\n1\n2\n"


def test_ls_proc_self_fd(tmp_path):
    res, _cap = both(tmp_path, ["ls", "/proc/self/fd"])
    assert res.stdout == b"0\n1\n2\n3\n"  # 3: the listing's own


# ---- inherited descriptors: the command keeps every one it is given ----

def in_shell(tmp_path: Path, script: str, unordered: bool = False) -> subprocess.CompletedProcess:
    """Run a bash script twice, `run CMD` (and $RUN, the words before CMD) standing for CMD and then for `iolens
    profile -- CMD`, so that the command inherits the shell's descriptors (a `<(...)`, an `exec 3>`) as a user's
    does; assert it saw no difference (`unordered`: the same lines of output in any order, for jobs that run side
    by side).  Returns the profiled run; its capture is tmp_path/c.iolens."""
    cap = shlex.quote(str(tmp_path / "c.iolens"))
    out = []
    for run in ("", f"{shlex.quote(sys.executable)} -m iolens profile -q --force -o {cap} --"):
        out.append(subprocess.run(["bash", "-c", f"run() {{ eval \"$RUN\"' \"$@\"'; }}\n{script}"], cwd=tmp_path,
                                  env=environment(RUN=run), capture_output=True, stdin=subprocess.DEVNULL, timeout=300))
    plain, profiled = out

    def seen(r: subprocess.CompletedProcess) -> tuple:
        lines = (lambda b: sorted(b.split(b"\n"))) if unordered else (lambda b: b)
        return r.returncode, lines(r.stdout), lines(r.stderr)

    assert seen(profiled) == seen(plain)
    return profiled


def test_process_substitution(tmp_path):
    res = in_shell(tmp_path, "run cat <(echo ok)")
    assert res.stdout == b"ok\n" and res.returncode == 0
    assert images(read_capture(tmp_path / "c.iolens"), "cat")


def test_exec_3_reaches_the_command(tmp_path):
    res = in_shell(tmp_path, "exec 3>f; run sh -c 'echo x >&3'; exec 3>&-; cat f")
    assert res.stdout == b"x\n" and res.returncode == 0


def test_two_process_substitutions(tmp_path):
    res = in_shell(tmp_path, "run diff <(printf 'a\\nb\\n') <(printf 'a\\nc\\n')")
    assert res.returncode == 1 and res.stdout.endswith(b"< b\n---\n> c\n")


def test_inherited_descriptor_above_100(tmp_path):
    (tmp_path / "in.txt").write_text("far\n")
    res = in_shell(tmp_path, "exec 150<in.txt; run cat /dev/fd/150; run ls /proc/self/fd")
    assert res.stdout == b"far\n0\n1\n150\n2\n3\n"  # 3: the listing's own; nothing of the recorder's


def test_make_jobserver_through_a_recursive_recipe(tmp_path):
    """`+iolens profile -- $(MAKE) -C sub` under make -j4: the sub-make gets the jobserver's pipe, not -j1."""
    tool("make")
    (tmp_path / "sub").mkdir()
    (tmp_path / "Makefile").write_text("all:\n\t+$(RUN) $(MAKE) -C sub\n")
    (tmp_path / "sub" / "Makefile").write_text("all: a b\na b:\n\t@echo $@ $(findstring jobserver-auth,$(MAKEFLAGS))\n")
    res = in_shell(tmp_path, "make -s -j4", unordered=True)  # a and b run side by side: either may print first
    assert b"jobserver unavailable" not in res.stderr, res.stderr
    assert sorted(res.stdout.split(b"\n")[-3:-1]) == [b"a jobserver-auth", b"b jobserver-auth"], res.stdout


# ---- fatal signals: the recorder's handlers stand only where the program had the default ----

def test_inherited_ignored_signals_stay_ignored(tmp_path):
    # an image started with SIGHUP and SIGTERM ignored (nohup, a shell's trap "") keeps them ignored
    script = "trap '' HUP TERM; exec bash -c 'kill -HUP $$; kill -TERM $$; echo alive'"
    res, _cap = both(tmp_path, ["bash", "-c", script])
    assert res.stdout == b"alive\n" and res.returncode == 0


def test_fatal_signal_ends_an_image_without_file_io(tmp_path):
    # sleep records no call, so it has no part when the signal comes: the handler writes the image whole,
    # then the signal kills it as it would have unprofiled. dash prints "Terminated" only when its `wait` is the
    # one that reaps the job, which is a race with or without the profiler, so that line goes to /dev/null.
    res, cap = both(tmp_path, ["sh", "-c", "sleep 30 & sleep 0.5; kill -TERM $!; wait $! 2>/dev/null; echo $?"])
    assert res.stdout == b"143\n"
    killed = [p for p in images(cap, "sleep") if p.argv[1:] == ["30"]]
    assert len(killed) == 1 and not killed[0].files
    assert killed[0].fields["flags"] & PF["SIGNALED"] and killed[0].exit_status == 128 + 15


# ---- the environment ----

def test_env_is_the_programs(tmp_path):
    res, cap = both(tmp_path, ["env"])
    assert b"IOLENS_" not in res.stdout and b"iolens_preload" not in res.stdout
    assert len(images(cap, "env")) == 1


def test_children_still_followed(tmp_path):
    res, cap = both(tmp_path, ["bash", "-c", "env | grep -c IOLENS_; cat /dev/null; exit 0"])
    assert res.stdout == b"0\n"
    assert len(images(cap, "cat")) == 1 and len(images(cap, "env")) == 1 and len(images(cap, "grep")) == 1


def test_system_and_popen_children_followed(tmp_path):
    script = "import os; os.system('cat /dev/null'); print(os.popen('env').read().count('IOLENS_'))"
    res, cap = both(tmp_path, [sys.executable, "-c", script])
    assert res.stdout == b"0\n"
    assert len(images(cap, "cat")) == 1 and len(images(cap, "env")) == 1


@pytest.mark.parametrize("how", ["env -i", "execve"])
def test_empty_environment_not_injected(tmp_path, how):
    env = shutil.which("env")
    argv = (["env", "-i", "env"] if how == "env -i" else
            [sys.executable, "-c", f"import os; os.execve({env!r}, ['env'], {{}})"])
    res, cap = both(tmp_path, argv)
    assert res.stdout == b""
    # the stripped image is not followed (that is what was asked for); env -i itself is
    assert len(images(cap, "env")) == (1 if how == "env -i" else 0)


def test_custom_environment_followed(tmp_path):
    res, cap = both(tmp_path, ["env", "-i", "A=1", "env"])
    assert res.stdout == b"A=1\n"
    assert len(images(cap, "env")) == 2


def test_programs_own_ld_preload_kept(tmp_path):
    env = environment(LD_PRELOAD="libc.so.6")
    res, cap = both(tmp_path, ["bash", "-c", "printenv LD_PRELOAD; cat /dev/null"], env)
    assert res.stdout == b"libc.so.6\n"
    assert len(images(cap, "printenv")) == 1 and len(images(cap, "cat")) == 1


def test_empty_ld_preload_stays_empty(tmp_path):
    # set and empty is not unset; the children are still followed
    script = 'echo "[${LD_PRELOAD-unset}]"; env | grep -c ^LD_PRELOAD=; cat /dev/null'
    res, cap = both(tmp_path, ["sh", "-c", script], environment(LD_PRELOAD=""))
    assert res.stdout == b"[]\n1\n"
    assert len(images(cap, "cat")) == 1 and len(images(cap, "env")) == 1


def test_ld_preload_emptied_by_the_program_stays_empty(tmp_path):
    env = {k: v for k, v in environment().items() if k != "LD_PRELOAD"}
    res, cap = both(tmp_path, ["sh", "-c", """LD_PRELOAD= sh -c 'echo "[${LD_PRELOAD-unset}]"; cat /dev/null'"""], env)
    assert res.stdout == b"[]\n"
    assert len(images(cap, "cat")) == 1


def test_dynamic_children_see_the_environment_unprofiled(tmp_path):
    # both() compares every line with the unprofiled run's, through exec (bash), a PATH search (env) and Python;
    # without PWD, which a shell sets to its directory (the two runs' differ)
    script = "{ env; env env; python3 -c 'import os; print(*os.environ.items(), sep=\"\\n\")'; } | grep -v PWD"
    res, cap = both(tmp_path, ["bash", "-c", script], environment(LD_PRELOAD=""))
    assert b"IOLENS" not in res.stdout and b"LD_PRELOAD=\n" in res.stdout
    assert len(images(cap, "env")) == 3  # env, and env env's two images


@pytest.fixture(scope="module")
def static_envdump(tmp_path_factory) -> Path:
    """tests/native/envdump.c linked statically (`gcc -static`: the C library's static archive, libc6-dev)."""
    cc = shutil.which("cc") or shutil.which("gcc")
    if cc is None:
        pytest.skip("no C compiler (cc/gcc) on PATH; install gcc")
    exe = tmp_path_factory.mktemp("static") / "envdump-static"
    res = subprocess.run([cc, "-static", "-O1", "-o", str(exe), str(Path(__file__).parent / "native" / "envdump.c")],
                         capture_output=True, text=True)
    if res.returncode != 0:
        unavailable(f"cannot link statically (gcc -static: {res.stderr.strip()[-200:]}); install libc6-dev")
    return exe


@pytest.mark.parametrize("how", ["command", "script command", "exec", "execvp", "script", "posix_spawn"])
def test_static_program_sees_the_environment_unprofiled(tmp_path, static_envdump, how):
    """A static program ignores LD_PRELOAD, so nothing of the recorder's may reach it, whether iolens starts it or
    a profiled program does (execve, a PATH search, a `#!` script whose interpreter is static, posix_spawn); an
    empty LD_PRELOAD stays empty.  The price: its own children are not followed (docs/design.md)."""
    script = tmp_path / "envdump.sh"
    script.write_text(f"#!{static_envdump}\n")
    script.chmod(0o755)
    # a shell sets PWD to its directory (the two runs' differ): left out
    argv = {"command": [static_envdump], "script command": [script],
            "exec": ["sh", "-c", f"{static_envdump} | grep -v PWD="], "execvp": ["env", static_envdump.name],
            "script": ["sh", "-c", f"{script} | grep -v PWD="],
            "posix_spawn": [sys.executable, "-c", "import os, sys; os.waitpid(os.posix_spawnp(sys.argv[1], "
                            "[sys.argv[1]], os.environ), 0)", static_envdump.name]}[how]
    env = environment(LD_PRELOAD="", PATH=f"{static_envdump.parent}{os.pathsep}{os.environ['PATH']}")
    res, cap = both(tmp_path, argv, env)
    assert b"IOLENS" not in res.stdout and b"iolens_preload" not in res.stdout and b"LD_PRELOAD=\n" in res.stdout
    assert not images(cap, static_envdump.name)
    if how.endswith("command"):  # nothing at all was profiled; otherwise only the dynamic programs were
        assert not cap.processes
    else:
        dynamic = {"sh", "dash", "env", "grep", os.path.basename(os.path.realpath(sys.executable))}
        assert cap.processes and {os.path.basename(p.exe) for p in cap.processes} <= dynamic


# a program that starts ./prog three times with posix_spawn, rewriting it in place (same inode) before each start
# from the file named; each start's output goes to ./prog.N, and the lines of it that name the recorder are counted
RESPAWN = """
import os, shutil, sys
for i, src in enumerate(sys.argv[1:]):
    shutil.copyfile(src, "./prog")
    os.chmod("./prog", 0o755)
    out = f"./prog.{i}"
    pid = os.posix_spawn("./prog", ["./prog"], os.environ,
                         file_actions=[(os.POSIX_SPAWN_OPEN, 1, out, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)])
    os.waitpid(pid, 0)
    print(sum("IOLENS" in line or "iolens_preload" in line for line in open(out)))
"""


def test_a_program_rewritten_between_two_starts_is_looked_at_again(tmp_path, static_envdump):
    """Whether the interposer loads in a program is kept for the last one started by path, with the file's
    identity: the same path rewritten in place (the same inode) with a static program is read again, and that one
    is given its environment unprofiled; a dynamic one written back is profiled again."""
    env = shutil.which("env")
    res, cap = both(tmp_path, [sys.executable, "-c", RESPAWN, env, static_envdump, env])
    assert res.stdout == b"0\n0\n0\n"
    assert len(images(cap, "prog")) == 2


# A preload of the user's that defines read and write: every byte read and written is upper-cased.
SHOUT = r"""
#define _GNU_SOURCE
#include <ctype.h>
#include <dlfcn.h>
#include <unistd.h>
static void up(unsigned char *b, ssize_t n) { for (ssize_t i = 0; i < n; i++) b[i] = (unsigned char)toupper(b[i]); }
ssize_t read(int fd, void *b, size_t n)
{
    static ssize_t (*next)(int, void *, size_t);
    if (!next) next = (ssize_t (*)(int, void *, size_t))dlsym(RTLD_NEXT, "read");
    ssize_t r = next(fd, b, n);
    up(b, r);
    return r;
}
ssize_t write(int fd, const void *b, size_t n)
{
    static ssize_t (*next)(int, const void *, size_t);
    if (!next) next = (ssize_t (*)(int, const void *, size_t))dlsym(RTLD_NEXT, "write");
    unsigned char c[4096];
    size_t m = n < sizeof c ? n : sizeof c;
    for (size_t i = 0; i < m; i++) c[i] = ((const unsigned char *)b)[i];
    up(c, (ssize_t)m);
    return next(fd, c, m);
}
"""


def test_programs_own_read_write_interposer_still_called(tmp_path):
    # ours comes first in LD_PRELOAD and may make read and write's system call itself, but only when the next
    # definition is libc's: the user's interposer after ours still sees every call
    cc = shutil.which("cc") or shutil.which("gcc")
    if cc is None:
        pytest.skip("no C compiler (cc/gcc) on PATH; install gcc")
    (tmp_path / "shout.c").write_text(SHOUT)
    lib = tmp_path / "shout.so"
    subprocess.run([cc, "-O2", "-shared", "-fPIC", "-o", str(lib), str(tmp_path / "shout.c")], check=True)
    res, cap = both(tmp_path, ["env", f"LD_PRELOAD={lib}", "bash", "-c",
                               "printf 'abc\\n' > in.txt; cat in.txt in.txt in.txt"])
    assert res.stdout == b"ABC\n" * 3  # the first call of each resolves the next definition; the others count
    cats = images(cap, "cat")
    assert len(cats) == 1 and any(f["path"].endswith("in.txt") and f["bytes_read"] == 12 for f in cats[0].files)


# ---- vfork ----

def test_vfork_child_leaves_parent_state(cprog, tmp_path):
    echo = shutil.which("echo")
    res, cap = both(tmp_path, [cprog("vfork_exact"), "out.txt", echo])
    assert res.stdout == b"parent\n" and (tmp_path / "prof" / "out.txt").read_bytes() == b"child\nx"
    parent = images(cap, "vfork_exact")[0]
    out = [f for f in parent.files if f["path"].endswith("/out.txt")]
    # the child's dup2 and close did not touch the parent's descriptor table
    assert len(out) == 1 and (out[0]["opens"], out[0]["writes"], out[0]["bytes_written"]) == (1, 1, 1)
    assert len(images(cap, "echo")) == 1


def test_vfork_from_threads_is_cheap(cprog, tmp_path):
    true = shutil.which("true")
    n = 200
    argv = [str(cprog("vfork_threads")), "8", str(n), true]
    plain = subprocess.run(argv, capture_output=True, timeout=300, check=True)
    prof = iolens("profile", "-q", "-o", tmp_path / "v.iolens", "--", *argv, timeout=300)
    assert prof.returncode == 0, prof.stderr
    t_plain, t_prof = float(plain.stdout), float(prof.stdout)
    # loose here (a shared machine); benchmarks/profile_overhead.py --vfork measures it properly
    assert t_prof < 3 * t_plain + 0.3, (t_plain, t_prof)
    cap = read_capture(tmp_path / "v.iolens")
    assert len(images(cap, "true")) == n  # every child followed


def test_a_process_of_the_recording_without_a_part_yet_counts_as_running(tmp_path):
    """An image makes its part on its first recorded call: a daemon caught before it has none, and its environment
    (the recording's staging directory) tells it belongs to the recording (the test below once lost that race in
    CI)."""
    from iolens.capture.record import RECORDER_VAR, recorder_value, still_running

    stage = tmp_path / "stage"
    stage.mkdir()
    other = tmp_path / "other"
    other.mkdir()
    mine = subprocess.Popen(["sleep", "30"], env={**os.environ, RECORDER_VAR: recorder_value(stage, os.getpid())})
    theirs = subprocess.Popen(["sleep", "30"], env={**os.environ, RECORDER_VAR: recorder_value(other, os.getpid())})
    try:
        found = still_running(stage)
        assert mine.pid in found and theirs.pid not in found
    finally:
        for p in (mine, theirs):
            p.kill()
            p.wait()
    assert mine.pid not in still_running(stage)


def test_a_detached_daemon_is_reported_as_not_captured(tmp_path):
    """A double-forking daemon outlives the command: its later I/O cannot be in the capture, and the report and
    the summary say so instead of staying silent."""
    script = "( ( sleep 0.5; for i in 1 2 3; do echo x >> late.txt; sleep 0.1; done ) & ); echo early > early.txt"
    cap = tmp_path / "d.iolens"
    res = iolens("profile", "-o", cap, "--", "bash", "-c", script, cwd=tmp_path)
    assert res.returncode == 0, res.stderr
    assert "still running when the capture was saved" in " ".join(res.stderr.split())
    rep = iolens("report", "--json", "-", cap)
    doc = json.loads(rep.stdout)
    assert len(doc["capture"]["running_at_save"]) >= 1
    assert "late.txt" not in {os.path.basename(f["path"]) for f in doc["files"]}
    text = iolens("report", cap)
    assert "their I/O after that moment is not captured" in " ".join(text.stdout.split())
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and (not (tmp_path / "late.txt").exists()
                                           or len((tmp_path / "late.txt").read_text().splitlines()) < 3):
        time.sleep(0.1)
    assert len((tmp_path / "late.txt").read_text().splitlines()) == 3  # the daemon itself was not harmed
