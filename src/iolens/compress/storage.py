"""Storage-effective throughput: what a codec is worth on a given target.

A target's sequential read and write bandwidth come from `iolens bench` results in the results store (the latest
bench run that measured it: the best `seq-read tN` / `seq-write tN` over thread counts), or are given as
`NAME=READ,WRITE` in MB/s.

The model, per GB of uncompressed data: reading moves 1/ratio GB over the storage while the decompressor turns it
back into 1 GB; the two are pipelined, so the time is the larger of the two, `max(1/(ratio x read_Bps),
1/decompress_Bps)`; writing likewise with the write bandwidth and the compressor.  Threads: each codec row keeps
the thread count it was measured with (its (de)compression speed is that of N threads); the model assumes those
threads have the cores to themselves and do not slow the storage, and that the storage figure holds at the lower
(compressed) byte rate.  When the application itself uses every core, the codec competes with it: that penalty is
what `iolens compress --fs ... --run CMD` measures instead.
"""

from __future__ import annotations

import os
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Any

from iolens import resolve
from iolens.errors import UsageError

if TYPE_CHECKING:
    from iolens.store import ResultsStore

GB = 1e9


@dataclass
class StorageTarget:
    name: str
    read_Bps: float
    write_Bps: float
    source: str              # "bench run N in DB" or "given"

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def _mean(v: Any) -> float | None:
    if isinstance(v, dict):
        v = v.get("mean")
    return float(v) if isinstance(v, (int, float)) else None


def from_store(spec: str, store: ResultsStore) -> StorageTarget | None:
    """The latest bench run's sequential bandwidth for `spec` (as typed, or as a resolved directory)."""
    names = {spec}
    if not resolve.is_lab(spec) and os.path.isdir(spec):
        names.add(os.path.realpath(spec))
        names.add(os.path.abspath(spec))
    for run in store.runs(kind="bench"):
        if run.get("status") not in ("complete", None):
            continue
        best = {"read": 0.0, "write": 0.0}
        for r in store.results(run["id"]):
            if r.get("target") not in names:
                continue
            m = (r.get("metrics") or {}).get("metrics") or {}
            for op in ("read", "write"):
                if r["name"].startswith(f"seq-{op} "):
                    best[op] = max(best[op], _mean(m.get(f"{op}_Bps")) or 0.0)
        if best["read"] > 0 and best["write"] > 0:
            return StorageTarget(spec, best["read"], best["write"], f"bench run {run['id']} in {store.path}")
    return None


def parse_given(spec: str) -> StorageTarget | None:
    """`NAME=READ,WRITE` (MB/s) -> a target; None when spec has no `=`."""
    if "=" not in spec:
        return None
    name, _, rates = spec.partition("=")
    try:
        r, w = (float(x) * 1e6 for x in rates.split(","))
    except ValueError:
        raise UsageError(f"--on {spec}: give NAME=READ,WRITE in MB/s, e.g. s3=90,60") from None
    if not name or r <= 0 or w <= 0:
        raise UsageError(f"--on {spec}: give a name and two positive rates in MB/s, e.g. s3=90,60")
    return StorageTarget(name, r, w, "given")


def resolve_targets(specs: list[str], db: str | None) -> list[StorageTarget]:
    out = []
    store = None
    try:
        for spec in specs:
            t = parse_given(spec)
            if t is None:
                if store is None:
                    from iolens.store import ResultsStore
                    store = ResultsStore(db)
                t = from_store(spec, store)
            if t is None:
                name = resolve.parse(spec).lab or spec
                raise UsageError(f"--on {spec}: no sequential read/write results for it in the results store; run "
                                 f"`iolens bench {spec}` first, or give --on {name}=READ,WRITE in MB/s")
            out.append(t)
    finally:
        if store is not None:
            store.close()
    return out


def effective(ratio: float, codec_Bps: float | None, storage_Bps: float) -> dict[str, Any]:
    """Seconds per GB of uncompressed data, and the resulting rate; which side limits it."""
    io_s = GB / (ratio * storage_Bps)
    cpu_s = GB / codec_Bps if codec_Bps else None
    t = max(io_s, cpu_s) if cpu_s is not None else io_s
    return {"s_per_GB": t, "Bps": GB / t, "limited_by": "storage" if cpu_s is None or io_s >= cpu_s else "codec"}
