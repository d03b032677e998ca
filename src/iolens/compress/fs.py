"""Filesystem compression: the user's files on each (compressing) filesystem, and optionally a command run there.

For each target (`lab:NAME` or a directory): the files are copied into a fresh `iolens-compress-*` directory
(write throughput: copy plus fsync, source already in memory), the on-disk ratio is taken from the filesystem
itself (btrfs: `compsize -b`, which reads the extent tree; elsewhere allocated blocks vs size), then the files are
evicted from the page cache and read back (cold read throughput).  With a command template, the command is run on
every target through the compare engine (interleaved runs, statistics against the first target, verdict):
`{dir}` is the directory holding the copies (same base names), `{threads}` the thread count given.
"""

from __future__ import annotations

import errno
import os
import re
import shutil
import subprocess
import time
from pathlib import Path
from typing import Any, Callable

from iolens import workdirs
from iolens.compress.measure import PREFIX
from iolens.errors import TargetError, UsageError
from iolens.pagecache import drop_caches, evict
from iolens.redact import redact_command

CHUNK = 4 << 20
HEADROOM = 16 << 20


def resolve_fs(spec: str) -> Path:
    from iolens import resolve

    p = resolve.parse(spec).path()
    if not p.is_dir():
        raise TargetError(f"--fs {spec}: no such directory")
    if not os.access(p, os.W_OK | os.X_OK):
        raise TargetError(f"--fs {spec}: not writable by this user")
    return p


def check_space(spec: str, path: Path, need: int) -> None:
    st = os.statvfs(path)
    free = st.f_bavail * st.f_frsize
    if free < need + HEADROOM:
        from iolens.units import human_bytes
        raise TargetError(f"--fs {spec} is full: the files need {human_bytes(need)} (+{human_bytes(HEADROOM)}), "
                          f"it has {human_bytes(free)} free")


def _copy(src: str, dst: Path, spec: str) -> None:
    try:
        with open(src, "rb") as fi, open(dst, "wb") as fo:
            while True:
                buf = fi.read(CHUNK)
                if not buf:
                    break
                fo.write(buf)
            fo.flush()
            os.fsync(fo.fileno())
    except OSError as err:
        if err.errno in (errno.ENOSPC, errno.EDQUOT):
            raise TargetError(f"--fs {spec} is full: no space left while writing {dst.name}") from None
        raise TargetError(f"--fs {spec}: cannot write {dst.name}: {err.strerror}") from None


def _read_all(paths: list[Path]) -> int:
    n = 0
    for p in paths:
        with open(p, "rb", buffering=0) as f:
            while True:
                b = f.read(CHUNK)
                if not b:
                    break
                n += len(b)
    return n


COMPSIZE_TOTAL = re.compile(r"^TOTAL\s+(\d+)%\s+(\d+)\s+(\d+)\s+(\d+)", re.M)


def compsize(path: Path) -> dict[str, Any]:
    """btrfs's own figures for `path`: disk bytes and uncompressed bytes, via `compsize -b`."""
    if shutil.which("compsize") is None:
        return {"source": "compsize", "error": "compsize is not installed (Debian: btrfs-compsize)"}
    p = subprocess.run(["compsize", "-b", str(path)], capture_output=True, text=True, stdin=subprocess.DEVNULL)
    m = COMPSIZE_TOTAL.search(p.stdout)
    if p.returncode != 0 or not m:
        why = (p.stderr.strip().splitlines() or [f"exit {p.returncode}"])[-1]
        return {"source": "compsize", "error": f"compsize failed: {why}"}
    disk, unc = int(m.group(2)), int(m.group(3))
    return {"source": "compsize", "disk_bytes": disk, "uncompressed_bytes": unc, "ratio": unc / disk if disk else None,
            "error": None}


def blocks_ratio(paths: list[Path]) -> dict[str, Any]:
    size = sum(p.stat().st_size for p in paths)
    disk = sum(p.stat().st_blocks * 512 for p in paths)
    return {"source": "st_blocks", "disk_bytes": disk, "uncompressed_bytes": size,
            "ratio": size / disk if disk else None, "error": None}


def measure_fs(spec: str, files: list[str], keep: list[tuple[str, Path]]) -> dict[str, Any]:
    from iolens.sysinfo import mount_of

    root = resolve_fs(spec)
    total = sum(os.path.getsize(f) for f in files)
    check_space(spec, root, total)
    work = workdirs.make(root, PREFIX)
    keep.append((spec, work))
    for f in files:  # the sources in memory, so the write is the target's
        _read_all([Path(f)])
    dsts = [work / Path(f).name for f in files]
    t = time.perf_counter()
    for f, d in zip(files, dsts):
        _copy(f, d, spec)
    write_s = time.perf_counter() - t
    os.sync()
    m = mount_of(str(work)) or {}
    ratio = compsize(work) if m.get("fstype") == "btrfs" else blocks_ratio(dsts)
    method = "drop-caches" if drop_caches() else "fadvise"
    if method == "fadvise":
        for d in dsts:
            evict(d)
    t = time.perf_counter()
    _read_all(dsts)
    read_s = time.perf_counter() - t
    return {"target": spec, "path": str(work), "fstype": m.get("fstype"), "mount_options": m.get("options"),
            "super_options": m.get("super_options"), "bytes": total, "on_disk": ratio,
            "write_Bps": total / write_s if write_s > 0 else None, "read_Bps": total / read_s if read_s > 0 else None,
            "cold_method": method}


def run_compare(template: str, dirs: list[tuple[str, Path]], threads: int, runs: int,
                progress: Callable[[Any, int], None] | None = None) -> dict[str, Any]:
    """The command on every filesystem through the compare engine; its report (tag iolens-compare)."""
    from iolens import __version__
    from iolens.compare.placements import build_plan, parse_template, placeholder_names
    from iolens.compare.report import build_report
    from iolens.compare.runner import Runner, Settings
    from iolens.compare.strategies import Workspace
    from iolens import resolve
    from iolens.sysinfo import host_facts

    used = placeholder_names(parse_template(template))
    if "dir" not in used:
        raise UsageError("--run needs {dir} in the command: the directory on each filesystem holding the files")
    names = [(resolve.parse(spec).lab or spec).replace(":", "-").replace(",", "-") for spec, _ in dirs]
    configs = [f"{n}:dir={p}" for n, (_spec, p) in zip(names, dirs)]
    params = [f"threads={threads}"] if "threads" in used else []
    plan = build_plan(template, inputs=[f"dir={dirs[0][1]}"], params=params,
                      configs=configs, baseline=names[0])
    settings = Settings(runs=runs, warmup=1, cache="cold", evict="auto", seed=1)
    ws = Workspace(None)
    try:
        outcome = Runner(plan, settings, ws, progress=progress).run()
    finally:
        ws.cleanup()
    prov = {**host_facts(), "iolens_version": __version__}
    return build_report(plan, settings, outcome, provenance=prov)


def measure_all(specs: list[str], files: list[str], *, run: str | None, threads: int, runs: int,
                keep_files: bool = False, progress: Callable[[str], None] | None = None) -> dict[str, Any]:
    from iolens.compress.run import SCHEMA_VERSION, _host, check_file

    for f in files:
        check_file(f)
    made: list[tuple[str, Path]] = []
    results = []
    try:
        for spec in specs:
            if progress:
                progress(f"copying onto {spec}")
            results.append(measure_fs(spec, files, made))
        compare = None
        if run:
            if progress:
                progress(f"running the command on {len(made)} filesystems")
            compare = run_compare(run, made, threads, runs)
    finally:
        for _spec, d in made:
            if keep_files:
                workdirs.release(d)
            else:
                workdirs.discard(d)
    return {"tag": "iolens-compress-fs", "schema_version": list(SCHEMA_VERSION), "host": _host(),
            "files": [{"path": f, "bytes": os.path.getsize(f)} for f in files], "filesystems": results,
            "threads": threads, "command": redact_command(run) if run else run, "compare": compare, "store": None}
