"""JSON: every kind's document, with its tag and `schema_version` (each documented in docs/)."""

from __future__ import annotations

import json as _json
from typing import Any, Iterator

from iolens.render.exports import Exported, Format


def _dumps(doc: dict[str, Any], indent: int = 1) -> bytes:
    return (_json.dumps(doc, indent=indent) + "\n").encode()


def _report(s: Exported) -> Iterator[bytes]:
    from iolens.render.report_json import iter_json

    return iter_json(s.report)


def _pipeline(rep: dict[str, Any]) -> bytes:
    from iolens.render.pipeline import render_json

    return render_json(rep)


def _diff(d: Any) -> bytes:
    from iolens.render.diff_text import render_diff_json

    return render_diff_json(d)


def _pipeline_diff(pair: tuple) -> bytes:
    from iolens.render.pipeline import render_diff_json

    return render_diff_json(*pair)


def _replay(s: Exported) -> bytes:
    return _dumps(s.report, indent=2)


def _compare(rep: dict[str, Any]) -> bytes:
    from iolens.render.compare_json import render_json

    return render_json(rep)


def _cost(rep: dict[str, Any]) -> bytes:
    from iolens.render.cost_json import render_json

    return render_json(rep)


def _compress(doc: dict[str, Any]) -> bytes:
    from iolens.render.compress_json import render_json

    return render_json(doc)


def _bench(doc: dict[str, Any]) -> bytes:
    from iolens.render.bench_export import bench_json

    return bench_json(doc)


FORMAT = Format("json", "--json", ".json",
                "Write the result as JSON (its tag and schema_version are documented in docs/)", {
    "report": _report, "pipeline": _pipeline, "diff": _diff, "pipeline-diff": _pipeline_diff, "replay": _replay,
    "predict": lambda doc: _dumps(doc, indent=2), "compare": _compare, "cost": _cost,
    "compress": _compress, "compress-fs": _compress, "bench": _bench,
})
