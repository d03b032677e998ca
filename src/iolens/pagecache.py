"""The page cache from Python: evict files, measure what of them is resident, drop the whole cache (root).

    evict(path)                 fdatasync, then posix_fadvise(DONTNEED): the file's clean pages leave the cache
    fadvise_dontneed(files)     evict each file; files that cannot be opened are skipped
    resident_bytes(path)        (bytes in the page cache, size) by mmap + mincore; None when it cannot be mapped
    resident_fraction(files)    share of the files' bytes in the page cache; None when one cannot be checked
    drop_caches()               sync, then drop page cache, dentries and inodes (root only); False when not allowed
    make_cold(files, method)    "auto" | "drop-caches" | "fadvise": evict the files; returns the method that worked
    warm(paths)                 read files whole and stat directory trees: their pages and inodes are cached again
    proactive_reclaim()         the idle age after which the kernel pages out memory by itself (DAMON), or None
    reclaim_paused()            a context in which that reclaim is off (root), and on again after, whatever happens

The bench engine (native/bench) evicts its own files in C; everything in Python uses this module.  Eviction
cannot apply where the pages are the storage (tmpfs, ramfs): residency stays at 100% there.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import mmap
import os
from collections.abc import Iterator
from contextlib import contextmanager
from functools import cache

DROP_CACHES = "/proc/sys/vm/drop_caches"


# -- eviction -----------------------------------------------------------------------------------------------------

def evict(path: str | os.PathLike[str]) -> bool:
    """Drop one file's pages from the page cache; False when it cannot be opened.

    Dirty pages (a file just written) cannot be dropped, so the file is flushed first."""
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return False
    try:
        try:
            os.fdatasync(fd)
        except OSError:
            pass  # a filesystem without fdatasync still drops what is clean
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
    finally:
        os.close(fd)
    return True


def fadvise_dontneed(files: list[str]) -> None:
    for f in files:
        evict(f)


def drop_caches() -> bool:
    """sync and drop the page cache, dentries and inodes (root only); False when not allowed."""
    if os.geteuid() != 0:
        return False
    os.sync()
    try:
        with open(DROP_CACHES, "w") as fh:
            fh.write("3\n")
        return True
    except OSError:
        return False


def make_cold(files: list[str], method: str) -> str:
    """Evict the files ("auto": drop the whole cache when allowed, else per file); returns the method that worked."""
    if method in ("auto", "drop-caches") and drop_caches():
        return "drop-caches"
    fadvise_dontneed(files)
    return "fadvise"


# -- warming ------------------------------------------------------------------------------------------------------

def warm(paths: list[str | os.PathLike[str]], chunk: int = 1 << 20) -> int:
    """Read each file whole, and under each directory every file, after a stat of every entry (their inodes and
    directory blocks are cached too); the bytes read.  Paths that cannot be read are skipped.

    "Warm" is a state that decays by itself where the kernel reclaims idle memory proactively (see
    proactive_reclaim): a file last read minutes ago may be partly gone.  A measurement that needs it warm warms it."""
    total = 0
    for path in paths:
        if os.path.isdir(path):
            for root, dirs, files in os.walk(path):
                for name in dirs:
                    _stat(os.path.join(root, name))
                for name in files:
                    total += _read_whole(os.path.join(root, name), chunk)
        else:
            total += _read_whole(path, chunk)
    return total


def _stat(path: str) -> None:
    try:
        os.lstat(path)
    except OSError:
        pass


def _read_whole(path: str | os.PathLike[str], chunk: int) -> int:
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
    except OSError:
        return 0
    n = 0
    try:
        while b := os.read(fd, chunk):
            n += len(b)
    except OSError:
        pass
    finally:
        os.close(fd)
    return n


DAMON_KDAMONDS = "/sys/kernel/mm/damon/admin/kdamonds"


def _pageout_schemes(root: str) -> Iterator[tuple[str, str, str]]:
    """(kdamond, context, scheme) directories of every `pageout` scheme of a running kdamond under `root`."""
    for kd in _numbered(root):
        if _text(os.path.join(kd, "state")) != "on":
            continue
        for ctx in _numbered(os.path.join(kd, "contexts")):
            for sch in _numbered(os.path.join(ctx, "schemes")):
                if _text(os.path.join(sch, "action")) == "pageout":
                    yield kd, ctx, sch


def proactive_reclaim(root: str = DAMON_KDAMONDS) -> float | None:
    """The shortest idle time, in seconds, after which a running DAMON scheme pages memory out by itself (cloud VMs
    use it to hand unused memory back to the host), or None when no such scheme runs or it cannot be read.

    The minimum age of a scheme is counted in aggregation intervals: age/min x aggr_us."""
    best = None
    for _kd, ctx, sch in _pageout_schemes(root):
        aggr = _number(os.path.join(ctx, "monitoring_attrs", "intervals", "aggr_us"))
        age = _number(os.path.join(sch, "access_pattern", "age", "min"))
        if aggr is None or age is None:
            continue
        idle = age * aggr / 1e6
        best = idle if best is None else min(best, idle)
    return best


@contextmanager
def reclaim_paused(root: str = DAMON_KDAMONDS) -> Iterator[bool | None]:
    """Turns off the DAMON daemons that page idle memory out (proactive_reclaim) for the body, and on again
    after it, also on an error or Ctrl-C.  Yields None where none runs, False where they cannot be turned off
    (not root), True while they are off.

    A benchmark that calls its page cache warm needs it: the reclaim takes what was idle a minute, the
    filesystem's own metadata too (block bitmaps, inode tables, directories: nothing a program can read back), so
    whatever runs first on a storage idle since then pays for reading it back and whatever runs next does not."""
    states = list(dict.fromkeys(os.path.join(kd, "state") for kd, _c, _s in _pageout_schemes(root)))
    if not states:
        yield None
        return
    paused: list[str] = []
    try:
        for st in states:
            if not _set(st, "off"):
                break
            paused.append(st)
        yield len(paused) == len(states)
    finally:
        for st in paused:
            _set(st, "on")  # where it fails, the next boot starts it again; nothing of the user's is lost


def _set(path: str, value: str) -> bool:
    try:
        with open(path, "w") as fh:
            fh.write(value + "\n")
        return True
    except OSError:
        return False


def _text(path: str) -> str | None:
    try:
        with open(path) as fh:
            return fh.read().strip()
    except OSError:
        return None


def _number(path: str) -> int | None:
    t = _text(path)
    return int(t) if t is not None and t.isdigit() else None


def _numbered(d: str) -> list[str]:
    try:
        return [os.path.join(d, e) for e in sorted(os.listdir(d)) if e.isdigit()]
    except OSError:
        return []


# -- residency ----------------------------------------------------------------------------------------------------

@cache
def _libc() -> ctypes.CDLL:
    """mmap/mincore/munmap from libc: Python's mmap module maps files but has no mincore."""
    lib = ctypes.CDLL(ctypes.util.find_library("c") or None, use_errno=True)
    lib.mmap.restype = ctypes.c_void_p
    lib.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_long]
    lib.munmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t]
    lib.mincore.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.POINTER(ctypes.c_ubyte)]
    return lib


MAP_FAILED = ctypes.c_void_p(-1).value


def resident_bytes(path: str | os.PathLike[str]) -> tuple[int, int] | None:
    """(bytes in the page cache, size) of one file, by mincore; None when it cannot be mapped."""
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return None
    try:
        size = os.fstat(fd).st_size
        if size == 0:
            return 0, 0
        lib = _libc()
        addr = lib.mmap(None, size, mmap.PROT_READ, mmap.MAP_SHARED, fd, 0)
        if addr in (None, MAP_FAILED):
            return None
        try:
            page = mmap.PAGESIZE
            vec = (ctypes.c_ubyte * ((size + page - 1) // page))()
            if lib.mincore(addr, size, vec) != 0:
                return None
            resident = sum(b & 1 for b in bytes(vec))
            return min(size, resident * page), size
        finally:
            lib.munmap(addr, size)
    finally:
        os.close(fd)


def resident_fraction(files: list[str]) -> float | None:
    """Share of the files' bytes in the page cache; None when one cannot be checked or all are empty."""
    total = have = 0
    for f in files:
        r = resident_bytes(f)
        if r is None:
            return None
        have += r[0]
        total += r[1]
    return have / total if total else None
