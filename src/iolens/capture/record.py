"""Record a command under the interposer: environment, staging directory, wait, metadata, merge, decode.

`Recording` is the one way to profile a command; `iolens profile` and `compare --profile` use it, and so can any
later command that wraps a program (one Recording, with its own capture, per task):

    rec = Recording(["samtools", "sort", "in.sam"], output=Path("sort.iolens"))
    result = rec.run()          # start(), then wait(): exit status, wall time, the saved and decoded capture

A caller that starts the command its own way (compare runs it through a launcher) asks for the environment
with `environment()`, runs the command with it, then calls `finish()` with the exit status and wall time.

The interposer writes one part per process image into a staging directory on RAM-backed storage (so the recorder
adds no I/O to the storage it measures); `finish()` merges the parts into one capture, written under a temporary
name beside `output` and moved into place when complete (never over an existing file unless `overwrite`), and
removes the staging directory.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import tempfile
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from iolens import __version__, workdirs
from iolens.capture.merge import merge_parts
from iolens.capture.reader import Capture, decode
from iolens.errors import CommandNotFound
from iolens.native import preload_library
from iolens.redact import redact_argv
from iolens.sysinfo import cpu_delta, cpu_seconds, host_facts, mount_of, mounts

SHM = "/dev/shm"
RAM_FSTYPES = ("tmpfs", "ramfs")
# the signals a terminal or a batch scheduler sends to stop a job: passed on to the command, which decides
FORWARDED_SIGNALS = (signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT)

Warn = Callable[[str], None]


def _is_ram_backed(path: str) -> bool:
    m = mount_of(path)
    return m is not None and m["fstype"] in RAM_FSTYPES


def staging_base() -> tuple[str | None, str | None]:
    """Where staging directories go, and a one-line note when that is not RAM-backed storage.

    $IOLENS_STAGING when set; else /dev/shm when writable; else $XDG_RUNTIME_DIR when it is on tmpfs; else the
    temporary directory ($TMPDIR), with a note that the recorder then writes to storage.  (None: $TMPDIR.)
    """
    chosen = os.environ.get("IOLENS_STAGING")
    if chosen:
        return chosen, None
    if os.path.isdir(SHM) and os.access(SHM, os.W_OK | os.X_OK):
        return SHM, None
    runtime = os.environ.get("XDG_RUNTIME_DIR")
    if runtime and os.path.isdir(runtime) and os.access(runtime, os.W_OK | os.X_OK) and _is_ram_backed(runtime):
        return runtime, None
    tmp = tempfile.gettempdir()
    if _is_ram_backed(tmp):
        return None, None
    return None, (f"no RAM-backed staging directory ({SHM} is not writable); the recorder's parts go to {tmp}, "
                  "the storage they may be measuring (set IOLENS_STAGING to choose)")


STAGE_PREFIX = "iolens-stage-"


def staging_dir(warn: Warn | None = None) -> Path:
    """A new staging directory (see `staging_base`), marked as this process's (`workdirs.make`), so what a killed
    recorder left is removed later (`reap_staging`); raises OSError when none can be made."""
    base, note = staging_base()
    if note and warn:
        warn(f"iolens: note: {note}")
    return workdirs.make(base or tempfile.gettempdir(), STAGE_PREFIX)


def reap_staging() -> workdirs.Reaped:
    """Removes the staging directories (and their parts) of recorders that were killed.  Those of live recorders
    are not mentioned: many at once are normal (a pipeline profiles its steps side by side)."""
    return workdirs.reap(staging_base()[0] or tempfile.gettempdir(), STAGE_PREFIX, shared=True)


def resolve_command(argv: Sequence[str]) -> None:
    """Refuse, before anything runs, a command that cannot be started (exit codes as a shell gives them)."""
    exe = argv[0]
    if "/" in exe:
        if not os.path.exists(exe):
            raise CommandNotFound(f"command not found: {exe}")
        if not os.access(exe, os.X_OK) or os.path.isdir(exe):
            raise CommandNotFound(f"not executable: {exe}", exit_code=126)
    elif shutil.which(exe) is None:
        raise CommandNotFound(f"command not found: {exe} (not on PATH)")


@dataclass
class RecordingResult:
    status: int  # shell convention: the exit code, or 128+N for a command killed by signal N
    wall_s: float
    capture: Capture | None = None  # decoded; None when the command ran unprofiled or the merge failed
    path: Path | None = None  # where the capture was saved; None when it was not (see `error`)
    error: str | None = None  # why the capture could not be written or read
    problems: list[str] = field(default_factory=list)  # damaged parts met while merging (also in capture.problems)


@dataclass
class _Timing:
    start_real_ns: int
    start_mono: int
    end_mono: int
    rusage: Any = None
    cpu: tuple[dict[str, float] | None, dict[str, float] | None] = (None, None)  # the machine's CPU times
    probes: list[tuple[int, float] | None] = field(default_factory=list)  # the CPU's speed before and after


class Recording:
    """One command recorded into one capture.

    argv       the command (resolved on PATH when started);
    output     the capture file; None keeps it only in memory (`result.capture`);
    overwrite  replace an existing `output` (`--force`), else a name taken meanwhile is never replaced;
    trace      also record every operation;  max_files  file records per process before aggregation;
    cwd, env   the command's working directory and base environment (default: this process's);
    preload_var  the variable that carries the interposer (compare's launcher moves it into LD_PRELOAD itself);
    warn       where notes go (for example "staging is not RAM-backed"); silent when None;
    meta       extra META fields (a pipeline task's workflow names);
    stdio      where the command's stdout and stderr go (subprocess.DEVNULL, a descriptor); default: this
               process's.
    """

    def __init__(self, argv: Sequence[str], *, output: Path | None = None, overwrite: bool = False,
                 trace: bool = False, max_files: int | None = None, cwd: str | os.PathLike[str] | None = None,
                 env: Mapping[str, str] | None = None, preload_var: str = "LD_PRELOAD", warn: Warn | None = None,
                 meta: Mapping[str, Any] | None = None, stdio: int | None = None):
        self.argv = list(argv)
        self.stdio = stdio
        self.output = output
        self.overwrite = overwrite
        self.trace = trace
        self.max_files = max_files
        self.cwd = cwd
        self.base_env = dict(os.environ if env is None else env)
        self.preload_var = preload_var
        self.warn = warn
        self.extra_meta = dict(meta or {})
        self.lib = preload_library()  # a clear error when iolens was installed without its native part
        self.stage: Path | None = None
        self.proc: subprocess.Popen[bytes] | None = None
        self._timing: _Timing | None = None

    # -- set up -------------------------------------------------------------------------------------------

    def environment(self) -> dict[str, str]:
        """The command's environment with the interposer in it; makes the staging directory (OSError if none)."""
        if self.stage is None:
            self.stage = staging_dir(self.warn)
        env = dict(self.base_env)
        have = env.get("LD_PRELOAD")
        env[self.preload_var] = f"{self.lib} {have}" if have else str(self.lib)
        env["IOLENS_DIR"] = str(self.stage)
        env["IOLENS_PARENT_PID"] = str(os.getpid())
        env["IOLENS_TRACE"] = "1" if self.trace else "0"
        if self.max_files:
            env["IOLENS_MAX_FILES"] = str(self.max_files)
        return env

    # -- run it here ----------------------------------------------------------------------------------------

    def start(self) -> subprocess.Popen[bytes]:
        """Start the command, stdin, stdout and stderr shared with this process (or `stdio`).  Without a staging
        directory it runs unprofiled (after a warning): the command itself always runs."""
        try:
            env = self.environment()
        except OSError as err:
            if self.warn:
                self.warn(f"iolens: warning: no staging directory ({err}); the command runs unprofiled")
            env = dict(self.base_env)
        probes = [_probe_cpu()] if self.trace else []  # before the clock starts: not the command's time
        self._timing = _Timing(time.time_ns(), time.monotonic_ns(), 0, cpu=(cpu_seconds(), None), probes=probes)
        try:
            self.proc = subprocess.Popen(self.argv, env=env, cwd=self.cwd, stdout=self.stdio, stderr=self.stdio)
        except OSError as err:
            self.close()
            raise CommandNotFound(f"cannot run {self.argv[0]}: {err.strerror}", exit_code=126) from None
        return self.proc

    def wait(self) -> RecordingResult:
        """Wait for the started command, then finish.  Meanwhile Ctrl-C goes to the command alone (iolens waits
        and saves what was recorded) and SIGTERM, SIGHUP and SIGQUIT are passed on to it."""
        proc, timing = self.proc, self._timing
        if proc is None or timing is None:
            raise RuntimeError("Recording.wait() before start()")
        old_int = signal.signal(signal.SIGINT, signal.SIG_IGN)

        def forward(sig: int, _frame: Any) -> None:
            proc.send_signal(sig)

        forwarded = {sig: signal.signal(sig, forward) for sig in FORWARDED_SIGNALS}
        try:
            _pid, wstatus, timing.rusage = os.wait4(proc.pid, 0)
        finally:
            signal.signal(signal.SIGINT, old_int)
            for sig, handler in forwarded.items():
                signal.signal(sig, handler)
        timing.end_mono = time.monotonic_ns()
        timing.cpu = (timing.cpu[0], cpu_seconds())
        status = 128 + os.WTERMSIG(wstatus) if os.WIFSIGNALED(wstatus) else os.WEXITSTATUS(wstatus)
        proc.returncode = status  # reaped above; keep Popen from waiting again
        if self.trace:
            timing.probes.append(_probe_cpu())
        return self.finish(status, (timing.end_mono - timing.start_mono) / 1e9)

    def run(self) -> RecordingResult:
        self.start()
        return self.wait()

    # -- merge ----------------------------------------------------------------------------------------------

    def metadata(self, status: int, wall_s: float) -> dict[str, Any]:
        """The META record: the command (secrets redacted), where and when it ran, the host and its mounts."""
        meta: dict[str, Any] = {
            "tool": "iolens",
            "iolens_version": __version__,
            "command": redact_argv(self.argv),
            "cwd": os.path.abspath(self.cwd or os.getcwd()),
            "parent_pid": os.getpid(),
            "wall_s": wall_s,
            "exit_status": status,
            "trace": self.trace,
            "mounts": mounts(),
            **host_facts(),
            **self.extra_meta,
        }
        t = self._timing
        if t is not None:
            meta.update(start_real_ns=t.start_real_ns, start_mono=t.start_mono, end_mono=t.end_mono)
            if t.rusage is not None:
                ru = t.rusage
                meta["children_rusage"] = {"utime_s": ru.ru_utime, "stime_s": ru.ru_stime, "maxrss_kb": ru.ru_maxrss,
                                           "inblock": ru.ru_inblock, "oublock": ru.ru_oublock}
            machine = cpu_delta(*t.cpu)  # the whole machine's, while the command ran
            if machine is not None:
                meta["machine_cpu_s"] = machine
            probes = [p for p in t.probes if p is not None]
            if probes and all(p[0] == probes[0][0] for p in probes):  # one burn loop's
                meta["cpu_probe"] = {"loop": probes[0][0], "ns_per_block": [round(p[1], 3) for p in probes]}
        return meta

    def finish(self, status: int, wall_s: float) -> RecordingResult:
        """Merge the parts into the capture (at `output`, else in staging), decode it and remove the staging."""
        result = RecordingResult(status, wall_s)
        if self.stage is None:
            return result
        target = self.output if self.output is not None else self.stage / "capture.iolens"
        meta = self.metadata(status, wall_s)
        running = still_running(self.stage)
        if running:
            meta["running_at_save"] = running
        try:
            res = merge_parts(self.stage, target, meta, overwrite=self.overwrite)
            if self.output is not None:
                result.path = self.output
            result.problems = res.problems
            result.capture = decode(target.read_bytes(), str(target))
            result.capture.problems.extend(res.problems)
        except OSError as err:
            result.error = str(err.strerror or err)
        finally:
            self.close()
        return result

    def close(self) -> None:
        """Remove the staging directory (also when the command never ran)."""
        if self.stage is not None:
            shutil.rmtree(self.stage, ignore_errors=True)
            self.stage = None


def _probe_cpu() -> tuple[int, float] | None:
    """What the replayer's compute burn costs this CPU now (whatif.engine.probe_cpu): a traced capture keeps it,
    so that a replay burns the step's compute as work, at whatever speed the CPU runs then."""
    from iolens.whatif.engine import probe_cpu  # numpy and the replayer: only for traced captures

    return probe_cpu()


def still_running(stage: Path) -> list[int]:
    """Pids of recorded processes still alive once the command has ended: processes that detached (a daemon that
    double-forked, a `cmd &` left behind). Their I/O after this moment is not in the capture."""
    me = os.getpid()
    out = []
    for part in stage.glob("*.part"):
        pid_text = part.name.partition("-")[0]
        if not pid_text.isdigit() or int(pid_text) == me:
            continue
        try:
            os.kill(int(pid_text), 0)
        except ProcessLookupError:
            continue
        except PermissionError:
            pass  # alive, owned by someone else
        out.append(int(pid_text))
    return sorted(set(out) | _inheriting(stage, me))


def _inheriting(stage: Path, me: int) -> set[int]:
    """Live processes started with this recording's IOLENS_DIR that have no part yet: an image makes its part on
    its first recorded call, so a daemon caught between its fork and its first file operation (or wait) has none,
    and only its environment tells it belongs to the recording."""
    mark = b"\0IOLENS_DIR=" + os.fsencode(stage) + b"\0"
    out = set()
    for d in os.scandir("/proc"):
        if not d.name.isdigit() or int(d.name) == me:
            continue
        try:
            with open(f"/proc/{d.name}/environ", "rb") as fh:
                if mark in b"\0" + fh.read() + b"\0":
                    out.add(int(d.name))
        except OSError:
            continue  # gone, or not ours to read
    return out
