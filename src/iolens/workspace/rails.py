"""Safety rails: the only place benchmark files may live, their removal on every exit path, and the space check.

- Each target gets a new `iolens-bench-*` directory (mkdtemp: unique, mode 0700); the engine refuses any other.
- WorkDirs removes them on normal exit, on errors, on Ctrl-C (KeyboardInterrupt) and on SIGTERM/SIGHUP (turned
  into `Terminated` by `signals_as_exceptions`).
- The directories are made and removed by `iolens.workdirs` (a marker naming the owner inside); `reap_targets`
  removes what killed runs left in the targets, and only what is provably theirs.
- check_space refuses a run whose peak footprint would not fit with a reserve to spare.
"""

from __future__ import annotations

import errno
import os
import signal
import threading
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

from iolens import workdirs
from iolens.workspace.target import Target
from iolens.errors import TargetError, Terminated
from iolens.units import human_bytes

WORKDIR_PREFIX = "iolens-bench-"  # the engines refuse any other directory


@contextmanager
def signals_as_exceptions() -> Iterator[None]:
    """Within the block, SIGTERM and SIGHUP raise Terminated (so `finally` blocks run)."""

    def handler(signum: int, _frame: object) -> None:
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
            d = self.dirs[t.spec] = workdirs.make(t.path, WORKDIR_PREFIX)
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
                    workdirs.remove(d)
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

    def __exit__(self, *exc: object) -> None:
        self.remove_all()


def reap_targets(targets: list[Target]) -> workdirs.Reaped:
    """Removes the work directories killed runs left in the targets (`workdirs.reap`): one listing per target."""
    return workdirs.reap_each((t.path, WORKDIR_PREFIX) for t in targets if t.path is not None)


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
