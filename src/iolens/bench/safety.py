"""Safety rails: the only place benchmark files may live, their removal on every exit path, and the space check.

- Each target gets a new `iolens-bench-*` directory (mkdtemp: unique, mode 0700); the engine refuses any other.
- WorkDirs removes them on normal exit, on errors, on Ctrl-C (KeyboardInterrupt) and on SIGTERM/SIGHUP (turned
  into `Terminated` by `signals_as_exceptions`).  Removal never follows symlinks (shutil.rmtree is fd-based).
- check_space refuses a run whose peak footprint would not fit with a reserve to spare.
"""

from __future__ import annotations

import errno
import os
import shutil
import signal
import tempfile
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

from iolens.bench.targets import Target
from iolens.errors import TargetError
from iolens.units import human_bytes

WORKDIR_PREFIX = "iolens-bench-"


class Terminated(Exception):
    """The process got SIGTERM or SIGHUP: unwind, clean up, exit 128 + signal."""

    def __init__(self, signum: int):
        super().__init__(signal.Signals(signum).name)
        self.signum = signum


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
        self.dirs[t.spec] = d
        return d

    def remove_all(self) -> list[str]:
        # removal must finish even if another signal arrives meanwhile
        masked = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT, signal.SIGTERM, signal.SIGHUP})
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
            signal.pthread_sigmask(signal.SIG_SETMASK, masked)
        return self.problems

    def __enter__(self) -> "WorkDirs":
        return self

    def __exit__(self, *exc) -> None:
        self.remove_all()


def stale_dirs(t: Target) -> list[Path]:
    """iolens-bench-* directories left by a run that was killed without a chance to clean up."""
    if t.path is None:
        return []
    try:
        return sorted(p for p in t.path.iterdir() if p.name.startswith(WORKDIR_PREFIX) and p.is_dir()
                      and not p.is_symlink())
    except OSError:
        return []


def reserve_bytes(t: Target) -> int:
    """Space left untouched: 5% of the filesystem, at most 1 GiB, at least 4 MiB."""
    total = t.total_bytes or 0
    return int(max(4 << 20, min(1 << 30, 0.05 * total)))


def check_space(t: Target, need_bytes: int, need_inodes: int, what: str) -> None:
    """Refuses (TargetError) when the peak footprint would not fit on the target with the reserve to spare."""
    if t.path is None:
        return
    t.refresh_space()
    free = t.free_bytes or 0
    reserve = reserve_bytes(t)
    need = int(need_bytes * 1.02) + (1 << 20)
    if need > free - reserve:
        raise TargetError(
            f"{t.spec}: {what} needs {human_bytes(need)} but only {human_bytes(free)} is free "
            f"(keeping {human_bytes(reserve)} spare); use --size to make it smaller")
    if t.free_inodes is not None and need_inodes + 64 > t.free_inodes:
        raise TargetError(f"{t.spec}: {what} needs {need_inodes:,} inodes but only {t.free_inodes:,} are free; "
                          "use --files to make it smaller")
