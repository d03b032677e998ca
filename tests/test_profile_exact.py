"""The interposer against programs with exactly known I/O: the parsed capture must match."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
from pathlib import Path

import pytest

from helpers.capture import traced_calls
from iolens import _format as F
from iolens.native import preload_library

OPS = [name for name, _cat in F.OPS]
FF = {k: v for k, (v, _d) in F.FILE_FLAGS.items()}
PF = {k: v for k, (v, _d) in F.PROC_FLAGS.items()}
HIST = F.HIST_EDGES


def ops(proc) -> dict[str, int]:
    return {OPS[i]: n for i, n in enumerate(proc.op_count) if n and i < len(OPS)}


def one_file(cap, path):
    recs = [f for p in cap.processes for f in p.files if f["path"] == str(path)]
    assert len(recs) == 1, f"{path}: {len(recs)} records in {[f['path'] for p in cap.processes for f in p.files]}"
    return recs[0]


def main_proc(cap, exe_name):
    procs = [p for p in cap.processes if os.path.basename(p.exe) == exe_name]
    assert procs, [p.exe for p in cap.processes]
    return procs[0]


def hist_bin(n: int) -> int:
    for i, edge in enumerate(HIST):
        if n <= edge:
            return i
    return len(HIST)


@pytest.mark.parametrize("n,s", [(10, 4096), (5, 100_000)])
def test_reads_writes_seeks_preads(cprog, profiled, tmp_path, n, s):
    target = tmp_path / "data.bin"
    res, cap = profiled([cprog("rw_exact"), target, n, s])
    assert res.returncode == 0, res.stderr
    f = one_file(cap, target)
    assert f["opens"] == 2
    assert (f["writes"], f["bytes_written"]) == (n, n * s)
    assert (f["reads"], f["bytes_read"]) == (n + 1 + 4, n * s + 4 * s)
    assert f["write_hist"][hist_bin(s)] == n and sum(f["write_hist"]) == n
    assert f["read_hist"][hist_bin(s)] == n + 4 and f["read_hist"][0] == 1  # the EOF read moved 0 bytes
    assert (f["seq_writes"], f["consec_writes"]) == (n - 1, n - 1)
    # reads 0..n-1 and EOF are consecutive; preads at 0 (a jump back) then S, 2S, 3S
    assert (f["consec_reads"], f["seq_reads"]) == (n + 3, n + 3)
    assert f["rw_switches"] == 1
    assert (f["max_write_end"], f["max_read_end"]) == (n * s, n * s)
    assert (f["seeks"], f["syncs"]) == (1, 1)
    assert f["flags"] & FF["CREATED"] and f["flags"] & FF["TRUNCATED"]
    assert f["dev"] == os.stat(target).st_dev and f["ino"] == os.stat(target).st_ino
    p = main_proc(cap, "rw_exact")
    o = ops(p)
    assert o["OPEN"] == 2 and o["WRITE"] == n and o["READ"] == n + 1 and o["PREAD"] == 4
    assert o["LSEEK"] == 1 and o["FSYNC"] == 1 and o["CLOSE"] == 2
    assert p.bytes_written >= n * s and p.bytes_read >= n * s + 4 * s
    # timeline: every counted call is in some bin, and bytes add up
    tl = p.timeline
    assert sum(tl["count"]) == sum(p.op_count)
    assert sum(tl["bytes_written"]) == p.bytes_written and sum(tl["bytes_read"]) == p.bytes_read


def test_metadata_calls(cprog, profiled, tmp_path):
    res, cap = profiled([cprog("meta_exact"), tmp_path])
    assert res.returncode == 0, res.stderr
    sub, f, g = tmp_path / "sub", tmp_path / "sub" / "f", tmp_path / "sub" / "g"
    rs, rf, rg = one_file(cap, sub), one_file(cap, f), one_file(cap, g)
    assert rs["flags"] & FF["CREATED"] and rs["flags"] & FF["DIRECTORY"] and rs["flags"] & FF["DELETED"]
    assert rf["flags"] & FF["CREATED"] and rf["flags"] & FF["RENAMED_FROM"] and rf["flags"] & FF["DELETED"]
    assert rg["flags"] & FF["RENAMED_TO"] and rg["flags"] & FF["DELETED"]
    assert rf["stats"] == 4  # stat, lstat, statx, fstat
    assert rf["mmaps"] == 1 and rf["mmap_bytes"] == 10
    assert rf["bytes_written"] == 10
    assert rf["created_mono"] and rf["deleted_mono"] >= rf["created_mono"]
    assert rs["opens"] == 1  # opendir
    o = ops(main_proc(cap, "meta_exact"))
    assert o["MKDIR"] == 1 and o["RMDIR"] == 1 and o["UNLINK"] == 1 and o["RENAME"] == 1
    assert o["STAT"] == 4 and o["FSTAT"] == 1  # by path (stat, lstat, statx, the failed probe); fstat
    assert o["ACCESS"] == 1 and o["OPENDIR"] == 1 and o["CLOSEDIR"] == 1
    assert o["READDIR"] == 4  # three entries and the end
    assert o["MMAP"] == 1 and o["MUNMAP"] == 1 and o["TRUNCATE"] == 1
    assert not [r for p in cap.processes for r in p.files if r["path"] == "/nonexistent/iolens"]


def test_stdio(cprog, profiled, tmp_path):
    target = tmp_path / "s.txt"
    res, cap = profiled([cprog("stdio_exact"), target])
    assert res.returncode == 0, res.stderr
    assert target.stat().st_size == 1092
    f = one_file(cap, target)
    assert f["bytes_written"] == 1092
    assert f["writes"] == 10 + 50 + 3 + 4
    assert f["bytes_read"] == 100 + 5 + 6 + 6
    assert f["opens"] == 2
    o = ops(main_proc(cap, "stdio_exact"))
    assert o["FOPEN"] == 2 and o["FCLOSE"] == 2 and o["FWRITE"] == 10 and o["FPUTC"] == 50
    assert o["FPUTS"] == 3 and o["FPRINTF"] == 4 and o["FREAD"] == 1 and o["FGETC"] == 5
    assert o["FGETS"] == 1 and o["GETDELIM"] == 1 and o["FSEEK"] == 2 and o["FTELL"] == 1


def test_dup_copies_share_the_file(cprog, profiled, tmp_path):
    target = tmp_path / "d.bin"
    res, cap = profiled([cprog("dup_exact"), target])
    assert res.returncode == 0, res.stderr
    f = one_file(cap, target)
    assert (f["writes"], f["bytes_written"]) == (3, 60)
    assert ops(main_proc(cap, "dup_exact"))["DUP"] == 3


def test_fork_exec_spawn(cprog, profiled, tmp_path):
    res, cap = profiled([cprog("family"), tmp_path])
    assert res.returncode == 7, res.stderr
    parent = main_proc(cap, "family")
    assert parent.exit_status == 7 and parent.fields["flags"] & PF["EXITED"]
    assert one_file(cap, tmp_path / "parent.dat")["bytes_written"] == 100
    child_rec = one_file(cap, tmp_path / "child.dat")
    child = [p for p in cap.processes if any(f["path"] == child_rec["path"] for f in p.files)][0]
    assert child.fields["flags"] & PF["FORKED"] and child.ppid == parent.pid and child.pid != parent.pid
    # the second fork exec'd /bin/true without doing I/O first: that fork child costs no image of
    # its own (its part is made lazily), and /bin/true is the child of the parent
    true = [p for p in cap.processes if os.path.basename(p.exe) == "true"]
    assert len(true) == 1 and true[0].ppid == parent.pid
    assert [p for p in cap.processes if p.pid == true[0].pid] == true
    sh = [p for p in cap.processes if os.path.basename(p.exe) in ("sh", "dash", "bash")]
    assert sh and sh[0].exit_status == 5
    reaped = {c["pid"]: c["status"] for c in parent.children}
    assert reaped[child.pid] == 0 and reaped[sh[0].pid] == 5 and reaped[true[0].pid] == 0


def test_an_image_without_file_io_is_written_whole_at_its_end(profiled, tmp_path):
    """A process that records nothing makes no part until it ends, then writes it whole and compact: it is in
    the tree with its start, end, status and strings (not the kernel's I/O counters: they were not read), and the
    SCHEMA the merge gives its part is byte for byte the one a part made on a first call carries."""
    from iolens.capture.walk import iter_records

    true = shutil.which("true")
    res, cap = profiled(["sh", "-c", f"{true} a b; {true}; exit 3"], env=dict(os.environ, HTS_CACHE="x"))
    assert res.returncode == 3, res.stderr
    sh = main_proc(cap, os.path.basename(os.path.realpath(shutil.which("sh"))))
    imgs = [p for p in cap.processes if os.path.basename(p.exe) == "true"]
    assert len(imgs) == 2 and {tuple(p.argv) for p in imgs} == {(true, "a", "b"), (true,)}
    for p in imgs:
        fl = p.fields["flags"]
        assert fl & PF["FINALIZED"] and fl & PF["EXITED"] and not fl & PF["FORKED"] and p.exit_status == 0
        assert p.ppid == sh.pid and sh.start_mono < p.start_mono < p.end_mono
        assert p.cwd == str(tmp_path) and p.host and p.env.get("HTS_CACHE") == "x"
        assert fl & PF["NO_KERNEL_IO"] and p.k_rchar == p.k_rchar_start == 0  # /proc/self/io not read
        assert p.utime_ns + p.stime_ns >= p.utime_start_ns + p.stime_start_ns
        assert not p.files and not any(p.op_count) and p.timeline["nbins"] == 256 and not any(p.timeline["count"])
    reaped = {c["pid"]: c["status"] for c in sh.children}
    assert all(reaped[p.pid] == 0 for p in imgs)
    schemas = {bytes(r.payload) for r in iter_records(Path(cap.path).read_bytes(), "c", []) if r.kind == "SCHEMA"}
    assert len(schemas) == 1


def test_threads_honest_wall_time(cprog, profiled, tmp_path):
    t, n = 4, 2000
    res, cap = profiled([cprog("threads"), tmp_path, t, n])
    assert res.returncode == 0, res.stderr
    for i in range(t):
        f = one_file(cap, tmp_path / f"t{i}.dat")
        assert (f["writes"], f["bytes_written"]) == (n, n * 4096)
    p = main_proc(cap, "threads")
    assert p.fields["flags"] & PF["MULTITHREADED"] and p.nthreads == t
    wall = p.end_mono - p.start_mono
    assert 0 < p.io_wall_ns <= wall
    for i in range(len(F.CATEGORIES)):
        assert p.cat_wall_ns[i] <= wall
        assert p.cat_wall_ns[i] <= p.cat_time_ns[i] + 1000


def test_bash_pipeline(profiled, tmp_path):
    src = tmp_path / "in.txt"
    src.write_bytes(b"ACGT\n" * 200_000)
    res, cap = profiled(["bash", "-c", f"cat {src} | gzip -1 > {tmp_path}/out.gz"])
    assert res.returncode == 0, res.stderr
    names = {os.path.basename(p.exe) for p in cap.processes}
    assert {"bash", "cat", "gzip"} <= names
    cat = main_proc(cap, "cat")
    assert one_file(cap, src)["bytes_read"] == src.stat().st_size
    # the shell opens out.gz (created) and gzip inherits it as stdout
    out = [f for p in cap.processes for f in p.files if f["path"] == str(tmp_path / "out.gz")]
    assert any(f["flags"] & FF["CREATED"] for f in out)
    gz = main_proc(cap, "gzip")
    gz_out = [f for f in gz.files if f["path"] == str(tmp_path / "out.gz")][0]
    assert gz_out["flags"] & FF["INHERITED"]
    assert gz_out["bytes_written"] == (tmp_path / "out.gz").stat().st_size
    assert gz.ppid == cat.ppid  # both children of the shell
    # the pipe is a stream record, its time counted as STREAM, not storage
    pipes = [f for f in cat.files if f["flags"] & FF["NOT_A_FILE"]]
    assert pipes and pipes[0]["bytes_written"] == src.stat().st_size


@pytest.mark.parametrize("how,sig", [("segv", signal.SIGSEGV), ("abort", signal.SIGABRT),
                                     ("term", signal.SIGTERM), ("int", signal.SIGINT),
                                     ("pipe", signal.SIGPIPE), ("pipe-sigaction", signal.SIGPIPE)])
def test_crash_by_signal_is_flushed(cprog, profiled, tmp_path, how, sig):
    """Also when the program has a handler of its own that puts the default back and raises the signal again
    (gzip's, when `zcat | head` closes the pipe): the default it asks for is the recorder's handler, hidden from
    it.  Before, such an image ended with its counters but no end and no trace, and a replay of `zcat | head`
    left out all of zcat's reads, saying nothing."""
    target = tmp_path / "c.bin"
    res, cap = profiled([cprog("crash"), target, how], "--trace")
    assert res.returncode == 128 + sig
    p = main_proc(cap, "crash")
    assert p.fields["flags"] & PF["SIGNALED"] and p.exit_status == 128 + sig
    assert p.end_mono > p.start_mono
    assert one_file(cap, target)["bytes_written"] == 1234
    assert p.events is not None and (p.events["op"] == OPS.index("WRITE")).sum() >= 1


def test_return_values_and_errno_unchanged(cprog, profiled):
    import subprocess

    exe = cprog("errno_check")
    plain = subprocess.run([str(exe)], capture_output=True, text=True, timeout=60)
    res, _cap = profiled([exe])
    assert res.returncode == plain.returncode == 0
    assert res.stdout == plain.stdout and "errno=2" in plain.stdout and "errno=9" in plain.stdout
    assert plain.stdout.count("errno=34") == 11  # successful calls keep the program's errno (ERANGE)


@pytest.mark.parametrize("shell", ["sh", "bash"])
def test_time_waiting_for_children_is_not_counted_twice(profiled, shell):
    """A shell that waits for its child: the summed process time stays close to the wall time."""
    from iolens.analysis.summary import summarize

    res, cap = profiled([shell, "-c", "sleep 1; true"])
    assert res.returncode == 0
    s = summarize(cap)
    assert 0.9 < s.wall_s < 3
    assert s.own_s < s.wall_s * 1.2, (s.own_s, s.wall_s)


def _regress(cprog, profiled, tmp_path, mode, **kw):
    res, cap = profiled([cprog("regress"), mode, tmp_path], **kw)
    assert res.returncode == 0, (mode, res.returncode, res.stderr)
    return main_proc(cap, "regress")


def test_signal_handler_io_never_deadlocks(cprog, profiled, tmp_path):
    # a handler calling stat() while the program's first use of a new pipe takes the recorder's lock
    _regress(cprog, profiled, tmp_path, "sigstat", timeout=120)


def test_errno_after_creating_open_is_untouched(cprog, profiled, tmp_path):
    _regress(cprog, profiled, tmp_path, "errno")


def test_closedir_null_fails_like_libc(cprog, profiled, tmp_path):
    _regress(cprog, profiled, tmp_path, "closedir")


def test_lstat_of_a_symlink_does_not_mislabel_the_file(cprog, profiled, tmp_path):
    (tmp_path / "target.bin").write_bytes(b"x" * 100_000)
    (tmp_path / "link.bin").symlink_to(tmp_path / "target.bin")
    p = _regress(cprog, profiled, tmp_path, "symlink")
    f = [f for f in p.files if f["path"] == str(tmp_path / "link.bin")][0]
    assert f["bytes_read"] == 100_000 and not f["flags"] & FF["NOT_A_FILE"]
    cats = list(F.CATEGORIES)
    assert f["cat_time_ns"][cats.index("READ")] > 0 and f["cat_time_ns"][cats.index("STREAM")] == 0


def test_line_buffered_inline_putc_counts_each_byte_once(cprog, profiled, tmp_path):
    p = _regress(cprog, profiled, tmp_path, "linebuf")
    f = [f for f in p.files if f["path"] == str(tmp_path / "lines.txt")][0]
    assert f["bytes_written"] == 1000


def test_append_offsets_start_at_the_end_of_the_file(cprog, profiled, tmp_path):
    (tmp_path / "log.txt").write_bytes(b"y" * 100)
    p = _regress(cprog, profiled, tmp_path, "append")
    f = [f for f in p.files if f["path"] == str(tmp_path / "log.txt")][0]
    assert f["max_write_end"] == 110 and f["flags"] & FF["APPEND"]


def test_fork_child_dup2_before_exec_leaves_the_parent_intact(profiled, tmp_path):
    """Every shell pipeline dup2()s a pipe in a fork child that has no part of its own yet."""
    res, cap = profiled(["bash", "-c", f"echo x | cat > /dev/null; echo y > {tmp_path}/z; echo w >> {tmp_path}/z"])
    assert res.returncode == 0
    for p in cap.processes:
        assert [f["index"] for f in p.files] == list(range(len(p.files))) and p.nfiles == len(p.files)
    z = [f for p in cap.processes for f in p.files if f["path"] == str(tmp_path / "z")]
    assert sum(f["bytes_written"] for f in z) == 4  # (bash's echo writes through putchar: a call per byte)


def kernel_sizes(f, direction: str) -> dict[int, int]:
    """Histogram bin -> requests that reached the kernel (read_hist / write_hist)."""
    return {i: n for i, n in enumerate(f[f"{direction}_hist"]) if n}


@pytest.mark.parametrize("clock", ["default", "vdso"])
def test_stdio_buffering_modes(cprog, profiled, tmp_path, clock):
    """Library calls and the system calls they made, per buffering mode (the system calls listed in
    tests/native/stdio_modes.c were checked with strace); IOLENS_CLOCK=vdso forces the fallback clock."""
    env = dict(os.environ, IOLENS_CLOCK="vdso") if clock == "vdso" else None
    res, cap = profiled([cprog("stdio_modes"), tmp_path], env=env)
    assert res.returncode == 0, res.stderr
    line, unbuf = one_file(cap, tmp_path / "line"), one_file(cap, tmp_path / "unbuf")
    full = [f for p in cap.processes for f in p.files if f["path"] == str(tmp_path / "full")][0]
    big, shared = one_file(cap, tmp_path / "big"), one_file(cap, tmp_path / "shared")
    # fully buffered: 10000 fputc, 10 flushes of 1000
    assert (full["writes"], full["stdio_writes"], full["bytes_written"]) == (10000, 10000, 10000)
    assert (full["stdio_flushes"], full["stdio_flush_bytes"]) == (10, 10000)
    assert kernel_sizes(full, "write") == {hist_bin(1000): 10}
    assert full["stdio_write_hist"][0] == 10000 and full["stdio_buf_size"] == 1000
    # line buffered: a write per line
    assert (line["stdio_writes"], line["bytes_written"]) == (106, 1006)
    assert (line["stdio_flushes"], line["stdio_flush_bytes"]) == (101, 1006)
    # unbuffered: a write per call
    assert (unbuf["stdio_writes"], unbuf["stdio_flushes"], unbuf["stdio_flush_bytes"]) == (70, 70, 270)
    # past the buffer: 1000 + 4000 (direct), fflush 300, fclose 20
    assert (big["stdio_writes"], big["bytes_written"]) == (3, 5320)
    assert (big["stdio_flushes"], big["stdio_flush_bytes"]) == (4, 5320)
    assert kernel_sizes(big, "write") == {hist_bin(20): 1, hist_bin(1000): 2, hist_bin(4000): 1}  # 1000 and 300
    # a stream shared by four threads: every call and every flush
    assert (shared["stdio_writes"], shared["bytes_written"]) == (40000, 40000)
    assert (shared["stdio_flushes"], shared["stdio_flush_bytes"]) == (10, 40000)
    assert kernel_sizes(shared, "write") == {hist_bin(4096): 10}
    # reading back: fread 2000+1000, 2000, 2000+1000, 2000, EOF; fgetc 10 x 1000 and EOF
    reads = [f for p in cap.processes for f in p.files if f["path"] == str(tmp_path / "full") and f["reads"]]
    rd = {k: sum(f[k] for f in reads)
          for k in ("reads", "stdio_reads", "bytes_read", "stdio_fills", "stdio_fill_bytes")}
    assert rd == {"reads": 5 + 10001, "stdio_reads": 5 + 10001, "bytes_read": 20000, "stdio_fills": 7 + 11,
                  "stdio_fill_bytes": 20000}
    rf = reads[0]
    assert rf["read_hist"][0] == 2 and rf["read_hist"][hist_bin(1000)] == 12 and rf["read_hist"][hist_bin(2000)] == 4
    p = main_proc(cap, "stdio_modes")
    o = ops(p)
    assert o["FPUTC"] == 10000 + 6 + 20 + 40000 and o["FGETC"] == 10001 and o["FREAD"] == 5
    tl = p.timeline
    assert sum(tl["count"]) == sum(p.op_count)
    assert sum(tl["bytes_written"]) == p.bytes_written and sum(tl["bytes_read"]) == p.bytes_read


@pytest.mark.parametrize("clock", ["default", "vdso"])
def test_call_times_on_either_clock(cprog, profiled, tmp_path, clock):
    """Call times are on CLOCK_MONOTONIC with the TSC (where it is used) and with the vDSO forced
    (IOLENS_CLOCK=vdso): inside the image's own start and end, and never more than its wall time."""
    env = dict(os.environ, IOLENS_CLOCK="vdso") if clock == "vdso" else None
    target = tmp_path / "t.bin"
    n = 4000  # long enough (tens of ms) for the TSC's scale to be taken and used
    res, cap = profiled([cprog("rw_exact"), target, n, 4096], env=env)
    assert res.returncode == 0, res.stderr
    f = one_file(cap, target)
    p = main_proc(cap, "rw_exact")
    assert (f["writes"], f["bytes_written"]) == (n, n * 4096)
    assert p.start_mono <= f["first_mono"] <= f["last_mono"] <= p.end_mono
    wall = p.end_mono - p.start_mono
    write_ns = f["cat_time_ns"][F.CATEGORIES.index("WRITE")]
    assert 0 < write_ns <= p.io_wall_ns <= wall
    assert sum(p.cat_time_ns) <= wall


def test_at_calls_follow_reused_and_replaced_directory_descriptors(cprog, profiled, tmp_path):
    """Paths of *at calls come from the directory descriptor as it is at the call: a descriptor closed and
    reused for another directory, or replaced by dup2, names the new one.  O_CREAT opens: a new file is
    created, an existing one is not (its content, mode and errno kept)."""
    work = tmp_path / "w"
    work.mkdir()
    (work / "old").write_bytes(b"keep")
    (work / "old").chmod(0o644)
    res, cap = profiled([cprog("at_paths")], cwd=work)
    assert res.returncode == 0, f"at_paths failed at check {res.returncode}: {res.stderr}"
    paths = {f["path"]: f for p in cap.processes for f in p.files}
    for name in ("A/a1", "B/b1", "C/c1"):
        assert paths[str(work / name)]["flags"] & FF["DELETED"], name
    assert paths[str(work / "A/a2")]["stats"] == 1
    assert not {str(work / n) for n in ("A/b1", "A/c1", "B/c1")} & set(paths), sorted(paths)
    assert paths[str(work / "new")]["flags"] & FF["CREATED"]
    old = paths[str(work / "old")]
    assert not old["flags"] & FF["CREATED"] and old["opens"] == 1 and old["bytes_read"] == 4
    assert (work / "old").read_bytes() == b"keep"


def test_relative_paths_follow_chdir_and_fchdir(cprog, profiled, tmp_path):
    """The working directory relative paths are resolved against is cached, and chdir and fchdir (also one that
    fails) make the interposer read it again: every file is recorded where it was made.  Checked against the
    kernel: 50 relative opens in one directory cost no getcwd each (strace -f counts them)."""
    work = tmp_path / "w"
    for d in ("X", "Y"):
        (work / d).mkdir(parents=True)
    res, cap = profiled([cprog("cwd_paths")], cwd=work)
    assert res.returncode == 0, f"cwd_paths failed at check {res.returncode}: {res.stderr}"
    made = {f["path"] for p in cap.processes for f in p.files if f["flags"] & FF["CREATED"]}
    want = {str(work / n) for n in ("f", "X/f", "Y/f", "g", *(f"n{i}" for i in range(50)))}
    assert made == want, sorted(made ^ want)
    strace = shutil.which("strace")
    if strace is None:
        pytest.fail("strace is not installed (dev/apt-packages.txt lists it)")
    for n in [*(f"n{i}" for i in range(50)), "f", "g", "X/f", "Y/f"]:
        (work / n).unlink()
    stage = tmp_path / "stage"
    stage.mkdir()
    env = {k: v for k, v in os.environ.items() if not k.startswith("IOLENS_") and k != "LD_PRELOAD"}
    env.update(LD_PRELOAD=str(preload_library()), IOLENS_DIR=str(stage), IOLENS_PARENT_PID=str(os.getpid()))
    res = subprocess.run([strace, "-e", "trace=getcwd", str(cprog("cwd_paths"))], cwd=work, env=env,
                         capture_output=True, text=True, timeout=60)
    assert res.returncode == 0, res.stderr
    calls = [ln for ln in res.stderr.splitlines() if ln.startswith("getcwd(")]
    assert 1 <= len(calls) <= 6, f"{len(calls)} getcwd calls for 54 relative opens in 4 directories"


@pytest.mark.parametrize("trace", [False, True])
def test_untimed_stdio_calls_from_threads_are_counted_exactly(cprog, profiled, tmp_path, trace):
    """With threads about, a thread's untimed stdio calls on one file are counted as a run in its own memory and
    added to the shared counters when the run ends (tests/native/stdio_runs.c): runs broken by another file every
    call, runs of a thread that ended with its run open, a fork child that must not count (or write into) its
    parent's runs.  Counts, sizes, timeline and trace events all agree."""
    res, cap = profiled([cprog("stdio_runs"), tmp_path], *(["--trace"] if trace else []))
    assert res.returncode == 0, f"stdio_runs failed at check {res.returncode}: {res.stderr}"
    main = main_proc(cap, "stdio_runs")
    files = {Path(f["path"]).name: f for f in main.files if f["path"].startswith(str(tmp_path))}
    for name, n, size in (("a", 1000, 410), ("b1", 500, 50), ("b2", 500, 300), ("c", 100, 10)):
        f = files[name]
        assert (f["stdio_writes"], f["bytes_written"]) == (n + 1, n * size + 1), name
        assert f["stdio_write_hist"][hist_bin(size)] == n + (hist_bin(size) == 0), name
        assert (f["seq_writes"], f["consec_writes"]) == (n, n), name
        assert f["stdio_flush_bytes"] == n * size + 1, name
        assert f["max_write_end"] == n * size + 1, name
    child = [p for p in cap.processes if p is not main and os.path.basename(p.exe) == "stdio_runs"]
    assert len(child) == 1
    cfiles = {Path(f["path"]).name: f for f in child[0].files if f["path"].startswith(str(tmp_path))}
    assert cfiles["d"]["stdio_writes"] == 5
    assert all(cfiles[k]["stdio_writes"] == 0 for k in ("a", "b1", "b2", "c") if k in cfiles), cfiles.keys()
    o = ops(main)
    assert o["FWRITE"] == 4 + 1000 + 1000 + 100
    for p in (main, child[0]):
        assert sum(p.timeline["count"]) == sum(p.op_count)
        assert sum(p.timeline["bytes_written"]) == p.bytes_written
        if trace:
            assert len(p.events) == p.trace_events and traced_calls(p) == sum(p.op_count)
