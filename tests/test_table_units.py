"""A folding (`wrap`) column of a FitTable never parts a figure from its unit: at 80 columns `bench` showed
"p99 23.2" on one line and "µs" on the next, `cost` "2.63 s [2.54" and "s, 2.67 s]"."""

import io
import re

from rich.console import Console

from iolens.render.terminal import Col, FitTable

UNIT = re.compile(r"^(?:s|ms|us|µs|ns|B|KB|MB|GB|KiB|MiB|GiB)\b")


def _render(width: int) -> list[str]:
    t = FitTable([Col("test", "left")] + [Col(n, wrap=True) for n in ("local ssd", "nfs share", "s3 bucket")],
                 title="bench")
    t.add_row("seq read", "p50 12.5 µs p99 23.2 µs", "p50 1.07 ms p99 1.21 ms", "2.63 s [2.54 s, 2.67 s]")
    t.add_row("rand read", "812.4 MiB/s p99 13.9 ms", "41.2 MiB/s p99 1.21 ms", "9.01 s [8.54 s, 9.67 s]")
    buf = io.StringIO()
    Console(file=buf, width=width, force_terminal=False, color_system=None).print(t)
    return buf.getvalue().splitlines()


def test_wrap_columns_keep_figures_with_units() -> None:
    for width in (60, 50):
        lines = _render(width)
        rows = [line.split("│") for line in lines if line.startswith("│")]
        assert len(rows) > 2, lines  # the cells did fold
        for upper, lower in zip(rows, rows[1:]):
            for a, b in zip(upper, lower):
                parted = re.search(r"\d$", a.strip()) and UNIT.match(b.strip())
                assert not parted, "\n".join(lines)
        text = "\n".join(lines)
        for figure in ("23.2 µs", "1.21 ms", "2.63 s", "[2.54 s,", "2.67 s]", "812.4 MiB/s"):
            assert figure in text, text


OPTIONS = "rw,nosuid,nodev,noatime,errors=remount-ro,resv_strict,resuid=0,resgid=65534"
LOOP = "/root/.local/state/iolens/lab/images/ext4.img"


def _cell_lines(width: int) -> list[str]:
    """The `what` column's lines of a two-row table at `width`, one line per physical line of each cell."""
    t = FitTable([Col("target", "left"), Col("what", "left", wrap=True)])
    t.add_row("ext4-loop", OPTIONS)
    t.add_row("image", LOOP)
    buf = io.StringIO()
    Console(file=buf, width=width, force_terminal=False, color_system=None).print(t)
    lines = buf.getvalue().splitlines()
    assert all(len(line) <= width for line in lines), lines
    return [line.split("│")[2].strip() for line in lines if "│" in line]


def test_long_words_break_after_separators() -> None:
    parts = _cell_lines(40)
    assert len(parts) > 3, parts  # the cells did fold
    assert "".join(parts) == OPTIONS + LOOP  # nothing lost or added
    ends = [p for p in parts if not (OPTIONS.endswith(p) or LOOP.endswith(p))]
    assert ends and all(p[-1] in ",/=:" for p in ends), parts  # each line but a cell's last ends at a separator
    assert "resv_strict," in "\n".join(parts) and "resgid=65534" in "\n".join(parts)


def test_a_long_word_without_separators_still_fits() -> None:
    t = FitTable([Col("k", "left"), Col("v", "left", wrap=True)])
    t.add_row("x", "A" * 70)
    buf = io.StringIO()
    Console(file=buf, width=40, force_terminal=False, color_system=None).print(t)
    lines = buf.getvalue().splitlines()
    assert all(len(line) <= 40 for line in lines), lines
    assert "".join(line.split("│")[2].strip() for line in lines if "│" in line) == "A" * 70
