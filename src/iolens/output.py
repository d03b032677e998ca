"""The one policy for every file a command writes.

- `-` means standard output;
- an existing file is never overwritten unless the user passed `--force`, and a device or a pipe never is;
- outputs are checked before any work starts (exists, directory writable, two outputs on one path), so a long
  run never ends in "cannot write";
- a file is written under a temporary name in its directory and moved into place only when complete, so an error
  or an interrupt never leaves a partial file behind, and without `--force` a name taken meanwhile is not replaced.
"""

from __future__ import annotations

import errno
import os
import sys
import tempfile
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path

import click

from iolens.errors import UsageError

FORCE_OPTION = click.option("--force", is_flag=True, help="Overwrite output files that already exist.")


def _exists_message(opt: str, path: str | os.PathLike[str]) -> str:
    return f"{opt} {path} already exists; choose another name or remove it, or pass --force to overwrite"


def _special_message(opt: str, path: str | os.PathLike[str]) -> str:
    return (f"{opt} {path} is not a regular file (a device or a pipe), which an output would replace; give a file "
            "name, or '-' for standard output")


def directory_problem(parent: Path) -> tuple[str, str] | None:
    """Why files cannot be made in directory `parent`, and the advice's start, or None if they can: "create it or"
    only for a directory that does not exist (a read-only filesystem or a missing permission is said as such)."""
    if not parent.exists():
        return "does not exist", "create it or "
    if not parent.is_dir():
        return "is not a directory", ""
    if os.access(parent, os.W_OK):
        return None
    try:
        readonly = bool(os.statvfs(parent).f_flag & os.ST_RDONLY)
    except OSError:
        readonly = False
    return ("is on a read-only filesystem" if readonly else "is not writable by you"), ""


def check_outputs(outputs: Mapping[str, str | os.PathLike[str] | None], *, force: bool = False,
                  inputs: Sequence[str | os.PathLike[str]] = ()) -> None:
    """Refuse, before any work, outputs that cannot be written: `outputs` maps an option name to its path; none may
    be one of the command's `inputs` (the files it reads), which `--force` never replaces."""
    given = {opt: str(p) for opt, p in outputs.items() if p is not None and str(p) != ""}
    if sum(1 for p in given.values() if p == "-") > 1:
        raise UsageError("only one output can go to standard output ('-')")
    read = {os.path.realpath(p) for p in inputs if str(p) not in ("", "-")}
    seen: dict[str, str] = {}
    for opt, p in given.items():
        if p == "-":
            continue
        real = os.path.realpath(p)
        if real in seen:
            raise UsageError(f"{seen[real]} and {opt} both write {p}; give them different names")
        if real in read:
            raise UsageError(f"{opt} {p} is a file this command reads; give the output another name (--force never "
                             "replaces an input)")
        seen[real] = opt
        path = Path(p)
        if path.is_dir():
            raise UsageError(f"{opt} {p} is a directory; give a file name")
        if path.exists() and not path.is_file():
            raise UsageError(_special_message(opt, p))
        if path.exists() and not force:
            raise UsageError(_exists_message(opt, p))
        parent = path.parent if str(path.parent) else Path(".")
        problem = directory_problem(parent)
        if problem:
            raise UsageError(f"{opt} {p}: directory {parent} {problem[0]}; {problem[1]}give {opt} in a writable "
                             "directory")


def write_output(path: str | os.PathLike[str], data: bytes | Iterable[bytes], *, force: bool = False,
                 opt: str = "output") -> None:
    """Write `data` whole to `path` (`-` for stdout): temporary file, then an atomic move into place. `data` may
    come in parts (an iterable of bytes), each written as it comes."""
    parts = (data,) if isinstance(data, (bytes, bytearray, memoryview)) else data
    if str(path) == "-":
        for part in parts:
            sys.stdout.buffer.write(part)
        sys.stdout.flush()
        return
    target = Path(path)
    if target.exists() and not target.is_file() and not target.is_dir():
        raise UsageError(_special_message(opt, path))
    parent = target.parent if str(target.parent) else Path(".")
    tmp = None
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".part", dir=parent)
        with os.fdopen(fd, "wb") as f:
            for part in parts:
                f.write(part)
        os.chmod(tmp, 0o666 & ~_umask())
        if force:
            os.replace(tmp, target)
        else:
            _claim(tmp, target)
        tmp = None
    except FileExistsError:
        raise UsageError(_exists_message(opt, path)) from None
    except OSError as err:
        raise UsageError(f"cannot write {path}: {err.strerror or err}") from None
    finally:
        if tmp is not None:
            try:
                os.unlink(tmp)
            except OSError:
                pass


def _claim(tmp: str, target: Path) -> None:
    """Move tmp to target unless target exists (FileExistsError), also where the filesystem has no hard links."""
    try:
        os.link(tmp, target)
    except OSError as err:
        if err.errno not in (errno.EPERM, errno.EOPNOTSUPP, errno.EMLINK, errno.ENOSYS):
            raise
        os.close(os.open(target, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600))  # reserve the name
        os.replace(tmp, target)
    else:
        os.unlink(tmp)


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask
