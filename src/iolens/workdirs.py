"""Work directories of runs: each names its owner, and what a killed run left is removed by the next run.

- `make(parent, prefix)`: a new directory (mkdtemp: unique, mode 0700) holding a marker file (`.iolens-owner`:
  the owner's process identity, user and time), written right after the directory is made.
- `reap(parent, prefix)`: lists `parent` once and removes each `prefix*` directory that is provably the leftover
  of a killed run: marker present, same user, same host, and its owner gone (dead, an earlier boot, or its pid
  now another process).  A directory without the marker is someone else's, and one whose owner runs, runs in
  another pid namespace or on another host is left alone: none of them is ever touched.  A parent this user
  cannot write (read-only) or list gives nothing.  A run killed between the mkdtemp and the marker leaves an empty
  directory without one, which is then left alone like a user's.
- `remove(d)`: the one way a work directory is removed.  It never follows a symlink, never leaves the directory's
  filesystem, and refuses a directory that is, or holds, a mount point (a work directory bind-mounted elsewhere
  would otherwise lose the mounted files).
- `process_identity`/`owner_gone`: what tells a process apart from one that later gets the same pid (pid, host,
  boot, pid namespace, start time); the results store marks its `running` runs with it too.
"""

from __future__ import annotations

import errno
import json
import os
import socket
import stat
import tempfile
import time
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator

MARKER = ".iolens-owner"
MARKER_TAG = "iolens-workdir"


# -- who owns what -----------------------------------------------------------------------------------------------

def _read(path: str) -> str | None:
    try:
        with open(path, encoding="ascii", errors="replace") as f:
            return f.read().strip()
    except OSError:
        return None


def start_time(pid: int) -> str | None:
    """The process's start time in clock ticks since boot (/proc/PID/stat field 22); None when there is none."""
    st = _read(f"/proc/{pid}/stat")
    if not st or ")" not in st:
        return None
    fields = st.rsplit(")", 1)[1].split()
    return fields[19] if len(fields) > 19 else None


def _pid_ns() -> str | None:
    try:
        return os.readlink("/proc/self/ns/pid")
    except OSError:
        return None


def process_identity(pid: int | None = None) -> dict[str, Any]:
    """What tells this process apart from any other, even one that later gets the same pid."""
    pid = os.getpid() if pid is None else pid
    return {"pid": pid, "host": socket.gethostname(), "boot_id": _read("/proc/sys/kernel/random/boot_id"),
            "pid_ns": _pid_ns(), "start": start_time(pid)}


def owner_gone(owner: dict[str, Any]) -> bool:
    """True when the owner is provably not running: same host and pid namespace, and the machine was rebooted
    or no process with that pid and start time exists.  An owner on another host is never judged."""
    here = process_identity()
    if not isinstance(owner, dict) or owner.get("host") != here["host"] or not isinstance(owner.get("pid"), int):
        return False
    if owner.get("boot_id") and here["boot_id"] and owner["boot_id"] != here["boot_id"]:
        return True
    if owner.get("pid_ns") != here["pid_ns"]:
        return False
    start = start_time(owner["pid"])
    return start is None or (owner.get("start") is not None and start != owner["start"])


# -- making ------------------------------------------------------------------------------------------------------

def marker_of_this_process() -> dict[str, Any]:
    return {"tag": MARKER_TAG, **process_identity(), "uid": os.getuid(),
            "started": time.strftime("%Y-%m-%dT%H:%M:%S%z")}


def write_marker(d: Path, marker: dict[str, Any] | None = None) -> None:
    """Marks d as this process's work directory (a new file, never through a symlink)."""
    fd = os.open(d / MARKER, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
    with os.fdopen(fd, "w") as fh:
        json.dump(marker or marker_of_this_process(), fh)


def read_marker(d: Path) -> dict[str, Any] | None:
    """The marker of a work directory, None when there is none (or it is not ours to read, or not one)."""
    try:
        fd = os.open(d / MARKER, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK)
        with os.fdopen(fd, "rb") as fh:
            if not stat.S_ISREG(os.fstat(fh.fileno()).st_mode):
                return None
            m = json.loads(fh.read(4096))
    except (OSError, ValueError):
        return None
    if not isinstance(m, dict) or m.get("tag") != MARKER_TAG or not isinstance(m.get("pid"), int):
        return None
    return m


def make(parent: str | os.PathLike[str], prefix: str) -> Path:
    """A new work directory `prefix*` in parent, marked as this process's; OSError when it cannot be made (then
    nothing is left behind)."""
    d = Path(tempfile.mkdtemp(prefix=prefix, dir=parent))
    try:
        write_marker(d)
    except OSError:
        remove(d)
        raise
    return d


# -- finding and removing ----------------------------------------------------------------------------------------

@dataclass
class Found:
    """A `prefix*` directory found in a parent, and whose it is.

    owner: `dead` (ours, its run was killed: removed), `running` (ours, its run is alive), `other-namespace`,
    `other-host`, `other-user`, or `unmarked` (no marker: not an iolens work directory)."""

    path: Path
    owner: str
    marker: dict[str, Any] | None = None

    @property
    def who(self) -> str:
        m = self.marker or {}
        return f"pid {m.get('pid')}, started {m.get('started')}"


def owner_of(d: Path) -> Found:
    m = read_marker(d)
    if m is None:
        return Found(d, "unmarked")
    try:
        uid = d.lstat().st_uid
    except OSError:
        return Found(d, "unmarked")
    if uid != os.getuid() or m.get("uid") != os.getuid():
        return Found(d, "other-user", m)
    if m.get("host") != socket.gethostname():
        return Found(d, "other-host", m)
    if owner_gone(m):
        return Found(d, "dead", m)
    if m.get("pid_ns") != _pid_ns():
        return Found(d, "other-namespace", m)
    return Found(d, "running", m)


def candidates(parent: str | os.PathLike[str], prefix: str) -> list[Path]:
    """The `prefix*` directories in parent (not symlinks to one); [] when parent cannot be listed."""
    out = []
    try:
        with os.scandir(parent) as it:
            for e in it:
                if e.name.startswith(prefix) and e.is_dir(follow_symlinks=False):
                    out.append(Path(parent, e.name))
    except OSError:
        return []
    return sorted(out)


def _mounts_within(real: str) -> list[str]:
    from iolens.sysinfo import mounts

    return [m["mountpoint"] for m in mounts() if m["mountpoint"] == real or m["mountpoint"].startswith(real + "/")]


def _empty(top: int, dev: int) -> None:
    """Removes everything inside the open directory `top` that is on device `dev`, through directory descriptors
    (no symlink is followed); a directory on another device (a mount point) is neither entered nor removed, so the
    removal of the directory holding it fails."""
    fl = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
    stack: list[tuple[int, str, list[str]]] = [(top, "", os.listdir(top))]  # (fd, name in its parent, names left)
    try:
        while stack:
            fd, here, names = stack[-1]
            if not names:
                stack.pop()
                if stack:
                    os.close(fd)
                    try:
                        os.rmdir(here, dir_fd=stack[-1][0])
                    except FileNotFoundError:
                        pass
                continue
            name = names.pop()
            try:
                st = os.stat(name, dir_fd=fd, follow_symlinks=False)
                if not stat.S_ISDIR(st.st_mode):
                    os.unlink(name, dir_fd=fd)
                    continue
                if st.st_dev != dev:
                    continue
                sub = os.open(name, fl, dir_fd=fd)
            except FileNotFoundError:
                continue
            try:
                sst = os.fstat(sub)
                inner = os.listdir(sub) if (sst.st_dev, sst.st_ino) == (st.st_dev, st.st_ino) else None
            except BaseException:
                os.close(sub)
                raise
            if inner is None:  # replaced by something else meanwhile: left alone
                os.close(sub)
                continue
            stack.append((sub, name, inner))
    finally:
        for fd, _here, _names in stack[1:]:
            os.close(fd)


def remove(d: str | os.PathLike[str]) -> None:
    """Removes the work directory d and everything in it (see the module's docstring); nothing when it is gone.
    OSError when something could not be removed (what is left stays)."""
    d = Path(d)
    try:
        top = os.open(d, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except FileNotFoundError:
        return
    try:
        inside = _mounts_within(os.path.realpath(f"/proc/self/fd/{top}"))
        if inside:
            raise OSError(errno.EBUSY, f"{inside[0]} is a mount point in it; unmount it first")
        _empty(top, os.fstat(top).st_dev)
    finally:
        os.close(top)
    try:
        os.rmdir(d)
    except FileNotFoundError:
        pass


def release(d: str | os.PathLike[str]) -> None:
    """Hands a work directory over to the user (outputs they asked to keep): its marker goes, so no later run
    takes it for a leftover."""
    try:
        os.unlink(Path(d, MARKER))
    except FileNotFoundError:
        pass


def discard(d: str | os.PathLike[str]) -> str | None:
    """`remove`, for a clean-up that goes on whatever happens: what went wrong, or None."""
    try:
        remove(d)
    except OSError as err:
        return f"could not remove {d}: {err.strerror or err}"
    return None


# -- what killed runs left ---------------------------------------------------------------------------------------

@dataclass
class Reaped:
    """What `reap` found: the leftovers it removed, those it could not remove, and the directories it left alone."""

    removed: list[Found] = field(default_factory=list)
    failed: list[tuple[Found, str]] = field(default_factory=list)
    left: list[Found] = field(default_factory=list)

    def __iadd__(self, other: "Reaped") -> "Reaped":
        self.removed += other.removed
        self.failed += other.failed
        self.left += other.left
        return self

    def notes(self) -> list[str]:
        """One line for what was removed, one for each directory of a similar name left alone."""
        out = []
        if self.removed:
            n = len(self.removed)
            out.append(f"removed {n} leftover director{'y' if n == 1 else 'ies'} of iolens runs that were killed: "
                       + "; ".join(f"{f.path} ({f.who})" for f in self.removed))
        for f in self.left:
            m = f.marker or {}
            if f.owner == "other-namespace":
                out.append(f"{f.path} belongs to an iolens run in another pid namespace (pid {m.get('pid')} there): "
                           "left alone")
            elif f.owner == "other-host":
                out.append(f"{f.path} belongs to an iolens run on {m.get('host')}: left alone")
            elif f.owner == "other-user":
                out.append(f"{f.path} belongs to an iolens run of another user: left alone")
            elif f.owner == "unmarked":
                out.append(f"{f.path} is not an iolens work directory (no iolens marker inside), although its name "
                           "looks like one: left alone")
        return out

    def warnings(self) -> list[str]:
        out = [f"could not remove {f.path}, left by a killed iolens run ({f.who}): {why}" for f, why in self.failed]
        out += [f"{f.path} belongs to an iolens run still running ({f.who}): left alone; the two runs share this "
                "storage, so each disturbs the other's timings" for f in self.left if f.owner == "running"]
        return out

    def say(self, echo: Callable[[str], None]) -> None:
        """Each note and warning as one line (`iolens: note: ...`), names shown safely."""
        from iolens.names import shown

        for kind, lines in (("note", self.notes()), ("warning", self.warnings())):
            for line in lines:
                echo(f"iolens: {kind}: {shown(line)}")


def reap(parent: str | os.PathLike[str], prefix: str, *, shared: bool = False) -> Reaped:
    """Removes the `prefix*` directories in parent that killed runs of ours left (see the module's docstring).

    Lists parent once; a parent this user cannot write (read-only, another user's) is skipped quietly: nothing
    could be removed there.  shared: parent is a system directory (/dev/shm, the temporary directory) where other
    runs' and other programs' directories are normal, so only what was removed (or could not be) is said."""
    out = Reaped()
    if not os.access(parent, os.W_OK | os.X_OK):
        return out
    for d in candidates(parent, prefix):
        f = owner_of(d)
        if f.owner != "dead":
            out.left.append(f)
            continue
        try:
            remove(d)
        except OSError as err:
            out.failed.append((f, err.strerror or str(err)))
        else:
            out.removed.append(f)
    if shared:
        out.left.clear()
    return out


def reap_each(places: Iterable[tuple[str | os.PathLike[str], str]], *, shared: bool = False) -> Reaped:
    """`reap` of each (parent, prefix), each parent and prefix once."""
    out = Reaped()
    seen = set()
    for parent, prefix in places:
        key = (os.path.realpath(parent), prefix)
        if key not in seen:
            seen.add(key)
            out += reap(parent, prefix, shared=shared)
    return out


@contextmanager
def temporary(parent: str | os.PathLike[str] | None, prefix: str) -> Iterator[Path]:
    """A work directory (`make`; parent None: the temporary directory) for the length of the block, then removed."""
    d = make(parent if parent is not None else tempfile.gettempdir(), prefix)
    try:
        yield d
    finally:
        remove(d)
