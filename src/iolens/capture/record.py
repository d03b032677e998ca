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

import functools
import os
import shutil
import signal
import struct
import subprocess
import tempfile
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from iolens import __version__, workdirs
from iolens.capture.merge import merge_parts
from iolens.capture.reader import Capture, read_capture
from iolens.errors import CaptureError, CommandNotFound
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
    return Path(os.path.abspath(workdirs.make(base or tempfile.gettempdir(), STAGE_PREFIX)))  # IOLENS names it whole


def reap_staging() -> workdirs.Reaped:
    """Removes the staging directories (and their parts) of recorders that were killed.  Those of live recorders
    are not mentioned: many at once are normal (a pipeline profiles its steps side by side)."""
    return workdirs.reap(staging_base()[0] or tempfile.gettempdir(), STAGE_PREFIX, shared=True)


# The recorder's settings, in the one variable the launcher adds beside LD_PRELOAD (native/preload/process.c
# reads it):  IOLENS=<launcher's pid>[t][m<max files>]<staging directory>, the directory absolute, so it starts
# at the first '/'; `t` traces.  The interposer also reads IOLENS_DIR, IOLENS_TRACE, IOLENS_MAX_FILES and
# IOLENS_PARENT_PID, as a pipeline's engine sets them (docs/pipelines.md).
RECORDER_VAR = "IOLENS"


def recorder_value(stage: Path, parent_pid: int, *, trace: bool = False, max_files: int | None = None) -> str:
    return f"{parent_pid}{'t' if trace else ''}{f'm{max_files}' if max_files else ''}{stage}"


def recorder_dir(value: str) -> str | None:
    """The staging directory of a `recorder_value`; None when it names none."""
    at = value.find("/")
    return value[at:] if at >= 0 else None


def program_path(argv0: str, env: Mapping[str, str], cwd: str | os.PathLike[str] | None = None) -> str | None:
    """The file exec runs for argv0: argv0 itself (from cwd) when it has a '/', else found on the PATH of env."""
    if "/" in argv0:
        return os.path.join(cwd or "", argv0)
    return shutil.which(argv0, path=os.pathsep.join(os.get_exec_path(dict(env))))


ELF_MAGIC = b"\x7fELF"
PT_INTERP = 3


def interposer_loads(path: str | None, depth: int = 0) -> bool:
    """Whether the interposer can load in the program at path: an ELF of the interposer's own class, byte order
    and machine that names an interpreter (PT_INTERP: dynamically linked), following `#!` lines as the kernel does.
    A statically linked program ignores LD_PRELOAD, and one of another class or machine gets the loader's complaint
    on its stderr, so either is started with the environment it would have unprofiled (and its children are not
    followed).  What cannot be read, or is neither ELF nor `#!`, counts as loading: exec decides.  The interposer's
    exec hooks make the same test (native/preload/process.c, `loads_in`)."""
    if path is None or depth > 4:
        return True
    try:
        with open(path, "rb") as f:
            head = f.read(256)
            if head.startswith(b"#!"):
                interp = head[2:].split(b"\n", 1)[0].strip(b" \t").split(None, 1)
                return not interp or interposer_loads(os.fsdecode(interp[0]), depth + 1)
            if not head.startswith(ELF_MAGIC) or len(head) < 64:
                return True
            if (head[4], head[5], head[18:20]) != _own_elf_identity():
                return False
            order = "<" if head[5] == 1 else ">"
            # e_phoff, then e_phentsize and e_phnum, where ELF32 and ELF64 keep them
            phoff, = struct.unpack_from(order + ("Q" if head[4] == 2 else "I"), head, 32 if head[4] == 2 else 28)
            phentsize, phnum = struct.unpack_from(order + "HH", head, 54 if head[4] == 2 else 42)
            f.seek(phoff)
            table = f.read(phentsize * phnum)
    except OSError:
        return True
    return any(struct.unpack_from(order + "I", table, i * phentsize)[0] == PT_INTERP
               for i in range(min(phnum, len(table) // max(phentsize, 4))))


@functools.cache
def _own_elf_identity() -> tuple[int, int, bytes]:
    """The interposer's ELF class, byte order and machine."""
    with open(preload_library(), "rb") as f:
        head = f.read(20)
    return head[4], head[5], head[18:20]


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
        self.exit_signal: int | None = None  # the signal that killed the command, from its wait status
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
        """The command's environment with the interposer in it; makes the staging directory (OSError if none).

        Ours goes first in LD_PRELOAD, followed by a space and the user's value whenever the user's is set, even
        empty: the interposer takes its own entry and one separator out, and gives the program what is left (an
        `LD_PRELOAD=` stays set and empty; one that was unset stays unset).  The recorder's settings travel in one
        variable (`recorder_value`): every variable costs the program argument space (ARG_MAX)."""
        if self.stage is None:
            self.stage = staging_dir(self.warn)
        env = dict(self.base_env)
        have = env.get("LD_PRELOAD")
        env[self.preload_var] = str(self.lib) if have is None else f"{self.lib} {have}"
        env[RECORDER_VAR] = recorder_value(self.stage, os.getpid(), trace=self.trace, max_files=self.max_files)
        return env

    # -- run it here ----------------------------------------------------------------------------------------

    def start(self) -> subprocess.Popen[bytes]:
        """Start the command, stdin, stdout and stderr shared with this process (or `stdio`), with every descriptor
        this process inherited.  Without a staging directory it runs unprofiled (after a warning): the command
        itself always runs."""
        try:
            env = self.environment()
        except OSError as err:
            if self.warn:
                self.warn(f"iolens: warning: no staging directory ({err}); the command runs unprofiled")
            env = dict(self.base_env)
        if not interposer_loads(program_path(self.argv[0], self.base_env, self.cwd)):
            env = dict(self.base_env)  # static: LD_PRELOAD means nothing to it, so it sees what it would unprofiled
        probes = [_probe_cpu()] if self.trace else []  # before the clock starts: not the command's time
        self._timing = _Timing(time.time_ns(), time.monotonic_ns(), 0, cpu=(cpu_seconds(), None), probes=probes)
        try:
            # every descriptor the command inherits stays its own (a `<(...)`, `exec 3>`, make's jobserver);
            # this process's own are close-on-exec
            self.proc = subprocess.Popen(self.argv, env=env, cwd=self.cwd, stdout=self.stdio, stderr=self.stdio,
                                         close_fds=False)
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
        self.exit_signal = os.WTERMSIG(wstatus) if os.WIFSIGNALED(wstatus) else None
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
            "exit_signal": self.exit_signal,
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
            result.capture = read_capture(target)  # read as it is read later: streamed, never whole
            result.capture.problems.extend(res.problems)
        except OSError as err:
            result.error = str(err.strerror or err)
        except CaptureError as err:  # what was just written cannot be read back (removed meanwhile, an I/O error)
            result.error = str(err)
        finally:
            self.close()
        return result

    def close(self) -> None:
        """Remove the staging directory (also when the command never ran)."""
        if self.stage is not None:
            shutil.rmtree(self.stage, ignore_errors=True)
            self.stage = None


def _probe_cpu() -> tuple[int, float] | None:
    """What the replayer's compute burn costs this CPU now (native.probe_cpu): a traced capture keeps it,
    so that a replay burns the step's compute as work, at whatever speed the CPU runs then."""
    from iolens.native import probe_cpu

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
    """Live processes started with this recording's staging directory (in `RECORDER_VAR`) that have no part yet:
    an image makes its part on its first recorded call, so a daemon caught between its fork and its first file
    operation (or wait) has none, and only its environment tells it belongs to the recording."""
    key = os.fsencode(RECORDER_VAR) + b"="
    out = set()
    for d in os.scandir("/proc"):
        if not d.name.isdigit() or int(d.name) == me:
            continue
        try:
            with open(f"/proc/{d.name}/environ", "rb") as fh:
                values = [e[len(key):] for e in fh.read().split(b"\0") if e.startswith(key)]
        except OSError:
            continue  # gone, or not ours to read
        if any(recorder_dir(os.fsdecode(v)) == str(stage) for v in values):
            out.add(int(d.name))
    return out
