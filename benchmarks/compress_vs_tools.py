#!/usr/bin/env python3
"""iolens compress as a measurer, against each codec's own benchmark or command on the same input, in one run.

    python benchmarks/compress_vs_tools.py [--size 16M] [--min-time 1] [--input FILE] [--json out.json]

The machine's other load moves every figure, so each pair is measured --rounds times alternating iolens and the
reference, and each side keeps its best figure (as both tools already do within a round).

Input: a synthetic FASTQ (binned qualities, low coverage) of --size bytes in a RAM-backed directory, or --input.  Pairs:
- zstd -3 and lz4 -1: iolens's library figures (zstandard, python-lz4) vs the library's own `zstd -b3` / `lz4 -b1`
  (in memory, one thread, best of its loops): compress and decompress MB/s and the ratio;
- gzip -6, xz -6, pigz -6 -p N, igzip -1, bgzip -l 6 -@ N: iolens's process timing of the tool (its `*-cli`/tool
  codec) vs a plain timing of the same command (best of runs for at least --min-time, stdin from and stdout to
  files in RAM); and, beside it, iolens's library codec for the same format (zlib, xz, isal, bgzf over libdeflate).
Ratios are iolens / reference: 1.00 means the same figure; the target is within 10% (0.90..1.10), and iolens
should not be the slower measurer (a ratio below 0.90 means iolens under-reports speed).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from iolens.bench.suites import parse_size  # noqa: E402
from iolens.compress import codecs as C  # noqa: E402
from iolens.compress.measure import ram_dir, run_tool  # noqa: E402
from iolens.compress.run import measure  # noqa: E402
from iolens.synth import fastq_text  # noqa: E402

BENCH_LINE = re.compile(r"(\d+)\s*\(x?([\d.]+)\),?\s*([\d.]+)\s*MB/s\s*,?\s*([\d.]+)\s*MB/s")


def own_bench(argv: list[str]) -> dict:
    """`zstd -b` / `lz4 -b`: the last (final) result line; MB = 10^6 bytes in both tools."""
    p = subprocess.run(argv, capture_output=True, text=True, check=True)
    text = (p.stdout + p.stderr).replace("\r", "\n")
    m = BENCH_LINE.findall(text)
    if not m:
        raise SystemExit(f"cannot parse {' '.join(argv)}: {text[-300:]}")
    size, ratio, c, d = m[-1]
    return {"ratio": float(ratio), "compress_MBps": float(c), "decompress_MBps": float(d)}


def plain_time(argv: list[str], src: str, dst: str, min_time: float) -> float:
    best, start = float("inf"), time.perf_counter()
    n = 0
    while n < 3 or time.perf_counter() - start < min_time:
        r = run_tool(argv, src, dst)
        assert r.status == 0, r.stderr
        best = min(best, r.wall_s)
        n += 1
    return best


def row(name: str, ours: dict, ref: dict, how: str) -> dict:
    out = {"pair": name, "reference": how}
    for k in ("compress_MBps", "decompress_MBps", "ratio"):
        out[f"iolens_{k}"] = ours.get(k)
        out[f"ref_{k}"] = ref.get(k)
        out[f"{k}_iolens_over_ref"] = ours[k] / ref[k] if ours.get(k) and ref.get(k) else None
    return out


def figures(r: dict) -> dict:
    return {"compress_MBps": r["compress_Bps"] / 1e6, "decompress_MBps": r["decompress_Bps"] / 1e6,
            "ratio": r["ratio"]}


def main() -> None:  # noqa: C901, PLR0915 - one linear script
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--size", default="16M")
    ap.add_argument("--min-time", type=float, default=1.0)
    ap.add_argument("--threads", type=int, default=os.cpu_count() or 1)
    ap.add_argument("--input", default=None)
    ap.add_argument("--json", default=None)
    ap.add_argument("--rounds", type=int, default=3)
    a = ap.parse_args()
    tmp = tempfile.TemporaryDirectory(prefix="iolens-cvt-", dir=ram_dir())
    src = a.input or os.path.join(tmp.name, "reads.fq")
    if not a.input:
        # a reference 3x the input: low coverage, so reads rarely repeat each other (as in a real run's files)
        Path(src).write_bytes(fastq_text(parse_size(a.size), seed=11, ref_bases=3 * parse_size(a.size)))
    data = Path(src).read_bytes()
    n = len(data)
    t = a.threads
    secs = max(1, round(a.min_time * 3))
    rows = []

    def best(*fns):
        """Run each measuring function --rounds times, alternating; per function the best figures."""
        out: list[dict] = [{} for _ in fns]
        for _ in range(a.rounds):
            for i, fn in enumerate(fns):
                r = fn()
                for k, v in r.items():
                    if k == "ratio":
                        out[i][k] = v
                    else:
                        out[i][k] = max(out[i].get(k, 0.0), v)
        return out

    def lib(name: str, level: str, threads: int = 1) -> dict:
        doc = measure([src], codecs=[(C.REGISTRY[name], (level,))], threads=[threads], sample=None,
                      min_time=a.min_time)
        r = doc["inputs"][0]["rows"][0]
        assert r["verified"], r
        return figures(r)

    ours, ref = best(lambda: lib("zstd", "3"), lambda: own_bench(["zstd", "-q", "-b3", f"-i{secs}", src]))
    rows.append(row("zstd -3", ours, ref, "zstd -b3"))
    ours, ref = best(lambda: lib("lz4", "1"), lambda: own_bench(["lz4", "-b1", f"-i{secs}", src]))
    rows.append(row("lz4 -1", ours, ref, "lz4 -b1"))
    tools = [("gzip -6", "gzip-cli", "6", 1, "zlib"), ("xz -6", "xz-cli", "6", 1, "xz"),
             (f"pigz -6 -p{t}", "pigz", "6", t, "zlib"), ("igzip -1", "igzip", "1", 1, "isal"),
             (f"bgzip -l6 -@{t}", "bgzip", "6", t, "bgzf")]
    for label, codec_name, level, threads, libname in tools:
        codec = C.REGISTRY[codec_name]
        if codec.available():
            print(f"skip {label}: {codec.available()}", file=sys.stderr)
            continue
        cargv = codec.compress_argv(level, threads)  # type: ignore[misc]
        dargv = codec.decompress_argv(threads)  # type: ignore[misc]
        z, back = os.path.join(tmp.name, "z"), os.path.join(tmp.name, "back")

        def plain(cargv=cargv, dargv=dargv, z=z, back=back) -> dict:
            ct = plain_time(cargv, src, z, a.min_time)
            dt = plain_time(dargv, z, back, a.min_time)
            return {"compress_MBps": n / ct / 1e6, "decompress_MBps": n / dt / 1e6, "ratio": n / os.path.getsize(z)}

        ours, ref = best(lambda c=codec_name, lv=level, t=threads: lib(c, lv, t), plain)
        rows.append(row(label, ours, ref, "plain process timing"))
        libr = lib(libname, level if libname != "isal" else "1", threads if C.REGISTRY[libname].threads else 1)
        rows.append(row(f"  {libname}:{level} library vs {label}", libr, ref, "library vs command"))
    print(f"input: {src} ({n:,} bytes); MB = 10^6 bytes; ratio columns are iolens / reference")
    print(f"{'pair':36} {'reference':22} {'comp MB/s i/r':>18} {'x':>6} {'decomp MB/s i/r':>18} {'x':>6} "
          f"{'ratio i/r':>14} {'x':>7}")
    for r in rows:
        def f(k: str) -> str:
            return f"{r['iolens_' + k]:.1f}/{r['ref_' + k]:.1f}"

        def x(k: str, d: int = 2) -> str:
            v = r[f"{k}_iolens_over_ref"]
            return "-" if v is None else f"{v:.{d}f}"
        print(f"{r['pair']:36} {r['reference']:22} {f('compress_MBps'):>18} {x('compress_MBps'):>6} "
              f"{f('decompress_MBps'):>18} {x('decompress_MBps'):>6} "
              f"{r['iolens_ratio']:.3f}/{r['ref_ratio']:.3f} {x('ratio', 3):>7}")
    measurer = [r for r in rows if r["reference"] != "library vs command"]
    ok = all(0.9 <= (r[f"{k}_iolens_over_ref"] or 1) <= 1.1 for r in measurer for k in ("compress_MBps",
                                                                                        "decompress_MBps"))
    print(f"measurer within 10% on every pair: {'yes' if ok else 'no'}")
    if a.json:
        Path(a.json).write_text(json.dumps({"input_bytes": n, "rows": rows}, indent=2))


if __name__ == "__main__":
    main()
