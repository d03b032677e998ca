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
