"""Advice about what the capture could not see (partial coverage, a cut capture), and about runs whose
storage is not the bottleneck."""

from __future__ import annotations

from iolens.analysis.advice_kit import _make, _own
from iolens.analysis.model import Advice, ProcRow, Report
from iolens.sysinfo import STEAL_NOTE
from iolens.units import human_bytes, human_seconds

def _partial_coverage(r: Report, cov: float, unseen: int) -> Advice:
    """Coverage is low because the capture was cut: say that, not mmap or static binaries."""
    cap = r.capture
    at = "" if cap.get("partial_at_byte") is None else f" at byte {cap['partial_at_byte']:,}"
    ev = [f"the capture is partial{at}: {cap.get('partial_reason') or 'it was cut short'}",
          f"the images before the cut still carry the kernel's counters, which include the I/O of children whose "
          f"records are missing: {human_bytes(unseen)} ({100 * (1 - cov):.0f}%) cannot be attributed"]
    fix = ("Read this report as partial: processes, files and time after the cut are missing. Re-run the profile "
           "to get a whole capture (keep the disk holding the capture from filling up, and let iolens profile "
           "finish merging)")
    return _make(r, "low_coverage", f"the capture is partial: {100 * (1 - cov):.0f}% of the kernel's I/O bytes are "
                 "in records past the cut", None, ev, fix,
                 {"coverage": cov, "unseen_bytes": unseen, "partial": True, "processes": []}, severity="medium")


def _why_unseen(p: ProcRow) -> list[str]:
    """What a process did that the interposer does not see as calls."""
    why = []
    if p.overflow:
        why.append("its records outgrew --max-files or the capture's room (OVERFLOW): later calls were aggregated "
                   "per directory or not attributed")
    if p.mmap_bytes:
        why.append(f"{human_bytes(p.mmap_bytes)} memory-mapped (page faults are not calls)")
    if p.untracked_ops:
        why.append(f"{p.untracked_ops:,} calls on descriptors it could not name")
    if not p.bytes_read and not p.bytes_written and not p.files:
        why.append("no calls seen at all: statically linked, or I/O by raw system calls")
    return why


def low_coverage(r: Report, th: dict[str, float]) -> Advice | None:
    """Part of the I/O was not seen: say what and where."""
    cov = r.totals["coverage"]
    if cov is None or cov >= th["coverage_min"]:
        return None
    kr, kw = r.totals["kernel_read"], r.totals["kernel_written"]
    seen = min(r.totals["bytes_read"], kr) + min(r.totals["bytes_written"], kw)
    unseen = kr + kw - seen
    if unseen < th["coverage_bytes"]:
        return None
    cap = r.capture
    if cap.get("partial"):
        return _partial_coverage(r, cov, unseen)
    ev = [f"the kernel counted {human_bytes(kr)} read and {human_bytes(kw)} written; iolens attributed "
          f"{100 * cov:.0f}% of that to calls it saw ({human_bytes(unseen)} unseen)"]
    gaps = []
    for p in r.processes:
        gap = max(0, p.kernel_read - p.bytes_read) + max(0, p.kernel_written - p.bytes_written)
        if gap > 0:
            gaps.append((gap, p))
    gaps.sort(key=lambda g: -g[0])
    stake = 0.0
    for gap, p in gaps[:5]:
        why = _why_unseen(p)
        ev.append(f"{p.name} [{p.pid}]: {human_bytes(gap)} unseen" + (f" ({'; '.join(why)})" if why else
                                                                     " (raw system calls, mmap or a static binary)"))
    for gap, p in gaps:
        stake += p.breakdown["compute"]
    if r.totals["mmap_bytes"]:
        ev.append(f"{human_bytes(r.totals['mmap_bytes'])} of files were memory-mapped in all")
    fix = ("Read the breakdown as a lower bound for I/O: unseen I/O is counted as compute in these processes. "
           "For a statically linked tool, use a dynamically linked build (the distribution's package) so iolens "
           "can see its calls; memory-mapped input (indexes) is read by page faults, which only the kernel counts")
    return _make(r, "low_coverage", f"only {100 * cov:.0f}% of the kernel's I/O bytes were attributed to calls",
                 stake if gaps else None, ev, fix, {"coverage": cov, "unseen_bytes": unseen,
                                                    "processes": [p.pid for _g, p in gaps[:20]]}, severity="medium")


SHORT_STEP_S = 1.0  # a step of less process time than this: too short for storage or CPU choices to matter


def storage_not_bottleneck(r: Report, th: dict[str, float]) -> Advice | None:
    """I/O is so small a share of the time that no storage upgrade will help."""
    share = r.totals["io_share"]
    if share is None or share >= th["io_bound_share"]:
        return None
    io = r.totals["io_s"]
    comp = r.breakdown["compute"]
    ev = [f"storage I/O took {human_seconds(io)} of {human_seconds(_own(r))} process time ({100 * share:.0f}%); "
          f"compute took {human_seconds(comp)} ({100 * comp / _own(r):.0f}%)" if _own(r) else "no process time"]
    if r.breakdown["pipe_wait"]:
        ev.append(f"waiting on pipes between processes: {human_seconds(r.breakdown['pipe_wait'])}")
    cov = r.totals["coverage"]
    if r.capture.get("partial"):
        ev.append("caveat: the capture is partial, so the I/O after the cut is not in these numbers")
    elif cov is not None and cov < th["coverage_min"]:
        ev.append(f"caveat: only {100 * cov:.0f}% of the I/O bytes were seen, so the I/O share may be higher")
    busiest = sorted(r.processes, key=lambda p: -p.cpu_s)[:3]
    ev += [f"{p.name} [{p.pid}]: {human_seconds(p.cpu_s)} CPU" for p in busiest if p.cpu_s > 0]
    fix = (f"No storage upgrade will help: even infinitely fast storage saves at most {human_seconds(io)}. "
           "Spend on CPU instead (more threads, e.g. -t/-@, or a faster machine), and keep the cheapest storage")
    stolen = r.capture.get("steal_share") or 0.0
    if stolen >= STEAL_NOTE:
        ev.append(f"the hypervisor took {100 * stolen:.0f}% of the CPU time the machine asked for (steal)")
        fix += ("; the virtual machine's CPUs were shared: on a burstable instance check its CPU credits, or choose "
                "one with dedicated CPUs")
    if _own(r) * th["scale_to"] < SHORT_STEP_S:  # (scale_to: a subsample stands for its full input)
        fix = (f"Nothing to change: the step took {human_seconds(_own(r))} of process time, too short for the "
               "choice of storage or CPU to matter; profile a whole run (the real input) to see where its time goes")
    return _make(r, "storage_not_bottleneck",
                 f"storage is not the bottleneck: I/O is {100 * share:.0f}% of process time", io, ev, fix,
                 {"io_s": io, "io_share": share}, severity="info")
