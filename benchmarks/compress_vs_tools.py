#!/usr/bin/env python3
"""iolens compress as a measurer, against each codec's own benchmark or command on the same input, in one run.

    python benchmarks/compress_vs_tools.py [--size 16M] [--min-time 1] [--rounds 3] [--input FILE] [--json F]
                                           [--zstd CMD] [--lz4 CMD]

Each pair times the same work on both sides, so the ratio (iolens / reference) measures the measurer:
- zstd -3, lz4 -1, in memory against `zstd -b3` / `lz4 -b1` (one thread, data in memory, best of loops):
  * "same library": iolens measures the system's libzstd / liblz4 (the version the commands are built from) through
    ctypes, with what the commands' benchmarks use: a reused context, preallocated output, lz4 in independent
    4 MiB blocks with no frame or checksum (benchmarks/syslib_codecs.py).  This is the measurer comparison.
  * "iolens codec": iolens's own registry codec (python-zstandard with its bundled libzstd; python-lz4's frame
    with a content checksum, as the `lz4` command writes).  Residuals are the library version or the format's
    extra work, not the measurer; the table says which.
- gzip -6, xz -6, pigz -6 -p N, igzip -1, bgzip -l 6 -@ N: iolens's process timing of the tool against hyperfine
  (`-N`, no shell, best run) on the same command and files in RAM: both include process start.  The fixed cost of
  each command (hyperfine on an empty input) is printed, and a "library vs command" row compares iolens's
  in-memory library codec for the same format with the command's throughput without that fixed cost (its output
  to /dev/null, its start and exit subtracted).  zstd and lz4 get the same "less start" row against their
  commands: a short-run reference beside the -b benchmarks ("context" rows: the command also checksums and reads
  a file, so these cannot match and are not measurer pairs).
- A distribution's `zstd`/`lz4` command carries its own, statically linked copy of the library, built with the
  packager's flags, so "same version" is not "same code" (the table says when); `--zstd`/`--lz4` take a command
  built from the library's own source instead (docs/compress.md).
Every figure on both sides is a best (minimum time): each side repeats until stable within a round (iolens: the
lzbench rule of docs/compress.md; zstd/lz4: -i seconds; hyperfine: --min-runs and its 3 s), and the whole pair is
repeated --rounds times alternating the sides, each side keeping its best.  MB = 10^6 bytes.  Target: 0.90..1.10
on the measurer rows, and the same compressed size (ratio 1.000).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import syslib_codecs  # noqa: E402
from iolens.bench.suites import parse_size  # noqa: E402
from iolens.compress import codecs as C  # noqa: E402
from iolens.compress.measure import ram_dir  # noqa: E402
from iolens.compress.run import _host, measure  # noqa: E402
from iolens.synth import fastq_text  # noqa: E402

BENCH_LINE = re.compile(r"(\d+)\s*\(x?([\d.]+)\),?\s*([\d.]+)\s*MB/s\s*,?\s*([\d.]+)\s*MB/s")
KEYS = ("compress_MBps", "decompress_MBps", "ratio")


def own_bench(argv: list[str]) -> dict:
    """`zstd -b` / `lz4 -b`: the final result line; MB = 10^6 bytes in both tools."""
    p = subprocess.run(argv, capture_output=True, text=True, check=True)
    m = BENCH_LINE.findall((p.stdout + p.stderr).replace("\r", "\n"))
    if not m:
        raise SystemExit(f"cannot parse {' '.join(argv)}: {(p.stdout + p.stderr)[-300:]}")
    _size, ratio, c, d = m[-1]
    return {"ratio": float(ratio), "compress_MBps": float(c), "decompress_MBps": float(d)}


def hyperfine_min(argv: list[str], out: str, tmp: str) -> float:
    """Best wall seconds of `argv > out` under hyperfine (no shell, one warm-up, at least 5 runs and 3 s)."""
    j = os.path.join(tmp, "hf.json")
    cmd = " ".join(argv)
    subprocess.run(["hyperfine", "-N", "--warmup", "1", "--min-runs", "5", "--output", out, "--export-json", j, cmd],
                   capture_output=True, text=True, check=True)
    return float(json.loads(Path(j).read_text())["results"][0]["min"])


def figures(r: dict) -> dict:
    assert r["verified"], r
    return {"compress_MBps": r["compress_Bps"] / 1e6, "decompress_MBps": r["decompress_Bps"] / 1e6,
            "ratio": r["ratio"]}


def row(name: str, kind: str, ours: dict, ref: dict, how: str, note: str = "") -> dict:
    out = {"pair": name, "kind": kind, "reference": how, "note": note}
    for k in KEYS:
        out[f"iolens_{k}"], out[f"ref_{k}"] = ours.get(k), ref.get(k)
        out[f"{k}_iolens_over_ref"] = ours[k] / ref[k] if ours.get(k) and ref.get(k) else None
    return out


def cli_version(tool: str) -> str:
    for flag in ("--version", "-V", "-h"):
        p = subprocess.run([tool, flag], capture_output=True, text=True, stdin=subprocess.DEVNULL)
        text = (p.stdout or p.stderr).strip()
        if text:
            return text.splitlines()[0].strip()[:70]
    return "?"


def version_number(text: str | None) -> str | None:
    m = re.search(r"v?(\d+\.\d+\.\d+)", text or "")
    return m.group(1) if m else None


class Bench:
    def __init__(self, a: argparse.Namespace, src: str, tmp: str):
        self.a, self.src, self.tmp = a, src, tmp
        self.n = os.path.getsize(src)
        self.rows: list[dict] = []

    def best(self, *fns) -> list[dict]:
        """Each measuring function --rounds times, alternating; per function its best figures."""
        out: list[dict] = [{} for _ in fns]
        for _ in range(self.a.rounds):
            for i, fn in enumerate(fns):
                for k, v in fn().items():
                    out[i][k] = v if k == "ratio" else max(out[i].get(k, 0.0), v)
        return out

    def lib(self, codec: C.Codec, level: str, threads: int = 1) -> dict:
        doc = measure([self.src], codecs=[(codec, (level,))], threads=[threads], sample=None,
                      min_time=self.a.min_time)
        return figures(doc["inputs"][0]["rows"][0])

    def command(self, codec: C.Codec, level: str, threads: int):
        """A function timing the command both ways under hyperfine (its figures), and the fixed costs it found:
        process start and exit on an empty input ("c"/"d"), the best runs to a file ("ct"/"dt") and to /dev/null
        ("cn"/"dn"), in seconds."""
        cargv = codec.compress_argv(level, threads)  # type: ignore[misc]
        dargv = codec.decompress_argv(threads)  # type: ignore[misc]
        z, back, empty, ez = (os.path.join(self.tmp, x) for x in ("z", "back", "empty", "empty.z"))
        Path(empty).write_bytes(b"")
        with open(ez, "wb") as fo:
            subprocess.run([*cargv, empty], stdout=fo, check=True)
        fixed: dict[str, float] = {}

        def keep(k: str, v: float) -> float:
            fixed[k] = min(fixed.get(k, v), v)
            return v

        def plain() -> dict:
            ct = keep("ct", hyperfine_min([*cargv, self.src], z, self.tmp))
            dt = keep("dt", hyperfine_min([*dargv, z], back, self.tmp))
            keep("cn", hyperfine_min([*cargv, self.src], os.devnull, self.tmp))
            keep("dn", hyperfine_min([*dargv, z], os.devnull, self.tmp))
            keep("c", hyperfine_min([*cargv, empty], os.devnull, self.tmp))
            keep("d", hyperfine_min([*dargv, ez], os.devnull, self.tmp))
            return {"compress_MBps": self.n / ct / 1e6, "decompress_MBps": self.n / dt / 1e6,
                    "ratio": self.n / os.path.getsize(z)}
        return plain, fixed

    def net(self, fixed: dict[str, float], ratio: float) -> dict:
        """The command's throughput without its fixed cost (start and exit) or writing its output (to /dev/null);
        its input is still read from a file in RAM."""
        return {"compress_MBps": self.n / max(fixed["cn"] - fixed["c"], 1e-9) / 1e6,
                "decompress_MBps": self.n / max(fixed["dn"] - fixed["d"], 1e-9) / 1e6, "ratio": ratio}

    @staticmethod
    def start_note(fixed: dict[str, float]) -> str:
        return f"start+exit {fixed['c'] * 1e3:.1f}/{fixed['d'] * 1e3:.1f} ms"

    def in_memory(self, label: str, syslib: C.Codec | None, ours: C.Codec, cli: C.Codec, level: str,
                  argv: list[str], notes: tuple[str, str, str, str]) -> None:
        """Library figures against the library's own -b benchmark, and against its command less its start."""
        plain, fixed = self.command(cli, level, 1)
        fns = [lambda: own_bench(argv), plain, lambda: self.lib(ours, level)]
        if syslib is not None:
            fns.append(lambda: self.lib(syslib, level))
        got = self.best(*fns)
        how = " ".join([os.path.basename(argv[0])]
                       + [a for a in argv[1:] if a != self.src and not a.startswith("-i") and a != "-q"])
        cmd = " ".join(cli.compress_argv(level, 1))  # type: ignore[misc]
        if syslib is not None:
            self.rows.append(row(f"{label} same library", "measurer", got[3], got[0], how,
                                 f"{syslib.library}{notes[3]}"))
            # context, not a measurer pair: the command also checksums and reads a file, so it cannot match
            self.rows.append(row(f"{label} same library", "context", got[3], self.net(fixed, got[1]["ratio"]),
                                 f"{cmd} less start", f"{self.start_note(fixed)}; {notes[1]}"))
        self.rows.append(row(f"{label} iolens codec", "library", got[2], got[0], how, notes[0]))
        self.rows.append(row(f"{label} iolens codec", "library", got[2], self.net(fixed, got[1]["ratio"]),
                             f"{cmd} less start", notes[2]))

    def tool(self, label: str, codec_name: str, level: str, threads: int, libname: str, lib_level: str) -> None:
        codec = C.REGISTRY[codec_name]
        if codec.available():
            print(f"skip {label}: {codec.available()}", file=sys.stderr)
            return
        plain, fixed = self.command(codec, level, threads)
        ours, ref = self.best(lambda: self.lib(codec, level, threads), plain)
        self.rows.append(row(label, "measurer", ours, ref, "hyperfine -N", self.start_note(fixed)))
        lc = C.REGISTRY[libname]
        libr = self.lib(lc, lib_level, threads if lc.threads else 1)
        self.rows.append(row(f"  {libname}:{lib_level} vs {label}", "library", libr, self.net(fixed, ref["ratio"]),
                             "command less start", lc.version() or lc.library))


def own_copy(tool: str) -> str:
    """A note when the command carries its own copy of its library (statically linked): then the same version
    is not the same code, since the packager built the command's copy with its own flags."""
    path = shutil.which(tool)
    if path is None or shutil.which("ldd") is None:
        return ""
    lib = {"zstd": "libzstd.so", "lz4": "liblz4.so"}.get(os.path.basename(tool), "")
    p = subprocess.run(["ldd", path], capture_output=True, text=True)
    if not lib or p.returncode != 0 or lib in p.stdout:
        return ""
    return (f"; {tool} links its own copy of the library (not {lib}): same version, not the same build "
            "(docs/compress.md: pass --zstd/--lz4 a command built from the library's source)")


def versions(tools: list[str]) -> dict[str, str | None]:
    import lz4
    import zstandard
    v: dict[str, str | None] = {
        "libzstd in python-zstandard": ".".join(map(str, zstandard.ZSTD_VERSION)),
        "libzstd (system shared library)": syslib_codecs.zstd_version(),
        "liblz4 in python-lz4": lz4.library_version_string(),
        "liblz4 (system shared library)": syslib_codecs.lz4_version(),
    }
    for t in ["hyperfine", *tools]:
        v[f"{t} command"] = cli_version(t) if shutil.which(t) else None
    return v


def print_table(rows: list[dict]) -> None:
    print(f"{'pair':34} {'kind':8} {'reference':22} {'comp MB/s i/r':>16} {'x':>5} {'decomp MB/s i/r':>16} "
          f"{'x':>5} {'size ratio i/r':>14} {'x':>6}  note")
    for r in rows:
        def f(k: str) -> str:
            return f"{r['iolens_' + k]:.1f}/{r['ref_' + k]:.1f}"

        def x(k: str, d: int = 2) -> str:
            v = r[f"{k}_iolens_over_ref"]
            return "-" if v is None else f"{v:.{d}f}"
        print(f"{r['pair']:34} {r['kind']:8} {r['reference']:22} {f('compress_MBps'):>16} {x('compress_MBps'):>5} "
              f"{f('decompress_MBps'):>16} {x('decompress_MBps'):>5} "
              f"{r['iolens_ratio']:.3f}/{r['ref_ratio']:.3f} {x('ratio', 3):>6}  {r['note']}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--size", default="16M")
    ap.add_argument("--min-time", type=float, default=1.0)
    ap.add_argument("--threads", type=int, default=os.cpu_count() or 1)
    ap.add_argument("--input", default=None)
    ap.add_argument("--json", default=None)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--skip-tools", action="store_true", help="only the in-memory pairs (zstd, lz4)")
    ap.add_argument("--zstd", default="zstd", help="the zstd command whose -b is the reference (default: on PATH)")
    ap.add_argument("--lz4", default="lz4", help="the lz4 command whose -b is the reference (default: on PATH)")
    a = ap.parse_args()
    if shutil.which("hyperfine") is None:
        raise SystemExit("hyperfine is not installed (Debian package hyperfine): it times the commands")
    tmp = tempfile.TemporaryDirectory(prefix="iolens-cvt-", dir=ram_dir())
    src = a.input or os.path.join(tmp.name, "reads.fq")
    if not a.input:
        # a reference 3x the input: low coverage, so reads rarely repeat each other (as in a real run's files)
        Path(src).write_bytes(fastq_text(parse_size(a.size), seed=11, ref_bases=3 * parse_size(a.size)))
    load0, t0 = os.getloadavg(), time.time()
    b = Bench(a, src, tmp.name)
    secs = max(1, round(a.min_time * 3))
    for t in (a.zstd, a.lz4):
        if shutil.which(t) is None:
            raise SystemExit(f"{t}: no such command (give --zstd/--lz4 an executable, or install zstd and lz4)")
    ver = versions([a.zstd, a.lz4, "gzip", "xz", "pigz", "igzip", "bgzip"])
    zmatch = version_number(ver["libzstd in python-zstandard"]) == version_number(ver[f"{a.zstd} command"])
    b.in_memory("zstd -3", syslib_codecs.zstd_codec(), C.REGISTRY["zstd"], C.REGISTRY["zstd-cli"], "3",
                [a.zstd, "-q", "-b3", f"-i{secs}", src],
                ("same libzstd version as the command" if zmatch else
                 f"libzstd {ver['libzstd in python-zstandard']} (python-zstandard) vs the command's "
                 f"{version_number(ver[f'{a.zstd} command'])}: versions differ",
                 "the command adds an xxh64 checksum and reads a file",
                 "the command adds an xxh64 checksum" + ("" if zmatch else "; versions differ"), own_copy(a.zstd)))
    b.in_memory("lz4 -1", syslib_codecs.lz4_codec(), C.REGISTRY["lz4"], C.REGISTRY["lz4-cli"], "1",
                [a.lz4, "-b1", f"-i{secs}", src],
                ("lz4 frame: xxh32 content checksum computed when writing and verified when reading "
                 "(`lz4 -b` times bare blocks)", "the command adds the frame's xxh32 checksum and reads a file",
                 "same frame and checksum, same liblz4 version", own_copy(a.lz4)))
    t = a.threads
    if not a.skip_tools:
        for label, name, level, threads, libname, lib_level in [
                ("gzip -6", "gzip-cli", "6", 1, "zlib", "6"), ("xz -6", "xz-cli", "6", 1, "xz", "6"),
                (f"pigz -6 -p{t}", "pigz", "6", t, "zlib", "6"), ("igzip -1", "igzip", "1", 1, "isal", "1"),
                (f"bgzip -l6 -@{t}", "bgzip", "6", t, "bgzf", "6")]:
            b.tool(label, name, level, threads, libname, lib_level)
    host = _host()
    load1 = os.getloadavg()
    print(f"input: {'synthetic FASTQ' if not a.input else src} ({b.n:,} bytes); MB = 10^6 bytes; "
          "x = iolens / reference")
    print(f"CPU: {host['cpu_model']} x{host['cpus']}; Python {host['python']} ({host['build']}); "
          f"load average {load0[0]:.2f} at start, {load1[0]:.2f} at end; {time.time() - t0:.0f} s")
    for k, v in ver.items():
        print(f"  {k}: {v or 'not found'}")
    print_table(b.rows)
    meas = [r for r in b.rows if r["kind"] == "measurer"]
    spd = [r[f"{k}_iolens_over_ref"] for r in meas for k in KEYS[:2] if r[f"{k}_iolens_over_ref"]]
    same = all(abs((r["ratio_iolens_over_ref"] or 1) - 1) <= 0.005 for r in meas)
    print(f"measurer rows: speed ratios {min(spd):.2f}..{max(spd):.2f}; within 10% on every one: "
          f"{'yes' if all(0.9 <= s <= 1.1 for s in spd) else 'no'}; iolens never the slower (>= 0.90): "
          f"{'yes' if min(spd) >= 0.9 else 'no'}; same compressed size (0.5%): {'yes' if same else 'no'}")
    if load0[0] > (os.cpu_count() or 1) * 0.5:  # at the start: by the end the two-thread commands count too
        print(f"note: the load average ({load0[0]:.1f} on {os.cpu_count()} CPUs) means other work shared the CPUs: "
              "speed ratios are noise-bound (zstd -b and lz4 -b time windows of about a second, which average in the "
              "other work; iolens's passes are 10 ms or more and keep the best, so under load iolens reads higher); "
              "rerun on a quiet machine")
    if a.json:
        Path(a.json).write_text(json.dumps({"input_bytes": b.n, "host": host, "versions": ver,
                                            "load_average": [load0, load1], "rows": b.rows}, indent=2))


if __name__ == "__main__":
    main()
