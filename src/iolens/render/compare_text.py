"""Terminal rendering of a compare report (report dict -> rich tables)."""

from __future__ import annotations

from typing import Any, Literal

from rich.console import Console
from rich.table import Table
from rich.text import Text

from iolens.units import human_bytes, human_seconds


def _pm(mean, sd) -> str:
    if mean is None:
        return "-"
    return human_seconds(mean) + ("" if sd is None else f" ± {human_seconds(sd)}")


def _pct(v) -> str:
    return "-" if v is None else f"{100 * v:+.1f}%"


def _p(p) -> str:
    if p is None:
        return "-"
    return "< 0.001" if p < 0.001 else f"{p:.3f}"


def render_compare(rep: dict[str, Any], console: Console) -> None:
    results = rep["results"]
    comps = {c["name"]: c for c in rep["comparisons"]}
    console.print(Text(f"iolens compare: {rep['command_template']}", style="bold"))
    s = rep["settings"]
    cache = s["cache"] + (f" ({', '.join(s['evict_methods'])})" if s["evict_methods"] else "")
    console.print(f"  {s['runs']} runs per configuration"
                  + (f" (+ up to {s['max_runs']} for ±{s['precision_pct']:g}% precision)" if s["precision_pct"] else "")
                  + f", {s['warmup']} warmup, randomized interleaving (seed {s['seed']}), cache {cache}")

    t = Table(show_edge=False, pad_edge=False, title="Wall time per run (stage: copy-in + run + copy-out)",
              title_justify="left")
    just: Literal["left", "right"]
    for col, just in (("configuration", "left"), ("runs", "right"), ("median", "right"), ("95% CI", "right"),
                      ("mean ± SD", "right"), ("min … max", "right"), ("CV", "right"),
                      (f"vs {rep['baseline']}", "right"), ("p", "right")):
        t.add_column(col, justify=just, overflow="fold")
    for r in results:
        ci = r["median_ci"]
        c = comps.get(r["name"])
        runs = f"{r['ok_runs']}" + (f" ({r['failed_runs']} failed)" if r["failed_runs"] else "")
        t.add_row(
            Text(r["name"] + (" (baseline)" if r["name"] == rep["baseline"] else "")),
            runs,
            human_seconds(r["median"]),
            "-" if ci is None else f"{human_seconds(ci[0])} … {human_seconds(ci[1])}",
            _pm(r["mean"], r["stddev"]),
            "-" if r["min"] is None else f"{human_seconds(r['min'])} … {human_seconds(r['max'])}",
            "-" if r["cv"] is None else f"{100 * r['cv']:.1f}%",
            "" if c is None else _pct(c["rel_diff"]),
            "" if c is None else _p(c["p_value"]),
        )
    console.print(t)

    t = Table(show_edge=False, pad_edge=False, title="Per run, median (kernel counters, command and children)",
              title_justify="left")
    for col in ("configuration", "user", "sys", "peak RSS", "bytes read", "bytes written", "storage read",
                "storage write", "inputs cached"):
        t.add_column(col, justify="left" if col == "configuration" else "right")
    for r in results:
        io = r["io"]
        res = r["cache"]["inputs_resident_median"]
        t.add_row(Text(r["name"]), human_seconds(r["user"]), human_seconds(r["system"]),
                  human_bytes(io["max_rss_bytes"]), human_bytes(io["rchar"]), human_bytes(io["wchar"]),
                  human_bytes(io["read_bytes"]), human_bytes(io["write_bytes"]),
                  "-" if res is None else f"{100 * res:.0f}%")
    console.print(t)

    staged = [r for r in results if r["phases"]]
    if staged:
        t = Table(show_edge=False, pad_edge=False, title="Staged: median time per step", title_justify="left")
        for col in ("configuration", "copy-in", "run", "copy-out", "total", "copied in", "copied out"):
            t.add_column(col, justify="left" if col == "configuration" else "right")
        for r in staged:
            ph = r["phases"]
            t.add_row(Text(r["name"]), human_seconds(ph["copy_in_s"]), human_seconds(ph["run_s"]),
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
        t = Table(show_edge=False, pad_edge=False, title="Profiled (medians): own time per phase, I/O time by category",
                  title_justify="left")
        t.add_column("phase / category")
        for r in profiled:
            t.add_column(r["name"], justify="right", overflow="fold")
        for n in names[:12]:
            t.add_row(Text(n), *[human_seconds((r["profile"]["phases"].get(n) or {}).get("own_s")) for r in profiled])
        for k in profiled[0]["profile"]["io"]:
            if k.endswith("_s") and k != "process_s":
                t.add_row(Text(f"I/O {k[:-2]}" if k != "compute_s" else "compute and other", style="dim"),
                          *[human_seconds(r["profile"]["io"].get(k)) for r in profiled])
        console.print(t)

    for c in rep["comparisons"]:
        style = "bold green" if c["significant"] else ""
        console.print(Text("  " + c["verdict"], style=style), soft_wrap=True)
    for w in rep["warnings"]:
        console.print(Text(f"  warning: {w}", style="yellow"), soft_wrap=True)
