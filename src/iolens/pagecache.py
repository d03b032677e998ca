"""The page cache from Python: evict files, measure what of them is resident, drop the whole cache (root).

    evict(path)                 fdatasync, then posix_fadvise(DONTNEED): the file's clean pages leave the cache
    fadvise_dontneed(files)     evict each file; files that cannot be opened are skipped
    resident_bytes(path)        (bytes in the page cache, size) by mmap + mincore; None when it cannot be mapped
    resident_fraction(files)    share of the files' bytes in the page cache; None when one cannot be checked
    drop_caches()               sync, then drop page cache, dentries and inodes (root only); False when not allowed
    make_cold(files, method)    "auto" | "drop-caches" | "fadvise": evict the files; returns the method that worked

The bench engine (native/bench) evicts its own files in C; everything in Python uses this module.  Eviction
cannot apply where the pages are the storage (tmpfs, ramfs): residency stays at 100% there.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import mmap
import os
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
