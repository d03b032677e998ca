"""Side-by-side terminal table of a bench report (the dict of BenchReport.to_dict()); rendering only."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from rich.console import Console
from rich.text import Text

from iolens.bench.metrics import read_ops, write_ops
from iolens.names import shown, shown_text
from iolens.render.terminal import Col, FitTable
from iolens.units import human_bytes

STATE_STYLE = {"cold-direct": "green", "cold-evicted": "green", "synced": "cyan", "warm": "yellow",
               "buffered": "yellow", "none": "dim"}
META_OPS = {"create", "stat", "delete"}


def fmt_rate(bps: float | None) -> str:
    if bps is None:
        return "-"
    for unit, div in (("GB/s", 1e9), ("MB/s", 1e6), ("kB/s", 1e3)):
        if bps >= div:
            v = bps / div
            return f"{v:.3g} {unit}" if v < 100 else f"{v:.0f} {unit}"
    return f"{bps:.0f} B/s"


def fmt_count(x: float | None, unit: str) -> str:
    if x is None:
        return "-"
    for suffix, div in (("M", 1e6), ("k", 1e3)):
        if x >= div:
            v = x / div
            return f"{v:.3g}{suffix} {unit}" if v < 100 else f"{v:.0f}{suffix} {unit}"
    return f"{x:.3g} {unit}" if x < 100 else f"{x:.0f} {unit}"


def fmt_us(us: float | None) -> str:
    if us is None:
        return "-"
    if us >= 1e6:
        return f"{us / 1e6:.2f} s"
    if us >= 1e3:
        return f"{us / 1e3:.3g} ms"
    return f"{us:.3g} µs"


def primary_text(row: dict[str, Any]) -> str:
    key = row.get("primary_metric") or "throughput_Bps"
    m = (row.get("metrics") or {}).get(key) or {}
    mean, sd = m.get("mean"), m.get("sd")
    if key == "throughput_Bps":
        text = fmt_rate(mean)
    else:
        moved = ((row.get("metrics") or {}).get("bytes") or {}).get("mean")
        if row.get("op") in ("create", "readfiles") and moved:
            unit = "files/s"
        elif row.get("op") in META_OPS or row.get("op") == "readfiles":
            unit = "ops/s"
        else:
            unit = "IOPS"
        text = fmt_count(mean, unit)
    if sd is not None and mean:
        text += f" ±{100 * sd / mean:.1f}%"
    return text


def _mean(m: dict[str, Any], key: str) -> float | None:
    return (m.get(key) or {}).get("mean")


def _bytes_by_direction(row: dict[str, Any]) -> tuple[float | None, float | None]:
    """(bytes read, bytes written) of a row; from the phase's groups for results stored before the metrics
    had them (None when a direction cannot be told apart)."""
    m = row.get("metrics") or {}
    rb, wb = _mean(m, "read_bytes"), _mean(m, "write_bytes")
    if rb is not None or wb is not None:
        return rb, wb
    groups = (((row.get("job") or {}).get("phase") or {}).get("groups") or [{"op": row.get("op")}])
    moved = _mean(m, "bytes")
    if all(g.get("op") in read_ops() for g in groups):
        return moved, 0.0
    if all(g.get("op") in write_ops() for g in groups):
        return 0.0, moved
    return None, None


def device_shares(row: dict[str, Any]) -> list[tuple[str, float]]:
    """The evidence behind a read's cold state, per direction: device-read bytes over bytes read and, when the
    test also writes, device-written bytes over bytes written, in % (at most 100).  Direction "" for a plain
    read.  Empty for tests that do not read or on a target without block-device counters."""
    if row.get("op") not in read_ops():
        return []
    m = row.get("metrics") or {}
    rb, wb = _bytes_by_direction(row)
    dev_r, dev_w = _mean(m, "device_read_bytes"), _mean(m, "device_write_bytes")
    if not rb or dev_r is None:
        return []
    if not wb:
        return [("", min(100.0, 100 * dev_r / rb))]
    out = [("read", min(100.0, 100 * dev_r / rb))]
    if dev_w is not None:
        out.append(("write", min(100.0, 100 * dev_w / wb)))
    return out


def cell(row: dict[str, Any] | None) -> Text:
    if row is None:
        return Text("-", style="dim")
    m = row.get("metrics") or {}
    state = row.get("cache_state") or "?"
    t = Text(primary_text(row), style="bold")
    t.append("\n")
    lat = (m.get("lat_p99_us") or {}).get("mean")
    extra = []
    if row.get("primary_metric") == "throughput_Bps":
        iops = (m.get("iops") or {}).get("mean")
        if iops:
            extra.append(fmt_count(iops, "op/s"))
    elif (m.get("throughput_Bps") or {}).get("mean"):
        extra.append(fmt_rate(m["throughput_Bps"]["mean"]))
    if lat is not None:
        extra.append(f"p99 {fmt_us(lat)}")
    t.append(" · ".join(extra), style="dim")
    t.append("\n")
    t.append(shown(state), style=STATE_STYLE.get(state, "red"))
    shares = device_shares(row)
    if shares:
        t.append(" · device " + ", ".join(f"{d} {v:.0f}%" if d else f"{v:.0f}%" for d, v in shares), style="dim")
    if row.get("warnings"):
        t.append(" ⚠", style="bold red")
    return t


def free_text(t: dict[str, Any]) -> str:
    if t.get("free_unknown"):
        return f"unknown ({t['free_unknown']})"
    if t.get("free_bytes") is None:
        return "-"
    return f"{human_bytes(t.get('free_bytes'))} of {human_bytes(t.get('total_bytes'))}"


def targets_table(doc: dict[str, Any]) -> FitTable:
    """One column per target (each folds its long values: mount options), in parts when they do not fit."""
    targets = doc.get("targets") or []
    tab = FitTable([Col("", "left")] + [Col(shown(t.get("name")), "left", wrap=True) for t in targets],
                   title="Targets", title_justify="left", show_lines=False, expand=False)

    def row(label: str, f: Callable[[dict[str, Any]], object]) -> None:
        tab.add_row(Text(label, style="dim"), *[shown_text(f(t)) for t in targets])

    row("filesystem", lambda t: t.get("fstype") or "-")
    row("mount options", lambda t: t.get("mount_options") or "-")
    row("device", lambda t: " ".join(x for x in (t.get("source"), f"({t['device_model']})"
                                                  if t.get("device_model") else None,
                                                  t.get("device_class")) if x) or "-")
    row("free", free_text)
    row("plausible read", lambda t: f"{fmt_rate(t.get('plausible_read_Bps'))} ({t.get('limit_source')})"
        if t.get("plausible_read_Bps") else "-")
    if any(t.get("notes") for t in targets):
        row("notes", lambda t: "; ".join(t.get("notes") or []) or "-")
    return tab


def results_table(doc: dict[str, Any]) -> FitTable:
    """One row per test, one column per target (the answer: never left out; cells fold at their spaces, and the
    targets go into several parts when they do not fit side by side)."""
    names = [t.get("name") for t in doc.get("targets") or []]
    rows = doc.get("results") or []
    idx = {(r["target"], r["test"]): r for r in rows}
    tests = list(dict.fromkeys(r["test"] for r in rows))
    repeat = doc.get("repeat") or 1
    title = f"{' + '.join(doc.get('suites') or [])} suite" + (f", mean ± SD of {repeat} runs" if repeat > 1 else "")
    tab = FitTable([Col("test", "left")] + [Col(shown(n), wrap=True) for n in names], title=shown_text(title),
                   title_justify="left", show_lines=True)
    for test in tests:
        tab.add_row(shown_text(test), *[cell(idx.get((n, test))) for n in names])
    return tab


PLAUSIBLE_KEY = ("plausible read: the fastest a read from the target's kind of device can be: the ceiling of its "
                 "class (hard disk, SATA SSD, NVMe; a virtual disk or one of unknown kind is given NVMe's, a loop "
                 "device that of the device holding its file) or a throttle's limit; a cold read faster than this "
                 "came from a cache")


def render_bench(doc: dict[str, Any], console: Console) -> None:
    console.print(targets_table(doc))
    if any(t.get("plausible_read_Bps") for t in doc.get("targets") or []):
        console.print(Text(PLAUSIBLE_KEY, style="dim"))
    console.print(results_table(doc))
    console.print(Text("cache: cold-direct = O_DIRECT; cold-evicted = flushed and evicted before reading; "
                       "warm = served from RAM; synced = fsync inside the timing; buffered = page cache only; "
                       "none = no storage (null); device N% = share of the bytes read that the block device "
                       "delivered (its kernel counters); a test that reads and writes shows each direction: "
                       "device read N%, write M% of the bytes written",
                       style="dim"))
    warnings = list(doc.get("warnings") or [])
    notes: list[str] = list(doc.get("notes") or [])
    for r in doc.get("results") or []:
        warnings.extend(w for w in r.get("warnings") or [] if w not in warnings)
        notes.extend(n for n in r.get("notes") or [] if n not in notes)
    for n in notes:
        console.print(shown_text(f"note: {n}", style="dim"))
    for w in warnings:
        console.print(shown_text(f"warning: {w}", style="yellow"))
    if doc.get("run_id") is not None:
        console.print(shown_text(f"stored as run {doc['run_id']}" + (f" in {doc['db']}" if doc.get("db") else "")
                           + f"; `iolens results show {doc['run_id']}`", style="dim"))


def _multi_rate(a: dict[str, Any], which: str) -> str:
    if a["bytes"]:
        v = a[f"{which}_Bps"]
        return f"{human_bytes(v)}/s" if v is not None else "-"
    v = a[f"{which}_iops"]
    return f"{v:,.0f} ops/s" if v is not None else "-"


def render_multi(doc: dict[str, Any], console: Console) -> None:
    """A multi-client run (`bench --clients N`, the document of bench/mpi.py): the aggregate of every phase
    beside the per-client figures and their spread."""
    hosts = sorted(set(doc["hosts"]))
    tab = FitTable([Col("phase", "left"), Col("aggregate first done"), Col("aggregate last done", drop=3),
                    Col("client mean", drop=2), Col("client min-max", drop=4), Col("CV", drop=1),
                    Col("first/last done", drop=5)], title_justify="left",
                   title=shown_text(f"{doc['target']}: {doc['clients']} clients on {len(hosts)} host(s) "
                                    f"({', '.join(hosts)}), stonewall {doc['stonewall_s']:g} s"))
    for a in doc["results"]:
        sp = a["spread"]
        unit = (lambda v: f"{human_bytes(v)}/s") if sp["metric"] == "throughput_Bps" else (lambda v: f"{v:,.0f}/s")
        mean = unit(sp["mean"]) if sp["mean"] is not None else "-"
        rng = f"{unit(sp['min'])} - {unit(sp['max'])}" if sp["min"] is not None else "-"
        cv = f"{100 * sp['cv']:.1f}%" if sp["cv"] is not None else "-"
        tab.add_row(a["phase"], _multi_rate(a, "first_done"), _multi_rate(a, "last_done"), mean, rng, cv,
                    f"{a['first_done_s']:.2f}/{a['last_done_s']:.2f} s")
    console.print(tab)
    if doc.get("stand_in"):
        console.print(shown_text(f"{doc['target']} stands in for {doc['stand_in']['volume']}: "
                                 f"{doc['stand_in']['emulates']}"))
    if len(set(doc.get("client_paths") or [])) > 1:
        console.print(shown_text("client mounts: " + ", ".join(f"rank {r}: {p}"
                                                                for r, p in enumerate(doc["client_paths"]))))
    for w in doc["warnings"]:
        console.print(Text("warning:", style="yellow") + shown_text(f" {w}"))
    if doc.get("run_id") is not None:
        console.print(f"stored as run {doc['run_id']}")
