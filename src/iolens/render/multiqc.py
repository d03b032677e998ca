"""A MultiQC custom-content file: the time breakdown as a bar graph, one bar per sample.

Save it as `<name>_mqc.json` where MultiQC searches, and it shows up as a section of the pipeline's
MultiQC report (https://docs.seqera.io/multiqc/custom_content).  Several captures can be combined by
giving each its own file with a distinct `--sample` name; MultiQC merges the sections by id.
"""

from __future__ import annotations

import json

from iolens.analysis.model import Report
from iolens.analysis.breakdown import BREAKDOWN, LABELS

COLORS = {
    "tiny_read": "#d62728", "small_read": "#ff7f0e", "streaming_read": "#2ca02c", "random_read": "#9467bd",
    "tiny_write": "#e377c2", "small_write": "#bcbd22", "streaming_write": "#17becf", "random_write": "#8c564b",
    "metadata": "#1f77b4", "sync": "#393b79", "pipe_wait": "#c7c7c7", "compute": "#7f7f7f",
}


def multiqc_dict(report: Report, sample: str) -> dict:
    return {
        "id": "iolens_breakdown",
        "section_name": "iolens: where the time went",
        "description": ("Process time split by kind of file I/O and compute, from `iolens report` "
                        "(tiny < 4 KiB, small < 64 KiB; see the iolens docs for how it is apportioned)."),
        "plot_type": "bargraph",
        "pconfig": {"id": "iolens_breakdown_plot", "title": "iolens: time by category", "ylab": "Seconds",
                    "cpswitch_counts_label": "Seconds"},
        "categories": {c: {"name": LABELS[c], "color": COLORS[c]} for c in BREAKDOWN},
        "data": {sample: {c: round(report.breakdown[c], 6) for c in BREAKDOWN}},
    }


def render_multiqc(report: Report, sample: str) -> bytes:
    return (json.dumps(multiqc_dict(report, sample), indent=1) + "\n").encode()
