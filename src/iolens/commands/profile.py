"""iolens profile: run a command with the interposer and record its file I/O and its children's."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import click
from rich.console import Console
from rich.text import Text

from iolens import __version__
from iolens.analysis.advice import top_advice
from iolens.analysis.summary import summarize
from iolens.capture.merge import merge_parts
from iolens.capture.reader import decode
from iolens.errors import CommandNotFound, UsageError
from iolens.native import preload_library
from iolens.redact import redact_argv
from iolens.render.summary_text import render_summary, summary_console
from iolens.sysinfo import host_facts, mounts


@dataclass
class ProfileResult:
    status: int  # shell convention: code, or 128+signal
    capture: Path | None
    wall_s: float


def default_capture_name(argv: list[str]) -> Path:
    base = os.path.basename(argv[0]) or "run"
    stamp = time.strftime("%Y%m%d-%H%M%S")
    for i in range(1000):
        p = Path(f"iolens-{base}-{stamp}{'' if i == 0 else f'-{i}'}.iolens")
        if not p.exists():
            return p
    raise UsageError("cannot find a free capture name here; give one with -o")


def staging_dir() -> Path:
    """Parts go to RAM-backed storage when there is some, so the recorder adds no disk I/O."""
    for base in (os.environ.get("IOLENS_STAGING"), "/dev/shm", None):
        if base is not None and not os.access(base, os.W_OK):
            continue
        try:
            return Path(tempfile.mkdtemp(prefix="iolens-", dir=base))
        except OSError:
            continue
    raise OSError("no writable temporary directory")


def resolve_command(argv: list[str]) -> None:
    exe = argv[0]
    if "/" in exe:
        if not os.path.exists(exe):
            raise CommandNotFound(f"command not found: {exe}")
        if not os.access(exe, os.X_OK) or os.path.isdir(exe):
            raise CommandNotFound(f"not executable: {exe}", exit_code=126)
    elif shutil.which(exe) is None:
        raise CommandNotFound(f"command not found: {exe} (not on PATH)")


def check_output(out: Path) -> str | None:
    """None when the capture can be written, else why not (the run still goes ahead)."""
    if out.exists():
        raise UsageError(f"{out} already exists; choose another name with -o or remove it")
    parent = out.parent if str(out.parent) else Path(".")
    if not parent.is_dir():
        return f"directory {parent} does not exist"
    if not os.access(parent, os.W_OK):
        return f"directory {parent} is not writable"
    return None


def run_profiled(argv: list[str], output: Path | None, *, trace: bool = False, max_files: int | None = None,
                 quiet: bool = False, console: Console | None = None) -> ProfileResult:
    resolve_command(argv)
    out = output or default_capture_name(argv)
    console = console or summary_console()
    cannot_save = check_output(out)
    if cannot_save:
        console.print(f"iolens: warning: cannot save the capture ({cannot_save}); the command runs, "
                      "and the summary is still printed")
    lib = preload_library()
    env = dict(os.environ)
    try:
        stage = staging_dir()
    except OSError as err:
        stage = None
        console.print(f"iolens: warning: no staging directory ({err}); the command runs unprofiled")
    if stage is not None:
        env["LD_PRELOAD"] = f"{lib} {env['LD_PRELOAD']}" if env.get("LD_PRELOAD") else str(lib)
        env["IOLENS_DIR"] = str(stage)
        env["IOLENS_PARENT_PID"] = str(os.getpid())
        env["IOLENS_TRACE"] = "1" if trace else "0"
        if max_files:
            env["IOLENS_MAX_FILES"] = str(max_files)

    start_real = time.time_ns()
    start_mono = time.monotonic_ns()
    forwarded = {}
    try:
        proc = subprocess.Popen(argv, env=env)
    except OSError as err:
        if stage is not None:
            shutil.rmtree(stage, ignore_errors=True)
        raise CommandNotFound(f"cannot run {argv[0]}: {err.strerror}", exit_code=126) from None

    # The terminal's Ctrl-C reaches the command itself; iolens waits and then saves what was recorded.
    old_int = signal.signal(signal.SIGINT, signal.SIG_IGN)

    def forward(sig, _frame):
        proc.send_signal(sig)

    for sig in (signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT):
        forwarded[sig] = signal.signal(sig, forward)
    try:
        _pid, wstatus, rusage = os.wait4(proc.pid, 0)
    finally:
        signal.signal(signal.SIGINT, old_int)
        for sig, h in forwarded.items():
            signal.signal(sig, h)
    end_mono = time.monotonic_ns()
    wall = (end_mono - start_mono) / 1e9
    status = 128 + os.WTERMSIG(wstatus) if os.WIFSIGNALED(wstatus) else os.WEXITSTATUS(wstatus)
    proc.returncode = status  # reaped above; keep Popen from waiting again

    if stage is None:
        return ProfileResult(status, None, wall)
    meta = {
        "tool": "iolens",
        "iolens_version": __version__,
        "command": redact_argv(argv),
        "cwd": os.getcwd(),
        "parent_pid": os.getpid(),
        "start_real_ns": start_real,
        "start_mono": start_mono,
        "end_mono": end_mono,
        "wall_s": wall,
        "exit_status": status,
        "children_rusage": {
            "utime_s": rusage.ru_utime,
            "stime_s": rusage.ru_stime,
            "maxrss_kb": rusage.ru_maxrss,
            "inblock": rusage.ru_inblock,
            "oublock": rusage.ru_oublock,
        },
        "trace": trace,
        "mounts": mounts(),
        **host_facts(),
    }
    saved: Path | None = None
    try:
        target = out if not cannot_save else stage / "capture.iolens"
        res = merge_parts(stage, target, meta)
        data = target.read_bytes()
        if not cannot_save:
            saved = out
        cap = decode(data, str(target))
        cap.problems.extend(res.problems)
        if not quiet:
            render_summary(summarize(cap), console)
            advice = top_advice(cap, n=2) or ["no advice rule fired; `iolens report` shows the full analysis"]
            for line in advice:
                console.print(Text(f"  advice: {line}"))
            if saved:
                console.print(f"  capture: {saved}  (iolens parse {saved} shows every record)")
    except OSError as err:
        console.print(f"iolens: warning: could not save the capture to {out}: {err.strerror or err}")
    finally:
        shutil.rmtree(stage, ignore_errors=True)
    return ProfileResult(status, saved, wall)


@click.command(context_settings={"ignore_unknown_options": True, "allow_interspersed_args": False})
@click.option("-o", "--output", type=click.Path(dir_okay=False, path_type=Path),
              help="Capture file to write (default: iolens-CMD-TIME.iolens here). Never overwritten.")
@click.option("--trace", is_flag=True, help="Also record every operation (time, op, file, offset, size, thread).")
@click.option("--max-files", type=click.IntRange(min=1), default=None,
              help="File records per process before the rest are aggregated per directory (default 1,000,000).")
@click.option("-q", "--quiet", is_flag=True, help="Do not print the summary.")
@click.argument("command", nargs=-1, required=True, type=click.UNPROCESSED)
def profile(output, trace, max_files, quiet, command):
    """Run COMMAND and record the file I/O of it and all its children.

    Exits with COMMAND's exit status (128+N if it died from signal N).
    stdin, stdout and stderr pass through untouched.

    \b
    Example:
      iolens profile -o sort.iolens -- samtools sort -o out.bam in.sam
    """
    argv = list(command)
    if argv and argv[0] == "--":
        argv = argv[1:]
    if not argv:
        raise UsageError("no command given; usage: iolens profile [-o CAPTURE] -- COMMAND [ARGS...]")
    result = run_profiled(argv, output, trace=trace, max_files=max_files, quiet=quiet)
    sys.exit(result.status)
