"""The native code's rooms stay small and layered: no C source or header over MAX_LINES, and no two native files
that use each other, directly or round a longer circle.

"Uses" is read from the compiled objects, not from the text: each `.c` file is compiled on its own and `nm` lists
the symbols it defines and the ones it needs; file A uses file B when A needs a function or a variable B defines
(a definition in A's own directory first, as the link of A's program resolves it).  A symbol the C library
defines is the C library's: a definition of it in native/ is the interposer's hook, which no program links.  A
circle is a strongly connected set of files in that graph.
"""

from __future__ import annotations

import shutil
import subprocess
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from conftest import HERE, unavailable

NATIVE = HERE.parent / "native"
MAX_LINES = 600
# Files allowed over MAX_LINES, each with its reason. Keep this list short.
LONGER: dict[str, str] = {}
# Sets of files allowed to use each other, each with its reason: a circle must lie inside one of them.
CIRCLES: list[tuple[frozenset[str], str]] = []


def _sources(ext: str) -> list[Path]:
    return sorted(p for p in NATIVE.rglob(f"*.{ext}") if p.is_file())


def _name(p: Path) -> str:
    return str(p.relative_to(NATIVE))


def test_no_native_file_is_too_long():
    long = {_name(p): n for ext in ("c", "h") for p in _sources(ext)
            if (n := len(p.read_text().splitlines())) > MAX_LINES}
    assert set(long) <= set(LONGER), {k: v for k, v in long.items() if k not in LONGER}


def _symbols(cc: str, nm: str, src: Path, out: Path) -> tuple[set[str], set[str]]:
    """What the file defines (functions and variables with external linkage) and what it needs."""
    obj = out / (_name(src).replace("/", "__") + ".o")
    res = subprocess.run([cc, "-c", "-O0", "-D_GNU_SOURCE", "-I", str(NATIVE / "include"), "-o", str(obj),
                          str(src)], capture_output=True, text=True)
    assert res.returncode == 0, f"{_name(src)} does not compile alone:\n{res.stderr[-3000:]}"
    defined, needed = set(), set()
    for line in subprocess.run([nm, "-P", str(obj)], capture_output=True, text=True, check=True).stdout.splitlines():
        name, kind = line.split()[:2]
        if kind == "U":
            needed.add(name)
        elif kind in "TDBRGSVW":  # upper case: external linkage
            defined.add(name)
    return defined, needed


def _libc(cc: str, nm: str) -> set[str]:
    """The functions and variables the C library defines, without their versions."""
    lib = subprocess.run([cc, "-print-file-name=libc.so.6"], capture_output=True, text=True).stdout.strip()
    res = subprocess.run([nm, "-D", "-P", "--defined-only", lib], capture_output=True, text=True)
    if res.returncode != 0 or not res.stdout:
        unavailable(f"cannot list the C library's symbols ({lib})")
    return {line.split()[0].split("@")[0] for line in res.stdout.splitlines()}


def _uses(cc: str, nm: str, tmp: Path) -> dict[str, set[str]]:
    """File -> the files whose definitions it needs."""
    libc = _libc(cc, nm)
    srcs = _sources("c")
    with ThreadPoolExecutor(max_workers=2) as ex:
        syms = dict(zip(map(_name, srcs), ex.map(lambda p: _symbols(cc, nm, p, tmp), srcs)))
    where: dict[str, list[str]] = {}
    for f, (defined, _) in syms.items():
        for s in defined:
            where.setdefault(s, []).append(f)
    uses: dict[str, set[str]] = {f: set() for f in syms}
    for f, (_, needed) in syms.items():
        home = f.rsplit("/", 1)[0]
        for s in needed - libc:
            owners = where.get(s, [])
            near = [o for o in owners if o.rsplit("/", 1)[0] == home]
            uses[f].update(o for o in (near or owners) if o != f)
    return uses


def circles(uses: dict[str, set[str]]) -> list[set[str]]:
    """The strongly connected sets of more than one file (Tarjan's algorithm)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    found: list[set[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in sorted(uses.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            scc = set()
            while True:
                w = stack.pop()
                on.discard(w)
                scc.add(w)
                if w == v:
                    break
            if len(scc) > 1:
                found.append(scc)

    for v in sorted(uses):
        if v not in index:
            visit(v)
    return found


def test_circles_finds_a_circle_and_nothing_else():
    uses = {"a.c": {"b.c"}, "b.c": {"c.c"}, "c.c": {"a.c", "d.c"}, "d.c": set(), "e.c": {"d.c"}}
    assert circles(uses) == [{"a.c", "b.c", "c.c"}]
    assert circles({"a.c": {"b.c"}, "b.c": set()}) == []


@pytest.mark.timeout(300)
def test_no_circle_between_native_files(tmp_path):
    cc, nm = shutil.which("cc") or shutil.which("gcc"), shutil.which("nm")
    if not cc or not nm:
        unavailable("a C compiler and nm are needed to read which native file uses which")
    uses = _uses(cc, nm, tmp_path)
    assert any(uses.values()), "no file uses another: the symbol tables were not read"
    assert "bench/json.c" in uses["replay/output.c"], "the replayer's output is written with the bench's json.c"
    bad = [sorted(c) for c in circles(uses) if not any(c <= allowed for allowed, _ in CIRCLES)]
    assert not bad, f"native files that use each other: {bad}"
