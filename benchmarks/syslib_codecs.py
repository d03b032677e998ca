"""The system's libzstd and liblz4 (the versions the `zstd` and `lz4` commands are built from) as iolens codecs.

For benchmarks/compress_vs_tools.py: iolens's measurer is compared with `zstd -b` / `lz4 -b` on the same library
version and the same work, so the only difference left is the measurer.  Each call goes through ctypes straight
to the library, with the buffers the library benchmarks also use: one reused compression/decompression context,
a preallocated output buffer, the uncompressed size known before decoding.

- zstd: one frame, ZSTD_compressCCtx / ZSTD_decompressDCtx (what `zstd -b` times per chunk; it does not chunk by
  default).
- lz4: independent 4 MiB blocks (`lz4 -b`'s default block size), LZ4_compress_default / LZ4_decompress_safe;
  each block is stored as its compressed and uncompressed size (8 bytes) then the block, so the container adds
  8 bytes per 4 MiB.

Compressing returns a copy of the compressed bytes (n / ratio bytes; `zstd -b` and `lz4 -b` keep them in their
buffer); decompressing returns the same preallocated bytearray each time.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import struct
from functools import lru_cache

from iolens.compress.codecs import Codec

LZ4_BLOCK = 4 << 20
_SIZES = struct.Struct("<II")


def _load(name: str) -> ctypes.CDLL | None:
    path = ctypes.util.find_library(name)
    if path is None:
        return None
    try:
        return ctypes.CDLL(path)
    except OSError:
        return None


class _Addr:
    """The address of a bytes or bytearray object's data (no copy), kept valid while this object lives."""

    def __init__(self, buf) -> None:
        if isinstance(buf, bytearray):
            self._keep = (ctypes.c_char * len(buf)).from_buffer(buf)
            self.at = ctypes.addressof(self._keep)
        else:
            self._keep = ctypes.c_char_p(buf)
            self.at = ctypes.cast(self._keep, ctypes.c_void_p).value


@lru_cache(maxsize=None)
def _out(size: int) -> bytearray:
    return bytearray(size)


@lru_cache(maxsize=None)
def _zstd():
    lib = _load("zstd")
    if lib is None:
        return None
    s, p = ctypes.c_size_t, ctypes.c_void_p
    lib.ZSTD_versionString.restype = ctypes.c_char_p
    lib.ZSTD_compressBound.argtypes, lib.ZSTD_compressBound.restype = [s], s
    lib.ZSTD_createCCtx.restype = lib.ZSTD_createDCtx.restype = p
    lib.ZSTD_compressCCtx.argtypes, lib.ZSTD_compressCCtx.restype = [p, p, s, p, s, ctypes.c_int], s
    lib.ZSTD_decompressDCtx.argtypes, lib.ZSTD_decompressDCtx.restype = [p, p, s, p, s], s
    lib.ZSTD_getFrameContentSize.argtypes, lib.ZSTD_getFrameContentSize.restype = [p, s], ctypes.c_ulonglong
    lib.ZSTD_isError.argtypes, lib.ZSTD_isError.restype = [s], ctypes.c_uint
    return lib, lib.ZSTD_createCCtx(), lib.ZSTD_createDCtx()


def _zstd_c(data: bytes, level: str, _t: int) -> bytearray:
    lib, cctx, _ = _zstd()
    cap = lib.ZSTD_compressBound(len(data))
    scratch = _out(cap)
    dst, src = _Addr(scratch), _Addr(data)
    n = lib.ZSTD_compressCCtx(cctx, dst.at, cap, src.at, len(data), int(level))
    del dst
    if lib.ZSTD_isError(n):
        raise ValueError("ZSTD_compressCCtx failed")
    return scratch[:n]


def _zstd_d(data: bytes, _t: int) -> bytearray:
    lib, _, dctx = _zstd()
    src = _Addr(data)
    size = lib.ZSTD_getFrameContentSize(src.at, len(data))
    out = _out(size)
    dst = _Addr(out)
    n = lib.ZSTD_decompressDCtx(dctx, dst.at, size, src.at, len(data))
    if lib.ZSTD_isError(n) or n != size:
        raise ValueError("ZSTD_decompressDCtx failed")
    return out


@lru_cache(maxsize=None)
def _lz4():
    lib = _load("lz4")
    if lib is None:
        return None
    i, p = ctypes.c_int, ctypes.c_void_p
    lib.LZ4_versionString.restype = ctypes.c_char_p
    lib.LZ4_compressBound.argtypes, lib.LZ4_compressBound.restype = [i], i
    lib.LZ4_compress_default.argtypes, lib.LZ4_compress_default.restype = [p, p, i, i], i
    lib.LZ4_decompress_safe.argtypes, lib.LZ4_decompress_safe.restype = [p, p, i, i], i
    return lib


def _lz4_c(data: bytes, _level: str, _t: int) -> bytearray:
    lib = _lz4()
    cap = lib.LZ4_compressBound(LZ4_BLOCK)
    scratch = _out(((len(data) + LZ4_BLOCK - 1) // LZ4_BLOCK) * (cap + _SIZES.size))
    dst, src = _Addr(scratch), _Addr(data)
    pos = 0
    for off in range(0, len(data), LZ4_BLOCK):
        size = min(LZ4_BLOCK, len(data) - off)
        n = lib.LZ4_compress_default(src.at + off, dst.at + pos + _SIZES.size, size, cap)
        if n <= 0:
            raise ValueError("LZ4_compress_default failed")
        _SIZES.pack_into(scratch, pos, n, size)
        pos += _SIZES.size + n
    del dst
    return scratch[:pos]


def _lz4_d(data: bytes, _t: int) -> bytearray:
    lib = _lz4()
    blocks, pos, total = [], 0, 0
    while pos < len(data):
        n, size = _SIZES.unpack_from(data, pos)
        blocks.append((pos + _SIZES.size, n, total, size))
        pos += _SIZES.size + n
        total += size
    out = _out(total)
    src, dst = _Addr(data), _Addr(out)
    for s_off, n, d_off, size in blocks:
        if lib.LZ4_decompress_safe(src.at + s_off, dst.at + d_off, n, size) != size:
            raise ValueError("LZ4_decompress_safe failed")
    return out


def zstd_version() -> str | None:
    z = _zstd()
    return z[0].ZSTD_versionString().decode() if z else None


def lz4_version() -> str | None:
    lib = _lz4()
    return lib.LZ4_versionString().decode() if lib else None


def zstd_codec() -> Codec | None:
    v = zstd_version()
    if v is None:
        return None
    return Codec("zstd-syslib", f"libzstd {v} (system shared library, ctypes)", "zstd", ("3",), ("3",),
                 "zstd's levels", False, compress=_zstd_c, decompress=_zstd_d)


def lz4_codec() -> Codec | None:
    v = lz4_version()
    if v is None:
        return None
    return Codec("lz4-syslib", f"liblz4 {v} (system shared library, ctypes, 4 MiB blocks)", "lz4", ("1",), ("1",),
                 "1 = LZ4_compress_default", False, compress=_lz4_c, decompress=_lz4_d)
