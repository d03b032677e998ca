"""iolens parse: dump every record of a capture, as text or JSON."""

from __future__ import annotations

import json
import sys
from typing import TYPE_CHECKING, Any, Iterator

import click

from iolens.errors import CaptureError

if TYPE_CHECKING:  # the reader needs numpy: imported when a capture is parsed, not for `iolens --help`
    from iolens.capture.reader import Capture, Process

SCHEMA_TAG = "iolens-parse"
SCHEMA_VERSION = [1, 0]


def _flags(value: int, table: dict[str, tuple[int, str]]) -> list[str]:
    return [name for name, (bit, _doc) in table.items() if value & bit]


def process_dict(p: Process) -> dict[str, Any]:
    from iolens import _format as F

    fields = dict(p.fields)
    fields["flag_names"] = _flags(fields["flags"], F.PROC_FLAGS)
    fields["op_count"] = {name: fields["op_count"][i] for i, (name, _c) in enumerate(F.OPS)}
    files = []
    for f in p.files:
        f = dict(f)
        f["flag_names"] = _flags(f["flags"], F.FILE_FLAGS)
        files.append(f)
    events = None
    if p.events is not None:
        ops = [name for name, _cat in F.OPS]
        events = [
            {name: (ops[int(e[name])] if name == "op" and int(e[name]) < len(ops) else int(e[name]))
             for name in p.events.dtype.names or ()}
            for e in p.events
        ]
    return {
        "proc": fields,
        "exe": p.exe,
        "argv": p.argv,
        "cwd": p.cwd,
        "host": p.host,
        "env": p.env,
        "files": files,
        "timeline": p.timeline,
        "children": p.children,
        "events": events,
    }


def capture_dict(cap: Capture) -> dict[str, Any]:
    return {
        "tag": SCHEMA_TAG,
        "schema_version": SCHEMA_VERSION,
        "capture_version": list(cap.version),
        "path": cap.path,
        "complete": cap.complete,
        "problems": cap.problems,
        "integrity": cap.integrity,
        "meta": cap.meta,
        "processes": [process_dict(p) for p in cap.processes],
    }


def _nonzero(d: dict[str, Any]) -> str:
    parts = []
    for k, v in d.items():
        if isinstance(v, list):
            if any(v):
                parts.append(f"{k}={v}")
        elif v and k not in ("path_len",):
            parts.append(f"{k}={v}")
    return " ".join(parts)


def _show(v: Any) -> str:
    """A META value as text: a string with control characters or undecodable bytes as its repr (escaped)."""
    return v if not isinstance(v, str) or v.isprintable() else repr(v)  # containers repr their strings


def text_lines(cap: Capture) -> Iterator[str]:
    from iolens import _format as F

    yield f"capture {_show(cap.path)} format {cap.version[0]}.{cap.version[1]}, {len(cap.processes)} process image(s)"
    for k, v in cap.meta.items():
        if k != "mounts":
            yield f"META {k}: {_show(v)}"
    ncat = len(F.CATEGORIES)
    for p in cap.processes:
        d = process_dict(p)
        proc = dict(d["proc"])
        ops = {k: v for k, v in proc.pop("op_count").items() if v}
        yield f"PROC @{p.offset} {_nonzero(proc)}"
        yield f"  ops {ops}"
        yield f"  exe {p.exe!r} argv {p.argv!r} cwd {p.cwd!r} host {p.host!r} env {p.env!r}"
        for f in d["files"]:
            yield f"  FILE {f['path']!r} {_nonzero({k: v for k, v in f.items() if k != 'path'})}"
        for c in p.children:
            yield f"  CHILD {_nonzero(c)}"
        if p.timeline:
            t = p.timeline
            active = sum(1 for i in range(min(t["nbins"], F.TIMELINE_BINS)) if any(t["count"][i * ncat:(i + 1) * ncat]))
            yield f"  TIMELINE shift={t['shift']} bins with activity={active}"
        if d["events"]:
            yield f"  TRACE {len(d['events'])} events"
            for e in d["events"]:
                yield f"    EVENT {_nonzero(e)}"


def print_text(cap: Capture) -> None:
    for line in text_lines(cap):
        click.echo(line)


@click.command()
@click.argument("capture", type=click.Path(path_type=str))  # the reader says what is wrong, in one line
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output (tag iolens-parse, schema [1, 0]).")
def parse(capture: str, as_json: bool) -> None:
    """Dump every record of CAPTURE.

    A damaged or truncated capture prints what could be read, then a one-line
    error naming the file and byte offset, and exits with status 3 (as every
    command that reads a capture does on the same damage).
    """
    from iolens.capture.load import load_capture

    cap = load_capture(capture, processes=False, warn=None)  # a dump shows whatever is there; the problem ends it
    if as_json:
        json.dump(capture_dict(cap), sys.stdout, indent=1, default=str)  # ASCII: surrogates are escaped
        sys.stdout.write("\n")
    else:
        print_text(cap)
    if cap.problems:
        raise CaptureError(cap.problems[0] + (f" (+{len(cap.problems) - 1} more)" if len(cap.problems) > 1 else ""))
