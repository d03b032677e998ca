#!/usr/bin/env bash
# Build zstd's own command (and so its `-b` benchmark) linked against the system's shared libzstd, the very library
# benchmarks/compress_vs_tools.py times through iolens's measurer, so that `--zstd` compares two measurers of one
# build of the code.  A distribution's `zstd` carries its own, statically linked copy, built with the packager's flags.
#
#   benchmarks/zstd_reference.sh ZSTD_SOURCE_DIR [OUT]     # a checkout of zstd at the shared library's version
#   python benchmarks/compress_vs_tools.py --zstd OUT
#
# The tag must match `ZSTD_versionString()` of the shared library (compress_vs_tools.py prints it); needs make, a C
# compiler and libzstd-dev.  The command's own helpers that the shared library does not export (thread pool,
# error strings, allocation) are compiled in from the same tree; the codec comes from the shared library.
set -euo pipefail
src=${1:?usage: $0 ZSTD_SOURCE_DIR [OUT]}
out=${2:-zstd-shared}
[ -f "$src/programs/Makefile" ] || { echo "$src: not a zstd source tree (no programs/Makefile)" >&2; exit 2; }
want=$(python3 -c 'import ctypes,ctypes.util; l=ctypes.CDLL(ctypes.util.find_library("zstd")); l.ZSTD_versionString.restype=ctypes.c_char_p; print(l.ZSTD_versionString().decode())')
have=$(sed -n 's/^#define ZSTD_VERSION_\(MAJOR\|MINOR\|RELEASE\) *\([0-9]*\).*/\2/p' "$src/lib/zstd.h" | paste -sd.)
[ "$want" = "$have" ] || { echo "the shared libzstd is $want but $src is $have: check out v$want" >&2; exit 2; }
make -C "$src/programs" clean >/dev/null
make -C "$src/programs" -j"$(nproc)" zstd-dll \
  'ZSTDLIB_LOCAL_SRC=xxhash.c pool.c threading.c zstd_common.c error_private.c' >/dev/null
ldd "$src/programs/zstd" | grep -q 'libzstd\.so' || { echo "the build did not link the shared libzstd" >&2; exit 1; }
cp "$src/programs/zstd" "$out"
echo "$out: zstd $have, linked against $(ldd "$out" | awk '/libzstd/ {print $3}')"
