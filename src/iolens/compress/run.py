"""Measure codecs on the user's files: compute the whole result as plain data; the renderers only render it.

`measure(files, ...)` returns a dict (the JSON document, see docs/compress.md): per input its content, the bytes
measured and one row per codec x level x threads; per `--on` target the storage-effective read/write time of
every row; and the recommendations.
"""

from __future__ import annotations

import os
import platform
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Callable

from iolens.compress import codecs as C
from iolens.compress.detect import ALIGNMENTS, HTSLIB_READS, INDEX, Content, detect
from iolens.compress.measure import (
    MIN_TIME,
    Timing,
    ToolFailed,
    library_first,
    max_time_for,
    run_tool,
    staging,
    time_call,
    time_tool,
    tool_peak,
)
from iolens.compress.sample import Sample, read_sample
from iolens.compress.storage import GB, StorageTarget, effective
from iolens.errors import UsageError

TAG = "iolens-compress"
SCHEMA_VERSION = (1, 1)  # 1.1: peak_note, spreads null under 3 passes, settings.mode, the "indexable" goal
WORTHLESS = 1.05  # a best ratio below this on compressed input: recompressing buys nothing
READS_PER_INTERMEDIATE = 1.5  # an intermediate is written once and read once or twice


@dataclass
class Row:
    input: str
    codec: str
    library: str
    kind: str
    format: str
    level: str
    threads: int
    bytes: int
    compressed_bytes: int | None = None
    ratio: float | None = None
    compress_Bps: float | None = None
    compress_spread_pct: float | None = None
    compress_passes: int | None = None
    decompress_Bps: float | None = None
    decompress_spread_pct: float | None = None
    decompress_passes: int | None = None
    compress_cpu_s_per_GB: float | None = None
    decompress_cpu_s_per_GB: float | None = None
    compress_peak_bytes: int | None = None
    decompress_peak_bytes: int | None = None
    peak_note: str | None = None      # why the peaks are null
    verified: bool = False
    error: str | None = None

    @property
    def label(self) -> str:
        return f"{self.codec}:{self.level}" + (f" x{self.threads}" if self.threads > 1 else "")

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["label"] = self.label
        return d


def check_file(path: str) -> None:
    """One clear line for an input that cannot be measured."""
    p = Path(path)
    try:
        st = p.stat()
    except FileNotFoundError:
        raise UsageError(f"{path}: no such file") from None
    except OSError as err:
        raise UsageError(f"{path}: {err.strerror}") from None
    if p.is_dir():
        raise UsageError(f"{path} is a directory; give the files in it")
    if not p.is_file():
        raise UsageError(f"{path} is not a regular file")
    if not os.access(path, os.R_OK):
        raise UsageError(f"{path}: permission denied (not readable by this user)")
    if st.st_size == 0:
        raise UsageError(f"{path} is empty: there is nothing to compress")


def _per_GB(cpu_s: float, nbytes: int) -> float | None:
    return cpu_s * GB / nbytes if nbytes else None


def _timed(fn: Callable[[], Any]) -> tuple[Any, float, float]:
    c, t = time.process_time(), time.perf_counter()
    out = fn()
    return out, time.perf_counter() - t, time.process_time() - c


def _library_row(row: Row, codec: C.Codec, src: str, data: bytes, tmp: str, min_time: float,
                 max_time: float) -> None:
    """The first compress call runs in a fresh interpreter that measures its peak memory (and the decompressor's);
    it and the verifying decompress call are the first timed passes, so a slow codec is called once each way."""
    assert codec.compress and codec.decompress
    lv, t = row.level, row.threads
    z = os.path.join(tmp, "out.z")
    if C.REGISTRY.get(codec.name) is codec:
        first = library_first(codec.name, lv, t, src, z)
        with open(z, "rb") as fh:
            comp = fh.read()
    else:  # a codec made elsewhere (benchmarks/syslib_codecs.py): a fresh interpreter could not load it
        comp, c_wall, c_cpu = _timed(lambda: codec.compress(data, lv, t))  # type: ignore[misc]
        first = {"wall_s": c_wall, "cpu_s": c_cpu, "compress": None, "decompress": None,
                 "why": "not measured: not a registry codec, so a fresh interpreter cannot load it"}
    back, d_wall, d_cpu = _timed(lambda: codec.decompress(comp, t))  # type: ignore[misc]
    row.compressed_bytes = len(comp)
    row.verified = back == data
    if not row.verified:
        row.error = "round trip differs from the input"
        return
    del back
    ct = time_call(lambda: codec.compress(data, lv, t), min_time=min_time, max_time=max_time,  # type: ignore[misc]
                   first=first["wall_s"], first_cpu=first["cpu_s"])
    dt = time_call(lambda: codec.decompress(comp, t), min_time=min_time, max_time=max_time,  # type: ignore[misc]
                   first=d_wall, first_cpu=d_cpu)
    _fill(row, ct, dt)
    row.compress_peak_bytes, row.decompress_peak_bytes, row.peak_note = first["compress"], first["decompress"], \
        first["why"]


def _tool_row(row: Row, codec: C.Codec, src: str, data: bytes, tmp: str, min_time: float, max_time: float) -> None:
    assert codec.compress_argv and codec.decompress_argv
    cargv, dargv = codec.compress_argv(row.level, row.threads), codec.decompress_argv(row.threads)
    z, back = os.path.join(tmp, "out.z"), os.path.join(tmp, "back")
    r = run_tool(cargv, src, z)
    if r.status != 0:
        row.error = f"{' '.join(cargv)} exited {r.status}: {(r.stderr.splitlines() or [''])[-1]}"
        return
    r = run_tool(dargv, z, back)
    row.compressed_bytes = os.path.getsize(z)
    with open(back, "rb") as f:
        row.verified = r.status == 0 and f.read() == data
    if not row.verified:
        row.error = f"{' '.join(dargv)}: round trip differs from the input"
        return
    try:
        ct = time_tool(cargv, src, z, min_time=min_time, max_time=max_time)
        dt = time_tool(dargv, z, back, min_time=min_time, max_time=max_time)
    except ToolFailed as err:
        row.error = str(err)
        return
    _fill(row, ct, dt)
    row.compress_peak_bytes, why_c = tool_peak(cargv, src, z, tmp)
    row.decompress_peak_bytes, why_d = tool_peak(dargv, z, back, tmp)
    row.peak_note = why_c or why_d


def _fill(row: Row, ct: Timing, dt: Timing) -> None:
    n = row.bytes
    row.ratio = n / row.compressed_bytes if row.compressed_bytes else None
    row.compress_Bps, row.decompress_Bps = n / ct.best_s, n / dt.best_s
    row.compress_spread_pct, row.decompress_spread_pct = ct.spread_pct, dt.spread_pct
    row.compress_passes, row.decompress_passes = ct.passes, dt.passes  # spreads are None under 3 passes
    row.compress_cpu_s_per_GB, row.decompress_cpu_s_per_GB = _per_GB(ct.cpu_s, n), _per_GB(dt.cpu_s, n)


def plan_rows(codecs: list[tuple[C.Codec, tuple[str, ...]]], threads: list[int]) -> list[tuple[C.Codec, str, int]]:
    out = []
    for codec, levels in codecs:
        for lv in levels:
            for t in threads:
                if t == 1 or codec.threads:
                    out.append((codec, lv, t))
    return out


def cpu_model() -> str | None:
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or None


def measure(files: list[str], *, codecs: list[tuple[C.Codec, tuple[str, ...]]], threads: list[int],
            sample: int | None, min_time: float = MIN_TIME, targets: list[StorageTarget] | None = None,
            progress: Callable[[str, int, int], None] | None = None, mode: str = "custom") -> dict[str, Any]:
    """`mode` names how the settings were chosen (quick: the default; full: --full; custom: options given)."""
    max_time = max_time_for(min_time)
    for f in files:
        check_file(f)
    usable, skipped = [], []
    for codec, levels in codecs:
        why = codec.available()
        (skipped.append({"codec": codec.name, "why": why}) if why else usable.append((codec, levels)))
    rows_plan = plan_rows(usable, threads)
    total, done = len(rows_plan) * len(files), 0
    inputs = []
    for f in files:
        try:
            s = read_sample(f, sample)
        except OSError as err:
            raise UsageError(f"{f}: cannot read it: {err.strerror}") from None
        content = detect(s.data[: 1 << 20])
        rows: list[Row] = []
        with staging() as stage:
            tmp = str(stage)
            src = os.path.join(tmp, "input")
            with open(src, "wb") as fh:
                fh.write(s.data)
            for codec, lv, t in rows_plan:
                if progress:
                    progress(f"{Path(f).name}: {codec.name}:{lv}" + (f" x{t}" if t > 1 else ""), done, total)
                row = Row(f, codec.name, codec.library, codec.kind, codec.fmt, lv, t, len(s.data))
                try:
                    if codec.kind == "tool":
                        _tool_row(row, codec, src, s.data, tmp, min_time, max_time)
                    else:
                        _library_row(row, codec, src, s.data, tmp, min_time, max_time)
                except Exception as err:  # noqa: BLE001 - a codec that refuses this input is one failed row
                    row.error = f"{type(err).__name__}: {err}"
                rows.append(row)
                done += 1
        inputs.append(_input_dict(f, s, content, rows))
    if progress:
        progress("done", total, total)
    doc = {
        "tag": TAG, "schema_version": list(SCHEMA_VERSION), "created": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "host": _host(), "libraries": {c.name: c.version() for c, _ in usable},
        "settings": {"mode": mode, "codecs": [f"{c.name}:{'/'.join(lv)}" for c, lv in usable], "threads": threads,
                     "sample_bytes": sample, "min_time_s": min_time, "max_time_s": max_time,
                     "pairs": len(rows_plan)},
        "skipped_codecs": skipped, "inputs": inputs,
        "targets": [t.to_dict() for t in targets or []],
        "storage": storage_table(inputs, targets or []),
        "store": None,
    }
    doc["recommendations"] = recommend(doc)
    return doc


def _host() -> dict[str, Any]:
    from iolens import __version__
    from iolens.sysinfo import host_facts
    return {**host_facts(), "cpu_model": cpu_model(), "cpus": os.cpu_count(), "iolens_version": __version__,
            "python": platform.python_version(), "build": platform.python_compiler()}


def _input_dict(path: str, s: Sample, content: Content, rows: list[Row]) -> dict[str, Any]:
    good = [r for r in rows if r.ratio]
    best = max((r.ratio for r in good if r.ratio is not None), default=None)
    note = None
    if content.compressed:
        if best is not None and best < WORTHLESS:
            note = (f"{path} is already compressed ({content.describe()}): recompressing it buys nothing (best "
                    f"ratio {best:.3f}x); measure the uncompressed data to choose a codec")
        elif best is not None:
            note = (f"{path} is already compressed ({content.describe()}): recompressing it gains only a ratio of "
                    f"{best:.2f}x over its current form")
    if content.damaged:
        note = f"{path} looks like {content.format} but its first block does not decode ({content.damaged}); " \
               "measured as opaque bytes"
    return {"path": path, "file_bytes": s.file_bytes, "measured_bytes": len(s.data), "sampled": s.sampled,
            "sample_blocks": s.blocks, "sample_block_bytes": s.block_bytes, "content": content.to_dict(),
            "content_text": content.describe(), "best_ratio": best, "note": note,
            "rows": [r.to_dict() for r in rows]}


def storage_table(inputs: list[dict[str, Any]],
                  targets: list[StorageTarget] | list[dict[str, Any]]) -> list[dict[str, Any]]:
    out = []
    for t in targets:
        t = t if isinstance(t, StorageTarget) else StorageTarget(**t)
        for inp in inputs:
            base_r = effective(1.0, None, t.read_Bps)
            base_w = effective(1.0, None, t.write_Bps)
            out.append({"target": t.name, "input": inp["path"], "label": "uncompressed", "codec": None, "level": None,
                        "threads": None, "ratio": 1.0, "read": base_r, "write": base_w})
            for r in inp["rows"]:
                if not r["ratio"]:
                    continue
                out.append({"target": t.name, "input": inp["path"], "label": r["label"], "codec": r["codec"],
                            "level": r["level"], "threads": r["threads"], "ratio": r["ratio"],
                            "read": effective(r["ratio"], r["decompress_Bps"], t.read_Bps),
                            "write": effective(r["ratio"], r["compress_Bps"], t.write_Bps)})
    return out


def _rec(inp: dict[str, Any], goal: str, kind: str, target: str | None, row: dict[str, Any] | None,
         **extra: Any) -> dict[str, Any]:
    """One recommendation; every key always present (null when not applicable)."""
    rec = {"input": inp["path"], "goal": goal, "kind": kind, "target": target,
           "choice": row["label"] if row else None, "format": row.get("format") if row else None,
           "ratio": row["ratio"] if row else None, "compress_Bps": None, "decompress_Bps": None, "s_per_GB": None,
           "why": None, "index_with": None, "htslib_reads": None, "alternative": None, "cram": False}
    rec.update(extra)
    return rec


def _genomic(inp: dict[str, Any]) -> str | None:
    c = inp["content"]
    fmt = c["inner"] or c["format"]
    return fmt if fmt in INDEX or fmt in ALIGNMENTS else None


def recommend(doc: dict[str, Any]) -> list[dict[str, Any]]:
    """Fastest to read per target, smallest for archive, best for intermediates: each with its numbers.  For genomics
    formats also the indexable choice (BGZF, which htslib's tabix/samtools index) against the smallest other codec,
    and CRAM for alignments.  Plain data; the renderers word it."""
    recs: list[dict[str, Any]] = []
    for inp in doc["inputs"]:
        good = [r for r in inp["rows"] if r["ratio"] and r["verified"]]
        if not good:
            continue
        by_label = {r["label"]: r for r in good}
        genomic = _genomic(inp)

        def reads(label: str) -> bool | None:
            return by_label[label]["format"] in HTSLIB_READS if genomic and label in by_label else None

        if genomic:
            recs.append(_indexable(inp, genomic, good))
        small = max(good, key=lambda r: (round(r["ratio"], 3), r["decompress_Bps"] or 0))
        recs.append(_rec(inp, "smallest (archive)", "smallest", None, small, compress_Bps=small["compress_Bps"],
                         decompress_Bps=small["decompress_Bps"], why=f"ratio {small['ratio']:.2f}x",
                         htslib_reads=reads(small["label"])))
        rows = [s for s in doc["storage"] if s["input"] == inp["path"]]
        for tname in dict.fromkeys(s["target"] for s in rows):
            here = [s for s in rows if s["target"] == tname]
            fast = min(here, key=lambda s: s["read"]["s_per_GB"])
            recs.append(_rec(inp, "fastest to read", "fastest_read", tname, by_label.get(fast["label"]),
                             choice=fast["label"], ratio=fast["ratio"], s_per_GB=fast["read"]["s_per_GB"],
                             why=f"{fast['read']['s_per_GB']:.2f} s/GB read ({fast['read']['limited_by']}-bound)",
                             htslib_reads=reads(fast["label"])))
            inter = min(here, key=lambda s: s["write"]["s_per_GB"] + READS_PER_INTERMEDIATE * s["read"]["s_per_GB"])
            cost = inter["write"]["s_per_GB"] + READS_PER_INTERMEDIATE * inter["read"]["s_per_GB"]
            recs.append(_rec(inp, "intermediate (write 1x, read 1.5x)", "intermediate", tname,
                             by_label.get(inter["label"]), choice=inter["label"], ratio=inter["ratio"],
                             s_per_GB=cost, why=f"{cost:.2f} s/GB written + read 1.5x",
                             htslib_reads=reads(inter["label"])))
        if not rows:
            inter = min(good, key=lambda r: 1 / r["compress_Bps"] + READS_PER_INTERMEDIATE / r["decompress_Bps"])
            cost = GB / inter["compress_Bps"] + READS_PER_INTERMEDIATE * GB / inter["decompress_Bps"]
            recs.append(_rec(inp, "intermediate (write 1x, read 1.5x)", "intermediate", None, inter,
                             compress_Bps=inter["compress_Bps"], decompress_Bps=inter["decompress_Bps"],
                             s_per_GB=cost, why=f"{cost:.2f} CPU-bound s/GB; no --on target, so storage is not counted",
                             htslib_reads=reads(inter["label"])))
    return recs


def _indexable(inp: dict[str, Any], fmt: str, good: list[dict[str, Any]]) -> dict[str, Any]:
    """The best BGZF row (ratio, then write speed) and what keeping random access costs against the smallest
    row of another format."""
    bgzf = [r for r in good if r["format"] == "bgzf"]
    best = max(bgzf, key=lambda r: (round(r["ratio"], 2), r["compress_Bps"] or 0), default=None)
    other = max((r for r in good if r["format"] != "bgzf"), key=lambda r: r["ratio"], default=None)
    alt = None if other is None else {"choice": other["label"], "format": other["format"], "ratio": other["ratio"],
                                      "compress_Bps": other["compress_Bps"], "decompress_Bps": other["decompress_Bps"],
                                      "htslib_reads": other["format"] in HTSLIB_READS}
    already = inp["content"]["format"] in ("bgzf", "bam")
    return _rec(inp, "indexable (random access)", "indexable", None, best,
                compress_Bps=best["compress_Bps"] if best else None,
                decompress_Bps=best["decompress_Bps"] if best else None,
                index_with=INDEX.get(fmt, INDEX["sam"]), htslib_reads=True, alternative=alt,
                cram=fmt in ALIGNMENTS, why="already BGZF" if already else None)
