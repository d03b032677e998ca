"""Predict a step's wall time on storage it never ran on, from its capture and a calibration of each target.

Model (relative fitness, after Mesnier et al., SIGMETRICS'07: predict the change between two devices rather than
absolute times).  From the capture:
- the step's wall time W, and its storage-I/O wall time I (the time with at least one thread in a storage call:
  from the trace as the union of all threads' storage-op intervals, else the processes' io_wall_ns summed and
  capped at W); compute C = W - I, the same on every target, scaled by how much slower or faster this CPU runs
  the replayer's burn work now than while the capture was taken (cpu_ratio_now; traced captures);
- the number of operations n_k and the recorded time t_k of each class k, from the trace or the per-file counters;
- the overlap: sum_k t_k / I (> 1 when threads were in storage calls at the same time).
From each target and from the capture's home storage: the cost per op of each class c_k (a small replay of a
synthetic workload per class, stored in the results store and reused).  Writes are calibrated twice: buffered (no
sync: what a step that never syncs waits for) and followed by an fdatasync (the writeback amortised over the
writes: what a step that syncs waits for), both up to the file's close (an object store's FUSE client uploads the
file then); a step's writes are charged the first unless it makes sync calls, and its syncs are a class of their
own either way.  Then

    dI = sum_k n_k * (c_k(target) - c_k(home)) / max(1, overlap),   W' = max(C r, W + dI + C (r - 1))

that is the recorded time plus what each operation costs more (or less) there.  With a trace, the large classes
are counted in calibration calls' worth of bytes, and a small read or write costs a + b * size on the line through
the small and the large calibration call (class_cost).  When the home storage cannot be
calibrated (the capture came from elsewhere), c_k(home) is replaced by the recorded mean time per op of class k.
The interval widens with what the model cannot see.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from iolens import _format as F
from iolens.capture.reader import Capture, Process
from iolens.sysinfo import steal_notes, steal_share, stolen_wait
from iolens.whatif.calibration import (CLASSES, LARGE, LARGE_CALL, LINEAR, SMALL, SMALL_CALL,
                                      SYNCED)
from iolens.whatif.caveats import model_notes, shape_cautions
from iolens.whatif.coldtree import COLD_KINDS
from iolens.native import probe_cpu
from iolens.whatif.engine import describe, recorded_block_ns
from iolens.whatif.plan import (STDIO_OPS, TRACE_EVENT_OVERHEAD_NS, TRACE_PATH_OVERHEAD_NS, _is_data, has_trace)
from iolens.whatif.timeline import event_costs, on_cpu_gap_s, recording_cost

MULTITHREADED = F.PROC_FLAGS["MULTITHREADED"][0]

# The coverage the prediction's interval is meant to have: the share of real runs' medians it should hold, on steps
# the model was not tuned on (benchmarks/whatif_corpus.py reports the share it held on the corpus's evaluation half).
INTERVAL_LEVEL = 0.80
# The interval is the band of real over predicted time that the held-out corpus's tuning half showed, and only
# that half (benchmarks/whatif_corpus.py --half tuning prints the quantiles of real / predicted that would make
# INTERVAL_LEVEL of its cells hold; docs/whatif.md, "Held-out corpus"): its (1 - level) / 2 and (1 + level) / 2
# quantiles, so a prediction of W has [W * lo, W * hi] before what the model adds for a target far from home.  On
# this 2-CPU machine shared with other work, real runs of one step moved by 2x between minutes, and a capture taken
# in a quiet minute sets every prediction from it: a wide band is what the runs showed, not the model's precision.
# (0.62, 1.97): the tuning half's 44 cells of two runs of 2026-11-29 (home storage, warm and cold, 3 runs a cell, load
# 4-11 and 10-13), predicted again by this model from the runs' JSON (--rescore); one run alone gave (0.90, 2.58),
# the other (0.60, 1.46), and the median real / predicted was 1.18.  A third run, whose captures were taken beside a
# test suite of this project (load 11) and its real runs at load 3-7, gave (0.14, 0.77): left out, and said in
# docs/whatif.md.  Before: (0.56, 1.67), 22 cells at load 5-7.
INTERVAL_RATIO = (0.62, 1.97)

_READS = {"READ", "PREAD", "READV", "PREADV", "FREAD", "FGETS", "FGETC", "GETDELIM", "FSCANF", "STDIO_FILL"}
_WRITES = {"WRITE", "PWRITE", "WRITEV", "PWRITEV", "FWRITE", "FPUTS", "FPUTC", "FPRINTF", "STDIO_DRAIN", "FFLUSH"}
_COPIES = {"SENDFILE", "COPY_FILE_RANGE"}  # priced whole by their call; their COPY_SOURCE side is not priced again
_SYNCS = {"FSYNC", "FDATASYNC", "SYNC_FILE_RANGE", "SYNCFS", "SYNC", "MSYNC"}
_OPENS = {"OPEN", "FOPEN", "MKSTEMP", "OPENDIR"}  # the first open of a file the process created: meta_create
_META_KIND = {"CLOSE": "meta_close", "FCLOSE": "meta_close", "CLOSEDIR": "meta_close", "STAT": "meta_stat",
              "FSTAT": "meta_fstat", "ACCESS": "meta_stat", "UNLINK": "meta_unlink", "RMDIR": "meta_unlink",
              "READDIR": "meta_list", "GETDENTS": "meta_list"}
_METAS = _OPENS | set(_META_KIND) | {"RENAME", "MKDIR"}
_FIRST_READS = _READS | {"COPY_SOURCE", "MMAP"}  # what reads an existing file's first block
_LISTS = {"READDIR", "GETDENTS"}


@dataclass
class StepModel:
    wall_s: float
    io_wall_s: float
    class_s: dict[str, float]       # recorded time per class
    class_n: dict[str, int]         # op count per class, and the first touches of existing files (COLD_KINDS)
    traced: bool
    overlap: float                  # sum of storage-op time / storage I/O wall (>1: threads overlapped)
    unseen: list[str] = field(default_factory=list)
    recording_s: float = 0.0        # the profiler's own recording cost in wall_s (traced captures; estimated)
    class_b: dict[str, int] = field(default_factory=dict)  # bytes of the reads and writes (traced captures)
    stolen_s: float = 0.0           # wall time the hypervisor took from the step's computing (steal; estimated)
    cpu_ratio: float = 1.0          # this CPU's cost of the replayer's burn work now over while recording (1.1:
    #                                 10% slower; cpu_ratio_now): the compute is taken as that much longer
    cautions: list[str] = field(default_factory=list)  # a shape the held-out corpus covered poorly (caveats)
    cpu_floor_s: float = 0.0        # the least wall time the step's own CPU outside its calls needs (cpu_floor)

    @property
    def compute_s(self) -> float:
        return max(0.0, self.wall_s - self.recording_s - self.stolen_s - self.io_wall_s)


def _union(starts: np.ndarray, ends: np.ndarray) -> float:
    if not len(starts):
        return 0.0
    o = np.argsort(starts)
    s, e = starts[o], np.maximum.accumulate(ends[o])
    new = np.ones(len(s), dtype=bool)
    new[1:] = s[1:] > e[:-1]
    idx = np.nonzero(new)[0]
    seg_end = np.append(e[idx[1:] - 1], e[-1])
    return float((seg_end - s[idx]).sum()) / 1e9


def _event_classes(p: Process, ev: np.ndarray) -> np.ndarray:
    """The class (an index in CLASSES) of each traced event of process p, -1 for those priced nowhere."""
    names = [n for n, _c in F.OPS]
    cls_of = np.full(len(names) + 1, -1, dtype=np.int64)
    for i, n in enumerate(names):
        if n in _SYNCS:
            cls_of[i] = CLASSES.index("sync")
        elif n in _OPENS:
            cls_of[i] = CLASSES.index("meta_open")
        elif n in _META_KIND:
            cls_of[i] = CLASSES.index(_META_KIND[n])
        elif n in _METAS:
            cls_of[i] = CLASSES.index("meta")
    op, size = ev["op"].astype(np.int64), ev["size"].astype(np.int64)
    isr = np.isin(op, [names.index(n) for n in _READS if n in names])
    isw = np.isin(op, [names.index(n) for n in _WRITES if n in names])
    isc = np.isin(op, [names.index(n) for n in _COPIES if n in names])
    k = cls_of[np.minimum(op, len(names))].copy()
    k[isr] = np.where(size[isr] <= SMALL, 0, 1)
    k[isr & (size <= SMALL) & ~_in_sequence(ev, isr)] = CLASSES.index("read_random")
    k[isw] = np.where(size[isw] <= SMALL, 2, 3)
    k[isc] = np.where(size[isc] <= SMALL, CLASSES.index("copy_small"), 3)
    # the first open of each file the process created is its create
    made = [f["index"] for f in p.files if f["flags"] & F.FILE_FLAGS["CREATED"][0]]
    opens = np.nonzero(np.isin(op, [names.index(n) for n in _OPENS if n in names]) & np.isin(ev["file"], made))[0]
    if len(opens):
        opens = opens[np.argsort(ev["start_mono"][opens], kind="stable")]
        _u, first = np.unique(ev["file"][opens], return_index=True)
        k[opens[first]] = CLASSES.index("meta_create")
    # a stdio call its buffer served (no time: no clock was read) is no request to storage anywhere
    k[np.isin(op, [names.index(n) for n in STDIO_OPS if n in names]) & (ev["dur_ns"] == 0)] = -1
    return k


def _in_sequence(ev: np.ndarray, reads: np.ndarray) -> np.ndarray:
    """Per event: a read (of `reads`) that starts where the previous read of its file by this process ended, or at
    0 as the file's first; others are random reads (read_random)."""
    out = np.zeros(len(ev), dtype=bool)
    idx = np.nonzero(reads)[0]
    if not len(idx):
        return out
    idx = idx[np.lexsort((ev["start_mono"][idx], ev["file"][idx]))]
    f, off = ev["file"][idx], ev["offset"][idx].astype(np.int64)
    end = off + ev["size"][idx].astype(np.int64)
    first = np.r_[True, f[1:] != f[:-1]]
    prev_end = np.r_[0, end[:-1]]
    out[idx] = np.where(first, off == 0, off == prev_end)
    return out


def step_model(cap: Capture, event_overhead_ns: int = TRACE_EVENT_OVERHEAD_NS,
               path_overhead_ns: int | None = TRACE_PATH_OVERHEAD_NS) -> StepModel:
    """The step's compute and I/O, by class, from the trace when there is one, else from the counters.  With a
    trace, the profiler's recording cost (per event, as the replay takes it out of the gaps: event_costs) is taken
    out of the wall time, spread over the threads that overlapped; without one it is not known and stays in."""
    class_s = dict.fromkeys(CLASSES, 0.0)
    class_n = dict.fromkeys(CLASSES, 0)
    class_b: dict[str, int] = {}
    wall = float(cap.meta.get("wall_s") or 0.0)
    pipe_flag = F.FILE_FLAGS["NOT_A_FILE"][0]
    unseen: list[str] = []
    traced = has_trace(cap)
    recording = 0.0
    if traced:
        costs = event_costs(event_overhead_ns, path_overhead_ns)
        starts, ends = [], []
        for p in cap.processes:
            ev = p.events
            if ev is None or not len(ev):
                continue
            data = {f["index"] for f in p.files if not f["flags"] & pipe_flag and _is_data(f["path"])}
            on_data = np.isin(ev["file"], list(data))
            recording += float(recording_cost(ev, costs).sum()) / 1e9
            dur = ev["dur_ns"].astype(np.float64) / 1e9
            size = ev["size"].astype(np.int64)
            k = _event_classes(p, ev)
            keep = on_data & (k >= 0)
            for ci, c in enumerate(CLASSES):
                sel = keep & (k == ci)
                class_s[c] += float(dur[sel].sum())
                class_n[c] += int(sel.sum())
                if c in LARGE or c in LINEAR:
                    class_b[c] = class_b.get(c, 0) + int(size[sel].sum())
            st = ev["start_mono"][keep].astype(np.int64)
            starts.append(st)
            ends.append(st + ev["dur_ns"][keep].astype(np.int64))
        io_wall = _union(np.concatenate(starts), np.concatenate(ends)) if starts else 0.0
        class_n |= cold_touches(cap)
    else:
        io_wall = 0.0
        for p in cap.processes:
            io_wall += p.io_wall_ns / 1e9
            for f in p.files:
                if f["flags"] & pipe_flag or not _is_data(f["path"]):
                    continue
                ct = [x / 1e9 for x in f["cat_time_ns"]]
                rh, wh = f["read_hist"], f["write_hist"]
                nrs, nrl, nws, nwl = sum(rh[:4]), sum(rh[4:]), sum(wh[:4]), sum(wh[4:])
                # per-file time split between small and large ops in proportion to their counts
                for (ns, nl, t, small, large) in ((nrs, nrl, ct[0], "read_small", "read_large"),
                                                  (nws, nwl, ct[1], "write_small", "write_large")):
                    tot = ns + nl
                    if tot:
                        class_s[small] += t * ns / tot
                        class_s[large] += t * nl / tot
                        class_n[small] += ns
                        class_n[large] += nl
                class_s["meta"] += ct[2]
                class_s["sync"] += ct[3]
                class_n["meta"] += f["opens"] + f["stats"] + f["metas"]
                class_n["sync"] += f["syncs"]
        io_wall = min(io_wall, wall)
        unseen.append("no trace: thread overlap and per-op sizes are estimated from counters (wider interval)")
    total = sum(class_s.values())
    overlap = total / io_wall if io_wall > 0 else 1.0
    mmap = sum(f["mmap_bytes"] for p in cap.processes for f in p.files)
    if mmap:
        unseen.append(f"{mmap / 1e6:.1f} MB of files were mmap'd: page faults on them are invisible (counted as "
                      "compute)")
    unseen += model_notes(cap)
    if traced and recorded_block_ns(cap.meta) is None:
        unseen.append("the capture has no CPU probe (an earlier iolens took it): its compute is taken as recorded, "
                      "whether this CPU runs slower or faster now")
    recording = min(recording / max(1.0, overlap), max(0.0, wall - io_wall))
    stolen = _stolen(cap, max(0.0, wall - io_wall - recording), event_costs(event_overhead_ns, path_overhead_ns)
                     if traced else 0)
    if stolen:
        unseen += steal_notes(cap.meta, f"{stolen:.3f} s of the step's computing, taken out; steal on a target is "
                                        "not predicted")
    return StepModel(wall, io_wall, class_s, class_n, traced, overlap, unseen, recording, class_b, stolen,
                     cautions=shape_cautions(cap, recording_s=recording) if traced else [],
                     cpu_floor_s=cpu_floor(cap, event_costs(event_overhead_ns, path_overhead_ns) if traced else 0))


def cold_touches(cap: Capture) -> dict[str, int]:
    """What a cold cache makes the step read back from the storage beyond its calls' own costs (COLD_KINDS): the
    existing files and directories it touched (none of its processes created them), each once, whichever process
    came first; those of them it read from; and the entries of each existing directory as its first lister listed
    them.  A file the step created is in the cache however cold the cell started."""
    names = [n for n, _c in F.OPS]
    made_flag, pipe_flag = F.FILE_FLAGS["CREATED"][0], F.FILE_FLAGS["NOT_A_FILE"][0]
    made = {f["path"] for p in cap.processes for f in p.files if f["flags"] & made_flag}
    reads = [names.index(n) for n in _FIRST_READS if n in names]
    lists = [names.index(n) for n in _LISTS if n in names]
    opens = [names.index(n) for n in _OPENS if n in names]
    touched: set[str] = set()
    read: set[str] = set()
    listed: dict[str, tuple[int, int]] = {}  # directory: (its first listing's start, the entries its process listed)
    for p in cap.processes:
        ev = p.events
        if ev is None or not len(ev):
            continue
        for f in p.files:
            path = f["path"]
            if f["flags"] & pipe_flag or path in made or not _is_data(path):
                continue
            mine = ev["file"] == f["index"]
            if not mine.any():
                continue
            touched.add(path)
            if np.isin(ev["op"][mine], reads).any() and not f["flags"] & F.FILE_FLAGS["DIRECTORY"][0]:
                read.add(path)
            on_list = mine & np.isin(ev["op"], lists)
            if on_list.any():  # one listing's entries: a shell that globs a directory twice lists it twice
                first = int(ev["start_mono"][on_list].min())
                times = max(1, int((mine & np.isin(ev["op"], opens)).sum()))
                if path not in listed or first < listed[path][0]:
                    listed[path] = (first, -(-int(on_list.sum()) // times))
    return {"cold_list": sum(n for _t, n in listed.values()), "cold_inode": len(touched), "cold_read": len(read)}


def cpu_floor(cap: Capture, costs: np.ndarray | int, cpus: int | None = None) -> float:
    """The least wall time the step's own CPU work needs on any storage: each process's CPU outside its calls
    (on_cpu_gap_s, the profiler's cost taken out) spread over at most as many CPUs as it had threads, and all of
    them over the machine's CPUs.  A prediction never goes below it, whatever the storage's correction says."""
    ncpu = max(1, cpus or os.cpu_count() or 1)
    own, per = 0.0, 0.0
    for p in cap.processes:
        g = on_cpu_gap_s(p, costs)
        ev = p.events
        if ev is not None and len(ev) and "tid" in (ev.dtype.names or ()):
            threads = len(np.unique(ev["tid"]))
        else:  # no trace: a process that made threads may have used every CPU (minimap2's CPU was over its wall
            threads = ncpu if p.fields["flags"] & MULTITHREADED else 1  # time, and its floor over the capture's)
        own += g
        per = max(per, g / min(ncpu, max(1, threads)))
    return max(per, own / ncpu)


def _stolen(cap: Capture, compute: float, costs: np.ndarray | int) -> float:
    """The wall time steal took from the step's `compute` seconds: a share f of it where the step computed all
    along (its threads ran side by side), at most the cpu * f / (1 - f) that its processes' CPU time outside their
    calls waited (whatif/timeline.py, whose share the replay takes out too)."""
    f = steal_share(cap.meta)
    if not f:
        return 0.0
    cpu = sum(on_cpu_gap_s(p, costs) for p in cap.processes)
    return min(f * compute, stolen_wait(cpu, f))


@dataclass
class Prediction:
    target: str
    wall_s: float
    low_s: float
    high_s: float
    io_share: float
    dominant: str
    reference: str   # "home storage calibration" or "recorded per-op times"
    io_delta_s: float = 0.0  # the change in storage-I/O time against the recorded run
    class_s: dict[str, float] = field(default_factory=dict)  # predicted seconds per class the step has ops of
    level: float = INTERVAL_LEVEL  # the coverage [low_s, high_s] is meant to have


def cost_key(model: StepModel, cls: str, cal: dict[str, float]) -> str:
    """The calibration entry that prices the step's ops of class `cls`: a write is priced buffered unless the step
    makes sync calls (then with the writeback its syncs wait for), when the calibration has that entry."""
    synced = SYNCED.get(cls)
    return synced if synced and model.class_n["sync"] and synced in cal else cls


def class_cost(model: StepModel, c: str, cal: dict[str, float]) -> float:
    """Seconds the step's ops of class `c` take on storage calibrated as `cal`: a large class per MiB moved, a
    small read or write on the line through the small and the large calibration call (LINEAR) when its bytes are
    known, any other class per op."""
    n, moved, per_call = model.class_n[c], model.class_b.get(c, 0), cal[cost_key(model, c, cal)]
    if c in LARGE and moved:
        return moved / LARGE_CALL * per_call
    big = cal.get(cost_key(model, LINEAR[c], cal)) if c in LINEAR and moved else None
    if not big:
        return n * per_call
    per_byte = min(per_call / SMALL_CALL, max(0.0, (big - per_call) / (LARGE_CALL - SMALL_CALL)))
    return n * (per_call - per_byte * SMALL_CALL) + moved * per_byte


def cpu_ratio_now(cap: Capture) -> float | None:
    """What the replayer's burn work costs this CPU now over what it cost while the capture was taken (its META
    cpu_probe; native.probe_cpu, about 20 ms of CPU): 1.1 when the CPU runs 10% slower now.  None when the
    capture has no probe (counters only, an earlier iolens) or this CPU cannot be probed."""
    then = recorded_block_ns(cap.meta)
    now = probe_cpu() if then else None
    return now[1] / then if now and then and now[0] == describe().get("burn_loop") else None


def predict(model: StepModel, cal: dict[str, float], home: dict[str, float] | None, target: str) -> Prediction:
    """The step's wall time on a target: the recorded time plus, per class, what its ops cost there less what
    they cost at home (class_cost; see the module's docstring)."""
    delta: dict[str, float] = {}
    for c in CLASSES:
        if not model.class_n.get(c, 0):
            delta[c] = 0.0
            continue
        at_home = class_cost(model, c, home) if home and home.get(cost_key(model, c, home)) else model.class_s[c]
        delta[c] = class_cost(model, c, cal) - at_home
    # a cold cell's first touches of existing files: the calibration's premium there (a cold calibration's only)
    # less the home calibration's (none when home is calibrated warm, the captures' state)
    for c in COLD_KINDS:
        delta[c] = model.class_n.get(c, 0) * (cal.get(c, 0.0) - (home or {}).get(c, 0.0))
    d_io = sum(delta.values()) / max(1.0, model.overlap)
    d_cpu = model.compute_s * (model.cpu_ratio - 1.0)  # the compute on this CPU as it runs now
    compute = model.compute_s + d_cpu
    recorded_io = max(0.0, model.wall_s - model.recording_s - model.stolen_s - model.compute_s)
    # The correction is a difference of calibrations: where the capture paid more per op than the home storage's
    # calibration did (or less), it can take more than the whole recorded I/O away (cp -r's creates on the root
    # disk's slow walk against a fresh lab disk: predicted 0 s).  On a target cheaper than home, the I/O never falls
    # below the recorded I/O scaled by the target's calibrated cost over the home storage's (the ratio form of the
    # same correction), and what the clamp added widens the interval: the two forms disagree by that much.  (On a
    # dearer target the ratio form is the larger one wherever the capture paid more than the calibration; as a
    # floor there it doubled cold predictions on the tuning half.)
    at_home_all = sum(class_cost(model, c, home) if home and home.get(cost_key(model, c, home)) else model.class_s[c]
                      for c in CLASSES if model.class_n.get(c))
    there_all = sum(class_cost(model, c, cal) for c in CLASSES if model.class_n.get(c))
    io_ratio = recorded_io * there_all / at_home_all if 0 < there_all < at_home_all else 0.0
    io = max(recorded_io + d_io, io_ratio, 0.0)
    clamped = min(io - (recorded_io + d_io), recorded_io)
    floor = model.cpu_floor_s * model.cpu_ratio
    wall = max(compute, floor, compute + io)
    io = wall - compute
    rel = (0.10 if home else 0.30) if model.traced else (0.25 if home else 0.45)
    # the tuning half's band, widened by what grows with the distance from home: the correction's own error (the
    # tuning half ran on the home storage, where it is near 0), the CPU's change, and what a clamp added
    spread = 0.5 * rel * abs(d_io) + 0.25 * abs(d_cpu)
    lo, hi = INTERVAL_RATIO
    pred_class = {c: model.class_s.get(c, 0.0) + delta[c] for c in CLASSES + COLD_KINDS}
    dominant = max(pred_class, key=lambda c: pred_class[c]) if any(model.class_n.values()) else "none"
    # the lower side is bounded by the CPU floor, not by C: C is the capture's wall time less its I/O, taken in its
    # own minute, and real runs in a quieter one beat it (bounded by C, 9 of the tuning half's 22 cells held)
    return Prediction(target, wall, max(floor, min(wall, wall * lo - spread)), wall * hi + spread + clamped,
                      io / wall if wall else 0.0,
                      dominant, "home storage calibration" if home else "recorded per-op times", d_io,
                      {c: s for c, s in pred_class.items() if model.class_n.get(c) and (s or c in CLASSES)})


def home_dir(cap: Capture, plan_files: list[str] | None = None) -> str | None:
    """A writable directory on the storage the capture's data files were on (the cwd, when it still exists)."""
    cwd = cap.meta.get("cwd")
    if cwd and os.path.isdir(cwd) and os.access(cwd, os.W_OK):
        return cwd
    return None


def prediction_doc(model: StepModel, preds: list[Prediction], cache: str) -> dict[str, Any]:
    """The prediction as its JSON document (tag iolens-predict; docs/whatif.md)."""
    return {"tag": "iolens-predict", "schema_version": [1, 5], "cache": cache,
            "model": {"wall_s": model.wall_s, "recording_s": model.recording_s,
                      "io_wall_s": model.io_wall_s, "compute_s": model.compute_s,
                      "stolen_s": model.stolen_s, "cpu_ratio": model.cpu_ratio, "cpu_floor_s": model.cpu_floor_s,
                      "class_s": model.class_s, "class_n": model.class_n, "traced": model.traced,
                      "overlap": model.overlap},
            "cannot_see": model.unseen, "cautions": model.cautions, "interval_level": INTERVAL_LEVEL,
            "targets": [p.__dict__ for p in preds]}
