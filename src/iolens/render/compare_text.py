"""Terminal rendering of a compare report (report dict -> rich tables)."""

from __future__ import annotations

from typing import Any

from rich.cells import cell_len
from rich.console import Console
from rich.padding import Padding
from rich.table import Table
from rich.text import Text

from iolens.names import shown, shown_text
from iolens.render.terminal import Col, FitTable, plain
from iolens.units import human_bytes, human_seconds


def _pm(mean: float | None, sd: float | None) -> str:
    if mean is None:
        return "-"
    return human_seconds(mean) + ("" if sd is None else f" ± {human_seconds(sd)}")


def _pct(v: float | None) -> str:
    return "-" if v is None else f"{100 * v:+.1f}%"


def _p(p: float | None) -> str:
    if p is None:
        return "-"
    return "< 0.001" if p < 0.001 else f"{p:.3f}"


STYLE: dict[str, Any] = {"show_edge": False, "pad_edge": False, "title_justify": "left"}

CACHE_WORDS = {"warm": "inputs may already be in memory (the page cache) from earlier runs",
               "cold": "the inputs are evicted from memory before every run, so they are read from storage"}


def verdict_key(s: dict[str, Any]) -> str:
    """What the verdict words and their bracketed interval mean, said once for the page and the terminal."""
    margin = s.get("margin_pct", 5)
    conf = 100 * (1 - s.get("alpha", 0.05))
    return (f"faster / slower: the {conf:g}% interval of the time ratio leaves out \"no change\"; "
            f"no difference larger than {margin:g}%: equivalent within that margin (two one-sided tests); "
            "undecided: neither, more runs needed; the figure: the difference of the runs' geometric means (the "
            "table's vs baseline compares medians, so the two can differ); [low, high]: the range that difference "
            f"lies in ({conf:g}% confidence; {100 - 2 * (100 - conf):g}% for equivalence)")


def column_key(s: dict[str, Any]) -> dict[str, str]:
    """The statistics columns that are not plain words, each with its meaning."""
    return {"vs baseline": "median time relative to the baseline configuration",
            "p": "two-sided test of the difference against the baseline (small: unlikely to be chance)",
            "95% CI": "the range the true median lies in, with 95% confidence",
            "mean ± SD": "mean and standard deviation of the runs",
            "CV": "standard deviation / mean (coefficient of variation), how much the runs vary",
            "strategy": "direct (the command reads and writes the placement itself) or stage (inputs copied in, "
                        "the command run, outputs copied out)",
            f"cache {s.get('cache', '')}": CACHE_WORDS.get(s.get("cache", ""), "")}


PER_RUN_KEY = {
    "storage write / read": "bytes the storage devices wrote and read for the command (kernel counters)",
    "bytes read / written": "bytes the command asked to read and write, whether storage or memory served them",
    "inputs cached": "share of the input files' bytes in memory just before a run (-: not known, as when there are "
                     "no input files or they are empty)"}


def key_line(keys: dict[str, str]) -> str:
    """One footnote line: every term followed by its meaning."""
    return "; ".join(f"{k}: {v}" for k, v in keys.items() if v)


def timed(results: list[dict[str, Any]]) -> str:
    """What a configuration's wall time covers, by the strategies that were actually run."""
    strategies = {r["strategy"] for r in results}
    if strategies == {"direct"}:
        return "the command"
    if strategies == {"stage"}:
        return "copy-in + run + copy-out"
    return "direct: the command; stage: copy-in + run + copy-out"


def _by_configuration(title: str, first: str, configs: list[str], rows: list[list[Any]], width: int) -> Table:
    """A table with one column per configuration: long names are folded in the header (at their spaces
    first) so that every configuration keeps its column and no data row wraps."""
    values = max([len(str(v)) for row in rows for v in row[1:]] + [1])
    label = max([cell_len(plain(row[0])) for row in rows] + [len(first)])
    label = min(label, 24)
    sep = 3
    room = (width - label - sep * len(configs)) // max(1, len(configs))
    col = max(values, min(room, max(len(w) for n in configs for w in shown(n).split())))
    t = Table(title=title, **STYLE)
    t.add_column(first, no_wrap=True, overflow="ellipsis", max_width=label)
    for n in configs:
        t.add_column(Text(shown(n).replace(" ", "\n")), justify="right", overflow="fold", width=col)
    for row in rows:
        t.add_row(*row)
    return t


def decided(c: dict[str, Any]) -> bool:
    """The comparison found a difference (its decision is faster or slower): shown bold."""
    return (c.get("decision") or {}).get("kind") in ("faster", "slower")


def runs_phrase(s: dict[str, Any]) -> str:
    """How many runs the settings asked for, in words."""
    if s.get("auto"):
        budget = f"up to {s['max_runs']}" + (f" or {human_seconds(s['max_time_s'])}" if s["max_time_s"] else "")
        return f"runs until each comparison is decided ({budget}; margin ±{s['margin_pct']:g}%)"
    return (f"{s['runs']} runs per configuration"
            + (f" (+ up to {s['max_runs']} for ±{s['precision_pct']:g}% precision)" if s["precision_pct"] else ""))


def render_compare(rep: dict[str, Any], console: Console) -> None:
    results = rep["results"]
    comps = {c["name"]: c for c in rep["comparisons"]}
    console.print(shown_text(f"iolens compare: {rep['command_template']}", style="bold"))
    s = rep["settings"]
    cache = s["cache"] + (f" ({', '.join(s['evict_methods'])})" if s["evict_methods"] else "")
    console.print(Padding(Text(
        runs_phrase(s) + f", {s['warmup']} warmup, randomized interleaving (seed {s['seed']}), cache {cache}"),
        (0, 0, 0, 2), expand=False))

    t = FitTable([Col("configuration", "left", flex="middle"), Col("median"), Col("vs baseline"), Col("p"),
                  Col("95% CI", drop=1), Col("user", drop=4), Col("sys", drop=4), Col("runs", drop=3),
                  Col("mean ± SD", drop=5), Col("min … max", drop=6), Col("CV", drop=2)],
                 title=f"Wall time per run ({timed(results)}); user and sys: mean CPU time", **STYLE)
    for r in results:
        ci = r["median_ci"]
        c = comps.get(r["name"])
        runs = f"{r['ok_runs']}" + (f" ({r['failed_runs']} failed)" if r["failed_runs"] else "")
        t.add_row(
            shown_text(r["name"]),
            human_seconds(r["median"]),
            "baseline" if r["name"] == rep["baseline"] else "" if c is None else _pct(c["rel_diff"]),
            "" if c is None else _p(c["p_value"]),
            "-" if ci is None else f"{human_seconds(ci[0])} … {human_seconds(ci[1])}",
            human_seconds(r["user"]), human_seconds(r["system"]),
            runs,
            _pm(r["mean"], r["stddev"]),
            "-" if r["min"] is None else f"{human_seconds(r['min'])} … {human_seconds(r['max'])}",
            "-" if r["cv"] is None else f"{100 * r['cv']:.1f}%",
        )
    console.print(t)

    t = FitTable([Col("configuration", "left", flex="middle"), Col("storage write"), Col("storage read"),
                  Col("peak RSS", drop=3), Col("bytes read", drop=7),
                  Col("bytes written", drop=6), Col("inputs cached", drop=2)],
                 title="Per run, median (kernel counters, command and children)", **STYLE)
    for r in results:
        io = r["io"]
        res = r["cache"]["inputs_resident_median"]
        t.add_row(shown_text(r["name"]), human_bytes(io["write_bytes"]), human_bytes(io["read_bytes"]),
                  human_bytes(io["max_rss_bytes"]), human_bytes(io["rchar"]), human_bytes(io["wchar"]),
                  "-" if res is None else f"{100 * res:.0f}%")
    console.print(t)
    console.print(Text(key_line(PER_RUN_KEY), style="dim"))

    staged = [r for r in results if r["phases"]]
    if staged:
        t = FitTable([Col("configuration", "left", flex="middle"), Col("copy-in"), Col("run"), Col("copy-out"),
                      Col("total", drop=3), Col("copied in", drop=2), Col("copied out", drop=1)],
                     title="Staged: median time per step", **STYLE)
        for r in staged:
            ph = r["phases"]
            t.add_row(shown_text(r["name"]), human_seconds(ph["copy_in_s"]), human_seconds(ph["run_s"]),
                      human_seconds(ph["copy_out_s"]), human_seconds(r["median"]),
                      human_bytes(ph["copy_in_bytes"]), human_bytes(ph["copy_out_bytes"]))
        console.print(t)

    profiled = [r for r in results if r["profile"]]
    if profiled:
        names: list[str] = []
        for r in profiled:
            for n, ph in sorted(r["profile"]["phases"].items(), key=lambda kv: -(kv[1]["own_s"] or 0)):
                if n not in names:
                    names.append(n)
        rows = []
        for n in names[:12]:
            rows.append([shown_text(n), *[human_seconds((r["profile"]["phases"].get(n) or {}).get("own_s"))
                                    for r in profiled]])
        for k in profiled[0]["profile"]["io"]:
            if k.endswith("_s") and k != "process_s":
                rows.append([Text(f"I/O {k[:-2]}" if k != "compute_s" else "compute and other", style="dim"),
                             *[human_seconds(r["profile"]["io"].get(k)) for r in profiled]])
        console.print(_by_configuration("Profiled (medians): own time per phase, I/O time by category",
                                        "phase / category", [r["name"] for r in profiled], rows, console.width))

    for c in rep["comparisons"]:
        style = "bold green" if decided(c) else ""
        console.print(Padding(shown_text(c["verdict"], style=style), (0, 0, 0, 2), expand=False))
    if rep["comparisons"]:
        console.print(Padding(Text(verdict_key(s), style="dim"), (0, 0, 0, 2), expand=False))
    keys = {k: v for k, v in column_key(s).items() if k in ("p", "CV") or k.startswith("cache")}
    console.print(Padding(Text(key_line(keys), style="dim"), (0, 0, 0, 2), expand=False))
    for w in rep["warnings"]:
        console.print(Padding(shown_text(f"warning: {w}", style="yellow"), (0, 0, 0, 2), expand=False))
