"""Chrome/Perfetto trace JSON: a --trace capture's operations on a timeline."""

from __future__ import annotations

from iolens.render.exports import Exported, Format


def _report(s: Exported) -> bytes:
    from iolens.render.chrome_trace import render_chrome_trace

    return render_chrome_trace(s.capture)


FORMAT = Format("chrome-trace", "--chrome-trace", ".json",
                "Write a --trace capture's operations as Chrome/Perfetto trace JSON", {"report": _report})
