"""The first compress call of a library codec, with its peak memory, and the peak of one decompress call.

Run as `python -m iolens.compress.peak CODEC LEVEL THREADS INPUT OUTPUT`: a fresh interpreter loads the codec and
the input, then forks a child that compresses the input once (timed, wall and CPU) and writes the result to OUTPUT;
then it reads OUTPUT and forks a child that decompresses it once.  Each child resets the kernel's high-water mark
(writing 5 to /proc/self/clear_refs), makes one call, and reports how far VmHWM rose above VmRSS.  A fresh
process's allocator holds no freed memory that the call could reuse without touching new pages, and the fork
keeps one direction's freed buffers from hiding the other's.  C allocations (the libraries' own buffers and
windows) are counted, unlike with tracemalloc.

The caller takes the compress call as its first timed pass, so a slow codec is not run once more for its memory.

Prints one JSON line: {"compress": bytes|null, "decompress": bytes|null, "wall_s": s, "cpu_s": s, "why": ...}.
"""

from __future__ import annotations

import json
import os
import sys
import time
from typing import Any, Callable

from iolens.compress.codecs import REGISTRY
from iolens.compress.measure import peak_of


def _in_child(call: Callable[[], Any], out: str | None = None) -> dict[str, Any]:
    """Run call() in a forked child: its peak (None when the high-water mark cannot be reset), wall and CPU s."""
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child reports through the pipe
        os.close(r)
        try:
            c0, t0 = time.process_time(), time.perf_counter()
            got, peak = peak_of(call)
            wall, cpu = time.perf_counter() - t0, time.process_time() - c0
            if out is not None:
                with open(out, "wb") as f:
                    f.write(got)  # type: ignore[arg-type]  # the codec's bytes or bytearray
            os.write(w, json.dumps({"peak": peak, "wall_s": wall, "cpu_s": cpu}).encode())
        finally:
            os._exit(0)
    os.close(w)
    with os.fdopen(r) as f:
        text = f.read()
    os.waitpid(pid, 0)
    try:
        return dict(json.loads(text))
    except ValueError:
        return {"peak": None, "wall_s": None, "cpu_s": None, "error": "the measuring child failed"}


def main(argv: list[str]) -> dict[str, Any]:
    name, level, threads, src, out = argv
    codec = REGISTRY[name]
    assert codec.compress and codec.decompress
    t = int(threads)
    with open(src, "rb") as f:
        data = f.read()
    codec.decompress(bytes(codec.compress(data[:4096], level, t)), t)  # imports and one-time set-up, before the fork
    c = _in_child(lambda: codec.compress(data, level, t), out)  # type: ignore[misc]
    if c.get("error"):
        return {"compress": None, "decompress": None, "wall_s": None, "cpu_s": None, "why": c["error"]}
    with open(out, "rb") as f:
        packed = f.read()
    d = _in_child(lambda: codec.decompress(packed, t))  # type: ignore[misc]
    why = None
    if c["peak"] is None or d["peak"] is None:
        why = ("not measured: /proc/self/clear_refs is not available" if not os.path.exists("/proc/self/clear_refs")
               else "not measured: the kernel refused to reset the high-water mark")
    return {"compress": c["peak"], "decompress": d["peak"], "wall_s": c["wall_s"], "cpu_s": c["cpu_s"], "why": why}


if __name__ == "__main__":
    print(json.dumps(main(sys.argv[1:])))
