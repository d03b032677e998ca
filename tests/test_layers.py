"""The floors of the Python package, checked: a module imports only from its own room or from a floor below.

FLOORS is the one list of floors (docs/design.md draws it). An import that runs up a floor, or sideways into
another room of the same floor, fails this test unless ALLOWED names it with its reason. The base floor and the
top floor (the command-line shell) are each one room. Imports inside functions count too: they are dependencies
all the same, only later.
"""

from __future__ import annotations

import ast
from pathlib import Path

from conftest import HERE

SRC = HERE.parent / "src" / "iolens"

# lowest first; a room is a subpackage or a top-level module of iolens
FLOORS: tuple[tuple[str, frozenset[str]], ...] = (
    ("base", frozenset({"__init__", "_format", "errors", "units", "names", "native", "output", "dirs", "sysinfo",
                        "pagecache", "redact", "store", "synth", "examples", "workdirs", "volumes"})),
    ("storage", frozenset({"lab"})),  # where storage targets come from: the lab's catalogue and its kinds
    ("targets", frozenset({"resolve"})),  # the one resolver of a storage target, over the lab's catalogue
    ("workspace", frozenset({"workspace"})),  # a checked target and the rails of working there (bench, whatif)
    ("capture", frozenset({"capture"})),
    ("analysis", frozenset({"analysis", "stats"})),
    ("compute", frozenset({"doctor", "bench", "compare", "compress", "cost", "whatif", "pipeline"})),
    ("render", frozenset({"render"})),
    ("commands", frozenset({"commands", "cli", "entry", "__main__"})),
)

# (importing module, room imported) -> why it is allowed; keep it short, and take rows out as modules move
ALLOWED: dict[tuple[str, str], str] = {
    ("compress/fs.py", "compare"): "compression on a filesystem runs the user's command through compare's runner "
                                   "and statistics, not a copy of them",
}


def _room(path: Path) -> str:
    rel = path.relative_to(SRC)
    return rel.parts[0] if len(rel.parts) > 1 else rel.stem


def _floor(room: str) -> int:
    for i, (_name, rooms) in enumerate(FLOORS):
        if room in rooms:
            return i
    raise AssertionError(f"{room} is on no floor: add it to FLOORS (and to docs/design.md's drawing)")


def _imported_rooms(path: Path) -> set[str]:
    rooms = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        names: list[str] = []
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names = [f"{node.module}.{a.name}" for a in node.names] if node.module == "iolens" else [node.module]
        elif isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        for name in names:
            parts = name.split(".")
            if parts[0] == "iolens" and len(parts) > 1:  # `from iolens import __version__` is the package's own
                sub = (SRC / parts[1]).is_dir() or (SRC / f"{parts[1]}.py").is_file()
                rooms.add(parts[1] if sub else "__init__")
    return rooms


def violations() -> dict[tuple[str, str], str]:
    found = {}
    for path in sorted(SRC.rglob("*.py")):
        room = _room(path)
        here = _floor(room)
        for other in _imported_rooms(path) - {room}:
            there = _floor(other)
            if there > here:
                found[(str(path.relative_to(SRC)), other)] = f"up from {FLOORS[here][0]} to {FLOORS[there][0]}"
            elif there == here and 0 < here < len(FLOORS) - 1:  # the base and the CLI shell are one room each
                found[(str(path.relative_to(SRC)), other)] = f"sideways within {FLOORS[here][0]}"
    return found


def test_no_import_runs_up_a_floor_or_sideways_unless_allowed():
    bad = {k: v for k, v in violations().items() if k not in ALLOWED}
    assert not bad, "\n".join(f"{src} imports iolens.{room}: {why}" for (src, room), why in sorted(bad.items()))


def test_every_allowed_exception_is_still_needed():
    """A row of ALLOWED whose import has gone is taken out, so the list only shrinks."""
    stale = set(ALLOWED) - set(violations())
    assert not stale, sorted(stale)


def test_the_check_sees_an_upward_import(tmp_path, monkeypatch):
    """The check itself: an analysis module that imports a renderer is found."""
    fake = tmp_path / "src" / "iolens"
    (fake / "analysis").mkdir(parents=True)
    (fake / "render").mkdir()
    (fake / "analysis" / "x.py").write_text("def f():\n    from iolens.render.report_text import render\n")
    (fake / "render" / "y.py").write_text("from iolens.analysis.x import f\n")
    monkeypatch.setattr(__import__(__name__), "SRC", fake)
    assert violations() == {("analysis/x.py", "render"): "up from analysis to render"}
