"""The terminal every command prints to, and tables that fit in it.

`console()` is the one console a command prints its terminal output to.  Its width: $COLUMNS when set (a
terminal or not), else the terminal's; output that is not a terminal (a pipe, a file) and no $COLUMNS has no
width limit, so a saved table loses nothing (`UNBOUNDED`), while its prose (a line printed on its own, and
`fold()`) is wrapped at PIPE_PROSE columns (`prose_width`) under a hanging indent (on a terminal, or with
$COLUMNS, at that width under the same indent).  Escapes (colour, bold) only go
to a terminal, and never with $NO_COLOR; a launcher's ranks (mpirun gives them a pseudo-terminal even when its
own output is a file) learn what the launcher's output is from `child_env()`.  Printed strings are never read
as markup or emoji codes: file names and commands are printed as they are (control characters spelled out,
`iolens.names.shown`).

`FitTable` is the one table of the terminal.  Each column says how it gives way when the table is too wide
(`Col`): columns marked `drop` are left out, highest first (a key or an answer column has drop 0 and is never
left out), and one line under the table names them; a `flex` column (a path, a name) is ellipsized; a `wrap`
column folds its cells onto more lines at their spaces.  When what is left still does not fit, the table is
folded: its columns go into several tables one under the other, each repeating the leading key columns.
`fold()` folds a line of prose at a width, under a hanging indent.
"""

from __future__ import annotations

import errno
import io
import os
import re
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from rich.cells import cell_len
from rich.console import Console, ConsoleOptions, RenderableType, RenderResult
from rich.measure import Measurement
from rich.padding import Padding
from rich.table import Table
from rich.text import Text

from iolens.names import shown

UNBOUNDED = 4096  # the width of output that is not a terminal, without $COLUMNS: tables as wide as they need
MIN_WIDTH = 20    # a $COLUMNS below this is taken as this
FLEX_MIN = 24  # a path column narrower than this says too little: drop other columns first
WRAP_MIN = 10  # a folding column is never made narrower than this, nor than its header or longest word up
               # to FLEX_MIN
PIPE_PROSE = 80  # where prose is wrapped in output that is not a terminal, without $COLUMNS
TERMINAL_ENV = "IOLENS_TERMINAL"  # set by a launcher for its ranks: "no", or the launcher's terminal width


def _columns() -> int | None:
    v = os.environ.get("COLUMNS", "")
    return max(MIN_WIDTH, int(v)) if v.isdigit() and int(v) > 0 else None


def is_terminal(*, stderr: bool = False) -> bool:
    """Whether this process's stdout (stderr) is a terminal a person reads, as far as this process can tell."""
    told = os.environ.get(TERMINAL_ENV)
    if told is not None:
        return told.isdigit()
    stream = sys.stderr if stderr else sys.stdout
    try:
        return stream.isatty()
    except (AttributeError, ValueError):
        return False


def width(*, stderr: bool = False) -> int:
    """The width output is laid out at: $COLUMNS, else the terminal's, else UNBOUNDED (a pipe or a file)."""
    cols = _columns()
    if cols is not None:
        return cols
    told = os.environ.get(TERMINAL_ENV, "")
    if told.isdigit():
        return max(MIN_WIDTH, int(told))
    if not is_terminal(stderr=stderr):
        return UNBOUNDED
    try:
        return max(MIN_WIDTH, os.get_terminal_size((sys.stderr if stderr else sys.stdout).fileno()).columns)
    except (AttributeError, ValueError, OSError):
        return 80


def _unbounded(at: int) -> bool:
    """Whether `at` is (about) UNBOUNDED: a pipe's or a file's width (callers may have left a column or two of it
    for an indent)."""
    return at > UNBOUNDED // 2


def prose_width(at: int) -> int:
    """The width prose is wrapped at in output laid out at `at` columns: `at`, or PIPE_PROSE on a pipe or in a
    file (`_unbounded`)."""
    return PIPE_PROSE if _unbounded(at) else at


_SEPARATOR = re.compile(r"[,/=:;]")  # where a word too long for its line may be broken after (`_breaks`)


def _breaks(line: str, at: int, hang: int, *, split: bool = False) -> list[int]:
    """Where to divide a line at its spaces so that each part fits `at` cells, the parts after the first indented
    by `hang`; a figure stays with its unit (`_glued`).  A word longer than the line stays whole (its part is
    longer), or with `split` (a table cell) is broken after its last separator (`,` `/` `=` `:` `;`) that fits,
    mid-word only where none does: `rw,noatime,` / `resgid=65534`, not `resv_str` / `ict,…`."""
    out: list[int] = []
    col = cell_len(line) - cell_len(line.lstrip())  # the indent
    for k, m in enumerate(re.finditer(r"\S+\s*", _glued(line))):
        word = line[m.start():m.end()]
        if k and col + cell_len(word.rstrip()) > at:  # never before the first word: no line of indent only
            out.append(m.start())
            col = hang
        start, rest = m.start(), word.rstrip()
        while split and col + cell_len(rest) > at and at - col > 1:
            room = at - col
            fits = 0  # how many characters of `rest` fit in `room` cells
            while fits < len(rest) and cell_len(rest[:fits + 1]) <= room:
                fits += 1
            seps = [s.end() for s in _SEPARATOR.finditer(rest[:fits])]
            cut = seps[-1] if seps and seps[-1] < len(rest) else max(1, fits)
            out.append(start + cut)
            start, rest, col = start + cut, rest[cut:], hang
        col += cell_len(line[start:m.end()])
    return out


def _room(hang: int, part: int, at: int) -> int:
    """The indent of a continuation of `part` cells: `hang`, or less where a word longer than the rest of the line
    (a path) would then run past `at` and fits it with less (it moves left until it fits, whole); one longer than
    the whole line keeps `hang` (it runs past the width either way)."""
    return hang if hang + part <= at or part > at else at - part


class _Prose:
    """Text wrapped at its spaces to the width it is given, each continuation under the line's own indent and two
    more spaces (as `fold()`).  A word longer than a line (a path) starts a line of its own and stays whole there
    on a pipe or in a file (what a reader can search and copy); with `split` (a terminal's width, or $COLUMNS,
    which a terminal would otherwise break anywhere) it is broken after a separator (`_breaks`)."""

    def __init__(self, text: Text, *, split: bool = False) -> None:
        self.text = text
        self.split = split

    def __rich_console__(self, con: Console, options: ConsoleOptions) -> RenderResult:
        at = options.max_width
        lines: list[Text] = []
        for line in self.text.split(allow_blank=True):
            hang = min(at // 2, cell_len(line.plain) - cell_len(line.plain.lstrip()) + 2)
            for k, part in enumerate(line.divide(_breaks(line.plain, at, hang, split=self.split))):
                part.rstrip()
                lines.append(Text(" " * _room(hang, part.cell_len, at)) + part if k else part)
        out = Text("\n").join(lines)
        out.end, out.no_wrap, out.overflow = self.text.end, True, "ignore"
        yield out


class _Console(Console):
    """rich's Console, which wraps the prose it prints at `prose_width` (a table keeps the console's width), on a
    terminal as on a pipe, under a hanging indent: a print of strings and Text, or of one Padding of them (an
    indented line), that asks for no layout of its own (soft_wrap, no_wrap, overflow, crop, justify)."""

    def on_broken_pipe(self) -> None:
        """A closed pipe ends the command as any failed write of standard output does (entry.py), not by rich's own
        exit."""
        self.quiet = True
        raise BrokenPipeError(errno.EPIPE, os.strerror(errno.EPIPE))

    def print(self, *objects: Any, **kw: Any) -> None:
        at = prose_width(self.width)
        laid = not any(kw.get(k) for k in ("soft_wrap", "no_wrap", "overflow", "crop", "justify"))
        if at <= self.width and laid and kw.get("width") is None and objects:
            inner = objects[0].renderable if len(objects) == 1 and isinstance(objects[0], Padding) else None
            parts = [inner] if inner is not None else list(objects)
            if all(isinstance(o, (str, Text)) for o in parts):
                text = Text(kw.get("sep", " ")).join(self.render_str(o) if isinstance(o, str) else o
                                                     for o in parts if isinstance(o, (str, Text)))
                text.end = kw.get("end", "\n")
                p = objects[0] if inner is not None else None
                if p is not None and (p.top, p.right, p.bottom) == (0, 0, 0):
                    # an indented line: the indent is the prose's own, so no line is padded out with spaces to
                    # the prose width (a Padding pads every line to its widest)
                    text, p = Text(" " * p.left) + text, None
                prose: Any = _Prose(text, split=not _unbounded(self.width))
                if p is not None:
                    prose = Padding(prose, (p.top, p.right, p.bottom, p.left), style=p.style, expand=p.expand)
                objects, kw["width"] = (prose,), at
        super().print(*objects, **kw)


def child_env() -> dict[str, str]:
    """The environment a command re-run by a launcher (mpirun, srun) needs to print as this process would: its
    ranks' output reaches ours through the launcher, on a pseudo-terminal or a pipe whatever ours is."""
    env = {TERMINAL_ENV: str(width()) if is_terminal() else "no"}
    cols = _columns()
    if cols is not None:
        env["COLUMNS"] = str(cols)
    return env


def console(*, stderr: bool = False, **kw: Any) -> Console:
    """The console of a command's output (see the module's docstring); printed strings are not markup (style
    with `Text`)."""
    kw.setdefault("highlight", False)
    kw.setdefault("markup", False)
    kw.setdefault("emoji", False)
    kw.setdefault("soft_wrap", False)
    if os.environ.get(TERMINAL_ENV) is not None:
        kw.setdefault("force_terminal", is_terminal(stderr=stderr))
    if os.environ.get("NO_COLOR"):  # no colour, and no other escape either (bold, dim)
        kw.setdefault("color_system", None)
    kw.setdefault("width", width(stderr=stderr))
    return _Console(stderr=stderr, **kw)


def text_of(renderable: RenderableType, at: int) -> str:
    """A renderable laid out at `at` columns as plain text (no escapes), for output assembled as a string."""
    buf = io.StringIO()
    Console(file=buf, width=at, force_terminal=False, color_system=None, highlight=False, markup=False,
            emoji=False, soft_wrap=False).print(renderable)
    return buf.getvalue()


@dataclass(frozen=True)
class Col:
    """One column of a fitted table.

    drop: 0 = always shown (a key, or the answer the table gives); otherwise the column is left out when the
    table is too wide, highest first.
    flex: this column takes the width that is left and ellipsizes its cells: at the left for paths, so
    the file name stays visible; in the middle for names whose two ends both matter.
    wrap: the cells fold onto more lines at their spaces rather than being cut (prose, a bench cell).
    """

    header: str
    justify: Literal["left", "right", "center"] = "right"
    drop: int = 0
    flex: Literal["", "left", "right", "middle"] = ""
    wrap: bool = False


_UNIT = re.compile(r"\d (?:s|ms|us|µs|ns|B|KB|MB|GB|KiB|MiB|GiB)\b")
_GLUE = "\x00"  # holds a figure and its unit together while folding (shown() spells out a NUL, so no text holds it)
_LABEL = re.compile(r"(?<![^ (])([A-Za-z_/]+) (?=[+-]?[\d.,]+\x00)")  # a one-word label before a glued figure


def _glued(text: str) -> str:
    """`text` with the space between a figure and its unit, and before it a one-word label, made _GLUE (the same
    length, so offsets in it are offsets in `text`)."""
    return _LABEL.sub(lambda m: m[1] + _GLUE, _UNIT.sub(lambda m: m[0].replace(" ", _GLUE), text))


def fold(text: str, width: int, indent: str = "  ") -> list[str]:
    """A line of prose folded at `width` (`prose_width(width)`: PIPE_PROSE on a pipe) as the console folds its
    prose (`_Prose`), each continuation under `indent` and two more spaces (the text's own leading spaces stay on
    its first line); a figure is never parted from its unit nor from a one-word label before it ("profiler
    0.018 s"), a word never at a hyphen, and a word longer than a line (a path) starts a line of its own, whole on
    a pipe, broken after a separator (, / = : ;) at a terminal's width; under less indent where the indent would
    push it past the width (`_room`)."""
    at, hang = prose_width(width), cell_len(indent) + 2
    cuts = _breaks(text, at, hang, split=not _unbounded(width))
    parts = [text[i:j] for i, j in zip([0, *cuts], [*cuts, len(text)])]
    return [part.rstrip() if k == 0 else " " * _room(hang, cell_len(part.strip()), at) + part.strip()
            for k, part in enumerate(parts)]


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


def _words(cell: RenderableType) -> int:
    """The widest word of a folding cell, a figure and its unit one word (`_glued`)."""
    return max([cell_len(w) for w in _glued(plain(cell)).split()] + [1])


class _Folded:
    """A cell of a `wrap` column, folded at its spaces to the column's width as `_breaks` does (a figure never
    parted from its unit: rich's own folding breaks at any space, "23.2" on one line and "µs" on the next), a word
    longer than the column after a separator (a mount's options, a path)."""

    def __init__(self, text: Text) -> None:
        self.text = text

    def __rich_measure__(self, con: Console, options: ConsoleOptions) -> Measurement:
        return Measurement(_words(self.text), _len(self.text)).with_maximum(options.max_width)

    def __rich_console__(self, con: Console, options: ConsoleOptions) -> RenderResult:
        lines: list[Text] = []
        for line in self.text.split(allow_blank=True):
            for part in line.divide(_breaks(line.plain, options.max_width, 0, split=True)):
                part.rstrip()
                lines.append(part)
        out = Text("\n").join(lines)
        out.justify, out.overflow, out.end = self.text.justify, self.text.overflow, ""
        yield out


def _table(cols: Sequence[Col], rows: Sequence[Sequence[RenderableType]], widths: Sequence[int | None],
           **style: Any) -> Table:
    t = Table(**style)
    for c, w in zip(cols, widths):
        if c.wrap:
            t.add_column(c.header, justify=c.justify, overflow="fold", width=w)
        else:
            t.add_column(c.header, justify=c.justify, no_wrap=True, overflow="ellipsis", width=w)
    for row in rows:
        t.add_row(*[_Folded(Text(cell) if isinstance(cell, str) else cell)
                    if c.wrap and isinstance(cell, (str, Text)) else cell for c, cell in zip(cols, row)])
    return t


def _narrowest(cols: Sequence[Col], rows: Sequence[Sequence[RenderableType]]) -> tuple[list[int], list[int]]:
    """Each column's natural width (its widest cell) and the narrowest it is made."""
    natural = [max([_len(c.header)] + [_len(r[i]) for r in rows]) for i, c in enumerate(cols)]
    least = []
    for i, c in enumerate(cols):
        if c.flex:
            least.append(min(FLEX_MIN, natural[i]))
        elif c.wrap:
            longest = max([_len(c.header)] + [_words(r[i]) for r in rows])  # a header stays whole
            least.append(min(natural[i], max(WRAP_MIN, min(longest, FLEX_MIN))))
        else:
            least.append(natural[i])
    return natural, least


def _parts(keep: list[int], head: list[int], width: int, need: Callable[[list[int]], int]) -> list[list[int]]:
    """The columns of `keep` after the key columns `head`, in as few parts as fit `width`, shared out evenly."""
    groups: list[list[int]] = []
    for i in keep:
        if i in head:
            continue
        if groups and need(head + groups[-1] + [i]) <= width:
            groups[-1].append(i)
        else:
            groups.append([i])
    if len(groups) > 1:
        rest = [i for i in keep if i not in head]
        per = -(-len(rest) // len(groups))
        even = [rest[k:k + per] for k in range(0, len(rest), per)]
        if len(even) == len(groups) and all(need(head + g) <= width for g in even):
            return even
    return groups or [[]]


def _share(idx: list[int], cols: Sequence[Col], natural: list[int], least: list[int], spare: int) -> list[int | None]:
    """The widths of the columns `idx` given `spare` columns beyond their narrowest: the flex column's first, then
    the folding columns' evenly (each up to its natural width); None (natural) for the others."""
    widths: list[int | None] = [least[i] if cols[i].flex or cols[i].wrap else None for i in idx]
    for j, i in enumerate(idx):
        if cols[i].flex:
            more = max(0, min(natural[i] - least[i], spare))
            widths[j] = least[i] + more
            spare -= more
    folding = [j for j, i in enumerate(idx) if cols[i].wrap]
    while spare > 0:
        short = [j for j in folding if (widths[j] or 0) < natural[idx[j]]]
        if not short:
            break
        each = max(1, spare // len(short))
        for j in short:
            more = min(each, natural[idx[j]] - (widths[j] or 0), spare)
            widths[j] = (widths[j] or 0) + more
            spare -= more
    return widths


def fit_tables(con: Console, cols: Sequence[Col], rows: Sequence[Sequence[RenderableType]], *,
               width: int | None = None, keys: int = 1, **style: Any) -> tuple[list[Table], list[str]]:
    """Tables of `rows` (one cell per column of `cols`) that fit `width` (default: the console's) without
    cutting a cell of a column that is not `flex`: usually one, several when the table had to be folded (each
    repeats the first `keys` columns); and the headers of the columns left out.

    `style` is passed to rich's Table (title, box, show_edge, ...).  A table is at least as wide as its title,
    so a title never wraps while it fits the console."""
    width = con.width if width is None else width
    natural, least = _narrowest(cols, rows)
    probe_style = {k: v for k, v in style.items() if k not in ("title", "caption")}

    def need(idx: list[int]) -> int:
        probe = _table([cols[i] for i in idx], [[r[i] for i in idx] for r in rows], [least[i] for i in idx],
                       **probe_style)
        return Measurement.get(con, con.options.update(width=10_000), probe).maximum

    keep = list(range(len(cols)))
    while need(keep) > width:
        droppable = [i for i in keep if cols[i].drop]
        if not droppable:
            break
        keep.remove(max(droppable, key=lambda i: (cols[i].drop, i)))
    hidden = [c.header for i, c in enumerate(cols) if i not in keep]
    head = [i for i in keep if i < keys]
    tables = []
    for g, group in enumerate(_parts(keep, head, width, need)):
        idx = head + group
        widths = _share(idx, cols, natural, least, width - need(idx))
        body = [[_ellipsize(r[i], w or least[i], cols[i].flex) if cols[i].flex else r[i] for i, w in zip(idx, widths)]
                for r in rows]
        st = dict(style)
        if g > 0:
            st["title"] = Text(f"{plain(style['title'])} (continued)") if style.get("title") else None
        t = _table([cols[i] for i in idx], body, widths, **st)
        title = st.get("title")
        if title and t.columns:
            # a title wider than its table would wrap: widen the first column instead (not every column)
            short = min(width, cell_len(plain(title))) - Measurement.get(con, con.options.update(width=width),
                                                                         t).maximum
            if short > 0:
                first = t.columns[0]
                first.width = (first.width or natural[idx[0]]) + short
        tables.append(t)
    return tables, hidden


def fit_table(con: Console, cols: Sequence[Col], rows: Sequence[Sequence[RenderableType]], *,
              width: int | None = None, **style: Any) -> Table:
    """The first of `fit_tables` (tests and callers that know their table fits)."""
    return fit_tables(con, cols, rows, width=width, **style)[0][0]


def _safe(cell: RenderableType) -> RenderableType:
    """A cell that cannot break its row or the terminal: a string is never markup, control characters are shown."""
    if isinstance(cell, str):
        return Text(shown(cell))
    if isinstance(cell, Text) and not all(line.isprintable() for line in cell.plain.split("\n")):
        return Text(shown(cell.plain), style=cell.style)  # (styled parts inside lose their style)
    return cell


class FitTable:
    """A fitted table that is laid out when printed, for the width it is printed at.

        t = FitTable([Col("file", "left", flex="left"), Col("read"), Col("note", "left", drop=1)], title="Files")
        t.add_row(Text(path), "1.0 MiB", "")
        console.print(t)

    keys: how many leading columns name a row (repeated in each part when the table is folded).
    """

    def __init__(self, cols: Sequence[Col], **style: Any) -> None:
        self.cols = list(cols)
        self.keys = int(style.pop("keys", 1))
        self.style = style
        self.rows: list[list[RenderableType]] = []

    def add_row(self, *cells: RenderableType) -> None:
        self.rows.append([_safe(c) for c in cells])

    def __rich_console__(self, con: Console, options: ConsoleOptions) -> RenderResult:
        tables, hidden = fit_tables(con, self.cols, self.rows, width=options.max_width, keys=self.keys,
                                    **self.style)
        yield from tables
        if hidden:  # a column left out says so: it may be the one that matters (a replay's STREAM time)
            need = fit_tables(con, self.cols, self.rows, width=UNBOUNDED, keys=self.keys, **self.style)[0]
            full = max(Measurement.get(con, options.update(width=UNBOUNDED), t).maximum for t in need)
            yield Text(f"not shown at {options.max_width} columns: {', '.join(hidden)} ({full} columns show "
                       "them)", style="dim")
