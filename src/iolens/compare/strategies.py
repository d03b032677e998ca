"""Where a run's files are: `direct` (inputs in place) or `stage` (copy in, run in scratch, copy out).

Every directory iolens makes is registered in a Workspace and removed by `cleanup()`, which the command
calls in a `finally` (so also after Ctrl-C or SIGTERM).  Nothing iolens writes goes anywhere but into a
directory it has just created (`workdirs.make`: unique, marked with its owner), so no user file is ever
overwritten; what a killed compare left is removed by the next one (`reap_leftovers`).
"""

from __future__ import annotations

import os
import shlex
import shutil
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from iolens import lab, workdirs
from iolens.compare.placements import Configuration, Location, Placeholder
from iolens.errors import IolensError, UsageError

PREFIX = "iolens-compare-"


@dataclass
class S3Side:
    """An S3 lab target reached through the S3 API (boto3), bypassing its mount."""

    target: str
    client: Any  # a boto3 S3 client
    bucket: str
    mount: str

    def key(self, path: str | Path) -> str:
        rel = os.path.relpath(path, self.mount)
        if rel == "." or rel.startswith(".."):
            raise UsageError(f"{path} is not inside lab:{self.target}'s mount {self.mount}")
        return rel


class Workspace:
    """The temporary directories of one `iolens compare`; removed on cleanup (also on Ctrl-C)."""

    def __init__(self, scratch: str | None = None, *, keep_outputs: bool = False):
        self.scratch = scratch
        self.keep_outputs = keep_outputs
        self.roots: dict[str, Path] = {}  # location path -> our directory in it
        self.kept: dict[str, list[Path]] = {}  # configuration -> its last run's outputs (keep_outputs)
        self._scratch_root: Path | None = None
        self._s3: dict[str, S3Side | None] = {}

    def s3(self, loc: Location) -> S3Side | None:
        """The S3 API side of an S3 lab location (client made once, outside the timed steps); else None."""
        if loc.lab is None:
            return None
        if loc.lab not in self._s3:
            if not lab.is_s3(loc.lab):
                self._s3[loc.lab] = None
            else:
                ep = lab.s3_endpoint(loc.lab)
                self._s3[loc.lab] = S3Side(loc.lab, lab.s3_client(loc.lab), ep["bucket"], ep["mount"])
        return self._s3[loc.lab]

    def _mkdtemp(self, base: str) -> Path:
        try:
            return workdirs.make(base, PREFIX)
        except OSError as err:
            raise UsageError(f"cannot create a directory in {base}: {err.strerror}; choose another location") from None

    def root_in(self, location: str) -> Path:
        root = self.roots.get(location)
        if root is None:
            root = self.roots[location] = self._mkdtemp(location)
        return root

    def scratch_root(self) -> Path:
        if self._scratch_root is None:
            self._scratch_root = self._mkdtemp(scratch_base(self.scratch))
        return self._scratch_root

    def all_dirs(self) -> list[Path]:
        dirs = list(self.roots.values())
        if self._scratch_root is not None:
            dirs.append(self._scratch_root)
        return dirs

    def cleanup(self) -> list[Path]:
        """Remove everything made; with keep_outputs, the output roots stay. Returns what was kept."""
        kept = []
        for loc, root in list(self.roots.items()):
            if self.keep_outputs and any(p.parent == root for ps in self.kept.values() for p in ps):
                workdirs.release(root)  # the user's now: no later compare removes it
                kept.append(root)
                continue
            workdirs.discard(root)  # what is left (a mount the command made in it) the next compare reports
            del self.roots[loc]
        if self._scratch_root is not None:
            workdirs.discard(self._scratch_root)
            self._scratch_root = None
        return kept


def scratch_base(scratch: str | None) -> str:
    return scratch or tempfile.gettempdir()


def reap_leftovers(plan_places: list[Location], scratch: str | None, shared: list[str]) -> workdirs.Reaped:
    """What killed compares left: in every directory place, the scratch directory and the `shared` system
    directories (the temporary directory when no --scratch is given)."""
    mine = {loc.path for loc in plan_places if loc.kind == "dir"} | ({scratch} if scratch else set())
    reaped = workdirs.reap_each((p, PREFIX) for p in sorted(mine))
    reaped += workdirs.reap_each(((p, PREFIX) for p in sorted({scratch_base(scratch), *shared})), shared=True)
    return reaped


@dataclass
class Prepared:
    """One run of one configuration, ready to go."""

    command: str
    strategy: str
    copy_in: list[tuple[Location, Path, S3Side | None]] = field(default_factory=list)  # source, destination, via
    copy_out: list[tuple[Path, Path, S3Side | None]] = field(default_factory=list)  # staged dir, final dir, via
    remove_after: list[Path] = field(default_factory=list)
    final_dirs: list[Path] = field(default_factory=list)
    input_files: list[str] = field(default_factory=list)  # the source inputs, for cache eviction and residency
    bound: dict[str, tuple[str, bool]] = field(default_factory=dict)  # placeholder -> (value, is_dir)
    place_dirs: dict[str, Path] = field(default_factory=dict)  # place key -> the fresh directory the command sees
    place_stamps: dict[str, int | None] = field(default_factory=dict)  # its mtime (ns) as iolens left it


# The fresh directory of a place gets an mtime well in the past, so that any entry the command creates or
# removes in it (even a temp file it deletes before it exits) shows as a newer mtime: the kernel's coarse
# timestamps could not tell a change within the same clock tick as the mkdir.
STAMP_AGE_NS = 2_000_000_000


def _stamp(d: Path) -> int | None:
    t = time.time_ns() - STAMP_AGE_NS
    try:
        os.utime(d, ns=(t, t))
        return os.stat(d).st_mtime_ns
    except OSError:
        return None  # some FUSE filesystems keep no times: then only what is left in it counts


def written_places(prep: Prepared) -> dict[str, tuple[bool, int]]:
    """Per directory place: (did the command create, remove or leave anything in it, bytes left in it)."""
    out = {}
    for key, d in prep.place_dirs.items():
        try:
            changed = prep.place_stamps.get(key) is not None and os.stat(d).st_mtime_ns != prep.place_stamps[key]
            left = any(d.iterdir())
        except OSError:
            changed, left = True, False  # gone or unreadable: it was touched
        out[key] = (changed or left, tree_size(d) if left else 0)
    return out


def input_files(cfg: Configuration) -> list[str]:
    out = []
    for loc in cfg.inputs.values():
        if loc.kind == "file":
            out.append(loc.path)
        else:
            for d, _sub, files in os.walk(loc.path):
                out.extend(os.path.join(d, f) for f in sorted(files))
    return out


def render(parts: list[str | Placeholder], bound: dict[str, tuple[str, bool]]) -> str:
    """The shell command: each placeholder replaced by its shell-quoted value.

    bound: name -> (value, is_directory).  {name:file} is value/file for a directory, else the value itself
    (so {out:aln.sam} is /dev/null for out=/dev/null).  {name!words} is the value split into shell words,
    each quoted (so `nice -n 5` runs nice, and no shell syntax in a value is ever run).
    """
    out = []
    for p in parts:
        if isinstance(p, str):
            out.append(p)
            continue
        value, is_dir = bound[p.name]
        if p.words:
            out.append(shlex.join(shlex.split(value)))
            continue
        if p.file is not None and is_dir:
            value = os.path.join(value, p.file)
        out.append(shlex.quote(value))
    return "".join(out)


def prepare(ws: Workspace, cfg: Configuration, cfg_index: int, run_no: int, parts: list[str | Placeholder]) -> Prepared:
    """Make this run's directories and its command (nothing is copied yet)."""
    tag = f"c{cfg_index}-r{run_no}"
    prep = Prepared(command="", strategy=cfg.strategy, input_files=input_files(cfg))
    bound: dict[str, tuple[str, bool]] = {k: (v, False) for k, v in cfg.params.items()}
    stage_dir = None
    if cfg.strategy == "stage":
        stage_dir = ws.scratch_root() / tag
        stage_dir.mkdir()
        prep.remove_after.append(stage_dir)
    for key, loc in cfg.inputs.items():
        if stage_dir is None:
            bound[key] = (loc.path, loc.kind == "dir")
        else:
            dest_parent = stage_dir / "in" / key
            dest_parent.mkdir(parents=True)
            dest = dest_parent / (os.path.basename(loc.path.rstrip("/")) or key)
            prep.copy_in.append((loc, dest, ws.s3(loc)))
            bound[key] = (str(dest), loc.kind == "dir")
    for key, loc in cfg.places.items():
        if loc.kind != "dir":
            bound[key] = (loc.path, False)
            continue
        final = ws.root_in(loc.path) / f"{tag}-{key}"
        final.mkdir()
        prep.final_dirs.append(final)
        if stage_dir is None:
            bound[key] = (str(final), True)
            prep.place_dirs[key] = final
        else:
            staged = stage_dir / "out" / key
            staged.mkdir(parents=True)
            prep.copy_out.append((staged, final, ws.s3(loc)))
            bound[key] = (str(staged), True)
            prep.place_dirs[key] = staged
        prep.place_stamps[key] = _stamp(prep.place_dirs[key])
    prep.command = render(parts, bound)
    prep.bound = bound
    return prep


def _copy(src: str, dest: Path) -> int:
    if os.path.isdir(src):
        shutil.copytree(src, dest, symlinks=True)
    else:
        shutil.copyfile(src, dest)
    return tree_size(dest)


def tree_size(p: Path) -> int:
    if p.is_file():
        return p.stat().st_size
    return sum(f.stat().st_size for f in p.rglob("*") if f.is_file() and not f.is_symlink())


def _s3_download(s3: S3Side, loc: Location, dest: Path) -> int:
    key = s3.key(loc.path)
    if loc.kind == "file":
        s3.client.download_file(s3.bucket, key, str(dest))
        return dest.stat().st_size
    n = 0
    prefix = key.rstrip("/") + "/"
    for page in s3.client.get_paginator("list_objects_v2").paginate(Bucket=s3.bucket, Prefix=prefix):
        for obj in page.get("Contents", []):
            rel = obj["Key"][len(prefix):]
            if not rel or rel.endswith("/"):
                continue  # directory markers
            target = dest / rel
            target.parent.mkdir(parents=True, exist_ok=True)
            s3.client.download_file(s3.bucket, obj["Key"], str(target))
            n += obj["Size"]
    dest.mkdir(exist_ok=True)
    return n


def _s3_upload(s3: S3Side, staged: Path, final: Path) -> int:
    prefix = s3.key(final)
    n = 0
    for f in sorted(staged.rglob("*")):
        if f.is_file() and not f.is_symlink():
            s3.client.upload_file(str(f), s3.bucket, f"{prefix}/{f.relative_to(staged).as_posix()}")
            n += f.stat().st_size
    return n


def transfer_method(prep: Prepared) -> str | None:
    """How stage moves data: "files", "s3-api", or "files+s3-api"; None for direct."""
    if prep.strategy != "stage":
        return None
    kinds = {"s3-api" if via is not None else "files" for *_x, via in [*prep.copy_in, *prep.copy_out]}
    return "+".join(sorted(kinds)) or "files"


def copy_in(prep: Prepared) -> tuple[float, int]:
    """Copy the inputs to scratch (S3 lab targets through the S3 API): (seconds, bytes)."""
    t0 = time.monotonic()
    n = 0
    for loc, dest, s3 in prep.copy_in:
        try:
            n += _s3_download(s3, loc, dest) if s3 is not None else _copy(loc.path, dest)
        except Exception as err:  # OSError, shutil.Error, botocore errors: stop, with what failed
            raise IolensError(f"stage: copying {loc.raw} to {dest.parent} failed ({_why(err)}); free space or "
                              "choose another --scratch", exit_code=1) from None
    return time.monotonic() - t0, n


def copy_out(prep: Prepared) -> tuple[float, int]:
    """Copy what the command wrote in scratch back to the real locations: (seconds, bytes)."""
    t0 = time.monotonic()
    n = 0
    for staged, final, s3 in prep.copy_out:
        try:
            if s3 is not None:
                n += _s3_upload(s3, staged, final)
            else:
                shutil.copytree(staged, final, symlinks=True, dirs_exist_ok=True)
                n += tree_size(staged)
        except Exception as err:
            raise IolensError(f"stage: copying the outputs back to {final.parent} failed ({_why(err)}); "
                              "check that location", exit_code=1) from None
    return time.monotonic() - t0, n


def _why(err: Exception) -> str:
    if isinstance(err, OSError) and err.strerror:
        return err.strerror
    return str(err).splitlines()[0][:200] if str(err) else type(err).__name__


def finish(ws: Workspace, prep: Prepared, cfg_name: str) -> None:
    """Remove this run's directories (keeping the latest outputs per configuration with keep_outputs)."""
    for d in prep.remove_after:
        shutil.rmtree(d, ignore_errors=True)
    if ws.keep_outputs and prep.final_dirs:
        for old in ws.kept.get(cfg_name, []):
            shutil.rmtree(old, ignore_errors=True)
        ws.kept[cfg_name] = list(prep.final_dirs)
        return
    for d in prep.final_dirs:
        shutil.rmtree(d, ignore_errors=True)
