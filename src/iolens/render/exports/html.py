"""HTML: a self-contained page (works offline) for the kinds that have one."""

from __future__ import annotations

from typing import Any

from iolens.render.exports import Exported, Format


def _report(s: Exported) -> bytes:
    from iolens.render.report_html import render_html

    return render_html(s.report)


def _pipeline(rep: dict[str, Any]) -> bytes:
    from iolens.render.pipeline import render_html

    return render_html(rep)


def _compare(rep: dict[str, Any]) -> bytes:
    from iolens.render.compare_html import render_html

    return render_html(rep)


def _cost(rep: dict[str, Any]) -> bytes:
    from iolens.render.cost_html import render_html

    return render_html(rep)


def _compress(doc: dict[str, Any]) -> bytes:
    from iolens.render.compress_html import render_html

    return render_html(doc)


FORMAT = Format("html", "--html", ".html", "Write a self-contained HTML page (works offline)", {
    "report": _report, "pipeline": _pipeline, "compare": _compare, "cost": _cost, "compress": _compress,
})
