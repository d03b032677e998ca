"""Many clients at once: `iolens bench TARGET --clients N`, one engine per MPI rank.

`--clients N` re-executes the same command under a launcher (`mpirun -n N` or `srun -n N --mpi=pmix`); a process
started by a launcher (OpenMPI, PMIx or PMI in the environment) runs as one rank.  MPI (mpi4py) does every
barrier and every gather: there is no network protocol of our own.

Every reported phase runs as one engine job per rank.  Rank 0 picks a wall-clock start a moment ahead and
broadcasts it; each engine opens its gate then (`start_at`) and, for the stonewalled patterns, stops every op
`--runtime` seconds later (`stonewall_s`), so slow ranks cannot hide fast ones (IOR's stonewall).  Each rank then
reports what it finished.  The aggregates (first done and last done, as elbencho reports them) are computed in
bench/multi_aggregate.py; storing is in bench/multi_report.py, rendering in render/bench_table.py.

Patterns (`--suite` in this mode): `streams` writes a file per client, then one shared file in IOR's segmented
layout (client r writes segments r*T .. r*T+T-1), then one in IOR's strided layout (client thread w writes blocks w,
w + N*T, ...); after each, every client reads its neighbour's data (rank r reads rank (r+1) % N's, IOR's `-C`),
sized to what that neighbour actually wrote.  `meta` creates, stats and deletes empty files in a directory per
client, then all clients in one shared directory (distinct names).  Any other suite (`genomics`, ...) runs whole on
every rank, each in its own work directory, phase by phase in step.

A rank that fails makes every rank stop at the next step; every rank removes its work directory, and rank 0 says
which rank failed and why, in one line.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import time
from dataclasses import asdict, dataclass, field
from typing import Any, Callable

from iolens import __version__
from iolens.bench import engine, suites
from iolens.bench.multi_aggregate import Aggregate, aggregate, shared_file_size
from iolens.bench.multi_report import store as store  # the command calls it through mpi
from iolens import lab
from iolens.workspace.rails import WorkDirs, check_space
from iolens.workspace.target import Target, describe_path, resolve
from iolens.errors import IolensError, UsageError

TAG = "iolens-bench-multi"
SCHEMA_VERSION = (1, 2)  # 1.1: shared_file_bytes, shared_file_expected, entries_left per phase; 1.2: client_paths
# (the directory each rank measured, rank order: a shared filesystem's client mounts in turn), stand_in
JOB_SCHEMA = [1, 3]       # start_at, stonewall_s, segment (1.2); layout strided, writers (1.3)
START_AHEAD_S = 0.5       # rank 0 sets the start this far ahead of the barrier, for every engine to be ready
LAUNCHER_ENV = ("OMPI_COMM_WORLD_SIZE", "PMIX_RANK", "PMI_RANK")
DEFAULT_SUITES = ["streams", "meta"]
MiB = 1 << 20


def started_by_launcher() -> bool:
    """True when this process is one rank of a job that mpirun or srun (with PMIx/PMI) started.  A task of an
    srun step of several tasks without PMIx/PMI is refused: each would run alone, unaware of the others."""
    if any(k in os.environ for k in LAUNCHER_ENV):
        return True
    tasks = os.environ.get("SLURM_STEP_NUM_TASKS", "1")
    if tasks.isdigit() and int(tasks) > 1:
        raise UsageError(f"started by srun as one of {tasks} tasks without MPI: each would run alone; "
                         "start it with `srun --mpi=pmix`")
    return False


def launch_command(n: int, launcher: str, argv: list[str]) -> list[str]:
    """The command that runs `iolens <argv>` as n ranks."""
    if launcher == "srun":
        pre = ["srun", "-n", str(n), "--mpi=pmix"]
    else:
        pre = ["mpirun", "-n", str(n), "--oversubscribe"]
        if os.geteuid() == 0:
            pre.append("--allow-run-as-root")
    return pre + [sys.executable, "-m", "iolens"] + argv


def launch(n: int, launcher: str, env: dict[str, str] | None = None) -> int:
    """Re-executes this command under the launcher, with `env` added to the environment; returns its exit
    status.  The launcher's own banner about a rank's non-zero exit is dropped: rank 0 has already said what
    failed, in one line."""
    argv = sys.argv[1:]
    if "bench" not in argv:
        raise UsageError("--clients re-runs `iolens bench ...`; run it from the iolens command")
    cmd = launch_command(n, launcher, argv)
    if shutil.which(cmd[0]) is None:
        pkg = "openmpi-bin" if launcher == "mpirun" else "slurm-client"
        raise UsageError(f"--clients needs `{cmd[0]}` on PATH (Debian: {pkg}); or start iolens under your launcher")
    try:
        import mpi4py  # noqa: F401
    except ImportError:
        raise UsageError("--clients needs mpi4py: pip install mpi4py (built against your MPI)") from None
    proc = subprocess.Popen(cmd, stderr=subprocess.PIPE, text=True, errors="replace", env={**os.environ, **(env or {})})
    assert proc.stderr is not None
    in_banner = False
    for line in proc.stderr:
        if line.startswith("-" * 20):
            in_banner = not in_banner
            continue
        if in_banner or line.startswith(("mpirun", "srun: error", "[")) and "exit" in line:
            continue
        sys.stderr.write(line)
    return proc.wait()


# ---- the ranks ---------------------------------------------------------------------------------------------------

class RankFailed(IolensError):
    """One rank failed; every rank stops and cleans up.  The message names the rank."""


def _comm() -> Any:
    try:
        from mpi4py import MPI
    except ImportError:
        raise UsageError("running under a launcher needs mpi4py: pip install mpi4py") from None
    return MPI.COMM_WORLD


class Ranks:
    """The MPI side: every call is collective.  `step` runs a function on every rank and raises RankFailed on
    every rank when one of them failed, naming the first that did."""

    def __init__(self, comm: Any):
        self.comm = comm
        self.rank = comm.Get_rank()
        self.size = comm.Get_size()
        self.host = socket.gethostname()
        self.hosts: list[str] = comm.allgather(self.host)

    def step(self, fn: Callable[[], Any]) -> list[Any]:
        err: tuple[str, int] | None = None
        value = None
        try:
            value = fn()
        except IolensError as e:
            err = (str(e), e.exit_code)
        except OSError as e:
            err = (f"{e.filename or ''}: {e.strerror}".lstrip(": "), 5)
        except Exception as e:  # noqa: BLE001 - any failure must reach the other ranks, or they wait forever
            err = (f"{type(e).__name__}: {e}", 4)
        everyone = self.comm.allgather((value, err))
        for r, (_v, failed) in enumerate(everyone):
            if failed is not None:
                raise RankFailed(f"client rank {r} of {self.size} (host {self.hosts[r]}) failed: {failed[0]}; "
                                 "every client stopped and removed its files", exit_code=failed[1])
        return [v for v, _e in everyone]

    def start_at(self) -> float:
        self.comm.Barrier()
        return self.comm.bcast(time.time() + START_AHEAD_S if self.rank == 0 else None, root=0)


def _job(dirs: list[str], phase: dict[str, Any], seed: int, drop: bool, dev: list[str | None]) -> dict[str, Any]:
    return {"schema_version": JOB_SCHEMA, "dirs": dirs, "seed": seed, "drop_caches": drop,
            "device_stats": dev[: len(dirs)], "phases": [phase]}


@dataclass
class Ctx:
    ranks: Ranks
    target: Target
    own: str                 # this rank's work dir
    dirs: list[str]          # every rank's work dir, rank order
    shared: str              # rank 0's work dir, where the shared file lives
    opts: suites.Options
    scale: suites.Scale
    per_client: int
    threads: int
    aggregates: list[Aggregate] = field(default_factory=list)
    specs: list[str] = field(default_factory=list)

    def run_phase(self, test: str, phase: dict[str, Any], dirs: list[str], *,
                  files: Callable[[], int | None] | None = None) -> list[dict[str, Any]]:
        """Runs one phase on every rank in step; the ranks' results for it (rank order, on every rank)."""
        phase = dict(phase, start_at=self.ranks.start_at())
        dev = [self.target.dev_stat] * len(dirs)

        def go() -> tuple[dict[str, Any] | None, int | None]:
            res = engine.run_job(_job(dirs, phase, self.opts.seed + self.ranks.rank, self.opts.drop_caches, dev),
                                 preexec=self.target.preexec)
            if res.get("status") == "interrupted":
                raise IolensError("interrupted", exit_code=130)
            engine.raise_for_error(res, [self.target.spec] * len(dirs))
            if not res["phases"]:  # an untimed clean-up phase reports nothing
                return None, None
            return res["phases"][0], files() if files else None

        out = self.ranks.step(go)
        results = [ph for ph, _f in out]
        if phase.get("report", True) and all(ph is not None for ph in results):
            self.aggregates.append(aggregate(test, results, self.ranks.hosts, self.specs, [f for _p, f in out]))
        return results


def settled_size(path: str, expected: int | None, wait: float = 3.0) -> int:
    """The file's size once this client's attribute caches agree with the others' writes: a network or FUSE client
    may answer stat from what it last knew (FUSE keeps attributes 1 s by default, GlusterFS's md-cache as long), so
    the last block another client wrote can be missing for a moment. Asked again until it matches or `wait` s pass;
    a size still short after that is a real shortfall."""
    deadline = time.monotonic() + wait
    size = os.stat(path).st_size
    while size != expected and time.monotonic() < deadline:
        time.sleep(0.25)
        size = os.stat(path).st_size
    return size


def _min_thread_bytes(ph: dict[str, Any], bs: int) -> int:
    per = [t["bytes"] for g in ph["groups"] for t in g.get("per_thread") or []]
    return (min(per) // bs) * bs if per else 0


STREAM_NAMES = {"per_thread": "file-per-client", "shared": "shared-file", "strided": "strided-file"}


def _streams(c: Ctx, layout: str) -> None:
    """Write (stonewalled), then read the neighbour's data, sized to what it wrote.  layout: per_thread (a file per
    client), shared (one file, client r writing segments r*T .. r*T+T-1) or strided (one file, client thread w
    writing blocks w, w + N*T, w + 2*N*T, ...)."""
    r, n, t, bs = c.ranks.rank, c.ranks.size, c.threads, c.scale.bs
    nb = (r + 1) % n
    sw = c.scale.runtime
    name = STREAM_NAMES[layout]
    # a file name of its own per layout: another client may still hold the previous layout's deleted file by its
    # name (GlusterFS's client then fails a new open of that name with ESTALE)
    shared_path = os.path.join(c.shared, name)
    one = {"dir": 1, "file": name, "layout": layout, "writers": n * t} if layout != "per_thread" else None
    files: Callable[[], int | None] | None = None
    if one:
        dirs = [c.own, c.shared]
        w = suites._g("write", **one, segment=r * t, threads=t, size=c.per_client, bs=bs, sync="fdatasync",
                      content=c.opts.content or "random", direct=c.opts.direct)
        # rank 0 makes the file empty before anyone writes (the engines leave it alone in a multi-client phase)
        c.ranks.step(lambda: open(shared_path, "wb").close() if r == 0 else None)
    else:
        dirs = [c.own]
        w = suites._g("write", file="c", threads=t, size=c.per_client, bs=bs, sync="fdatasync",
                      content=c.opts.content or "random", direct=c.opts.direct)

        def files() -> int:
            return sum(os.stat(os.path.join(c.own, f"c.{i}")).st_size for i in range(t))
    ph = dict(suites._phase(f"{name} write", [w]), stonewall_s=sw)
    wrote = c.run_phase(name, ph, dirs, files=files)
    if one:
        agg = c.aggregates[-1]
        agg.shared_file_expected = shared_file_size(layout, _writer_bytes(wrote), c.per_client, bs)
        expected = agg.shared_file_expected
        agg.shared_file_bytes = c.ranks.step(lambda: settled_size(shared_path, expected) if r == 0 else None)[0]
    size = _min_thread_bytes(wrote[nb], bs)
    if one:
        rg = suites._g("read", **one, segment=nb * t, threads=t, size=size, bs=bs, direct=c.opts.direct)
        rdirs = [c.own, c.shared]
    else:
        rg = suites._g("read", dir=1, file="c", threads=t, size=size, bs=bs, direct=c.opts.direct)
        rdirs = [c.own, c.dirs[nb]]
    if size:
        c.run_phase(name, dict(suites._phase(f"{name} read (neighbour)", [rg], evict=not c.opts.warm),
                               stonewall_s=sw), rdirs)
        for cl in c.aggregates[-1].clients:
            cl.reads_rank = (cl.rank + 1) % n
    c.ranks.step(lambda: None)  # every rank has read before the files go
    if one:
        if r == 0:
            os.unlink(shared_path)
    else:
        for i in range(t):
            os.unlink(os.path.join(c.own, f"c.{i}"))


def _writer_bytes(results: list[dict[str, Any]]) -> list[int]:
    """Bytes each writer of a shared file wrote, in writer order (rank-major, then thread)."""
    out = []
    for ph in results:
        per = sorted((t for g in ph["groups"] for t in g.get("per_thread") or []), key=lambda t: t.get("thread", 0))
        out += [int(t["bytes"]) for t in per]
    return out


def _meta(c: Ctx, shared: bool) -> None:
    """Create (stonewalled), stat and delete empty files in a directory per client, or all clients in one shared
    directory (rank 0's), each under its own names (rank r's start at index r * count)."""
    n = c.opts.files or 1000
    test = "meta-shared-dir" if shared else "meta"
    prefix = "meta-shared" if shared else "meta"
    g = dict(prefix=prefix, fanout=1, threads=1, dir=1 if shared else 0, first=c.ranks.rank * n if shared else 0)
    dirs = [c.own, c.shared] if shared else [c.own]
    made = c.run_phase(test, dict(suites._phase(f"{prefix}-create", [suites._g("create", size=0, count=n, **g)]),
                                  stonewall_s=c.scale.runtime), dirs)
    count = max(int(made[c.ranks.rank]["groups"][0]["ops"]), 1)  # one thread: files first .. first+count-1
    c.run_phase(test, suites._phase(f"{prefix}-stat", [suites._g("stat", count=count, **g)]), dirs)
    c.run_phase(test, suites._phase(f"{prefix}-delete", [suites._g("delete", count=count, **g)]), dirs)
    if shared:  # every rank has deleted its files, and the last one the directory
        top = os.path.join(c.shared, prefix)
        c.aggregates[-1].entries_left = c.ranks.step(lambda: _entries(top) if c.ranks.rank == 0 else None)[0]


def _entries(top: str) -> int:
    """How many files and directories are left at and under top."""
    if not os.path.lexists(top):
        return 0
    return 1 + sum(len(ds) + len(fs) for _p, ds, fs in os.walk(top))


def _suite(c: Ctx, name: str) -> None:
    """A registered suite run whole on every rank, each in its own work directory, phase by phase in step."""
    tests = suites.build(name, c.target.spec, c.scale, c.opts, [])
    for test in tests:
        for ph in test.phases:
            c.run_phase(test.name, ph, [c.own])


def run_ranks(spec: str, suite_names: list[str], opts: suites.Options, *, clients: int | None) -> dict[str, Any]:
    """The body every rank runs; returns the report (complete on rank 0)."""
    ranks = Ranks(_comm())
    if clients is not None and clients != ranks.size:
        raise UsageError(f"--clients {clients} but the launcher started {ranks.size} ranks")
    wd = WorkDirs()
    try:
        return _run(ranks, wd, spec, suite_names, opts)
    finally:
        problems = wd.remove_all()
        ranks.comm.Barrier()
        if problems:
            print(f"iolens: rank {ranks.rank}: {'; '.join(problems)}", file=sys.stderr)


def _run(ranks: Ranks, wd: WorkDirs, spec: str, suite_names: list[str], opts: suites.Options) -> dict[str, Any]:
    def setup() -> tuple[Target, str, str]:
        engine.describe()
        t = resolve(spec)
        if t.kind == "null":
            raise UsageError("--clients needs a directory or lab: target")
        mounts = lab.client_paths(spec)  # a shared filesystem's client mounts: one per rank, in turn
        if len(mounts) > 1:
            t.path = mounts[ranks.rank % len(mounts)]
            describe_path(t)
        assert t.path is not None
        return t, str(wd.create(t)), str(t.path)

    out = ranks.step(setup)
    target, own, base = out[ranks.rank]
    specs = [t.spec for t, _d, _b in out]
    # every rank's work directory as this rank sees it (through its own client mount of a shared filesystem)
    dirs = [os.path.join(base, os.path.relpath(d, b)) for _t, d, b in out]
    client_mounts = [b for _t, _d, b in out]
    n = ranks.size
    scale = suites.default_scale(opts, [target.free_bytes] if target.free_bytes is not None else [],
                                 [target.free_inodes])
    threads = (opts.threads or [1])[0]
    per_client = _round_bs(opts.size or max(16 * MiB, scale.size // n) // threads, scale.bs)
    ranks.step(lambda: check_space(target, per_client * threads * n if ranks.rank == 0 else 0, 0,
                                   f"{n} clients of {per_client * threads} bytes"))
    c = Ctx(ranks, target, own, dirs, dirs[0], opts, scale, per_client, threads, specs=specs)
    for s in suite_names:
        if s == "streams":
            for layout in STREAM_NAMES:
                _streams(c, layout)
        elif s == "meta":
            _meta(c, shared=False)
            _meta(c, shared=True)
        else:
            _suite(c, s)
    return {"tag": TAG, "schema_version": list(SCHEMA_VERSION), "iolens_version": __version__,
            "created": time.strftime("%Y-%m-%dT%H:%M:%S%z"), "clients": n, "target": spec,
            "suites": suite_names, "threads_per_client": threads, "bytes_per_thread": per_client,
            "stonewall_s": scale.runtime, "hosts": ranks.hosts, "targets": [target.facts()],
            "client_paths": client_mounts, "stand_in": _stand_in(spec),
            "results": [asdict(a) for a in c.aggregates], "run_id": None, "warnings": _warnings(c.aggregates)}


def _stand_in(spec: str) -> dict[str, Any] | None:
    """What a lab target stands in for: what it is and the priced option (None for a plain directory)."""
    em = lab.emulation(spec)
    return {"emulates": em["emulates"], "volume": em["volume"]} if em else None


def _round_bs(n: int, bs: int) -> int:
    return max(bs, (n // bs) * bs)


def _warnings(aggs: list[Aggregate]) -> list[str]:
    out = []
    for a in aggs:
        for cl in a.clients:
            if cl.files_bytes is not None and cl.files_bytes != cl.bytes:
                out.append(f"{a.phase}: rank {cl.rank} reported {cl.bytes:.0f} bytes but its files hold "
                           f"{cl.files_bytes}")
        if a.entries_left:
            out.append(f"{a.phase}: {a.entries_left} files or directories were left in the shared directory")
        if a.shared_file_bytes is not None and a.shared_file_bytes != a.shared_file_expected:
            out.append(f"{a.phase}: the shared file holds {a.shared_file_bytes} bytes, but what the ranks reported "
                       f"writing makes {a.shared_file_expected}")
    return out


def rank() -> int:
    """This process's rank (0 outside a launcher)."""
    if not started_by_launcher():
        return 0
    return _comm().Get_rank()
