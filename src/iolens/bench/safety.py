"""Safety rails: the only place benchmark files may live, their removal on every exit path, and the space check.

- Each target gets a new `iolens-bench-*` directory (mkdtemp: unique, mode 0700); the engine refuses any other.
- WorkDirs removes them on normal exit, on errors, on Ctrl-C (KeyboardInterrupt) and on SIGTERM/SIGHUP (turned
  into `Terminated` by `signals_as_exceptions`).  Removal never follows symlinks (shutil.rmtree is fd-based).
- Each work directory holds a marker (`.iolens-bench-owner`: pid, host, boot, process start time, uid, time) written
  right after it is made.  A later run removes an `iolens-bench-*` directory only when it is provably a leftover of
  a killed run: marker present, same user, same host, and its process gone (dead, or an earlier boot, or its pid
  now another process).  A same-named directory without the marker is someone else's and is never touched.
- check_space refuses a run whose peak footprint would not fit with a reserve to spare.
"""

from __future__ import annotations

import errno
import json
import os
import shutil
import signal
import socket
import tempfile
import threading
import time
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterator

from iolens.bench.targets import Target
from iolens.errors import TargetError, Terminated
from iolens.names import shown
from iolens.units import human_bytes

WORKDIR_PREFIX = "iolens-bench-"
MARKER = ".iolens-bench-owner"
MARKER_TAG = "iolens-bench-workdir"


@contextmanager
def signals_as_exceptions() -> Iterator[None]:
    """Within the block, SIGTERM and SIGHUP raise Terminated (so `finally` blocks run)."""

    def handler(signum, _frame):
        raise Terminated(signum)

    old = {}
    for sig in (signal.SIGTERM, signal.SIGHUP):
        try:
            old[sig] = signal.signal(sig, handler)
        except ValueError:  # not the main thread: leave signals alone
            pass
    try:
        yield
    finally:
        for sig, h in old.items():
            signal.signal(sig, h)


def _target_error(t: Target, err: OSError) -> TargetError:
    if err.errno == errno.EROFS:
        return TargetError(f"{t.spec} is on a read-only filesystem")
    if err.errno in (errno.EACCES, errno.EPERM):
        return TargetError(f"{t.spec} is not writable by this user")
    if err.errno in (errno.ENOSPC, errno.EDQUOT):
        return TargetError(f"{t.spec} is full (no space or inodes left)")
    return TargetError(f"{t.spec}: cannot create a work directory: {err.strerror}")


class WorkDirs:
    """The iolens-bench-* directories of one run; removed when the block ends, however it ends."""

    def __init__(self) -> None:
        self.dirs: dict[str, Path] = {}
        self.problems: list[str] = []

    def create(self, t: Target) -> Path:
        if t.path is None:
            raise ValueError("the null target has no directory")
        if t.spec in self.dirs:
            return self.dirs[t.spec]
        try:
            d = Path(tempfile.mkdtemp(prefix=WORKDIR_PREFIX, dir=t.path))
        except OSError as err:
            raise _target_error(t, err) from None
        self.dirs[t.spec] = d  # removed with the others from here on, marker or not
        try:
            write_marker(d)
        except OSError as err:
            raise _target_error(t, err) from None
        return d

    def remove_all(self) -> list[str]:
        # Removal must finish even if another signal arrives meanwhile.  Blocking the signals holds them off this
        # thread only: another thread of the process (a library's) takes them, and Python runs their handlers here
        # all the same.  So, in the main thread, the handlers only note a signal until the removal is done, and
        # it is raised again afterwards.
        masked = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT, signal.SIGTERM, signal.SIGHUP})
        pending: list[int] = []
        held = {}
        if threading.current_thread() is threading.main_thread():
            for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
                held[sig] = signal.signal(sig, lambda signum, _frame: pending.append(signum))
        try:
            for spec, d in list(self.dirs.items()):
                try:
                    shutil.rmtree(d)
                except FileNotFoundError:
                    pass
                except OSError as err:
                    self.problems.append(f"could not remove {d}: {err.strerror}")
                    continue
                if os.path.lexists(d):
                    self.problems.append(f"could not remove {d}")
                else:
                    del self.dirs[spec]
        finally:
            for sig, handler in held.items():
                signal.signal(sig, handler if handler is not None else signal.SIG_DFL)
            signal.pthread_sigmask(signal.SIG_SETMASK, masked)
        if pending:
            signal.raise_signal(pending[0])  # to the handler it would have met: KeyboardInterrupt, Terminated
        return self.problems

    def __enter__(self) -> "WorkDirs":
        return self

    def __exit__(self, *exc) -> None:
        self.remove_all()


def _boot_id() -> str | None:
    try:
        return Path("/proc/sys/kernel/random/boot_id").read_text().strip() or None
    except OSError:
        return None


def _proc_start(pid: int) -> str | None:
    """The start time of a process (clock ticks since boot, /proc/PID/stat field 22): a pid and its start time
    name one process, even after the pid is reused."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = stat[stat.rfind(")") + 2:].split()
    return fields[19] if len(fields) > 19 else None


def marker_of_this_process() -> dict[str, Any]:
    pid = os.getpid()
    return {"tag": MARKER_TAG, "pid": pid, "host": socket.gethostname(), "boot_id": _boot_id(),
            "proc_start": _proc_start(pid), "uid": os.getuid(), "started": time.strftime("%Y-%m-%dT%H:%M:%S%z")}


def write_marker(d: Path, marker: dict[str, Any] | None = None) -> None:
    """Marks d as this process's work directory (a new file, never through a symlink)."""
    fd = os.open(d / MARKER, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
    with os.fdopen(fd, "w") as fh:
        json.dump(marker or marker_of_this_process(), fh)


def read_marker(d: Path) -> dict[str, Any] | None:
    """The marker of an iolens-bench-* directory, None when there is none (or it is not ours to read)."""
    try:
        fd = os.open(d / MARKER, os.O_RDONLY | os.O_NOFOLLOW)
        with os.fdopen(fd) as fh:
            m = json.loads(fh.read(4096))
    except (OSError, ValueError):
        return None
    if not isinstance(m, dict) or m.get("tag") != MARKER_TAG or not isinstance(m.get("pid"), int):
        return None
    return m


def _alive(pid: int, proc_start: str | None) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        pass  # exists, another user's
    now = _proc_start(pid)
    return proc_start is None or now is None or now == proc_start


@dataclass
class Leftover:
    """An iolens-bench-* directory found in a target before the run, and whose it is.

    owner: `dead` (ours, its run was killed: safe to remove), `running` (ours, its run is alive), `other-host`,
    `other-user`, or `unmarked` (no marker: not an iolens work directory; never touched)."""

    path: Path
    owner: str
    marker: dict[str, Any] | None = None


def owner_of(d: Path) -> Leftover:
    m = read_marker(d)
    if m is None:
        return Leftover(d, "unmarked")
    try:
        uid = d.lstat().st_uid
    except OSError:
        return Leftover(d, "unmarked")
    if uid != os.getuid() or m.get("uid") != os.getuid():
        return Leftover(d, "other-user", m)
    if m.get("host") != socket.gethostname():
        return Leftover(d, "other-host", m)
    boot = _boot_id()
    if m.get("boot_id") and boot and m["boot_id"] != boot:
        return Leftover(d, "dead", m)  # made before this machine last booted
    return Leftover(d, "running" if _alive(m["pid"], m.get("proc_start")) else "dead", m)


def stale_dirs(t: Target) -> list[Path]:
    """iolens-bench-* directories in a target (any owner; `owner_of` says whose)."""
    if t.path is None:
        return []
    try:
        return sorted(p for p in t.path.iterdir() if p.name.startswith(WORKDIR_PREFIX) and p.is_dir()
                      and not p.is_symlink())
    except OSError:
        return []


def tidy_targets(targets: list[Target], say: Callable[[str], None]) -> None:
    """clean_leftovers on each target, each note and warning said as one line (`iolens: note: ...`)."""
    for t in targets:
        if t.kind == "null":
            continue
        notes, warnings = clean_leftovers(t)
        for kind, lines in (("note", notes), ("warning", warnings)):
            for line in lines:
                say(f"iolens: {kind}: {shown(line)}")


def clean_leftovers(t: Target) -> tuple[list[str], list[str]]:
    """Removes the work directories that killed runs of ours left in t; (notes, warnings) about what was found.

    Only a directory whose marker proves it ours and its run dead is removed; the rest are left as they are."""
    notes: list[str] = []
    warnings: list[str] = []
    for d in stale_dirs(t):
        lo = owner_of(d)
        m = lo.marker or {}
        if lo.owner == "dead":
            try:
                shutil.rmtree(d)
            except OSError as err:
                warnings.append(f"could not remove {d}, left by a killed iolens run (pid {m.get('pid')}): "
                                f"{err.strerror}")
            else:
                notes.append(f"removed {d}, left by an iolens run that was killed (pid {m.get('pid')}, started "
                             f"{m.get('started')})")
        elif lo.owner == "running":
            warnings.append(f"{d} belongs to an iolens run still running (pid {m.get('pid')}): left alone; the "
                            "two runs share the target, so each disturbs the other's numbers")
        elif lo.owner == "other-host":
            notes.append(f"{d} belongs to an iolens run on {m.get('host')}: left alone")
        elif lo.owner == "other-user":
            notes.append(f"{d} belongs to an iolens run of another user: left alone")
        else:
            notes.append(f"{d} is not an iolens work directory (no iolens marker inside), although its name "
                         "looks like one: left alone")
    return notes, warnings


def reserve_bytes(t: Target) -> int:
    """Space left untouched: 5% of the filesystem, at most 1 GiB, at least 4 MiB."""
    total = t.total_bytes or 0
    return int(max(4 << 20, min(1 << 30, 0.05 * total)))


def check_space(t: Target, need_bytes: int, need_inodes: int, what: str,
                fix: tuple[str, str] = ("use --size to make it smaller", "use --files to make it smaller")) -> None:
    """Refuses (TargetError) when the peak footprint would not fit on the target with the reserve to spare; `fix`
    says what to do about the bytes and about the inodes."""
    if t.path is None:
        return
    t.refresh_space()
    free = t.free_bytes or 0
    reserve = reserve_bytes(t)
    need = int(need_bytes * 1.02) + (1 << 20)
    unsized = t.free_bytes is None and t.free_unknown  # an object store: no size to check against
    if not unsized and need > free - reserve:
        raise TargetError(
            f"{t.spec}: {what} needs {human_bytes(need)} and {human_bytes(free)} is free, of which "
            f"{human_bytes(reserve)} is kept spare; {fix[0]}")
    if t.free_inodes is not None and need_inodes + 64 > t.free_inodes:
        raise TargetError(f"{t.spec}: {what} needs {need_inodes:,} inodes but only {t.free_inodes:,} are free; "
                          f"{fix[1]}")
