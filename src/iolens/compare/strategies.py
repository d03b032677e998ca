"""Where a run's files are: `direct` (inputs in place) or `stage` (copy in, run in scratch, copy out).

Every directory iolens makes is registered in a Workspace and removed by `cleanup()`, which the command
calls in a `finally` (so also after Ctrl-C or SIGTERM).  Nothing iolens writes goes anywhere but into a
directory it has just created with `mkdtemp`, so no user file is ever overwritten.
"""

from __future__ import annotations

import os
import shlex
import shutil
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from iolens.compare.placements import Configuration, Location, Placeholder
from iolens.errors import UsageError

PREFIX = "iolens-compare-"


class Workspace:
    """The temporary directories of one `iolens compare`; removed on cleanup (also on Ctrl-C)."""

    def __init__(self, scratch: str | None = None, *, keep_outputs: bool = False):
        self.scratch = scratch
        self.keep_outputs = keep_outputs
        self.roots: dict[str, Path] = {}  # location path -> our directory in it
        self.kept: dict[str, list[Path]] = {}  # configuration -> its last run's outputs (keep_outputs)
        self._scratch_root: Path | None = None

    def _mkdtemp(self, base: str) -> Path:
        try:
            return Path(tempfile.mkdtemp(prefix=PREFIX, dir=base))
        except OSError as err:
            raise UsageError(f"cannot create a directory in {base}: {err.strerror}; choose another location") from None

    def root_in(self, location: str) -> Path:
        root = self.roots.get(location)
        if root is None:
            root = self.roots[location] = self._mkdtemp(location)
        return root

    def scratch_root(self) -> Path:
        if self._scratch_root is None:
            base = self.scratch or tempfile.gettempdir()
            self._scratch_root = self._mkdtemp(base)
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
                kept.append(root)
                continue
            shutil.rmtree(root, ignore_errors=True)
            del self.roots[loc]
        if self._scratch_root is not None:
            shutil.rmtree(self._scratch_root, ignore_errors=True)
            self._scratch_root = None
        return kept


@dataclass
class Prepared:
    """One run of one configuration, ready to go."""

    command: str
    strategy: str
    copy_in: list[tuple[Location, Path]] = field(default_factory=list)  # source, destination
    copy_out: list[tuple[Path, Path]] = field(default_factory=list)  # staged dir, final dir
    remove_after: list[Path] = field(default_factory=list)
    final_dirs: list[Path] = field(default_factory=list)
    input_files: list[str] = field(default_factory=list)  # the source inputs, for cache eviction and residency
    bound: dict[str, tuple[str, bool]] = field(default_factory=dict)  # placeholder -> (value, is_dir)


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
    (so {out:aln.sam} is /dev/null for out=/dev/null).
    """
    out = []
    for p in parts:
        if isinstance(p, str):
            out.append(p)
            continue
        value, is_dir = bound[p.name]
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
            prep.copy_in.append((loc, dest))
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
        else:
            staged = stage_dir / "out" / key
            staged.mkdir(parents=True)
            prep.copy_out.append((staged, final))
            bound[key] = (str(staged), True)
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


def copy_in(prep: Prepared) -> tuple[float, int]:
    """Copy the inputs to scratch: (seconds, bytes)."""
    t0 = time.monotonic()
    n = 0
    for loc, dest in prep.copy_in:
        n += _copy(loc.path, dest)
    return time.monotonic() - t0, n


def copy_out(prep: Prepared) -> tuple[float, int]:
    """Copy what the command wrote in scratch back to the real locations: (seconds, bytes)."""
    t0 = time.monotonic()
    n = 0
    for staged, final in prep.copy_out:
        shutil.copytree(staged, final, symlinks=True, dirs_exist_ok=True)
        n += tree_size(staged)
    return time.monotonic() - t0, n


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
