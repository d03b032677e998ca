"""Terminal rendering of the end-of-run summary (RunSummary -> text)."""

from __future__ import annotations

from rich.console import Console
from rich.text import Text

from iolens.analysis.model import ProcSummary, RunSummary
from iolens.names import shown_text
from iolens.render.terminal import Col, FitTable
from iolens.render.terminal import console as terminal
from iolens.units import exit_text, human_bytes, human_seconds, pct


STYLE = {"title_justify": "left", "show_edge": False, "pad_edge": False}


def summary_console() -> Console:
    """stderr, laid out as `terminal.console` lays out stdout."""
    return terminal(stderr=True)


def _chain_rows(tree: list[ProcSummary]) -> list[tuple[ProcSummary, list[ProcSummary]]]:
    """One row per process: an exec chain's images (`bash → samtools sort`) folded into its first image's row."""
    by_index = {p.index: p for p in tree}
    nxt = {x.exec_from: x for x in tree if x.exec_from is not None}
    out: list[tuple[ProcSummary, list[ProcSummary]]] = []
    for p in tree:
        if p.exec_from is not None and p.exec_from in by_index:
            continue
        imgs = [p]
        while imgs[-1].index in nxt:
            imgs.append(nxt[imgs[-1].index])
        out.append((p, imgs))
    return out


def render_summary(s: RunSummary, console: Console, *, max_tree: int = 25) -> None:
    cmd = " ".join(s.command)
    status = exit_text(s.exit_status, s.exit_signal)
    console.print(shown_text(f"iolens: {cmd}", style="bold"))
    console.print(
        f"  wall {human_seconds(s.wall_s)}, exit {status}, {s.processes} process image(s), "
        f"{s.files} file(s)"
    )
    if s.own_s:
        t = FitTable([Col("category", "left"), Col("time"), Col("share")],
                     title="Where the time went (summed over processes, excluding waits for children)", **STYLE)
        for cat, v in s.cat_wall_s.items():
            if v > 0:
                t.add_row(f"I/O {cat}", human_seconds(v), pct(v, s.own_s))
        if s.stream_s > 0:
            t.add_row("waiting on pipes/sockets", human_seconds(s.stream_s), pct(s.stream_s, s.own_s))
        t.add_row("compute and other", human_seconds(s.compute_s), pct(s.compute_s, s.own_s))
        t.add_row(Text("process time", style="bold"), human_seconds(s.own_s), "100%")
        console.print(t)
    cov = "unknown (no kernel counters)" if s.coverage is None else f"{100 * s.coverage:.1f}%"
    console.print(
        f"  read {human_bytes(s.bytes_read)}, written {human_bytes(s.bytes_written)}; "
        f"attributed coverage {cov} of the kernel's {human_bytes(s.kernel_read)} read + "
        f"{human_bytes(s.kernel_written)} written"
    )
    if s.coverage is not None and s.coverage < 0.9:
        console.print(Text("  ") + Text("warning:", style="yellow")
                      + Text(" part of the I/O was not seen (static binary, raw syscalls or mmap); "
                             "the breakdown covers only what was attributed"))
    if s.top_files:
        t = FitTable([Col("file", "left", flex="left"), Col("fs", "left", drop=2), Col("read"), Col("written"),
                      Col("ops", drop=1), Col("time")], title="Top files by I/O time", **STYLE)
        for f in s.top_files:
            t.add_row(shown_text(f.path), shown_text(f"{f.fstype} {f.mount}"), human_bytes(f.bytes_read),
                      human_bytes(f.bytes_written), str(f.reads + f.writes), human_seconds(f.time_s))
        console.print(t)
    if s.temp_files:
        total = sum(f.bytes_written for f in s.temp_files)
        console.print(f"  temp files: {len(s.temp_files)} created and deleted, {human_bytes(total)} written")
        for f in s.temp_files[:5]:
            console.print(shown_text(f"    {f.path} ({human_bytes(f.bytes_written)}, lived "
                               f"{human_seconds(f.lifetime_s)}, {f.fstype})"))
    if s.tree:
        t = FitTable([Col("process", "left", flex="right"), Col("start", drop=2), Col("wall"), Col("cpu", drop=3),
                      Col("I/O wall"), Col("read"), Col("written"), Col("exit", drop=1)], title="Processes", **STYLE)
        rows = _chain_rows(s.tree)
        for p, imgs in rows[:max_tree]:
            last = imgs[-1]
            wall = max(x.start_s + x.wall_s for x in imgs) - p.start_s
            t.add_row(shown_text("  " * p.depth + f"{' → '.join(x.name for x in imgs)} [{p.pid}]"),
                      human_seconds(p.start_s),
                      human_seconds(wall), human_seconds(sum(x.cpu_s for x in imgs)),
                      human_seconds(sum(x.io_wall_s for x in imgs)), human_bytes(sum(x.bytes_read for x in imgs)),
                      human_bytes(sum(x.bytes_written for x in imgs)),
                      exit_text(last.exit_status, last.exit_signal, short=True))
        console.print(t)
        if len(rows) > max_tree:
            console.print(f"  … and {len(rows) - max_tree} more processes (iolens parse shows all)")
    for prob in s.problems:
        console.print(shown_text(f"  warning: {prob}", style="yellow"))
