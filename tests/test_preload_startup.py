"""What the interposer costs a process that does no file I/O: the start-up and exit code binds none of libc's
string functions or syscall() (each lazy binding costs every process a symbol lookup and a save of the vector
state), and such a process is still recorded whole (its part, its strings, its kernel counters)."""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

from conftest import tool, unavailable
from iolens import _format as F
from iolens.capture.container import FILE_HDR
from iolens.capture.merge import merge_parts
from iolens.capture.reader import read_capture
from iolens.native import preload_library

# Bound lazily by the start-up or exit code before, now done by the library itself (preload/nolibc.h, base.c)
NOT_BOUND = {"getenv", "strlen", "strcpy", "strncmp", "strcmp", "memcmp", "memcpy", "memset", "memchr", "strchr",
             "syscall",
             # and the start and end of an image with no part read the clock by system call, AT_EXECFN from the
             # auxiliary vector, and no errno, and look at stdio's streams without libc's list lock (built.c)
             "clock_gettime", "getauxval", "__errno_location", "_IO_list_lock", "_IO_list_unlock"}


def run_true(stage: Path, **extra: str) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.startswith("IOLENS_") and k != "LD_PRELOAD"}
    env.update(LD_PRELOAD=str(preload_library()), IOLENS_DIR=str(stage), IOLENS_PARENT_PID=str(os.getpid()), **extra)
    return subprocess.run(["/bin/true"], env=env, capture_output=True, text=True, timeout=60)


def test_true_binds_no_libc_string_function(tmp_path):
    stage = tmp_path / "stage"
    stage.mkdir()
    res = run_true(stage, LD_DEBUG="bindings", AWS_REGION="x", TMPDIR="/tmp")  # kept variables: redaction runs
    assert res.returncode == 0
    lib = re.escape(str(preload_library()))
    bound = set(re.findall(rf"binding file {lib} \[0\] to \S+ \[0\]: normal symbol `([^']+)'", res.stderr))
    assert bound, "LD_DEBUG=bindings printed no binding of the preload"  # the pattern still matches glibc's output
    assert not bound & NOT_BOUND, sorted(bound & NOT_BOUND)
    assert len(list(stage.glob("*.part"))) == 1


def test_true_is_recorded_whole(tmp_path):
    """The part a process with no file I/O writes at its end: exe, cwd, kept environment (redacted), exit status.
    It is compact (its PROC and STRING records, one page of the staging tmpfs: the merge adds the SCHEMA and the
    empty TIMELINE), and it did not read the kernel's I/O counters (/proc/self/io), which would be the loader's."""
    stage = tmp_path / "stage"
    stage.mkdir()
    assert run_true(stage, TMPDIR="/scratch/x", AWS_SECRET_ACCESS_KEY="hunter2").returncode == 0
    (part,) = stage.glob("*.part")
    raw = part.read_bytes()
    assert len(raw) < 4096 and raw[FILE_HDR.size] == F.KINDS["PROC"][0], raw[:40]
    merge_parts(stage, tmp_path / "t.iolens", {})
    (p,) = read_capture(tmp_path / "t.iolens").processes
    assert p.finalized and p.exit_status == 0 and not p.files
    assert p.exe.endswith("/true") and p.cwd == os.getcwd() and p.host
    assert p.env["TMPDIR"] == "/scratch/x" and p.env["AWS_SECRET_ACCESS_KEY"] == "***"
    assert p.fields["flags"] & F.PROC_FLAGS["NO_KERNEL_IO"][0] and p.k_rchar == p.k_rchar_start == 0
    assert p.timeline is not None and p.timeline["t0_mono"] == p.start_mono and not any(p.timeline["count"])


def test_a_users_own_iolens_variable_is_left_alone(tmp_path):
    """IOLENS that is not the launcher's value (<pid>[t][m<N>]/<dir>; the cases' scripts once named the iolens
    command so) is the user's: the program sees it unchanged and the recorder writes where IOLENS_DIR says."""
    stage = tmp_path / "stage"
    stage.mkdir()
    env = {k: v for k, v in os.environ.items() if not k.startswith("IOLENS") and k != "LD_PRELOAD"}
    env.update(LD_PRELOAD=str(preload_library()), IOLENS_DIR=str(stage), IOLENS_PARENT_PID=str(os.getpid()),
               IOLENS=".venv/bin/iolens --quiet")
    res = subprocess.run(["sh", "-c", 'printf "%s|%s" "$IOLENS" "${IOLENS_DIR-unset}"'], env=env,
                         capture_output=True, text=True, timeout=60)
    assert res.returncode == 0
    assert res.stdout == ".venv/bin/iolens --quiet|unset"  # the recorder's own variable is still hidden
    assert len(list(stage.glob("*.part"))) >= 1
    assert not Path("/bin/iolens").exists()


def test_a_compact_part_is_completed_by_the_merge_and_read_by_a_pipeline_scan(tmp_path):
    """The merge adds a compact part's SCHEMA and empty TIMELINE (the capture is as a mapped part would make it);
    the pipeline scan reads its head with this build's layouts; a compact part in another version's layouts
    is skipped with a note, not decoded with the wrong ones."""
    from iolens.capture import writer as W
    from iolens.capture.merge import part_records
    from iolens.pipeline.scan import read_head

    stage = tmp_path / "stage"
    stage.mkdir()
    assert run_true(stage).returncode == 0
    (part,) = stage.glob("*.part")
    head = read_head(str(part))
    assert head is not None and head.argv == ["/bin/true"] and head.pid and head.start_mono
    problems: list[str] = []
    body = part_records(part.read_bytes(), part.name, problems)
    assert not problems and body.startswith(W.record("SCHEMA", W.schema_payload()))
    proc = W.record("PROC", W.pack_fixed("PROC", {"pid": 7, "start_mono": 5}))
    compact = W.file_header() + proc + W.string_record("ARGV", "x\0")
    body = part_records(compact, "7-5.part", problems)
    assert not problems and body.endswith(W.record("TIMELINE", W.pack_fixed(
        "TIMELINE", {"t0_mono": 5, "shift": F.TIMELINE_SHIFT0, "nbins": F.TIMELINE_BINS})))
    older = W.file_header() + W.record("PROC", W.pack_fixed("PROC", {"pid": 7}), version=F.KINDS["PROC"][1] + 1)
    assert part_records(older, "7-6.part", problems) == b"" and "another iolens version" in problems[0]


def test_the_executable_of_an_image_without_file_io_is_its_real_path(tmp_path):
    """An image with no part names its executable from the path exec was given (no /proc/self/exe): resolved
    through links (absolute and relative, with . and ..), and for a script (with an option on its #! line or not)
    the interpreter the kernel ran; an ELF given its own path as an argument is named right too."""
    stage = tmp_path / "stage"
    stage.mkdir()
    (tmp_path / "bin").mkdir()
    (tmp_path / "bin" / "abs").symlink_to("/bin/true")
    (tmp_path / "rel").symlink_to("bin/abs")
    script = tmp_path / "script"
    script.write_text("#!/bin/true\n")
    script.chmod(0o755)
    with_option = tmp_path / "script-x"
    with_option.write_text("#!/bin/true -x\n")
    with_option.chmod(0o755)
    env = {k: v for k, v in os.environ.items() if not k.startswith("IOLENS_") and k != "LD_PRELOAD"}
    env.update(LD_PRELOAD=str(preload_library()), IOLENS_DIR=str(stage), IOLENS_PARENT_PID=str(os.getpid()))
    runs = [[str(tmp_path / "bin" / "abs")], [str(tmp_path / "rel")], [f"{tmp_path}/bin/../././rel"], [str(script)],
            [str(with_option), "a"], [str(tmp_path / "rel"), str(tmp_path / "rel")]]
    for argv in runs:
        assert subprocess.run(argv, env=env, timeout=60).returncode == 0
    merge_parts(stage, tmp_path / "t.iolens", {})
    procs = read_capture(tmp_path / "t.iolens").processes
    assert len(procs) == len(runs)
    assert {p.exe for p in procs} == {os.path.realpath("/bin/true")}, [(p.argv, p.exe) for p in procs]


def test_a_shell_loop_resolves_its_programs_path_once(tmp_path):
    """dash starts each command as a vfork child, on the shell's memory: the executable's path is resolved there
    once (the links of /bin/true: /bin, /usr, /usr/bin, /usr/bin/true) and passed to each image in IOLENS_EXE,
    which takes it and so resolves nothing itself; every image still names its real executable, and no program
    sees the variable."""
    dash, strace = tool("dash"), tool("strace")
    if not os.path.islink("/bin"):
        unavailable("/bin is not a link here: no link for the images to resolve")
    stage = tmp_path / "stage"
    stage.mkdir()
    env = {k: v for k, v in os.environ.items() if not k.startswith("IOLENS") and k != "LD_PRELOAD"}
    env.update(LD_PRELOAD=str(preload_library()), IOLENS_DIR=str(stage), IOLENS_PARENT_PID=str(os.getpid()))
    log = tmp_path / "strace.txt"
    res = subprocess.run([strace, "-f", "-e", "trace=readlinkat", "-o", str(log), dash, "-c",
                          "for i in 1 2 3 4 5; do /bin/true; done; printenv IOLENS_EXE || echo unset"],
                         env=env, capture_output=True, text=True, timeout=60)
    assert res.returncode == 0, res.stderr
    assert res.stdout == "unset\n"
    assert len(re.findall(r'readlinkat\(AT_FDCWD, "/bin"', log.read_text())) == 1, log.read_text()
    merge_parts(stage, tmp_path / "t.iolens", {})
    trues = [p for p in read_capture(tmp_path / "t.iolens").processes if p.argv == ["/bin/true"]]
    assert len(trues) == 5 and {p.exe for p in trues} == {os.path.realpath("/bin/true")}


def test_an_exe_answer_not_from_the_parent_is_not_taken(tmp_path):
    """IOLENS_EXE is taken only from the image's own pid or its parent's, and only for its own path: another
    process's answer, or one for another path, is ignored and the image resolves its path itself."""
    stage = tmp_path / "stage"
    stage.mkdir()
    assert run_true(stage, IOLENS_EXE="1:9:/bin/true/usr/bin/false").returncode == 0
    assert run_true(stage, IOLENS_EXE=f"{os.getpid()}:10:/bin/false/usr/bin/false").returncode == 0
    merge_parts(stage, tmp_path / "t.iolens", {})
    procs = read_capture(tmp_path / "t.iolens").processes
    assert len(procs) == 2 and {p.exe for p in procs} == {os.path.realpath("/bin/true")}
