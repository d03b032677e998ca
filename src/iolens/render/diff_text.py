"""`iolens diff` in the terminal and as JSON."""

from __future__ import annotations

import json
from collections.abc import Callable

from rich.console import Console
from rich.text import Text

from iolens.analysis.diff import Diff, mostly
from iolens.analysis.breakdown import LABELS
from iolens.names import json_safe, shown, shown_text
from iolens.render.report_json import _clean
from iolens.render.terminal import Col, FitTable
from iolens.units import human_bytes, human_seconds

TAG = "iolens-diff"
SCHEMA_VERSION = [1, 1]  # 1.1: advice_titles, what each rule found, beside its id


def _signed(v: float | None, fmt: Callable[[float], str]) -> str:
    if v is None:
        return "-"
    return ("+" if v > 0 else "-" if v < 0 else "±") + fmt(abs(v))


def _ratio(r: float | None) -> str:
    return "-" if r is None else f"{r:.2f}x"


def render_diff_text(d: Diff, console: Console, *, top: int = 15) -> None:
    console.print(shown_text(f"iolens diff: A = {d.a['path']}, B = {d.b['path']}", style="bold"))
    if not d.same_command:
        console.print(Text(f"  note: the commands differ:\n    A: {shown(' '.join(d.a['command']))}\n"
                           f"    B: {shown(' '.join(d.b['command']))}", style="yellow"))
    else:
        console.print(shown_text(f"  {' '.join(d.a['command'])}"))
    style = {"title_justify": "left", "show_edge": False, "pad_edge": False, "title_style": "bold"}
    t = FitTable([Col("", "left"), Col("A"), Col("B"), Col("change"), Col("B/A")], title="Totals", **style)
    for c in d.totals:
        fmt = human_bytes if c.name.startswith("bytes") else human_seconds
        t.add_row(c.name.replace("_s", "").replace("_", " "), fmt(c.a), fmt(c.b), _signed(c.delta, fmt),
                  _ratio(c.ratio))
    console.print(t)
    t = FitTable([Col("category", "left"), Col("A"), Col("B"), Col("change"), Col("B/A")],
                 title="Per category (process time)", **style)
    for c in d.categories:
        if c.a or c.b:
            t.add_row(LABELS[c.name], human_seconds(c.a), human_seconds(c.b), _signed(c.delta, human_seconds),
                      _ratio(c.ratio))
    console.print(t)
    t = FitTable([Col("file", "left", flex="left"), Col("A"), Col("B"), Col("change"), Col("mostly", "left", drop=1),
                  Col("storage A -> B", "left", drop=2)],
                 title=f"Files with the largest change in I/O time (of {len(d.files)})", title_justify="left",
                 show_edge=False, pad_edge=False, title_style="bold")
    for f in d.files[:top]:
        most = mostly(f)
        t.add_row(shown_text(f.key), human_seconds(f.time_a_s), human_seconds(f.time_b_s),
                  _signed(f.delta_s, human_seconds), LABELS.get(most, "-") if most else "-",
                  shown_text(f"{f.mount_a or '(absent)'} -> {f.mount_b or '(absent)'}"))
    console.print(t)
    for rules, said in ((d.advice_fixed, "advice only for A (gone in B)"), (d.advice_new, "advice only for B (new)")):
        if rules:
            console.print(shown_text(f"  {said}:"))
        for rule in rules:
            title = d.advice_titles.get(rule, rule)
            console.print(shown_text(f"    - {title} (rule {rule}; `iolens report` explains it)"))


def render_diff_json(d: Diff) -> bytes:
    text = json.dumps(_clean({"tag": TAG, "schema_version": SCHEMA_VERSION, **d.to_dict()}), indent=1,
                      ensure_ascii=False, allow_nan=False)
    return (json_safe(text) + "\n").encode()
