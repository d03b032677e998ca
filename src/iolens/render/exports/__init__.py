"""The one export interface: every file format a command can write, and which reports each applies to.

A format is one module in this package that declares a `FORMAT`: its name, its command-line option, its file
suffix, a line of help, and how it renders each kind of report it applies to (a function of that kind's
subject, returning bytes; the renderer itself is imported only when the format is written). `FORMATS` lists
the modules once; `iolens report`, `diff`, `replay`, `predict`, `compare`, `cost`, `compress` and `bench` take
their output options from here (`export_options(kind)`), offer the formats that apply to their kind, and refuse
the others with a line that says which formats they do write (`outputs`, `check`, `write`).

Kinds and their subjects:
  report         Exported(report=analysis Report, capture=Capture, sample=str)   iolens report CAPTURE
  pipeline       the pipeline report dict (pipeline.merge.build_pipeline)         iolens report DIR
  diff           analysis.diff.Diff                                               iolens diff A B
  pipeline-diff  (pipeline report A, pipeline report B, path A, path B)           iolens diff DIR DIR
  replay         Exported(report=the replay document dict, plan=replay Plan)     iolens replay
  predict        the prediction document dict                                     iolens predict
  compare        the compare report dict                                          iolens compare
  cost           the cost report dict                                             iolens cost
  compress       the compress document dict                                       iolens compress
  compress-fs    the compression-on-a-filesystem document dict                    iolens compress --fs
  bench          the bench document dict                                          iolens bench
"""

from __future__ import annotations

import functools
import importlib
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

import click

from iolens.errors import UsageError

# bytes, or parts of them (written one after the other, never held together), or {suffix added to the path: bytes}
# for more files
Render = Callable[[Any], "bytes | Iterator[bytes] | dict[str, bytes]"]

KINDS = ("report", "pipeline", "diff", "pipeline-diff", "replay", "predict", "compare", "cost", "compress",
         "compress-fs", "bench")
WHAT = {"report": "a capture's report", "pipeline": "a capture directory (a pipeline run)", "diff": "a diff",
        "pipeline-diff": "a diff of two pipeline runs", "replay": "a replay", "predict": "a prediction",
        "compare": "a comparison", "cost": "a cost report", "compress": "a compression report",
        "compress-fs": "a compression-on-a-filesystem report", "bench": "a bench run"}


@dataclass(frozen=True)
class Format:
    name: str  # the key in a command's `outputs`
    option: str  # its command-line option
    suffix: str  # what a file of it is usually called
    help: str  # what it holds, for the option's help
    renders: Mapping[str, Render] = field(default_factory=dict)  # kind -> how it renders that kind's subject
    companions: tuple[str, ...] = ()  # suffixes of further files it writes beside PATH


@dataclass
class Exported:
    """The subject of a kind whose formats need more than one object."""

    report: Any
    capture: Any = None
    sample: str | None = None
    plan: Any = None


_MODULES = ("json", "html", "csv", "chrome_trace", "multiqc", "fio_iolog")  # the formats, listed once


def _formats() -> tuple[Format, ...]:
    return tuple(importlib.import_module(f"{__name__}.{m}").FORMAT for m in _MODULES)


FORMATS: tuple[Format, ...] = _formats()


def offered(kind: str) -> list[Format]:
    """The formats that apply to `kind`, in the registry's order."""
    if kind not in KINDS:
        raise ValueError(f"unknown export kind {kind}")
    return [f for f in FORMATS if kind in f.renders]


def _names(formats: list[Format]) -> str:
    return ", ".join(f.option for f in formats) or "no files"


def export_options(kind: str, *, also: tuple[str, ...] = ()) -> Callable[[Callable], Callable]:
    """Click options for every format: those that apply to `kind` (and to the kinds in `also`, which the command
    decides between at run time, e.g. a capture or a capture directory) are offered with their help; the others
    are hidden and refused when given. The command receives them together as `outputs` ({format name: path})."""
    kinds = (kind, *also)
    for k in kinds:
        offered(k)

    def decorate(fn: Callable) -> Callable:
        for f in reversed(FORMATS):
            applies = any(k in f.renders for k in kinds)
            fn = click.option(f.option, f"out_{f.name.replace('-', '_')}", metavar="PATH", hidden=not applies,
                              help=f"{f.help}; '-' for stdout." if applies else None)(fn)

        @functools.wraps(fn)  # with fn's __click_params__: the options above this decorator join the same list
        def wrapper(*args: Any, **kw: Any) -> Any:
            outs = {f.name: kw.pop(f"out_{f.name.replace('-', '_')}", None) for f in FORMATS}
            return fn(*args, outputs=outs, **kw)

        return wrapper

    return decorate


def check(kind: str, outputs: Mapping[str, str | None]) -> dict[str, str]:
    """The outputs asked for, as {option: path}; a UsageError naming the formats `kind` writes when one of them
    does not apply to it."""
    asked = [(f, outputs[f.name]) for f in FORMATS if outputs.get(f.name)]
    wrong = [f for f, _p in asked if kind not in f.renders]
    if wrong:
        raise UsageError(f"{_names(wrong)}: not a format of {WHAT[kind]}, which writes {_names(offered(kind))}")
    paths = {}
    for f, p in asked:
        paths[f.option] = str(p)
        for suffix in f.companions:
            paths[f"{f.option} ({suffix})"] = f"{p}{suffix}"
    return paths


def to_stdout(outputs: Mapping[str, str | None]) -> bool:
    """Whether an output goes to standard output (then the terminal report is not printed there)."""
    return any(str(p) == "-" for p in outputs.values() if p)


def render(kind: str, name: str, subject: Any) -> bytes | dict[str, bytes]:
    """One format of one kind, rendered (for commands and tests that want the bytes)."""
    fmt = next(f for f in FORMATS if f.name == name)
    data = fmt.renders[kind](subject)
    return data if isinstance(data, (bytes, dict)) else b"".join(data)


def write(kind: str, outputs: Mapping[str, str | None], subject: Any, *, force: bool,
          say: Callable[[str], None] | None = None) -> None:
    """Write every output asked for, through the one output policy (never overwrite without --force)."""
    from iolens.output import write_output

    check(kind, outputs)
    for f in FORMATS:
        path = outputs.get(f.name)
        if not path:
            continue
        data = f.renders[kind](subject)
        files = data if isinstance(data, dict) else {"": data}
        for suffix, body in files.items():
            opt = f.option if not suffix else f"{f.option} ({suffix})"
            write_output(f"{path}{suffix}", body, force=force, opt=opt)
        if say is not None and str(path) != "-":
            say(f"  {f.name}: {path}")


def write_exports(console: Any, kind: str, outputs: Mapping[str, str | None], subject: Any,
                  store: Mapping[str, Any] | None, *, force: bool) -> None:
    """`write`, saying on `console` where each output went and, when the run was stored, which run it is in the
    results store."""
    write(kind, outputs, subject, force=force, say=console.print)
    if store:
        console.print(f"  stored as run {store['run_id']} in {store['db']}")
