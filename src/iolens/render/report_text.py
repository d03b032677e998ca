"""The report in the terminal: the breakdown bar, mounts, top files, phases and advice (rich)."""

from __future__ import annotations

from rich.console import Console
from rich.text import Text

from iolens.analysis.model import NO_FILE, MountRow, Report
from iolens.analysis.breakdown import BREAKDOWN, LABELS
from iolens.analysis.files import top_files
from iolens.analysis.processes import chain_rows
from iolens.names import shown_text
from iolens.render.terminal import Col, FitTable
from iolens.sysinfo import steal_lines
from iolens.units import exit_text, human_bytes, human_seconds, pct

NO_ADVICE = "no advice: nothing in this step points at storage"  # said by report (terminal, page) and profile

COLORS = {
    "tiny_read": "red", "small_read": "yellow", "streaming_read": "green", "random_read": "magenta",
    "tiny_write": "bright_red", "small_write": "bright_yellow", "streaming_write": "bright_green",
    "random_write": "bright_magenta", "metadata": "cyan", "sync": "blue", "pipe_wait": "white",
    "compute": "grey50",
}
# each category's block where there is no colour (a file, a pipe, NO_COLOR): one character per category, so a
# reader can match the bar's segments to the legend's rows
GLYPHS = dict(zip(BREAKDOWN, "█▓▒░#=+*%o:."))


def has_colour(console: Console) -> bool:
    """Whether `console` writes colour (a terminal, without NO_COLOR)."""
    return console.color_system is not None and not console.no_color


def swatch(category: str, colour: bool, n: int = 1) -> Text:
    """`n` blocks of a category: coloured blocks, or its own character (`GLYPHS`) where there is no colour."""
    return Text("█" * n, style=COLORS[category]) if colour else Text(GLYPHS[category] * n)


def breakdown_bar(breakdown: dict[str, float], width: int = 72, *, colour: bool = True) -> Text:
    """One line of blocks, each category's length proportional to its time (`swatch`)."""
    total = sum(breakdown.values())
    bar = Text()
    if total <= 0:
        return bar
    used = 0
    acc = 0.0
    for c in BREAKDOWN:
        acc += breakdown.get(c, 0.0)
        end = round(width * acc / total)
        if end > used:
            bar.append_text(swatch(c, colour, end - used))
            used = end
    return bar


def storage_mounts(r: Report) -> list[MountRow]:
    """The mounts of the run: the time on descriptors with no file record is no mount (`unattributed_line`)."""
    return [m for m in r.mounts if m.mount != NO_FILE]


def unattributed_line(r: Report) -> str | None:
    """What the mounts leave out: I/O time on descriptors iolens kept no file record for."""
    s = sum(m.time_s for m in r.mounts if m.mount == NO_FILE)
    if s <= 0:
        return None
    return (f"{human_seconds(s)} of I/O time is on no mount above: calls on descriptors iolens kept no file record "
            "for (inherited from outside the run, or made after a process outgrew its file records); the totals "
            "count it")


def integrity_lines(r: Report) -> list[str]:
    """The partial-capture banner and the notes on what the capture misses or holds too much of (OVERFLOW, detached
    processes, the hypervisor's steal), shared by the terminal and HTML reports."""
    cap, out = r.capture, []
    if cap["partial"]:
        at = "" if cap["partial_at_byte"] is None else f" at byte {cap['partial_at_byte']:,}"
        out.append(f"PARTIAL CAPTURE{at}: {cap['partial_reason']}. Processes, files and I/O after the cut are "
                   "missing; read every number as a lower bound.")
    n = cap["overflow_processes"]
    if n:
        out.append(f"note: {n} process image(s) outgrew their file records (OVERFLOW): files past --max-files are "
                   "aggregated per directory, and calls made once the capture could not grow are not attributed "
                   "to files.")
    running = cap["running_at_save"]
    if running:
        out.append(f"note: {len(running)} process(es) were still running when the capture was saved (detached, "
                   f"e.g. a daemon or `cmd &`: pid {', '.join(map(str, running[:5]))}): their I/O after that "
                   "moment is not captured.")
    out += [f"note: {line}" for line in steal_lines(
        cap["steal_share"], "the compute and call times here include it; replay and predict take it out")]
    return out


def _tbl(title: str, cols: list[tuple]) -> FitTable:
    """Columns are (header, justify[, drop]): the first one is a path or name that is ellipsized to fit;
    columns with a drop rank are left out, highest first, when the terminal is too narrow for them."""
    spec = [Col(c[0], c[1], drop=c[2] if len(c) > 2 else 0,
                flex=("right" if c[0] == "process" else "left") if i == 0 and c[0] else "")
            for i, c in enumerate(cols)]
    return FitTable(spec, title=title, title_justify="left", show_edge=False, pad_edge=False, title_style="bold")


STDIO_OPS = ("FREAD", "FWRITE", "FGETS", "FPUTS", "FGETC", "FPUTC", "GETDELIM", "FPRINTF", "FSCANF", "STDIO_FILL",
             "STDIO_DRAIN")


def stdio_note(ops: dict[str, int]) -> str | None:
    """The one line that says how buffered stdio calls are classed (docs/report.md), when there were any."""
    n = sum(ops.get(o, 0) for o in STDIO_OPS)
    if not n:
        return None
    return (f"stdio calls ({n:,}) are library calls, not requests to storage: they are classed by the buffer "
            "fills and flushes they made the kernel do (captures from older iolens versions class them by the "
            "calls), and their time is counted in full.")


def render_report_text(r: Report, console: Console, *, top: int = 10, max_procs: int = 25) -> None:
    cap, tot = r.capture, r.totals
    console.print(shown_text(f"iolens report: {' '.join(cap['command'])}", style="bold"))
    status = exit_text(cap["exit_status"], cap.get("exit_signal"))
    console.print(f"  wall {human_seconds(tot['wall_s'])}, exit {status}, {tot['processes']} process image(s), "
                  f"{tot['files']} file(s), {human_bytes(tot['bytes_read'])} read, "
                  f"{human_bytes(tot['bytes_written'])} written")
    cov = tot["coverage"]
    console.print(f"  attributed coverage: {'unknown' if cov is None else f'{100 * cov:.1f}%'} of the kernel's "
                  f"{human_bytes(tot['kernel_read'])} read + {human_bytes(tot['kernel_written'])} written")
    for line in integrity_lines(r):
        console.print(shown_text(f"  {line}", style="bold red" if line.startswith("PARTIAL") else "yellow"))
    for prob in cap["problems"]:
        console.print(shown_text(f"  warning: {prob}", style="yellow"))

    own = tot["own_s"]
    console.print()
    console.print(Text("Where the time went", style="bold"),
                  Text(f" (process time {human_seconds(own)}, summed over processes, excluding waits for children)"))
    colour = has_colour(console)
    console.print(Text("  ") + breakdown_bar(r.breakdown, colour=colour))
    t = _tbl("", [("", "left"), ("category", "left"), ("time", "right"), ("share", "right")])
    for c in BREAKDOWN:
        v = r.breakdown[c]
        if v > 0:
            t.add_row(swatch(c, colour, 2), LABELS[c], human_seconds(v), pct(v, own))
    t.add_row("", Text("I/O (storage)", style="bold"), human_seconds(tot["io_s"]), pct(tot["io_s"], own))
    console.print(t)
    note = stdio_note(r.ops)
    if note:
        console.print(Text(f"  {note}", style="dim"))

    if storage_mounts(r):
        console.print()
        t = _tbl("Storage", [("mount", "left"), ("kind", "left", 3), ("fs", "left", 2), ("read", "right"),
                             ("written", "right"), ("calls", "right", 4), ("time", "right"), ("files", "right", 1),
                             ("temp", "right", 5)])
        for m in storage_mounts(r):
            t.add_row(shown_text(m.mount), shown_text(m.storage), shown_text(m.fstype or "-"),
                      human_bytes(m.bytes_read),
                      human_bytes(m.bytes_written), f"{m.reads + m.writes + m.metadata_ops:,}",
                      human_seconds(m.time_s), str(m.files),
                      human_bytes(m.temp_bytes) if m.temp_files else "-")
        console.print(t)
        unseen = unattributed_line(r)
        if unseen:
            console.print(Text(f"  {unseen}", style="dim"))

    files = top_files(r.files)[:top]
    if files:
        console.print()
        t = _tbl(f"Top files by I/O time ({len(files)} of {tot['files']})",
                 [("file", "left"), ("mount", "left", 2), ("read", "right"), ("written", "right"),
                  ("calls", "right", 3), ("size", "left", 5), ("pattern", "left", 4), ("time", "right"),
                  ("note", "left", 1)])
        for f in files:
            note = ""
            if f.temporary:
                note = f"temp {human_seconds(f.lifetime_s)}"
            elif f.times_read and f.times_read >= 1.5:
                note = f"read {f.times_read:.1f}x"
            t.add_row(shown_text(f.path), shown_text(f.mount), human_bytes(f.bytes_read), human_bytes(f.bytes_written),
                      f"{f.reads + f.writes:,}", f.dominant_size, f.pattern, human_seconds(f.time_s), note)
        console.print(t)

    if r.processes:
        console.print()
        t = _tbl("Phases (process tree)", [("process", "left"), ("start", "right", 2), ("wall", "right"),
                                           ("cpu", "right", 3), ("I/O", "right"), ("read", "right"),
                                           ("written", "right"), ("exit", "right", 1)])
        chains = chain_rows(r.processes)
        for p in chains[:max_procs]:
            t.add_row(shown_text("  " * p.depth + f"{p.label} [{p.pid}]"), human_seconds(p.start_s),
                      human_seconds(p.wall_s),
                      human_seconds(p.cpu_s), human_seconds(p.io_s), human_bytes(p.bytes_read),
                      human_bytes(p.bytes_written), exit_text(p.exit_status, p.exit_signal, short=True))
        console.print(t)
        if len(chains) > max_procs:
            console.print(f"  … and {len(chains) - max_procs} more processes (--json has all)")

    console.print()
    console.print(Text("Advice", style="bold"))
    if not r.advice:
        console.print(f"  {NO_ADVICE} (iolens report --thresholds lists what iolens checks)")
    for i, a in enumerate(r.advice, 1):
        stake = "" if a.time_at_stake_s is None else f"  [up to {human_seconds(a.time_at_stake_s)} at stake" + (
            f", {100 * a.share:.0f}% of process time]" if a.share is not None else "]")
        style = {"high": "bold red", "medium": "yellow", "low": "default", "info": "cyan"}[a.severity]
        console.print(Text(f"  {i}. ", style=style) + shown_text(a.title, style=style) + Text(stake))
        for e in a.evidence:
            console.print(shown_text(f"       - {e}"))
        console.print(shown_text(f"     fix: {a.fix}"))
