"""Where a step's time went, per thread, in the recording and in a replay; and how much of each compute gap was on
the CPU.

The compute gaps of a trace are wall time between a thread's operations.  Part of it was on the CPU (the program
computing, dynamic loading, untraced system calls) and part off it (page faults on mmap'd files, waits the trace does
not show, and, on a busy machine, time runnable but not running).  A replay that sleeps through a gap does not
compete for the CPUs; one that burns it does.  The capture carries each process image's user and system CPU time, so
the on-CPU share of its gaps is estimated as

    cpu_gap = utime + max(0, stime - traced call time) - events * per-event recording cost
    share   = min(1, cpu_gap / sum of the process's replayed gaps)

(system time inside traced calls is the calls' own, which the replay pays by making them; the profiler's recording
cost was taken out of the gaps, so it is taken out of the CPU time too).  CPU beyond the gaps (threads with no file
operation, such as an aligner's workers, are not replayed) is burnt by extra threads of that process over its
recorded life (burners), so the replay asks the CPUs for what the step did.

Starting a process costs CPU too (fork, exec, the dynamic loader), before the child's first record: the capture's
start counters of each image show it (startup_cpu_ns), and the replay burns it in the parent's gap before the
child's SPAWN, where the recorded start-up time sits.

The rest of a gap was off the CPU: either a real wait (sleeping on a lock or a worker, a page fault), preemption
(runnable, waiting for a CPU that other work held) or, on a virtual machine, steal (the process was running as far
as the guest knew, while the hypervisor ran something else on that CPU).  The first is replayed as a wait; the
others are not, because the burn meets the replay machine's own contention and steal instead.  The capture counts
involuntary context switches (nivcsw), not their length: each is taken to have cost PREEMPT_S.  Where the kernel
accounts steal, a task's CPU times leave it out; the capture carries the whole machine's busy and stolen CPU time
over the run (META machine_cpu_s, from /proc/stat), so a process that got `cpu` seconds of CPU while a share f of
the CPU time asked for was stolen waited cpu * f / (1 - f) for it (sysinfo.steal_share).  The time not replayed as
a wait is min(off-CPU time, nivcsw * PREEMPT_S + that).

PREEMPT_S is measured, not a scheduler slice: the run delay (/proc/PID/schedstat: runnable, waiting for a CPU) over
the involuntary switches of single-threaded samtools runs on a 2-CPU machine at load average about 3 was 0.1-0.2 ms
per switch (most are wake-up preemptions by short tasks); the 3 ms once assumed took every off-CPU moment of a short
step for preemption.  benchmarks/whatif_accuracy.py measures it on each run.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from iolens import _format as F
from iolens.capture.reader import Process
from iolens.sysinfo import stolen_wait


# the profiler's own cost per process image (loading the larger library, its constructor and the part written at
# exit), measured as profiled over plain /bin/true (docs/design.md): CPU that was the profiler's, not the step's
PROCESS_OVERHEAD_NS = 170_000
PREEMPT_S = 0.0002  # the time one involuntary context switch is taken to have cost (measured: the module's docstring)
BURNER_MIN_S = 0.001  # less CPU than this beyond a process's replayed gaps is left out


@dataclass
class CpuShare:
    share: list[float]          # per process: the on-CPU share of its gaps
    wait: list[float]           # per process: the share of the rest replayed as a wait (not preemption)
    unreplayed_s: float         # CPU time the replay's threads cannot hold (threads without file operations)
    extra: list[float]          # per process: that CPU time


# The ops whose recording resolves a path (an absolute name from the working directory or a directory
# descriptor, a file record looked up or made): they cost the profiler several times a read or a write.
PATH_NAMING_OPS = ("OPEN", "FOPEN", "MKSTEMP", "OPENDIR", "STAT", "ACCESS", "UNLINK", "RENAME", "MKDIR", "RMDIR")


def event_costs(per_event_ns: int, path_ns: int | None = None) -> np.ndarray:
    """The profiler's recording cost of one traced event, per capture op code (the last entry: an unknown op):
    `path_ns` for the ops that name a path (PATH_NAMING_OPS), `per_event_ns` for the others; one figure for all
    without `path_ns`."""
    cost = np.full(len(F.OPS) + 1, per_event_ns, dtype=np.int64)
    if path_ns is not None:
        cost[:len(F.OPS)][np.array([name in PATH_NAMING_OPS for name, _cat in F.OPS])] = path_ns
    return cost


OWN_LOST = 0xFFFFFFFF  # an own_ns saturated: a recorder before the clamp measured a clock step back as 4.3 s


def _own(ev: np.ndarray) -> np.ndarray:
    """The events' own_ns, 0 where saturated (OWN_LOST: no figure survived)."""
    own = ev["own_ns"].astype(np.int64)
    return np.where(own >= OWN_LOST, 0, own)


def own_after(ev: np.ndarray) -> np.ndarray:
    """Per event: the recorder's own time measured after it, up to its thread's next event (that event's
    `own_ns`, EVENT version 3: the recorder's bookkeeping after the call, its event, a flush of the event
    buffer), never more than the gap between the two; 0 for a thread's last event and in older captures."""
    out = np.zeros(len(ev), dtype=np.int64)
    if "own_ns" not in (ev.dtype.names or ()) or not ev["own_ns"].any():
        return out
    order = np.lexsort((ev["start_mono"], ev["tid"]))
    cur, nxt = order[:-1], order[1:]
    same = ev["tid"][cur] == ev["tid"][nxt]
    cur, nxt = cur[same], nxt[same]
    gap = ev["start_mono"][nxt].astype(np.int64) - (ev["start_mono"][cur] + ev["dur_ns"][cur]).astype(np.int64)
    out[cur] = np.minimum(_own(ev)[nxt], np.maximum(gap, 0))
    return out


def before_first(ev: np.ndarray) -> np.ndarray:
    """Per event of one process image: the profiler's time before it when it is its thread's first event, else 0.
    That is the recorder's own time before the first event (its `own_ns`: making the image's part, 0.08-0.14 ms,
    and the first calls' bookkeeping on cold caches) and, before the image's first event, the per-image cost that
    no event holds (PROCESS_OVERHEAD_NS: loading the library, its constructor, what it writes at exit)."""
    out = np.zeros(len(ev), dtype=np.int64)
    if not len(ev):
        return out
    order = np.lexsort((ev["start_mono"], ev["tid"]))
    first = order[np.r_[True, ev["tid"][order][1:] != ev["tid"][order][:-1]]]
    if "own_ns" in (ev.dtype.names or ()):
        out[first] = _own(ev)[first]
    out[int(np.argmin(ev["start_mono"]))] += PROCESS_OVERHEAD_NS
    return out


def _costed(op: np.ndarray, costs: np.ndarray, own: np.ndarray | int) -> np.ndarray:
    """Per event: the figure for its op code (event_costs), or the recorder's own time after it where more."""
    return np.maximum(costs[np.minimum(op.astype(np.int64), len(costs) - 1)], own)


def _as_costs(per_event_ns: int | np.ndarray) -> np.ndarray:
    return per_event_ns if isinstance(per_event_ns, np.ndarray) else event_costs(per_event_ns)


def recording_cost(ev: np.ndarray, per_event_ns: int | np.ndarray) -> np.ndarray:
    """Each event's recording cost: one figure for all, or per op code (event_costs), or what the recorder
    measured of its own time after the event (own_after) where that is more; plus, at each thread's first event,
    the profiler's time before it (before_first).  None when no figure is asked for (all 0: the gaps as
    recorded)."""
    costs = _as_costs(per_event_ns)
    if not costs.any():
        return np.zeros(len(ev), dtype=np.int64)
    return _costed(ev["op"], costs, own_after(ev)) + before_first(ev)


# The most one involuntary switch is taken to have cost when the switches' count says the time off the CPU was
# preemption: GNU sort at load 15-20 on the 2-CPU VM waited 11 s off the CPU over 1,183 such switches, 9.3 ms each.
PREEMPT_MAX_S = 0.010


def cpu_shares(procs: list[Process], thread_proc: list[int], op_thread: np.ndarray, gap: np.ndarray,
               per_event_ns: int | np.ndarray, preempt_s: float = PREEMPT_S, steal: float = 0.0) -> CpuShare:
    """The on-CPU share of each process's replayed gaps (see the module's docstring); `preempt_s`: the time one
    involuntary context switch is taken to have cost while recording; `steal`: the share of the CPU time asked for
    that the hypervisor took meanwhile (steal_share)."""
    gap_s = np.zeros(len(procs))
    if len(gap):
        per_thread = np.bincount(op_thread.astype(np.int64), weights=gap.astype(np.float64),
                                 minlength=len(thread_proc)) / 1e9
        np.add.at(gap_s, np.asarray(thread_proc, dtype=np.int64), per_thread[:len(thread_proc)])
    shares, waits, extra = [], [], []
    for pi, p in enumerate(procs):
        cpu = on_cpu_gap_s(p, per_event_ns)
        share = min(1.0, cpu / gap_s[pi]) if gap_s[pi] > 0 else 0.0
        extra.append(max(0.0, cpu - gap_s[pi]))
        shares.append(share)
        off = max(0.0, gap_s[pi] - cpu)
        stolen = stolen_wait(cpu, steal)
        # the share of its switches that were involuntary, of the time off the CPU, at least: a process that
        # rarely gave the CPU up by itself (GNU sort: 4 voluntary switches against 1,183 involuntary) spent its
        # time off the CPU waiting for one, however long each preemption took (0.2 ms at load 3, whole time
        # slices at load 15, where its 11.7 s of gaps held 0.7 s of CPU and the replay slept 11 s of them again)
        # (never more than PREEMPT_MAX_S a switch: a process that slept once for 0.3 s and was preempted three
        # times did not spend 3/4 of the sleep waiting for a CPU)
        switches = int(p.nivcsw) + int(p.nvcsw)
        by_count = min(off * int(p.nivcsw) / switches, int(p.nivcsw) * PREEMPT_MAX_S) if switches else 0.0
        preempted = min(off, max(int(p.nivcsw) * preempt_s, by_count) + stolen) if share > 0 else 0.0
        waits.append(1.0 - preempted / off if off > 0 else 1.0)
    return CpuShare(shares, waits, float(sum(extra)), extra)


def burners(extra: list[float], starts: list[int], ends: list[int | float], first_thread: int, start_code: int,
            exit_code: int) -> tuple[np.ndarray, np.ndarray, list[int], list[float]]:
    """Threads that burn a process's CPU its replayed threads cannot hold (threads that made no file operation,
    such as an aligner's workers): as many as that CPU needs over the process's recorded life, each burning its
    share of it from the process's start, then ending (the process ends when they have).  The plan rows (as
    build_plan's: t, dur, offset, size, op, thread, obj, flags, seq), their gaps, each thread's process and its
    on-CPU share."""
    rows: list[list[int]] = []
    gaps: list[int] = []
    procs: list[int] = []
    shares: list[float] = []
    for pi, cpu in enumerate(extra):
        life = int(ends[pi]) - int(starts[pi])
        if cpu < BURNER_MIN_S or life <= 0:
            continue
        n = int(np.ceil(cpu / (life / 1e9)))
        for _ in range(n):
            th = first_thread + len(procs)
            rows += [[int(starts[pi]), 0, 0, 0, start_code, th, pi, 0, -1],
                     [int(ends[pi]), 0, 0, 0, exit_code, th, 0, 0, 2]]
            gaps += [0, life]
            procs.append(pi)
            shares.append(min(1.0, cpu / n / (life / 1e9)))
    return (np.array(rows, dtype=np.int64).reshape(-1, 9), np.array(gaps, dtype=np.int64), procs, shares)


def on_cpu_gap_s(p: Process, per_event_ns: int | np.ndarray) -> float:
    """CPU seconds the process image spent outside its traced calls, less the profiler's recording cost (per event
    and per process)."""
    if not p.finalized:
        return 0.0
    ut = max(0, int(p.utime_ns) - int(p.utime_start_ns))
    st = max(0, int(p.stime_ns) - int(p.stime_start_ns))
    ev = p.events
    if ev is None or not len(ev):
        return max(0.0, (ut + st - PROCESS_OVERHEAD_NS) / 1e9)
    in_calls = int(ev["dur_ns"].astype(np.int64).sum())
    # the image's own cost (PROCESS_OVERHEAD_NS) is in its events' recording cost when one is asked for
    recording = int(recording_cost(ev, per_event_ns).sum()) if _as_costs(per_event_ns).any() else PROCESS_OVERHEAD_NS
    return max(0.0, (ut + max(0, st - in_calls) - recording) / 1e9)


def startup_cpu_ns(p: Process, before: Process | None) -> int:
    """CPU time an image took to start (fork, exec, dynamic loading) before the profiler's constructor read the
    process's CPU times: those counters, less the end counters of the image it exec'ed from (`before`), else all
    of them (a new process's counters start at its fork)."""
    start = int(p.utime_start_ns) + int(p.stime_start_ns)
    prev = int(before.utime_ns) + int(before.stime_ns) if before is not None and before.finalized else 0
    return max(0, start - prev)


def recorded_threads(a: np.ndarray, gap: np.ndarray, waited: np.ndarray, nthreads: int, t0: int,
                     none_codes: set[int], wait_codes: set[int]) -> list[dict[str, float]]:
    """Per replayed thread, the recording's own timeline in the replay's terms: begin and end (seconds since the
    run began), its compute gaps, its time in replayed calls (busy) and in pipe calls and waits for children (dep;
    `waited`: per row, the time a wait for a child took).  The rows `a` are grouped by thread."""
    out = [{"begin": 0.0, "end": 0.0, "gap": 0.0, "busy": 0.0, "dep": 0.0} for _ in range(nthreads)]
    if not len(a):
        return out
    th = a[:, 5]
    dur = a[:, 1].astype(np.float64) / 1e9
    is_none = np.isin(a[:, 4], list(none_codes))
    is_dep = np.isin(a[:, 4], list(wait_codes))
    first = np.nonzero(np.r_[True, th[1:] != th[:-1]])[0]
    begin = np.minimum.reduceat(a[:, 0], first)
    end = np.maximum.reduceat(a[:, 0] + a[:, 1], first)
    sums = {k: np.bincount(th, weights=w, minlength=nthreads) for k, w in
            (("gap", gap.astype(np.float64) / 1e9), ("busy", np.where(~is_none & ~is_dep, dur, 0.0)),
             ("dep", np.where(is_dep, dur, 0.0) + waited.astype(np.float64) / 1e9))}
    for k, t in enumerate(th[first]):
        o = out[int(t)]
        o["begin"], o["end"] = float(begin[k] - t0) / 1e9, float(end[k] - t0) / 1e9
        for name, v in sums.items():
            o[name] = float(v[int(t)])
    return out


def breakdown(recorded: list[dict[str, float]], replayed: list[dict[str, float]],
              thread_cpu: list[float]) -> dict[str, float]:
    """Sums over threads, recorded against replayed: where a replay's error came from.  busy: in replayed calls;
    gap: in compute gaps (cpu: the part of it burnt); dep: waiting for other threads (pipes, children); late: how
    far threads fell behind (a burn slowed by other work); end: the last thread's end."""
    def tot(rows: list[dict[str, float]], k: str) -> float:
        return float(sum(r.get(k, 0.0) for r in rows))

    return {"rec_busy": tot(recorded, "busy"), "rep_busy": tot(replayed, "busy"),
            "rec_gap": tot(recorded, "gap"), "rep_gap": tot(replayed, "gap"), "rep_cpu": float(sum(thread_cpu)),
            "rec_dep": tot(recorded, "dep"), "rep_dep": tot(replayed, "dep"), "rep_late": tot(replayed, "late"),
            "rec_end": max((r["end"] for r in recorded), default=0.0),
            "rep_end": max((r.get("end", 0.0) for r in replayed), default=0.0)}


def less_recording_cost(a: np.ndarray, gap: np.ndarray, event_times: dict[int, np.ndarray],
                        event_ops: dict[int, np.ndarray], costs: np.ndarray,
                        event_own: dict[int, np.ndarray] | None = None,
                        event_before: dict[int, np.ndarray] | None = None) -> tuple[np.ndarray, int]:
    """The gaps without the profiler's recording cost: each gap held the recording of the thread's events since
    its previous op (that op's own, and those of the events not replayed), at `costs[op]` each (event_costs), or
    at the recorder's own time measured after each (`event_own`: own_after, in the same order) where more; and
    the profiler's time before the events up to and including the op (`event_before`: before_first)."""
    if not costs.any() or not len(a):
        return gap, 0
    out = gap.copy()
    for th, times in event_times.items():
        sel = np.nonzero(a[:, 5] == th)[0]
        if not len(sel):
            continue
        cum = np.searchsorted(times, a[sel, 0], side="left")
        each = _costed(event_ops[th], costs, event_own.get(th, 0) if event_own else 0)
        spent = np.concatenate([[0], np.cumsum(each)])[cum]
        if event_before and th in event_before:
            spent = spent + np.concatenate([[0], np.cumsum(event_before[th])])[
                np.searchsorted(times, a[sel, 0], side="right")]
        out[sel] = np.maximum(gap[sel] - np.diff(spent, prepend=0), 0)
    return out, int((gap - out).sum())
