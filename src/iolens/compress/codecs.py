"""The one codec registry: every codec `iolens compress` can measure, library or command-line tool.

Each row names its library, its levels exactly as that library (or tool) names them, what a level means, and
whether it can use threads.  Nothing here implements compression: every codec calls a maintained library
(zlib, zlib-ng, ISA-L, libdeflate, zstd, lz4, liblzma, libbz2) or runs the installed tool.  BGZF is the one
container written here: htslib's block layout (gzip members of at most 64 KiB with a `BC` extra field and the
fixed 28-byte EOF block) around raw deflate from libdeflate, with bgzip's mapping of levels 1-9 to libdeflate's.
"""

from __future__ import annotations

import shutil
import struct
import subprocess
import zlib
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from functools import lru_cache
from importlib import import_module
from typing import Callable, Union

Data = Union[bytes, bytearray]  # libdeflate's binding returns bytearray: never copied, so timing sees the call alone
Compress = Callable[[bytes, str, int], Data]
Decompress = Callable[[bytes, int], Data]


@dataclass(frozen=True)
class Codec:
    name: str
    library: str                 # what does the work
    fmt: str                     # the format written: gzip, bgzf, zstd, lz4, xz, bzip2
    levels: tuple[str, ...]      # every level, as the library names it
    default_levels: tuple[str, ...]
    level_meaning: str           # what a level means, for the docs and --list
    threads: bool                # compression can use threads
    module: str | None = None    # Python module that must import (library codecs)
    tool: str | None = None      # executable that must be on PATH (tool codecs)
    compress: Compress | None = field(default=None, repr=False, compare=False)
    decompress: Decompress | None = field(default=None, repr=False, compare=False)
    compress_argv: Callable[[str, int], list[str]] | None = field(default=None, repr=False, compare=False)
    decompress_argv: Callable[[int], list[str]] | None = field(default=None, repr=False, compare=False)
    decompress_threads: bool = False
    quick: tuple[str, ...] = ()  # levels in the default (quick) set; () = only with --codecs or --full
    aliases: tuple[str, ...] = ()  # other names users type for it

    @property
    def kind(self) -> str:
        return "tool" if self.tool else "library"

    def available(self) -> str | None:
        """None when usable here, else why not (one phrase)."""
        if self.tool and shutil.which(self.tool) is None:
            return f"{self.tool} is not installed"
        if self.module:
            try:
                import_module(self.module)
            except ImportError:
                return f"Python module {self.module} is not installed"
        return None

    def version(self) -> str | None:
        return _version(self.name)


# -- library codecs --------------------------------------------------------------------------------------------

def _zlib_c(data: bytes, level: str, _t: int) -> bytes:
    c = zlib.compressobj(int(level), zlib.DEFLATED, 31)
    return c.compress(data) + c.flush()


def _zlib_d(data: bytes, _t: int) -> bytes:
    return zlib.decompress(data, 31)


def _zng_c(data: bytes, level: str, _t: int) -> bytes:
    from zlib_ng import zlib_ng
    return zlib_ng.compress(data, int(level), wbits=31)


def _zng_d(data: bytes, _t: int) -> bytes:
    from zlib_ng import zlib_ng
    return zlib_ng.decompress(data, wbits=31)


def _isal_c(data: bytes, level: str, _t: int) -> bytes:
    from isal import isal_zlib
    return isal_zlib.compress(data, int(level), wbits=31)


def _isal_d(data: bytes, _t: int) -> bytes:
    from isal import isal_zlib
    return isal_zlib.decompress(data, wbits=31)


def _ldf_c(data: bytes, level: str, _t: int) -> Data:
    import deflate
    return deflate.gzip_compress(data, int(level))


def _ldf_d(data: bytes, _t: int) -> Data:
    import deflate
    return deflate.gzip_decompress(data)


# BGZF (SAM/BAM specification, section 4.1): gzip member, FEXTRA with subfield BC (length 2) = block size - 1.
BGZF_BLOCK = 0xFF00  # uncompressed bytes per block, as bgzip writes them
BGZF_EOF = bytes.fromhex("1f8b08040000000000ff0600424302001b0003000000000000000000")
BGZF_LIBDEFLATE_LEVEL = {"1": 1, "2": 2, "3": 3, "4": 5, "5": 6, "6": 7, "7": 8, "8": 10, "9": 12}  # htslib bgzf.c
_BGZF_HEAD = struct.Struct("<4BI2BH2BHH")


def _bgzf_block(chunk: bytes, level: int) -> bytes:
    import deflate
    body: Data = deflate.deflate_compress(chunk, level)
    if len(body) + 26 > 0x10000:  # incompressible: stored deflate blocks never exceed the limit for 0xFF00 bytes
        c = zlib.compressobj(0, zlib.DEFLATED, -15)
        body = c.compress(chunk) + c.flush()
    head = _BGZF_HEAD.pack(0x1F, 0x8B, 8, 4, 0, 0, 0xFF, 6, ord("B"), ord("C"), 2, len(body) + 25)
    return head + body + struct.pack("<II", zlib.crc32(chunk), len(chunk))


def _pool(threads: int) -> ThreadPoolExecutor | None:
    return ThreadPoolExecutor(threads) if threads > 1 else None


def bgzf_compress(data: bytes, level: str, threads: int = 1) -> bytes:
    """BGZF as htslib writes it: blocks of 0xFF00 bytes, each a gzip member, then the EOF block."""
    lv = BGZF_LIBDEFLATE_LEVEL[level]
    chunks = [data[i : i + BGZF_BLOCK] for i in range(0, len(data), BGZF_BLOCK)]
    pool = _pool(threads)
    if pool is None:
        blocks = [_bgzf_block(c, lv) for c in chunks]
    else:
        with pool:
            blocks = list(pool.map(lambda c: _bgzf_block(c, lv), chunks))
    return b"".join(blocks) + BGZF_EOF


def bgzf_blocks(data: bytes) -> list[tuple[int, int]]:
    """(offset, total size) of each block; ValueError when the data is not BGZF."""
    out, pos = [], 0
    while pos < len(data):
        if len(data) - pos < 28 or data[pos : pos + 4] != b"\x1f\x8b\x08\x04" or data[pos + 12 : pos + 14] != b"BC":
            raise ValueError(f"not a BGZF block at byte {pos}")
        size = struct.unpack_from("<H", data, pos + 16)[0] + 1
        out.append((pos, size))
        pos += size
    return out


def _bgzf_inflate(block: bytes) -> Data:
    import deflate
    isize = struct.unpack_from("<I", block, len(block) - 4)[0]
    if isize == 0:
        return b""
    out = deflate.deflate_decompress(block[18:-8], isize)
    if zlib.crc32(out) != struct.unpack_from("<I", block, len(block) - 8)[0]:
        raise ValueError("BGZF block CRC mismatch")
    return out


def bgzf_decompress(data: bytes, threads: int = 1) -> bytes:
    blocks = [data[o : o + n] for o, n in bgzf_blocks(data)]
    pool = _pool(threads)
    if pool is None:
        return b"".join(map(_bgzf_inflate, blocks))
    with pool:
        return b"".join(pool.map(_bgzf_inflate, blocks))


def _zstd_c(data: bytes, level: str, threads: int) -> bytes:
    import zstandard
    return zstandard.ZstdCompressor(level=int(level), threads=threads if threads > 1 else 0).compress(data)


def _zstd_d(data: bytes, _t: int) -> bytes:
    import zstandard
    return zstandard.ZstdDecompressor().decompress(data)


ZSTD_LONG_WINDOW_LOG = 27  # zstd --long: 128 MiB window


def _zstd_long_c(data: bytes, level: str, threads: int) -> bytes:
    import zstandard
    params = zstandard.ZstdCompressionParameters.from_level(
        int(level), enable_ldm=True, window_log=ZSTD_LONG_WINDOW_LOG, threads=threads if threads > 1 else 0)
    return zstandard.ZstdCompressor(compression_params=params).compress(data)


def _zstd_long_d(data: bytes, _t: int) -> bytes:
    import zstandard
    return zstandard.ZstdDecompressor(max_window_size=1 << ZSTD_LONG_WINDOW_LOG).decompress(data)


def _lz4_c(data: bytes, level: str, _t: int) -> bytes:
    import lz4.frame
    # the lz4 command's frame: 4 MiB independent blocks with a content checksum
    return lz4.frame.compress(data, compression_level=int(level), block_size=lz4.frame.BLOCKSIZE_MAX4MB,
                              content_checksum=True)


def _lz4_d(data: bytes, _t: int) -> bytes:
    import lz4.frame
    return lz4.frame.decompress(data)


def _xz_c(data: bytes, level: str, _t: int) -> bytes:
    import lzma
    preset = int(level.rstrip("e")) | (lzma.PRESET_EXTREME if level.endswith("e") else 0)
    return lzma.compress(data, format=lzma.FORMAT_XZ, check=lzma.CHECK_CRC64, preset=preset)


def _xz_d(data: bytes, _t: int) -> bytes:
    import lzma
    return lzma.decompress(data)


def _bz2_c(data: bytes, level: str, _t: int) -> bytes:
    import bz2
    return bz2.compress(data, int(level))


def _bz2_d(data: bytes, _t: int) -> bytes:
    import bz2
    return bz2.decompress(data)


def _r(a: int, b: int) -> tuple[str, ...]:
    return tuple(str(i) for i in range(a, b + 1))


REGISTRY: dict[str, Codec] = {c.name: c for c in [
    Codec("zlib", "zlib (Python stdlib)", "gzip", _r(1, 9), ("1", "6", "9"),
          "1 fastest .. 9 smallest; 6 is gzip's default", False, compress=_zlib_c, decompress=_zlib_d, quick=("6",),
          aliases=("gzip", "gz")),
    Codec("zlib-ng", "zlib-ng (python-zlib-ng)", "gzip", _r(1, 9), ("1", "6"),
          "zlib's scale 1..9; zlib-ng's level 1 is its own fast 'deflate_quick' (larger output)", False,
          module="zlib_ng", compress=_zng_c, decompress=_zng_d),
    Codec("isal", "ISA-L (python-isal)", "gzip", _r(0, 3), ("1", "3"),
          "ISA-L's own 0..3 (0 fastest); not zlib's scale", False, module="isal", compress=_isal_c,
          decompress=_isal_d, quick=("1",)),
    Codec("libdeflate", "libdeflate (deflate)", "gzip", _r(1, 12), ("1", "6", "12"),
          "1 fastest .. 12 smallest (near-optimal parsing from 10); one shot, whole buffer", False,
          module="deflate", compress=_ldf_c, decompress=_ldf_d, quick=("6",), aliases=("deflate",)),
    Codec("bgzf", "libdeflate (deflate), BGZF blocks", "bgzf", _r(1, 9), ("1", "6"),
          "bgzip's -l 1..9, i.e. libdeflate levels 1,2,3,5,6,7,8,10,12 in 64 KiB blocks", True,
          module="deflate", compress=bgzf_compress, decompress=bgzf_decompress, decompress_threads=True,
          quick=("6",), aliases=("bgz",)),
    Codec("zstd", "zstd (zstandard)", "zstd", tuple(str(i) for i in (-5, -1, *range(1, 23))), ("1", "3", "9", "19"),
          "-5..-1 faster than 1; 1..19 standard; 20..22 'ultra' (more memory); 3 is the default", True,
          module="zstandard", compress=_zstd_c, decompress=_zstd_d, quick=("3", "19"), aliases=("zst", "zstandard")),
    Codec("zstd-long", "zstd (zstandard), --long=27", "zstd", _r(1, 22), ("3", "19"),
          "zstd's levels with long-distance matching in a 128 MiB window (like `zstd --long`)", True,
          module="zstandard", compress=_zstd_long_c, decompress=_zstd_long_d),
    Codec("lz4", "lz4 (python-lz4, frame)", "lz4", ("1", *_r(3, 12)), ("1", "9"),
          "1 = fast LZ4; 3..12 = LZ4-HC (slower to write, same decode speed)", False, module="lz4.frame",
          compress=_lz4_c, decompress=_lz4_d, quick=("1",)),
    Codec("xz", "liblzma (Python stdlib)", "xz", (*_r(0, 9), *(f"{i}e" for i in range(10))), ("1", "6"),
          "presets 0..9 (dictionary 256 KiB .. 64 MiB), 'e' = extreme; 6 is the default", False,
          compress=_xz_c, decompress=_xz_d, quick=("6",), aliases=("lzma",)),
    Codec("bzip2", "libbz2 (Python stdlib)", "bzip2", _r(1, 9), ("9",),
          "block size 100..900 kB; 9 is the default", False, compress=_bz2_c, decompress=_bz2_d,
          aliases=("bz2",)),
    # -- command-line tools, timed as processes -----------------------------------------------------------
    Codec("gzip-cli", "gzip (command)", "gzip", _r(1, 9), ("6",), "1 fastest .. 9 smallest; 6 default", False,
          tool="gzip", compress_argv=lambda lv, t: ["gzip", "-c", "-n", f"-{lv}"],
          decompress_argv=lambda t: ["gzip", "-dc"]),
    Codec("pigz", "pigz (command)", "gzip", (*_r(1, 9), "11"), ("1", "6"),
          "zlib's 1..9 in parallel 128 KiB chunks; 11 = zopfli", True, tool="pigz",
          compress_argv=lambda lv, t: ["pigz", "-c", "-n", f"-{lv}", "-p", str(t)],
          decompress_argv=lambda t: ["pigz", "-dc", "-p", str(t)]),
    Codec("bgzip", "bgzip (htslib command)", "bgzf", _r(0, 9), ("1", "6"),
          "-l 0..9; htslib with libdeflate maps 1..9 to libdeflate 1,2,3,5,6,7,8,10,12", True, tool="bgzip",
          compress_argv=lambda lv, t: ["bgzip", "-c", "-l", lv, "-@", str(t)],
          decompress_argv=lambda t: ["bgzip", "-dc", "-@", str(t)], decompress_threads=True, quick=("6",)),
    Codec("igzip", "igzip (ISA-L command)", "gzip", _r(0, 3), ("1", "3"), "ISA-L's 0..3", True, tool="igzip",
          compress_argv=lambda lv, t: ["igzip", "-c", "-n", f"-{lv}", "-T", str(t)],
          decompress_argv=lambda t: ["igzip", "-dc"]),
    Codec("zstd-cli", "zstd (command)", "zstd", tuple(str(i) for i in (-5, -1, *range(1, 23))), ("3", "19"),
          "as the zstd library; 20..22 need --ultra", True, tool="zstd",
          compress_argv=lambda lv, t: ["zstd", "-c", "-q", *(["--ultra"] if int(lv) > 19 else []),
                                       f"--fast={-int(lv)}" if int(lv) < 0 else f"-{lv}", f"-T{t}"],
          decompress_argv=lambda t: ["zstd", "-dc", "-q"]),
    Codec("xz-cli", "xz (command)", "xz", (*_r(0, 9), *(f"{i}e" for i in range(10))), ("6",),
          "presets 0..9, e = extreme; -T splits the input into blocks", True, tool="xz",
          compress_argv=lambda lv, t: ["xz", "-c", f"-{lv}", f"-T{t}"],
          decompress_argv=lambda t: ["xz", "-dc", f"-T{t}"], decompress_threads=True),
    Codec("lz4-cli", "lz4 (command)", "lz4", ("1", *_r(3, 12)), ("1",), "1 fast; 3..12 HC", False, tool="lz4",
          compress_argv=lambda lv, t: ["lz4", "-c", "-q", f"-{lv}"], decompress_argv=lambda t: ["lz4", "-dc", "-q"]),
    Codec("bzip2-cli", "bzip2 (command)", "bzip2", _r(1, 9), ("9",), "block size 100..900 kB", False, tool="bzip2",
          compress_argv=lambda lv, t: ["bzip2", "-c", f"-{lv}"], decompress_argv=lambda t: ["bzip2", "-dc"]),
]}

ALIASES: dict[str, str] = {a: c.name for c in REGISTRY.values() for a in c.aliases}


def quick_set() -> list[tuple[Codec, tuple[str, ...]]]:
    """The default measurement: the rows of the registry marked `quick`, one or two levels each."""
    return [(c, c.quick) for c in REGISTRY.values() if c.quick]


def full_set() -> list[tuple[Codec, tuple[str, ...]]]:
    """`--full` and `all`: every codec at its default levels."""
    return [(c, c.default_levels) for c in REGISTRY.values()]


@lru_cache(maxsize=None)
def _version(name: str) -> str | None:  # noqa: C901 - one branch per library
    try:
        if name == "zlib":
            return zlib.ZLIB_RUNTIME_VERSION
        if name == "zlib-ng":
            from zlib_ng import zlib_ng
            return f"zlib-ng {zlib_ng.ZLIBNG_VERSION}"
        if name == "isal":
            import isal
            return f"python-isal {isal.__version__}"
        if name in ("libdeflate", "bgzf"):
            import deflate
            return f"deflate {deflate.__version__}"
        if name in ("zstd", "zstd-long"):
            import zstandard
            return f"libzstd {'.'.join(map(str, zstandard.ZSTD_VERSION))} (zstandard {zstandard.__version__})"
        if name == "lz4":
            import lz4
            return f"liblz4 {lz4.library_version_string()} (python-lz4 {lz4.__version__})"
        if name == "xz":
            import lzma  # noqa: F401  - liblzma's version is not exposed; the interpreter's is the build
            import platform
            return f"liblzma of Python {platform.python_version()}"
        if name == "bzip2":
            import platform
            return f"libbz2 of Python {platform.python_version()}"
    except ImportError:
        return None
    codec = REGISTRY.get(name)
    if codec is None or codec.tool is None or shutil.which(codec.tool) is None:
        return None
    for flag in ("--version", "-V", "-h"):
        try:
            p = subprocess.run([codec.tool, flag], capture_output=True, text=True, timeout=10, stdin=subprocess.DEVNULL)
        except (OSError, subprocess.TimeoutExpired):
            return None
        text = (p.stdout or p.stderr).strip()
        if text and (p.returncode == 0 or flag == "-h"):
            return text.splitlines()[0].strip()[:80]
    return None


def parse_codecs(specs: list[str] | tuple[str, ...] | None, *, full: bool = False
                 ) -> list[tuple[Codec, tuple[str, ...]]]:
    """`--codecs zstd:1/3/19,gz,all` -> (codec, levels); UsageError (one line) for an unknown codec or level.

    No specs: the quick set, or with `full` every codec.  `default` is the quick set, `all` every codec.
    """
    from iolens.errors import UsageError

    words = [w.strip() for s in (specs or ()) for w in s.split(",") if w.strip()] or ["all" if full else "default"]
    out: list[tuple[Codec, tuple[str, ...]]] = []
    for w in words:
        name, _, lv = w.partition(":")
        name = name.strip().lower()
        if name in ("all", "default"):
            out.extend(full_set() if name == "all" else quick_set())
            continue
        codec = REGISTRY.get(ALIASES.get(name, name))
        if codec is None:
            raise UsageError(f"unknown codec {name!r}; choose from {', '.join(REGISTRY)}, or all, default "
                             f"(also accepted: {', '.join(f'{a}={n}' for a, n in ALIASES.items())})")
        levels = tuple(x for x in lv.split("/") if x) if lv else codec.default_levels
        bad = [x for x in levels if x not in codec.levels]
        if bad:
            raise UsageError(f"{name} has no level {bad[0]!r}; its levels are {', '.join(codec.levels)}")
        out.append((codec, levels))
    seen: set[tuple[str, str]] = set()
    dedup = []
    for codec, levels in out:
        keep = tuple(lv for lv in levels if (codec.name, lv) not in seen)
        seen.update((codec.name, lv) for lv in keep)
        if keep:
            dedup.append((codec, keep))
    return dedup
