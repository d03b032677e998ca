"""Advice about a tool's own settings, read from its command line: the compression level and codec of a
compressor that spends its time computing, and the threads of a tool run on fewer threads than the machine has.
The options are named from the one table of tools' options (analysis/tool_options.py)."""

from __future__ import annotations

from iolens.analysis import tool_options as T
from iolens.analysis.advice_kit import _make, _worth_hits
from iolens.analysis.model import Advice, ProcRow, Report
from iolens.units import human_seconds


def _own_s(p: ProcRow) -> float:
    return p.own_s or p.wall_s or 0.0


def _compute(p: ProcRow) -> float:
    """Its computing time: the wall time outside I/O, at most the CPU time it used."""
    comp = p.breakdown.get("compute", 0.0)
    return min(comp, p.cpu_s) if p.cpu_s > 0 else comp


def _level_text(opts: T.ToolOptions, n: int) -> str:
    return f"-{n}" if opts.level == "-#" else f"{opts.level} {n}"


def compression(r: Report, th: dict[str, float]) -> Advice | None:
    """A compressor computing most of its time at a high level, or single-threaded where a threaded codec exists."""
    cpus = int(r.capture.get("cpus") or 1)
    hits = []
    for p in r.processes:
        opts = T.options(p.name)
        if p.name not in T.COMPRESSORS or opts is None:
            continue
        comp = _compute(p)
        if not _own_s(p) or comp < th["compress_cpu_share"] * _own_s(p):
            continue
        lvl = T.level(p.argv, opts)
        high = lvl is not None and opts.level_high is not None and lvl >= opts.level_high
        single = opts.threads is None or (T.threads(p.argv, opts) or cpus) < min(cpus, 4)
        if high or (single and cpus > 1):
            hits.append((comp, p, opts, lvl, high, single and cpus > 1))
    t = _worth_hits(r, th, hits)
    if t is None:
        return None
    comp, p, opts, lvl, high, single = hits[0]
    ev = [f"{p.name} [{p.pid}] ({' '.join(p.argv[:6])}) computed for {human_seconds(comp)} of "
          f"{human_seconds(_own_s(p))} ({100 * comp / _own_s(p):.0f}%): compressing, not waiting on storage"]
    fixes = []
    if high and lvl is not None and opts.level_default is not None:
        ev.append(f"level {lvl} (the default is {opts.level_default})")
        fixes.append(f"use the default level ({_level_text(opts, opts.level_default)}) instead of "
                     f"{_level_text(opts, lvl)}: the highest levels take several times the CPU for a few % smaller "
                     "output; -1 for intermediate files that are read once")
    if single:
        ev.append(f"{p.name} ran on one thread on a machine with {cpus} CPUs")
        if p.name == "gzip":
            fixes.append(f"compress on {min(cpus, 8)} threads with the same gzip format: `bgzip -@ {min(cpus, 8)}` "
                         f"(BGZF: indexable by tabix/samtools, readable by zcat) or `pigz -p {min(cpus, 8)}`")
        elif opts.threads:
            fixes.append(f"give it threads: `{p.name} {opts.threads} {min(cpus, 8)}`")
    fix = "; ".join(fixes)
    fix = fix[0].upper() + fix[1:] + ("; `iolens compress FILE` measures the codecs and levels on your data" if fix
                                      else "")
    title = (f"{p.name} at level {lvl} spent {human_seconds(comp)} compressing" if high
             else f"{p.name} spent {human_seconds(comp)} compressing on one thread")
    return _make(r, "compression", title, t, ev, fix,
                 {"seconds": t, "tool": p.name, "level": lvl, "threads_cpus": cpus, "pids": [h[1].pid for h in hits]})


def threads(r: Report, th: dict[str, float]) -> Advice | None:
    """A tool that takes a thread option, computing most of its time on at most half the machine's CPUs."""
    cpus = int(r.capture.get("cpus") or 1)
    if cpus < 2:
        return None
    hits = []
    for p in r.processes:
        opts = T.options(p.name)
        if opts is None or opts.threads is None or p.name in T.COMPRESSORS:
            continue  # compressors: the compression rule
        used = T.threads(p.argv, opts)
        comp = _compute(p)
        if used is None or 2 * used > cpus or not _own_s(p) or comp < th["threads_share"] * _own_s(p):
            continue
        saved = comp * (1 - used / cpus)  # the compute time if it spread over every CPU: an upper bound
        hits.append((saved, comp, used, p, opts))
    t = _worth_hits(r, th, hits)
    if t is None:
        return None
    ev = [f"{p.name} [{p.pid}]: computed for {human_seconds(comp)} of {human_seconds(_own_s(p))} on "
          f"{used} thread(s); the machine has {cpus} CPUs" for _s, comp, used, p, _o in hits[:5]]
    _s, _c, used, p, opts = hits[0]
    n = cpus - 1 if opts.threads == "-@" else cpus
    fix = (f"Run {p.name} on the machine's {cpus} CPUs: `{p.name} {opts.threads} {n} ...`"
           + (" (-@ counts the threads added to the main one)" if opts.threads == "-@" else "")
           + "; storage is not what it waits for, so a faster disk would not help")
    if opts.memory:
        fix += f" (with {opts.threads}, {opts.memory} is per thread: the memory used grows with it)"
    return _make(r, "threads", f"{p.name} computed on {used} of {cpus} CPUs", t, ev, fix,
                 {"seconds": t, "tool": p.name, "threads": used, "cpus": cpus, "pids": [h[3].pid for h in hits]})
