"""The calibration of a storage target for predict: the classes of operations a step's time is priced in, and a
small synthetic replay of each class on the target, whose seconds per op are stored in the results store and
reused (same target, host, cache state and CAL_VERSION).  whatif/predict.py prices a step's operations with them.
"""

from __future__ import annotations

import os
import socket
import time
from typing import TYPE_CHECKING

import numpy as np

from iolens import __version__, workdirs
from iolens.workspace.target import Target
from iolens.whatif.coldtree import calibrate_cold_tree
from iolens.whatif.engine import log_dtype, op_codes, op_dtype
from iolens.whatif.plan import Plan, ReplayFile

if TYPE_CHECKING:
    from iolens.store import ResultsStore

CAL_KIND = "whatif-calibration"
CAL_VERSION = 10  # 9: a cold calibration adds the cold-metadata premiums (whatif/coldtree.py); 10: read_random
# The classes calibrated warm whatever the cache state asked for: a buffered write into a new file reads nothing
# through the page cache.  Calibrated cold (right after the drop), the home storage's small writes cost 60 us against
# 14 us warm, and every cold prediction of a step with many small writes grew by that (sort --parallel's 10,777 temp
# file writes: +0.5 s, predicted 1.75 s against 0.93 s real cold; tuning half, load 5-7).
WARM_ONLY = ("write_small", "write_large")
CAL_PREFIX = "iolens-cal-"  # a calibration replay's op log, in the temporary directory
# Metadata by kind: a create costs a disk filesystem ten times a close, and a step's mix (a shell's loop: one
# create, three closes, a stat) is not the calibration's, so one mean per metadata op mispriced it (up to +102%
# on the throttled disks for the small-file step).  "meta": the other metadata ops (mkdir, rename), priced at the
# mean of the metadata calibration.  "meta_list": a directory's entries as listed, priced per entry (a traced
# readdir returns one, from a buffer its getdents filled; the calibration lists its directory of META_FILES): at
# the metadata mean per entry the small-file step's 6,000 came to 90 s on S3 behind 5 ms, where its real run
# took 224 s in all.  "meta_fstat": a stat through a descriptor, which a FUSE client answers from what the open
# fetched (4-9 us on S3 behind 5 ms, where a stat by name asks the server: 7.7-7.9 ms).
META_KINDS = ("meta_create", "meta_open", "meta_close", "meta_stat", "meta_fstat", "meta_unlink", "meta_list")
# A small copy_file_range or sendfile (cat, cp of small files) is one call that reads and writes: on btrfs it costs
# ~50 us where a small read and write cost a few, so it has its own class.  A large copy is priced as a large write.
# A small read at an offset other than where the file's previous read ended: cold, each is a request to the disk,
# where the sequential reads of read_small are served by readahead.  A Python script's 4,000 random 4 KiB preads of
# a 64 MB file took 0.77 s cold against 0.13 s predicted at read_small's price (tuning half, load 10-13).
CLASSES = ("read_small", "read_large", "write_small", "write_large", "sync", "meta") + META_KINDS + ("copy_small",
                                                                                                  "read_random")
# the write classes calibrated again with an fdatasync at the end: the costs a step that syncs pays per write
SYNCED = {"write_small": "write_small_synced", "write_large": "write_large_synced"}
CAL_CLASSES = CLASSES + tuple(SYNCED.values())
# the calibration workloads: one per class, but the metadata kinds come from the per-op log of the "meta" one
CAL_RUNS = tuple(c for c in CAL_CLASSES if c not in META_KINDS)
SMALL = 64 * 1024
# The large classes are calibrated with 1 MiB calls and priced per MiB moved when the trace gives their bytes: a
# large call is bandwidth-bound (pigz's 128 KiB reads on S3, priced per call at a 1 MiB read's cost, came out +65%).
LARGE = ("read_large", "write_large")
LARGE_CALL = 1 << 20
# The small classes are calibrated with 4 KiB calls and, when the trace gives their bytes, priced on the line
# through the small and the large call, a call's own cost plus its bytes': where a written file is sent on at its
# close (an object store's FUSE client uploads it), a 32 KiB write costs eight 4 KiB writes' upload, not one's.
SMALL_CALL = 4096
LINEAR = {"read_small": "read_large", "write_small": "write_large"}
# The metadata calibration's files get a few bytes each before their close, as a step's created files do: btrfs
# reserves metadata space for each file with unwritten data and, past its reserve, stalls creates for ms to write
# some back (2,000 files of a few bytes: a create every ~55 held up 7 ms, 140 us a create on average against 14 us
# for empty files).  The bytes are priced as small writes, not as the create.
META_FILE_BYTES = 100
META_FILES = 300  # files the metadata calibration creates, lists, opens again and unlinks


# ---- calibration -------------------------------------------------------------------------------------------

def _cal_plan(cls: str) -> Plan:
    """A small synthetic workload of one calibration run (CAL_RUNS), replayed at full speed.  The write classes
    only write (buffered, as a step that never syncs) and close; their `_synced` twins fdatasync before the close.
    The metadata run creates META_FILES files (open, a write of META_FILE_BYTES, close, stat), lists their
    directory (open, readdir, close), opens them again (open, fstat, close) and unlinks them."""
    c = op_codes()
    rows: list[tuple[int, int, int, int]] = []  # op, obj, offset, size
    files = [ReplayFile("/cal/data", "cal/data", layout=(32 << 20) if cls.startswith("read") else 0),
             ReplayFile("/cal/out", "cal/out", created=True)]
    if cls == "read_small":
        rows = [(c["OPEN"], 0, 0, 0)] + [(c["READ"], 0, i * 4096, 4096) for i in range(4096)]
    elif cls == "read_random":  # 4 KiB reads at a fixed shuffle of the 4 KiB blocks of the file's 32 MiB
        blocks = np.random.default_rng(7).permutation(8192)[:4096]
        rows = [(c["OPEN"], 0, 0, 0)] + [(c["READ"], 0, int(b) * 4096, 4096) for b in blocks]
    elif cls == "read_large":
        rows = [(c["OPEN"], 0, 0, 0)] + [(c["READ"], 0, i * LARGE_CALL, LARGE_CALL) for i in range(32)]
    elif cls.startswith("write_small"):
        rows = [(c["OPEN"], 1, 0, 0)] + [(c["WRITE"], 1, i * 4096, 4096) for i in range(4096)]
    elif cls.startswith("write_large"):
        rows = [(c["OPEN"], 1, 0, 0)] + [(c["WRITE"], 1, i * LARGE_CALL, LARGE_CALL) for i in range(32)]
    elif cls == "sync":
        rows = [(c["OPEN"], 1, 0, 0)]
        for i in range(64):
            rows += [(c["WRITE"], 1, i * 4096, 4096), (c["FDATASYNC"], 1, 0, 0)]
    elif cls == "copy_small":
        # 300 small files copied into one, as cat does (open, copy, the copy that finds the end, close).  Not whole
        # blocks: btrfs clones aligned blocks (8 us) but copies a 100-byte file's bytes (~50 us, as `cat` pays)
        n = 100
        for i in range(300):
            files.append(ReplayFile(f"/cal/c/f{i}", f"cal/c/f{i}", layout=n))
        for i in range(300):
            h = 2 + i
            rows += [(c["OPEN"], h, 0, 0), (c["COPY_FROM"], h, 0, n), (c["COPY"], 1, i * n, n),
                     (c["COPY_FROM"], h, n, 0), (c["COPY"], 1, (i + 1) * n, 0), (c["CLOSE"], h, 0, 0)]
    elif cls == "meta":
        for i in range(META_FILES):
            files.append(ReplayFile(f"/cal/m/f{i}", f"cal/m/f{i}", created=True))
        h0, listed = 2, 2 + META_FILES
        files.append(ReplayFile("/cal/m", "cal/m", dir=True))
        for i in range(META_FILES):
            rows += [(c["OPEN"], h0 + i, 0, 0), (c["WRITE"], h0 + i, 0, META_FILE_BYTES), (c["CLOSE"], h0 + i, 0, 0),
                     (c["STAT"], 2 + i, 0, 0)]
        rows += [(c["OPEN"], listed, 0, 0), (c["READDIR"], listed, 0, 0), (c["CLOSE"], listed, 0, 0)]
        for i in range(META_FILES):
            rows += [(c["OPEN"], h0 + i, 0, 0), (c["FSTAT"], h0 + i, 0, 0), (c["CLOSE"], h0 + i, 0, 0)]
        for i in range(META_FILES):
            rows.append((c["UNLINK"], 2 + i, 0, 0))
    if cls in SYNCED.values():  # the writes' writeback, waited for as a step that syncs waits for it
        rows.append((c["FDATASYNC"], 1, 0, 0))
    if cls.startswith("write"):
        # and the close that ends them: where the storage sends a written file on at its close (a FUSE client of
        # an object store uploads it then; NFS writes it back), the close is what the writes cost
        rows.append((c["CLOSE"], 1, 0, 0))
    rows = [(c["START"], 0, 0, 0)] + rows
    ops = np.zeros(len(rows), dtype=op_dtype())
    arr = np.array(rows, dtype=np.int64)
    ops["op"], ops["obj"], ops["offset"], ops["size"] = arr[:, 0], arr[:, 1], arr[:, 2], arr[:, 3]
    return Plan(files, list(range(len(files))), [0], 1, [0], 0, ops, 0.0)


def _cal_ops(cls: str) -> int:
    return {"read_small": 4096, "read_random": 4096, "read_large": 32, "write_small": 4096, "write_large": 32,
            "sync": 64, "meta": 8 * META_FILES + 3, "copy_small": 600}[cls.removesuffix("_synced")]


def _meta_kinds(ops: np.ndarray, log: np.ndarray) -> dict[str, float]:
    """Seconds per op of each metadata kind in a replay of the metadata calibration, from its per-op log (one
    entry per op, in the ops' order): the first open of each file is its create, the second a plain open; the
    listing per entry of the directory, its files and its two dots (the directory's own open and close apart)."""
    c = op_codes()
    dur = (log["end"].astype(np.float64) - log["start"]) / 1e9
    on_dir = np.isin(ops["obj"], ops["obj"][ops["op"] == c["READDIR"]])
    opens = np.nonzero((ops["op"] == c["OPEN"]) & ~on_dir)[0]
    _u, first = np.unique(ops["obj"][opens], return_index=True)
    create = np.zeros(len(ops), dtype=bool)
    create[opens[first]] = True
    sel = {"meta_create": create, "meta_open": (ops["op"] == c["OPEN"]) & ~create & ~on_dir,
           "meta_close": (ops["op"] == c["CLOSE"]) & ~on_dir, "meta_stat": ops["op"] == c["STAT"],
           "meta_fstat": ops["op"] == c["FSTAT"], "meta_unlink": ops["op"] == c["UNLINK"]}
    out = {k: float(dur[m].mean()) for k, m in sel.items()}
    out["meta_list"] = float(dur[ops["op"] == c["READDIR"]].sum()) / (META_FILES + 2)
    return out


def _copy_cost(ops: np.ndarray, log: np.ndarray) -> dict[str, float]:
    """Seconds per copy call (the source side and the call) in a replay of the copy calibration."""
    c = op_codes()
    dur = (log["end"].astype(np.float64) - log["start"]) / 1e9
    copies = ops["op"] == c["COPY"]
    return {"copy_small": float(dur[copies | (ops["op"] == c["COPY_FROM"])].sum() / copies.sum())}


# the calibration runs whose per-op log prices some classes (rather than wall time over the op count)
_FROM_LOG = {"meta": _meta_kinds, "copy_small": _copy_cost}


def calibrate(t: Target, *, cache: str = "warm", store: ResultsStore | None = None,
              refresh: bool = False) -> dict[str, float]:
    """Seconds per op of each class on t; stored in the results store and reused (same target, host, cache).  Cold,
    also the premiums of a first touch of an existing file or directory (whatif/coldtree.py, COLD_KINDS)."""
    from iolens.whatif.replay import replay_on

    host = socket.gethostname()
    if store is not None and not refresh:
        found = store.reusable(CAL_KIND, host, {"target": str(t.path), "cache": cache, "version": CAL_VERSION})
        if found is not None:
            return found
    out: dict[str, float] = {}
    for cls in CAL_RUNS:
        samples, kinds = [], []
        plan = _cal_plan(cls)
        for _ in range(3):
            with workdirs.temporary(None, CAL_PREFIX) as tmp:
                log = os.path.join(tmp, "ops.log") if cls in _FROM_LOG else None
                # cold: the files' pages only; what a first touch of existing metadata costs is COLD_KINDS' price
                r = replay_on(plan, t, speed="max", cache="warm" if cls in WARM_ONLY else cache, log=log,
                              evict="fadvise")
                if log:
                    kinds.append(_FROM_LOG[cls](plan.ops, np.fromfile(log, dtype=log_dtype())))
            samples.append(r.wall_s / _cal_ops(cls))
        out[cls] = float(np.median(samples))
        for k in (kinds[0] if kinds else ()):
            out[k] = float(np.median([x[k] for x in kinds]))
    if cache == "cold":  # what an existing tree's first touch costs from the storage (COLD_KINDS)
        out |= calibrate_cold_tree(t)
    if store is not None:
        rid = store.add_run(CAL_KIND, {"target": str(t.path), "spec": t.spec, "cache": cache, "version": CAL_VERSION},
                            {"iolens_version": __version__, "host": host, "time": time.time()})
        store.add_result(rid, "per_op_s", out, target=t.spec, cache_state=cache)
    return out
