"""Suites: named sets of tests, each a few engine phases, sized from one scale.

A Test is plain data: engine phases (some reported, some set-up or clean-up), the job dirs it uses (by target),
and what it reports.  `footprint` simulates the files each phase leaves behind to find the peak bytes and inodes
per target, which the free-space check uses.  Each test removes its files before the next one starts.

Every suite is one row of SUITES (name, help, default content, builder), added by `@register_suite` on its
builder.  `iolens bench --suite` offers and explains exactly what is registered; nothing else lists suites.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field, replace
from typing import Any, Callable

from iolens.bench.engine import op_names
from iolens.errors import UsageError
from iolens.units import parse_size  # noqa: F401 (bench's size options read with it)

KiB, MiB, GiB = 1 << 10, 1 << 20, 1 << 30

CLASSIC_FILE = 500_000  # the published comparison's 500 KB files


@dataclass
class Options:
    """What the user chose; None means the suite's default."""

    size: int | None = None          # the large-file unit, bytes
    files: int | None = None         # small-file count
    runtime: float | None = None     # seconds, for time-based phases
    threads: list[int] | None = None
    bs: int | None = None            # sequential block size
    content: str | None = None
    template: str | None = None
    direct: bool = False
    warm: bool = False               # skip eviction on purpose
    drop_caches: bool = False
    shared: bool = False             # streams: one shared file
    read_share: float | None = None  # random: also a mixed test
    ioengine: str = "psync"          # random and ref-lookup: psync threads, or io_uring with iodepth = QD
    seed: int = 1


@dataclass
class Scale:
    size: int
    files: int
    meta_files: int
    runtime: float
    bs: int


@dataclass
class Test:
    suite: str
    name: str
    phases: list[dict[str, Any]]
    targets: list[str]               # target spec per job dir index
    reports: list[str] = field(default_factory=list)  # names of reported phases, in order
    describe: str = ""

    def reported(self) -> list[dict[str, Any]]:
        return [p for p in self.phases if p.get("report", True)]


# builder(spec, scale, options, others) -> tests.  `spec` is the target the suite runs on, `others` the other real
# targets of the run (for tests that move data between targets; most builders ignore it).  `options.content` is
# already resolved: the user's choice, else the suite's default.
Builder = Callable[[str, Scale, Options, list[str]], list[Test]]


@dataclass(frozen=True)
class Suite:
    name: str
    help: str        # one line for `iolens bench --help`
    content: str     # what writes contain unless --content says otherwise
    builder: Builder


SUITES: dict[str, Suite] = {}


def register_suite(name: str, help: str, *, content: str = "random") -> Callable[[Builder], Builder]:
    """Decorator: add a suite to the table `iolens bench --suite` reads.  The only step a new suite needs."""
    def add(builder: Builder) -> Builder:
        if name in SUITES:
            raise ValueError(f"bench suite {name!r} is registered twice")
        SUITES[name] = Suite(name, help, content, builder)
        return builder
    return add


def lookup(name: str) -> Suite:
    try:
        return SUITES[name]
    except KeyError:
        raise UsageError(f"unknown suite {name!r}; choose from {', '.join(SUITES)}") from None


def suites_help() -> str:
    return "; ".join(f"{s.name}: {s.help}" for s in SUITES.values())


def _round(n: int, unit: int) -> int:
    return max(unit, (int(n) // unit) * unit)


def mem_bytes() -> int:
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError):
        return 8 * GiB


def default_scale(opts: Options, free_bytes: list[int], free_inodes: list[int | None]) -> Scale:
    """Scaled to free space and RAM, capped so a default run takes seconds to a minute per target."""
    bs = opts.bs or MiB
    if opts.size:
        size = opts.size
    else:
        free = min(free_bytes) if free_bytes else 64 * GiB
        size = min(GiB, mem_bytes() // 16, free // 20)
        size = max(64 * MiB, size)
    size = _round(size, max(bs, 4096))
    if opts.files:
        files = opts.files
    else:
        files = int(max(16, min(1000, size // (2 * CLASSIC_FILE))))
    inodes = [i for i in free_inodes if i]
    meta = opts.files or int(min(10_000, (min(inodes) // 10) if inodes else 10_000))
    runtime = opts.runtime if opts.runtime is not None else 3.0
    return Scale(size=size, files=files, meta_files=max(1, meta), runtime=runtime, bs=bs)


# ---- building blocks --------------------------------------------------------------------------

def _g(op: str, **kw: Any) -> dict[str, Any]:
    g = {"op": op, "dir": 0}
    g.update(kw)
    return g


def _phase(name: str, groups: list[dict[str, Any]], *, evict: bool = False, report: bool = True) -> dict[str, Any]:
    return {"name": name, "evict_before": evict, "report": report, "groups": groups}


def _remove(name: str, paths: list[str], dir_index: int = 0) -> dict[str, Any]:
    return _phase(f"{name} (clean-up)", [{"op": "remove", "dir": dir_index, "paths": paths}], report=False)


def _seq_names(file: str, threads: int, shared: bool) -> list[str]:
    return [file] if shared else [f"{file}.{t}" for t in range(threads)]


def _threads(opts: Options, default: list[int]) -> list[int]:
    return opts.threads or default


@register_suite("classic", "one big file + 500 KB files, 1/4/8 threads")
def classic(spec: str, sc: Scale, opts: Options, others: list[str]) -> list[Test]:
    content = opts.content
    evict = not opts.warm
    tests = []
    for t in _threads(opts, [1, 4, 8]):
        per = _round(sc.size // t, sc.bs)
        name_w, name_r = f"seq-write t{t}", f"seq-read t{t}"
        tests.append(Test("classic", f"seq t{t}", [
            _phase(name_w, [_g("write", file="big", threads=t, size=per, bs=sc.bs, sync="fdatasync",
                               content=content, direct=opts.direct)]),
            _phase(name_r, [_g("read", file="big", threads=t, size=per, bs=sc.bs, direct=opts.direct)], evict=evict),
            _remove(name_r, _seq_names("big", t, False)),
        ], [spec], describe=f"one large file per thread ({t} threads, {per} bytes each), fdatasync, then read"))
        n = max(t, sc.files)
        name_c, name_rf = f"files-create t{t}", f"files-read t{t}"
        fan = max(1, -(-n // 10_000))
        tests.append(Test("classic", f"files t{t}", [
            _phase(name_c, [_g("create", prefix="small", count=n, size=CLASSIC_FILE, fanout=fan, threads=t,
                               bs=min(sc.bs, 1 << 20), content=content)]),
            _phase(name_rf, [_g("readfiles", prefix="small", count=n, fanout=fan, threads=t, bs=min(sc.bs, 1 << 20))],
                   evict=evict),
            _remove(name_rf, ["small"]),
        ], [spec], describe=f"{n} files of 500 KB created, then read ({t} threads)"))
    return tests


@register_suite("random", "4 KiB at queue depth 1 and 32")
def random_suite(spec: str, sc: Scale, opts: Options, others: list[str]) -> list[Test]:
    content = opts.content
    evict = not opts.warm
    fsize = _round(sc.size, 4096)
    base = dict(file="rand", layout="shared", file_size=fsize, bs=4096, runtime_s=sc.runtime, direct=opts.direct,
                content=content)
    phases = []
    qds = _threads(opts, [1, 32])
    kinds: list[tuple[str, dict[str, Any]]] = [("randread", {}), ("randwrite", {"sync": "fdatasync"})]
    if opts.read_share is not None:
        kinds.append(("randrw", {"read_share": opts.read_share, "sync": "fdatasync"}))
    first = True
    for op, extra in kinds:
        for qd in qds:
            if opts.ioengine == "io_uring":
                g = _g(op, threads=1, iodepth=qd, engine="io_uring", **base, **extra)
            else:
                g = _g(op, threads=qd, **base, **extra)
            if first:
                g["prepare"] = True  # lay the file out once, untimed
                first = False
            phases.append(_phase(f"{op} qd{qd}", [g], evict=evict and op != "randwrite"))
    phases.append(_remove("random", ["rand"]))
    return [Test("random", "random 4k", phases, [spec],
                 describe=f"4 KiB random I/O on one {fsize}-byte file, queue depth = "
                          f"{'io_uring iodepth' if opts.ioengine == 'io_uring' else 'threads'}, {sc.runtime:g} s each")]


@register_suite("streams", "1/2/4/8 concurrent streams")
def streams(spec: str, sc: Scale, opts: Options, others: list[str]) -> list[Test]:
    content = opts.content
    evict = not opts.warm
    layout = "shared" if opts.shared else "per_thread"
    tests = []
    for n in _threads(opts, [1, 2, 4, 8]):
        per = _round(sc.size // n, sc.bs)
        w, r = f"streams-write n{n}", f"streams-read n{n}"
        tests.append(Test("streams", f"streams n{n}", [
            _phase(w, [_g("write", file="stream", layout=layout, threads=n, size=per, bs=sc.bs, sync="fdatasync",
                          content=content, direct=opts.direct)]),
            _phase(r, [_g("read", file="stream", layout=layout, threads=n, size=per, bs=sc.bs, direct=opts.direct)],
                   evict=evict),
            _remove(r, _seq_names("stream", n, opts.shared)),
        ], [spec], describe=f"{n} concurrent streams of {per} bytes, "
                            f"{'one shared file' if opts.shared else 'file per stream'}"))
    return tests


@register_suite("meta", "create/stat/delete rates")
def meta(spec: str, sc: Scale, opts: Options, others: list[str]) -> list[Test]:
    tests = []
    n = sc.meta_files
    fan = 10 if n >= 100 else 1
    for t in _threads(opts, [1, 4]):
        common = dict(prefix="meta", count=max(n, t), fanout=fan, threads=t)
        tests.append(Test("meta", f"meta t{t}", [
            _phase(f"meta-create t{t}", [_g("create", size=0, **common)]),
            _phase(f"meta-stat t{t}", [_g("stat", **common)], evict=not opts.warm and opts.drop_caches),
            _phase(f"meta-delete t{t}", [_g("delete", **common)]),
            _remove(f"meta t{t}", ["meta"]),
        ], [spec], describe=f"{max(n, t)} empty files in {fan} directories: create, stat, delete ({t} threads)"))
    return tests


WORKDIR_SIZES = [1, 180, 1 * KiB, 2 * KiB, 6 * KiB, 0, 12 * KiB, 40 * KiB]  # .exitcode, .command.sh, logs, outputs


@register_suite("genomics", "aligner, sort, index load, reference lookup, work directories", content="fastq")
def genomics(spec: str, sc: Scale, opts: Options, others: list[str]) -> list[Test]:
    """Patterns modelled on real tools; `others` adds aligner runs reading here and writing to each other target."""
    content = opts.content
    evict = not opts.warm
    blk = 64 * KiB  # htslib/BGZF and stdio-sized I/O
    S = sc.size
    fin = _round(S // 4, blk)
    fout = _round(3 * S // 4, blk)
    tests = []

    def align(name: str, out_dir: int, targets: list[str]) -> Test:
        return Test("genomics", name, [
            _phase(f"{name} (input)", [_g("write", file="align-in", size=fin, bs=MiB, content="random",
                                          sync="fdatasync")], report=False),
            _phase(name, [_g("read", file="align-in", size=fin, bs=blk, direct=opts.direct),
                          _g("write", dir=out_dir, file="align-out", size=fout, bs=blk, content="sam",
                             sync="fdatasync")], evict=evict),
            _remove(name, ["align-in.0"]),
            _remove(name, ["align-out.0"], out_dir),
        ], targets, describe="aligner: stream-read compressed reads while stream-writing SAM "
                             f"({fin} in, {fout} out{', output on ' + targets[-1] if out_dir else ''})")

    tests.append(align("align", 0, [spec]))
    for other in others:
        tests.append(align(f"align to {other}", 1, [spec, other]))

    chunks = 8
    chunk = _round(S // chunks, blk)
    tmp = [f"sort-tmp.{i}" for i in range(chunks)]
    tests.append(Test("genomics", "sort", [
        _phase("sort-spill", [_g("write", file="sort-tmp", threads=chunks, size=chunk, bs=blk, content="random",
                                 sync="fdatasync")]),
        _phase("sort-merge", [_g("read", files=tmp, interleave=True, bs=blk),
                              _g("write", file="sort-out", size=chunk * chunks, bs=blk, content="random",
                                 sync="fdatasync")], evict=evict),
        _remove("sort", tmp + ["sort-out.0"]),
    ], [spec], describe=f"sort: {chunks} parallel temp chunks of {chunk} bytes (-m), then a merge reading all"))

    idx = _round(S, 4 * MiB)
    tests.append(Test("genomics", "index-load", [
        _phase("index-load", [_g("read", file="index", size=idx, bs=4 * MiB, prepare=True, content="random",
                                 direct=opts.direct)], evict=evict),
        _remove("index-load", ["index.0"]),
    ], [spec], describe=f"index load: one {idx}-byte sequential read"))

    ref = _round(S, 4096)
    tests.append(Test("genomics", "ref-lookup", [
        _phase("ref-lookup", [_g("randread", file="ref", layout="shared", file_size=ref, bs=4096,
                                 runtime_s=sc.runtime, prepare=True, content=content, direct=opts.direct,
                                 **({"engine": "io_uring"} if opts.ioengine == "io_uring" else {}))],
               evict=evict),
        _remove("ref-lookup", ["ref"]),
    ], [spec], describe=f"reference lookup: 4 KiB random reads in one {ref}-byte file for {sc.runtime:g} s"))

    n = max(8, sc.files * 4)
    wd = dict(prefix="work", count=n, fanout=max(1, n // 8), threads=4)
    tests.append(Test("genomics", "workdir", [
        _phase("workdir-create", [_g("create", sizes=WORKDIR_SIZES, bs=64 * KiB, content=content, **wd)]),
        _phase("workdir-stat", [_g("stat", **wd)]),
        _phase("workdir-read", [_g("readfiles", bs=64 * KiB, **wd)], evict=evict),
        _phase("workdir-delete", [_g("delete", **wd)]),
        _remove("workdir", ["work"]),
    ], [spec], describe=f"pipeline work directories: {n} small files, 8 per task directory, 4 tasks at a time"))
    return tests


def build(suite: str, spec: str, sc: Scale, opts: Options, others: list[str] | None = None) -> list[Test]:
    """The tests of a registered suite on target `spec`; `others` are the run's other real targets."""
    chosen = opts.content or lookup(suite).content
    tests = lookup(suite).builder(spec, sc, replace(opts, content=chosen), list(others or []))
    mark_read_content(tests)
    for t in tests:
        t.reports = [p["name"] for p in t.reported()]
        for p in t.phases:
            for g in p["groups"]:
                if opts.template and g.get("content") == chosen:
                    g["content"] = "template"
                    g["template"] = opts.template
    return tests


def _names(g: dict[str, Any]) -> list[str]:
    """The files (or small-file trees) a read group reads."""
    if g["op"] == "readfiles":
        return [g["prefix"]]
    if g.get("files"):
        return list(g["files"])
    file = g.get("file", "data")
    return [file] if g.get("layout") == "shared" else [f"{file}.{t}" for t in range(int(g.get("threads", 1)))]


def mark_read_content(tests: list[Test]) -> None:
    """Gives each read group without a `content` the content of the group that wrote the files it reads.

    The engine ignores `content` on a read it does not lay out; it is recorded for the cache judgement (a compressing
    filesystem stores FASTQ in fewer device bytes than it returns, random data in as many) and in the results.
    Files are followed per job directory through the tests in order; a read of files written with different or
    unknown contents stays unmarked."""
    reads = op_names(io="read")
    written: dict[tuple[int, str], str | None] = {}
    for t in tests:
        for p in t.phases:
            for g in p["groups"]:
                d = int(g.get("dir", 0))
                op = g["op"]
                if op in reads and not g.get("content"):
                    found = {written.get((d, n)) for n in _names(g)}
                    if len(found) == 1 and None not in found:
                        g["content"] = found.pop()
                if op == "remove":
                    for path in g.get("paths", []):
                        for k in [k for k in written if k[0] == d and (k[1] == path or k[1].startswith(path + "/"))]:
                            del written[k]
                    continue
                for name in _group_files(g):
                    if g.get("prepare") and (d, name) in written:
                        continue  # prepare keeps a file that is already there
                    written[(d, name)] = g.get("content")


def nullify(tests: list[Test]) -> None:
    """Turns tests into null-engine tests: same sizes and counts, no storage."""
    for t in tests:
        for p in t.phases:
            p["evict_before"] = False
            for g in p["groups"]:
                g["engine"] = "null"
                g.pop("dir", None)
                g.pop("prepare", None)
                g.pop("direct", None)
        t.phases = [p for p in t.phases if p["groups"][0]["op"] != "remove"]


# ---- footprint and work estimates ------------------------------------------------------------------

def _group_files(g: dict[str, Any]) -> dict[str, tuple[int, int]]:
    """Files a group leaves on disk: {path: (bytes, inodes)}."""
    op = g["op"]
    threads = int(g.get("threads", 1))
    shared = g.get("layout") == "shared"
    if op == "write":
        size = int(g.get("size", 0))
        if shared:
            return {g.get("file", "data"): (size * threads, 1)}
        return {f"{g.get('file', 'data')}.{t}": (size, 1) for t in range(threads)}
    if op in ("read", "randread", "randwrite", "randrw") and (g.get("prepare") or op != "read"):
        fsize = int(g.get("file_size") or g.get("size") or 0)
        if op == "read" and shared:
            fsize *= threads
        names = [g.get("file", "data")] if shared else [f"{g.get('file', 'data')}.{t}" for t in range(threads)]
        return {n: (fsize, 1) for n in names}
    if op == "create":
        count = int(g["count"])
        sizes = [int(x) for x in (g.get("sizes") or [g.get("size", 0)])]
        full, rem = divmod(count, len(sizes))

        def total(f: Callable[[int], int]) -> int:
            return sum(f(x) for x in sizes) * full + sum(f(x) for x in sizes[:rem])

        on_disk = total(lambda x: -(-x // 4096) * 4096)  # small files take whole blocks
        fan = int(g.get("fanout", 1))
        return {g["prefix"]: (on_disk + (fan + 1) * 4096, count + fan + 1)}
    return {}


def footprint(tests: list[Test]) -> dict[int, tuple[int, int]]:
    """Peak (bytes, inodes) per job dir index across the tests, as they run one after another."""
    alive: dict[int, dict[str, tuple[int, int]]] = {}
    peak: dict[int, tuple[int, int]] = {}
    for t in tests:
        for p in t.phases:
            for g in p["groups"]:
                d = int(g.get("dir", 0))
                files = alive.setdefault(d, {})
                if g["op"] == "remove":
                    for path in g.get("paths", []):
                        for k in [k for k in files if k == path or k.startswith(path + "/")]:
                            del files[k]
                elif g["op"] == "delete":
                    files.pop(g["prefix"], None)
                else:
                    files.update(_group_files(g))
            for d, files in alive.items():
                b = sum(v[0] for v in files.values())
                i = sum(v[1] for v in files.values())
                pb, pi = peak.get(d, (0, 0))
                peak[d] = (max(pb, b), max(pi, i))
    return peak


def expected_work(phase: dict[str, Any]) -> tuple[int, int, float]:
    """(bytes, ops, runtime_s) a phase is expected to do, for the progress bar."""
    b = o = 0
    rt = 0.0
    for g in phase["groups"]:
        op = g["op"]
        threads = int(g.get("threads", 1))
        if g.get("runtime_s"):
            rt = max(rt, float(g["runtime_s"]))
        elif op in ("write", "read"):
            if g.get("files"):
                b += 0  # merge: counted by the write group running beside it
            else:
                b += int(g.get("size", 0)) * threads
        elif op in ("create", "readfiles", "stat", "delete"):
            o += int(g["count"])
    return b, o, rt


def estimate_seconds(phase: dict[str, Any]) -> float:
    b, o, rt = expected_work(phase)
    return max(rt, b / 400e6 + o * 50e-6, 0.05) if phase.get("report", True) else 0.05
