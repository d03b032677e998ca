"""The lab directory and its state file: every resource `up` made, recorded before `up` moves on.

state.json (tag "iolens-lab-state", schema [1, 0]):
- targets: name -> {status: up|failed, path, fstype, error, hint, loop, image, cgroup, ...}
- processes: name -> {pid, start_time, argv0, log}     (servers and FUSE clients we started)
- mounts: mountpoints in the order they were mounted    (unmounted in reverse)
- loops: [{device, image}]                              (detached only if still backed by our image)
- cgroups: [path]
- ports: component -> port
- s3: credentials and bucket per target

Which lab a command uses: `--dir`, else IOLENS_LAB_DIR, else the lab `lab up --dir X` last brought up (remembered
in $XDG_STATE_HOME/iolens/lab-in-use until `lab down` takes it down), else $XDG_STATE_HOME/iolens/lab.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import os
import time
from pathlib import Path
from typing import Any, Iterator

from iolens.dirs import user_path
from iolens.errors import IolensError, UsageError

TAG = "iolens-lab-state"
SCHEMA_VERSION = (1, 0)
STATE_FILE = "state.json"


IN_USE_FILE = "lab-in-use"


def _in_use_file() -> Path:
    return user_path("", "XDG_STATE_HOME", IN_USE_FILE)  # no variable of its own: IOLENS_LAB_DIR overrides it


def remembered() -> Path | None:
    """The lab `lab up --dir X` last brought up, while it still has its state file."""
    try:
        text = _in_use_file().read_text().strip()
    except (OSError, UnicodeDecodeError):
        return None
    path = Path(text) if text else None
    return path if path and path.is_absolute() and (path / STATE_FILE).is_file() else None


def remember(root: Path) -> None:
    """Make `root` the lab in use for commands given no --dir (none when IOLENS_LAB_DIR names one)."""
    if root == _default_dir():
        forget(None)
        return
    path = _in_use_file()
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(f".{IN_USE_FILE}.{os.getpid()}")
        tmp.write_text(f"{root}\n")
        os.replace(tmp, path)
    except OSError:
        pass  # commands then look in the default place, and their error says where they looked


def forget(root: Path | None) -> None:
    """Stop remembering `root` (None: whatever is remembered) as the lab in use."""
    path = _in_use_file()
    try:
        if root is None or path.read_text().strip() == str(root):
            path.unlink()
    except OSError:
        pass


def _default_dir() -> Path:
    return user_path("", "XDG_STATE_HOME", "lab").absolute()


def where(given: str | os.PathLike | None = None) -> tuple[Path, str]:
    """The lab directory a command uses, and why that one (for an error saying where it looked)."""
    if given:
        return Path(given).expanduser().absolute(), "--dir"
    env = os.environ.get("IOLENS_LAB_DIR")
    if env:
        return Path(env).expanduser().absolute(), "IOLENS_LAB_DIR"
    last = remembered()
    if last is not None:
        return last, "the lab `iolens lab up --dir` brought up last"
    return _default_dir(), "the default lab directory"


def default_dir() -> Path:
    return where()[0]


def lab_dir(given: str | os.PathLike | None = None) -> Path:
    return where(given)[0]


def not_found_hint(root: Path, source: str) -> str:
    """Where a command looked for the lab, and how to point it at another."""
    return (f"looked in {root} ({source}); for a lab brought up with `--dir X`, set IOLENS_LAB_DIR=X "
            "(or give `--dir X` to the lab commands)")


def lab_id(root: Path) -> str:
    """A short name for the lab in `root`, for what lives outside it (cgroups, network namespaces)."""
    return hashlib.sha1(str(root).encode()).hexdigest()[:8]


def empty_state(root: Path) -> dict[str, Any]:
    return {
        "tag": TAG,
        "schema_version": list(SCHEMA_VERSION),
        "dir": str(root),
        "created": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "targets": {},
        "processes": {},
        "mounts": [],
        "loops": [],
        "cgroups": [],
        "ports": {},
        "s3": {},
        "settings": {},
    }


def load(root: Path) -> dict[str, Any] | None:
    """The lab's state, or None when no lab was set up in `root`."""
    path = root / STATE_FILE
    try:
        data = json.loads(path.read_text())
    except FileNotFoundError:
        return None
    except (OSError, ValueError) as err:
        raise IolensError(f"{path} is unreadable ({err}); remove the lab by hand (see docs/lab.md)") from None
    if not isinstance(data, dict) or data.get("tag") != TAG:
        raise UsageError(f"{path} is not an iolens lab state file; choose another --dir")
    major = (data.get("schema_version") or [0])[0]
    if major > SCHEMA_VERSION[0]:
        raise UsageError(f"{path} was written by a newer iolens (lab schema {major}); use that iolens to take it down")
    return data


def save(root: Path, state: dict[str, Any]) -> None:
    path = root / STATE_FILE
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(state, indent=1, sort_keys=True) + "\n")
    os.replace(tmp, path)


@contextlib.contextmanager
def locked(root: Path) -> Iterator[None]:
    """Serialise `up` and `down` on one lab directory."""
    root.mkdir(parents=True, exist_ok=True)
    fd = os.open(root / ".lock", os.O_CREAT | os.O_RDWR, 0o600)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise UsageError(f"another `iolens lab` command is working on {root}; wait for it to finish") from None
        yield
    finally:
        os.close(fd)


def process_start_time(pid: int) -> int | None:
    """Field 22 of /proc/PID/stat: tells a live process from a reused PID."""
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = text[text.rindex(")") + 2 :].split()
    try:
        if fields[0] == "Z":
            return None
        return int(fields[19])
    except (IndexError, ValueError):
        return None


def process_alive(rec: dict[str, Any]) -> bool:
    pid = rec.get("pid")
    return isinstance(pid, int) and pid > 0 and process_start_time(pid) == rec.get("start_time")
