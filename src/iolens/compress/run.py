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
from iolens.compress.detect import detect
from iolens.compress.measure import MIN_TIME, ToolFailed, peak_of, run_tool, staging, time_call, time_tool
from iolens.compress.sample import read_sample
from iolens.compress.storage import GB, StorageTarget, effective
from iolens.errors import UsageError

TAG = "iolens-compress"
SCHEMA_VERSION = (1, 0)
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


def _library_row(row: Row, codec: C.Codec, data: bytes, min_time: float) -> None:
    assert codec.compress and codec.decompress
    lv, t = row.level, row.threads
    comp, cpeak = peak_of(lambda: codec.compress(data, lv, t))  # type: ignore[misc]
    assert isinstance(comp, (bytes, bytearray))
    back, dpeak = peak_of(lambda: codec.decompress(comp, t))  # type: ignore[misc, arg-type]
    row.compressed_bytes = len(comp)
    row.verified = back == data
    if not row.verified:
        row.error = "round trip differs from the input"
        return
    del back
    ct = time_call(lambda: codec.compress(data, lv, t), min_time=min_time)  # type: ignore[misc]
    dt = time_call(lambda: codec.decompress(comp, t), min_time=min_time)  # type: ignore[misc, arg-type]
    _fill(row, ct, dt)
    row.compress_peak_bytes, row.decompress_peak_bytes = cpeak, dpeak


def _tool_row(row: Row, codec: C.Codec, src: str, data: bytes, tmp: str, min_time: float) -> None:
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
        ct = time_tool(cargv, src, z, min_time=min_time)
        dt = time_tool(dargv, z, back, min_time=min_time)
    except ToolFailed as err:
        row.error = str(err)
        return
    _fill(row, ct, dt)
    row.compress_peak_bytes, row.decompress_peak_bytes = ct.peak_bytes, dt.peak_bytes


def _fill(row: Row, ct, dt) -> None:
    n = row.bytes
    row.ratio = n / row.compressed_bytes if row.compressed_bytes else None
    row.compress_Bps, row.decompress_Bps = n / ct.best_s, n / dt.best_s
    row.compress_spread_pct, row.decompress_spread_pct = ct.spread_pct, dt.spread_pct
    row.compress_passes, row.decompress_passes = ct.passes, dt.passes
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
            progress: Callable[[str, int, int], None] | None = None) -> dict[str, Any]:
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
                        _tool_row(row, codec, src, s.data, tmp, min_time)
                    else:
                        _library_row(row, codec, s.data, min_time)
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
        "settings": {"codecs": [f"{c.name}:{'/'.join(lv)}" for c, lv in usable], "threads": threads,
                     "sample_bytes": sample, "min_time_s": min_time},
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


def _input_dict(path: str, s, content, rows: list[Row]) -> dict[str, Any]:
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


def storage_table(inputs: list[dict[str, Any]], targets) -> list[dict[str, Any]]:
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


def recommend(doc: dict[str, Any]) -> list[dict[str, Any]]:
    """Fastest to read per target, smallest for archive, best for intermediates: each with its numbers."""
    recs: list[dict[str, Any]] = []
    for inp in doc["inputs"]:
        good = [r for r in inp["rows"] if r["ratio"] and r["verified"]]
        if not good:
            continue
        small = max(good, key=lambda r: (round(r["ratio"], 3), r["decompress_Bps"] or 0))
        recs.append({"input": inp["path"], "goal": "smallest (archive)", "target": None, "choice": small["label"],
                     "ratio": small["ratio"], "compress_Bps": small["compress_Bps"],
                     "decompress_Bps": small["decompress_Bps"], "s_per_GB": None,
                     "why": f"ratio {small['ratio']:.2f}x"})
        rows = [s for s in doc["storage"] if s["input"] == inp["path"]]
        for tname in dict.fromkeys(s["target"] for s in rows):
            here = [s for s in rows if s["target"] == tname]
            fast = min(here, key=lambda s: s["read"]["s_per_GB"])
            recs.append({"input": inp["path"], "goal": "fastest to read", "target": tname, "choice": fast["label"],
                         "ratio": fast["ratio"], "compress_Bps": None, "decompress_Bps": None,
                         "s_per_GB": fast["read"]["s_per_GB"],
                         "why": f"{fast['read']['s_per_GB']:.2f} s/GB read ({fast['read']['limited_by']}-bound)"})
            inter = min(here, key=lambda s: s["write"]["s_per_GB"] + READS_PER_INTERMEDIATE * s["read"]["s_per_GB"])
            cost = inter["write"]["s_per_GB"] + READS_PER_INTERMEDIATE * inter["read"]["s_per_GB"]
            recs.append({"input": inp["path"], "goal": "intermediate (write 1x, read 1.5x)", "target": tname,
                         "choice": inter["label"], "ratio": inter["ratio"], "compress_Bps": None,
                         "decompress_Bps": None, "s_per_GB": cost,
                         "why": f"{cost:.2f} s/GB written + read 1.5x"})
        if not rows:
            inter = min(good, key=lambda r: 1 / r["compress_Bps"] + READS_PER_INTERMEDIATE / r["decompress_Bps"])
            cost = GB / inter["compress_Bps"] + READS_PER_INTERMEDIATE * GB / inter["decompress_Bps"]
            recs.append({"input": inp["path"], "goal": "intermediate (write 1x, read 1.5x)", "target": None,
                         "choice": inter["label"], "ratio": inter["ratio"], "compress_Bps": inter["compress_Bps"],
                         "decompress_Bps": inter["decompress_Bps"], "s_per_GB": cost,
                         "why": f"{cost:.2f} CPU-bound s/GB; no --on target, so storage is not counted"})
    return recs
