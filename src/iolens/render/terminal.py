"""The terminal every command prints to, and tables that fit in it.

`console()` takes its width from rich's own detection (the terminal, else $COLUMNS, else 80) with a
floor of 80 columns, and never reads printed strings as markup or emoji codes: file names and commands are
printed as they are (with their control characters spelled out, `iolens.names.shown`).  `fit_table()` builds a
rich table whose rows never wrap: while the table is wider than the console it drops the columns marked least
important, and then gives what is left of the width to one "flex" column (a path or a name), whose cells are
ellipsized instead of wrapped.  A table cell never holds markup or a control character (`FitTable.add_row`).
`fold()` folds a line of prose at a width, under a hanging indent.
"""

from __future__ import annotations

import re
import textwrap
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

from rich.cells import cell_len
from rich.console import Console, ConsoleOptions, RenderableType, RenderResult
from rich.measure import Measurement
from rich.table import Table
from rich.text import Text

from iolens.names import shown

MIN_WIDTH = 80
FLEX_MIN = 24  # a path column narrower than this says too little: drop other columns first


def console(*, stderr: bool = False, **kw: Any) -> Console:
    """A console as wide as the terminal (rich's detection), never narrower than 80 columns; printed strings are
    not markup (style with `Text`)."""
    kw.setdefault("highlight", False)
    kw.setdefault("markup", False)
    kw.setdefault("emoji", False)
    kw.setdefault("soft_wrap", False)
    width = Console(stderr=stderr).width
    return Console(stderr=stderr, width=max(MIN_WIDTH, width), **kw)


@dataclass(frozen=True)
class Col:
    """One column of a fitted table.

    drop: 0 = always shown; otherwise the column is dropped when the table is too wide, highest first.
    flex: this column takes the width that is left and ellipsizes its cells: at the left for paths, so
    the file name stays visible; in the middle for names whose two ends both matter.
    """

    header: str
    justify: Literal["left", "right", "center"] = "right"
    drop: int = 0
    flex: Literal["", "left", "right", "middle"] = ""


_UNIT = re.compile(r"\d (?:s|ms|us|µs|ns|B|KB|MB|GB|KiB|MiB|GiB)\b")
_GLUE = "\x00"  # holds a figure and its unit together while folding (shown() spells out a NUL, so no text holds it)
_LABEL = re.compile(r"(?<![^ (])([A-Za-z_/]+) (?=[+-]?[\d.,]+\x00)")  # a one-word label before a glued figure


def fold(text: str, width: int, indent: str = "  ") -> list[str]:
    """A line of prose folded at `width`, each continuation under `indent` and two more spaces (the text's own
    leading spaces stay on its first line); a figure is never parted from its unit nor from a one-word label
    before it ("profiler 0.018 s"), a word never at a hyphen."""
    kept = _LABEL.sub(lambda m: m[1] + _GLUE, _UNIT.sub(lambda m: m[0].replace(" ", _GLUE), text))
    lines = textwrap.wrap(kept, width, subsequent_indent=indent + "  ", break_on_hyphens=False) or [""]
    return [line.replace(_GLUE, " ") for line in lines]


def plain(cell: RenderableType) -> str:
    return cell.plain if isinstance(cell, Text) else str(cell)


def _len(cell: RenderableType) -> int:
    return max(cell_len(line) for line in plain(cell).split("\n"))


def _ellipsize(cell: RenderableType, width: int, side: str) -> RenderableType:
    full = plain(cell)
    if cell_len(full) <= width or width < 2:
        return cell
    text = cell if isinstance(cell, Text) else Text(full)
    if side == "left":
        cut = len(full) - (width - 1)
        while cell_len(full[cut:]) > width - 1:
            cut += 1
        return Text("…") + text[cut:]
    if side == "middle":
        head = (width - 1) // 2
        tail = len(full) - (width - 1 - head)
        while cell_len(full[:head]) + cell_len(full[tail:]) > width - 1:
            tail += 1
        return text[:head] + Text("…") + text[tail:]
    end = width - 1
    while cell_len(full[:end]) > width - 1:
        end -= 1
    return text[:end] + Text("…")


def _table(cols: Sequence[Col], rows: Sequence[Sequence[RenderableType]], flex_width: int | None,
           **style: Any) -> Table:
    t = Table(**style)
    for c in cols:
        if c.flex and flex_width is not None:
            t.add_column(c.header, justify=c.justify, no_wrap=True, overflow="ellipsis", width=flex_width)
        else:
            t.add_column(c.header, justify=c.justify, no_wrap=True, overflow="ellipsis")
    for row in rows:
        t.add_row(*row)
    return t


def fit_table(con: Console, cols: Sequence[Col], rows: Sequence[Sequence[RenderableType]], *, width: int | None = None,
              **style: Any) -> Table:
    """A table of `rows` (one cell per column of `cols`) that fits `width` (default: the console's)
    without wrapping a row.

    `style` is passed to rich's Table (title, box, show_edge, ...).  The table is at least as wide as
    its title, so a title never wraps while it fits the console."""
    width = con.width if width is None else width
    keep = list(range(len(cols)))
    flex = next((i for i, c in enumerate(cols) if c.flex), None)

    def natural(i: int) -> int:
        return max([_len(cols[i].header)] + [_len(r[i]) for r in rows])

    def width_with(idx: list[int], flex_width: int | None) -> int:
        probe = _table([cols[i] for i in idx], [[r[i] for i in idx] for r in rows], flex_width,
                       **{k: v for k, v in style.items() if k not in ("title", "caption")})
        return Measurement.get(con, con.options.update(width=10_000), probe).maximum

    flex_min = None if flex is None else min(FLEX_MIN, natural(flex))
    while True:
        need = width_with(keep, flex_min)
        droppable = [i for i in keep if cols[i].drop]
        if need <= width or not droppable:
            break
        keep.remove(max(droppable, key=lambda i: (cols[i].drop, i)))
    flex_width = None
    if flex is not None and flex_min is not None and flex in keep:
        flex_width = max(flex_min, min(natural(flex), flex_min + width - need))
    hidden = [cols[i].header for i in range(len(cols)) if i not in keep]
    if hidden:  # a column left out says so: it may be the one that matters (a replay's STREAM time)
        note = f"not shown at {width} columns: {', '.join(hidden)} (a wider terminal shows them)"
        style = dict(style, caption=f"{style['caption']}; {note}" if style.get("caption") else note,
                     caption_justify="left")
    sub = [cols[i] for i in keep]
    body = []
    for r in rows:
        cells = [r[i] for i in keep]
        if flex_width is not None:
            j = keep.index(flex)  # type: ignore[arg-type]
            cells[j] = _ellipsize(cells[j], flex_width, cols[flex].flex)  # type: ignore[index]
        body.append(cells)
    table = _table(sub, body, flex_width, **style)
    title = style.get("title")
    if title and table.columns:
        # a title wider than its table would wrap: widen the first column instead (not every column)
        short = min(width, cell_len(plain(title))) - Measurement.get(con, con.options.update(width=width),
                                                                     table).maximum
        if short > 0:
            first = table.columns[0]
            first.width = (first.width or natural(keep[0])) + short
    return table


def _safe(cell: RenderableType) -> RenderableType:
    """A cell that cannot break its row or the terminal: a string is never markup, control characters are shown."""
    if isinstance(cell, str):
        return Text(shown(cell))
    if isinstance(cell, Text) and not cell.plain.isprintable():
        return Text(shown(cell.plain), style=cell.style)  # (styled parts inside lose their style)
    return cell


class FitTable:
    """A fitted table that is laid out when printed, for the width it is printed at.

        t = FitTable([Col("file", "left", flex="left"), Col("read"), Col("note", "left", drop=1)], title="Files")
        t.add_row(Text(path), "1.0 MiB", "")
        console.print(t)
    """

    def __init__(self, cols: Sequence[Col], **style: Any) -> None:
        self.cols = list(cols)
        self.style = style
        self.rows: list[list[RenderableType]] = []

    def add_row(self, *cells: RenderableType) -> None:
        self.rows.append([_safe(c) for c in cells])

    def __rich_console__(self, con: Console, options: ConsoleOptions) -> RenderResult:
        yield fit_table(con, self.cols, self.rows, width=options.max_width, **self.style)
