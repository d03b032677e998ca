"""MultiQC custom content: the report's headline figures for a MultiQC run (name the file *_mqc.json)."""

from __future__ import annotations

from iolens.render.exports import Exported, Format


def _report(s: Exported) -> bytes:
    from iolens.render.multiqc import render_multiqc

    return render_multiqc(s.report, s.sample or "")


FORMAT = Format("multiqc", "--multiqc", "_mqc.json", "Write MultiQC custom content (name it *_mqc.json; --sample "
                "names the sample)", {"report": _report})
