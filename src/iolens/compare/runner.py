"""Running: one measured run, cache control, and the interleaved schedule (with --precision or --runs auto).

A run is `/bin/sh -c COMMAND` in its own session, so Ctrl-C reaches iolens, which stops the whole
process group and cleans up.  When the command exits, iolens waits for it with WNOWAIT first and reads
`/proc/PID/io` of the zombie: those counters include every child the command reaped.  Then `wait4`
gives the rusage (user, sys, peak RSS) of the command and its reaped children.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import os
import random
import signal
import subprocess
import tempfile
import time
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any, Callable

from iolens import workdirs
from iolens.stats import samples as stats
from iolens.stats import sequential
from iolens.compare.placements import Configuration, Placeholder, Plan, parse_template
from iolens.compare.strategies import (
    PREFIX,
    Prepared,
    Workspace,
    copy_in,
    copy_out,
    finish,
    prepare,
    render,
    transfer_method,
    written_places,
)
from iolens.errors import IolensError, UsageError
from iolens.pagecache import drop_caches, fadvise_dontneed, make_cold, resident_bytes, resident_fraction

if TYPE_CHECKING:
    from iolens.compare.profiling import Profiler

__all__ = ["Settings", "Measured", "RunRecord", "Outcome", "Runner", "execute", "prepare_command", "drop_caches",
           "fadvise_dontneed", "make_cold", "resident_bytes", "resident_fraction"]

STDERR_TAIL = 2000  # bytes of stderr kept for a failed run
GIVE_UP_AFTER = 3  # a configuration whose first runs all fail this often is not run again


@dataclass
class Settings:
    runs: int = 10  # with auto: the rounds before the first look
    auto: bool = False  # --runs auto: rounds until every comparison is decided (stats.sequential) or the budget
    max_time: float | None = None  # --max-time, seconds of measured rounds (auto only)
    margin: float = sequential.MARGIN  # equivalence margin (fraction)
    warmup: int = 0
    cache: str = "warm"  # warm | cold
    evict: str = "auto"  # auto | fadvise | drop-caches
    precision: float | None = None  # percent
    max_runs: int = 100
    prepare: str | None = None
    seed: int | None = None
    show_output: bool = False
    profile: bool = False


@dataclass
class Measured:
    wall_s: float
    user_s: float
    sys_s: float
    maxrss_bytes: int
    exit_status: int
    io: dict[str, int | None]
    stderr_tail: str | None


@dataclass
class RunRecord:
    config: str
    seq: int  # position in the whole schedule
    round: int
    warmup: bool
    started: float  # unix time
    ok: bool
    exit_status: int
    wall_s: float  # the compared time: copy-in + run + copy-out for stage
    run_s: float
    copy_in_s: float | None
    copy_out_s: float | None
    copy_in_bytes: int | None
    copy_out_bytes: int | None
    copy_via: str | None  # stage: "files", "s3-api" (lab S3 targets) or both; None for direct
    user_s: float
    sys_s: float
    maxrss_bytes: int
    rchar: int | None
    wchar: int | None
    read_bytes: int | None
    write_bytes: int | None
    cache_mode: str
    cache_method: str | None
    inputs_resident: float | None  # fraction of input bytes in the page cache just before the run
    command: str
    stderr_tail: str | None = None
    profile: dict[str, Any] | None = None
    places_written: dict[str, bool] | None = None  # directory place -> the command created or changed something there
    place_bytes: dict[str, int] | None = None  # bytes left there (with --profile: written there, if more)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


# -- the subreaper's prctl (the page cache is iolens.pagecache's) ---------------------------------------------

_libc = None


def _lib() -> ctypes.CDLL:
    global _libc
    if _libc is None:
        lib = ctypes.CDLL(ctypes.util.find_library("c") or None, use_errno=True)
        lib.prctl.argtypes = [ctypes.c_int, ctypes.c_ulong, ctypes.c_ulong, ctypes.c_ulong, ctypes.c_ulong]
        _libc = lib
    return _libc


# -- one measured command -------------------------------------------------------------------------------------

def _read_io(pid: int) -> dict[str, int | None]:
    keys = ("rchar", "wchar", "read_bytes", "write_bytes")
    out: dict[str, int | None] = dict.fromkeys(keys)
    try:
        with open(f"/proc/{pid}/io") as f:
            for line in f:
                k, _, v = line.partition(":")
                if k in out:
                    out[k] = int(v)
    except OSError:
        pass
    return out


# The launcher: `setsid --fork` (a small C program) forks the command off in a new session, so
# the command's process tree descends from a small process.  Spawned straight from Python, the
# command's peak RSS (ru_maxrss) would start at Python's own: exec() keeps the high-water mark of
# the memory it replaces.  iolens is the child subreaper, so the command is reparented to it and
# its rusage and /proc/PID/io are read here.  The inner shell writes its pid to a file, moves the
# profiler's preload into LD_PRELOAD (so only the command itself is profiled), then execs `sh -c`.
LAUNCHER = (
    'printf "%s\\n" "$$" > "$2" || exit 125\n'
    'if [ -n "${IOLENS_COMPARE_PRELOAD+x}" ]; then LD_PRELOAD=$IOLENS_COMPARE_PRELOAD; export LD_PRELOAD; '
    'unset IOLENS_COMPARE_PRELOAD; fi\n'
    'exec /bin/sh -c "$1"\n'
)
PR_SET_CHILD_SUBREAPER = 36
_subreaper = False


def _become_subreaper() -> None:
    global _subreaper
    if not _subreaper:
        if _lib().prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) != 0:
            raise OSError(ctypes.get_errno(), "prctl(PR_SET_CHILD_SUBREAPER) failed")
        _subreaper = True


def _read_pid(path: str, outer_status: int, timeout: float = 10.0) -> int:
    deadline = time.monotonic() + timeout
    while True:
        try:
            with open(path) as f:
                text = f.read()
            if text.endswith("\n"):
                return int(text)
        except FileNotFoundError:
            pass
        if outer_status != 0 or time.monotonic() > deadline:
            raise IolensError(f"cannot start commands: `setsid --fork` exited with status {outer_status}; "
                              "it comes with util-linux", exit_code=126)
        time.sleep(0.0002)


def _stop_group(pgid: int) -> None:
    """SIGTERM the command's process group, SIGKILL after 2 s, and reap whatever was ours in it."""
    for sig, wait in ((signal.SIGTERM, 2.0), (signal.SIGKILL, 5.0)):
        try:
            os.killpg(pgid, sig)
        except (ProcessLookupError, PermissionError):
            break
        deadline = time.monotonic() + wait
        while time.monotonic() < deadline:
            try:
                pid, _st = os.waitpid(pgid, os.WNOHANG)
            except ChildProcessError:
                pid = pgid
            if pid == pgid:
                break
            time.sleep(0.01)
        else:
            continue
        break
    _reap_group(pgid)


def _reap_group(pgid: int) -> None:
    """Kill what the command left running in its group and reap those that were reparented to iolens."""
    try:
        os.killpg(pgid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        return
    deadline = time.monotonic() + 2.0
    while time.monotonic() < deadline:
        try:
            pid, _st = os.waitpid(-pgid, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            time.sleep(0.005)


def launcher_dir() -> str:
    """/dev/shm when usable, so the launcher's pid file and stderr cause no disk I/O; else the temp directory."""
    return "/dev/shm" if os.access("/dev/shm", os.W_OK | os.X_OK) else tempfile.gettempdir()


def execute(command: str, *, env: dict[str, str] | None = None, show_output: bool = False) -> Measured:
    """Run `sh -c command` and measure it; raises KeyboardInterrupt after stopping it on Ctrl-C."""
    _become_subreaper()
    with workdirs.temporary(launcher_dir(), PREFIX) as tmp:
        pidfile = os.path.join(tmp, "pid")
        with open(os.path.join(tmp, "stderr"), "w+b") as err:
            start = time.monotonic()
            outer = subprocess.Popen(["setsid", "--fork", "/bin/sh", "-c", LAUNCHER, "iolens-compare", command,
                                      pidfile], stdin=subprocess.DEVNULL,
                                     stdout=None if show_output else subprocess.DEVNULL,
                                     stderr=None if show_output else err, env=env)
            pid = None
            try:
                outer.wait()
                pid = _read_pid(pidfile, outer.returncode)
                os.waitid(os.P_PID, pid, os.WEXITED | os.WNOWAIT)
                wall = time.monotonic() - start
                io = _read_io(pid)
                _pid, wstatus, ru = os.wait4(pid, 0)
            except BaseException:
                if outer.poll() is None:
                    outer.kill()
                    outer.wait()
                if pid is None:
                    try:
                        pid = int(open(pidfile).read())
                    except (OSError, ValueError):
                        pass
                if pid is not None:
                    _stop_group(pid)
                raise
            status = 128 + os.WTERMSIG(wstatus) if os.WIFSIGNALED(wstatus) else os.WEXITSTATUS(wstatus)
            _reap_group(pid)  # a background child the command left behind must not run on into the next run
            tail = None
            if not show_output:
                size = err.seek(0, os.SEEK_END)
                err.seek(max(0, size - STDERR_TAIL))
                tail = err.read().decode("utf-8", "replace")
                if size > STDERR_TAIL:
                    tail = "…" + tail.split("\n", 1)[-1]
    return Measured(wall_s=wall, user_s=ru.ru_utime, sys_s=ru.ru_stime, maxrss_bytes=ru.ru_maxrss * 1024,
                    exit_status=status, io=io, stderr_tail=tail)


# -- the schedule ---------------------------------------------------------------------------------------------

@dataclass
class Outcome:
    records: list[RunRecord] = field(default_factory=list)
    given_up: list[str] = field(default_factory=list)
    precision_reached: dict[str, bool] | None = None
    evict_methods: set[str] = field(default_factory=set)
    decisions: dict[str, sequential.Decision] | None = None  # --runs auto: each comparison as decided (frozen)
    looks: list[int] | None = None  # --runs auto: the rounds after which it looked


Progress = Callable[[RunRecord, int], None]  # (record, runs planned so far)


class Runner:
    def __init__(self, plan: Plan, settings: Settings, ws: Workspace, *, progress: Progress | None = None,
                 profiler: Profiler | None = None):
        self.plan = plan
        self.s = settings
        self.ws = ws
        self.progress = progress
        self.profiler = profiler
        self.rng = random.Random(settings.seed)
        self.out = Outcome()
        self.counts = {c.name: 0 for c in plan.configurations}
        self.seq = 0
        self.planned = len(plan.configurations) * ((0 if settings.auto else settings.runs) + settings.warmup)

    def one(self, idx: int, cfg: Configuration, rnd: int, warmup: bool) -> RunRecord:
        prep = prepare(self.ws, cfg, idx, self.seq, self.plan.parts)
        try:
            if self.s.prepare:
                prep_cmd = prepare_command(self.s.prepare, prep)
                m = execute(prep_cmd)
                if m.exit_status != 0:
                    raise IolensError(f"--prepare failed with exit status {m.exit_status} for {cfg.name}: "
                                      f"{(m.stderr_tail or '').strip()[-300:]}; fix the command", exit_code=1)
            method = None
            if self.s.cache == "cold":
                method = make_cold(prep.input_files, self.s.evict)
                self.out.evict_methods.add(method)
            resident = resident_fraction(prep.input_files)
            started = time.time()
            cin = cout = None
            cin_b = cout_b = None
            if prep.copy_in:
                cin, cin_b = copy_in(prep)
            env = None
            recording = None
            if self.profiler is not None:
                env, recording = self.profiler.start(prep.command)
            try:
                m = execute(prep.command, env=env, show_output=self.s.show_output)
            except BaseException:
                if recording is not None:
                    recording.close()
                raise
            prof = (self.profiler.finish(recording, m, dict(prep.place_dirs))
                    if self.profiler is not None and recording is not None else None)
            places = self._places(prep, prof)
            ok = m.exit_status == 0
            if prep.strategy == "stage" and ok:
                cout, cout_b = copy_out(prep)
            elif prep.strategy == "stage":
                cout, cout_b = 0.0, 0
            total = m.wall_s + (cin or 0.0) + (cout or 0.0)
        finally:
            finish(self.ws, prep, cfg.name)
        rec = RunRecord(
            config=cfg.name, seq=self.seq, round=rnd, warmup=warmup, started=started, ok=ok,
            exit_status=m.exit_status, wall_s=total, run_s=m.wall_s, copy_in_s=cin, copy_out_s=cout,
            copy_in_bytes=cin_b, copy_out_bytes=cout_b, copy_via=transfer_method(prep), user_s=m.user_s, sys_s=m.sys_s,
            maxrss_bytes=m.maxrss_bytes, rchar=m.io["rchar"], wchar=m.io["wchar"], read_bytes=m.io["read_bytes"],
            write_bytes=m.io["write_bytes"], cache_mode=self.s.cache, cache_method=method,
            inputs_resident=resident, command=prep.command, stderr_tail=None if ok else m.stderr_tail, profile=prof,
            places_written={k: w for k, (w, _b) in places.items()} if places else None,
            place_bytes={k: b for k, (_w, b) in places.items()} if places else None,
        )
        self.seq += 1
        return rec

    @staticmethod
    def _places(prep: Prepared, prof: dict[str, Any] | None) -> dict[str, tuple[bool, int]]:
        """What the run did in each directory place: its own evidence, and the profiler's per-file writes."""
        seen = written_places(prep)
        profiled = (prof or {}).pop("place_bytes", None) or {}
        return {k: (w or profiled.get(k, 0) > 0, max(b, profiled.get(k, 0))) for k, (w, b) in seen.items()}

    def _round(self, rnd: int, configs: list[tuple[int, Configuration]], warmup: bool) -> None:
        order = list(configs)
        self.rng.shuffle(order)
        for idx, cfg in order:
            if cfg.name in self.out.given_up:
                continue
            rec = self.one(idx, cfg, rnd, warmup)
            self.out.records.append(rec)
            if not warmup:
                self.counts[cfg.name] += 1
                mine = [r for r in self.out.records if r.config == cfg.name and not r.warmup]
                if len(mine) >= GIVE_UP_AFTER and not any(r.ok for r in mine):
                    self.out.given_up.append(cfg.name)
            if self.progress:
                self.progress(rec, self.planned)

    def _imprecise(self) -> list[tuple[int, Configuration]]:
        out = []
        precision = self.s.precision or 0.0  # only called with --precision
        for idx, cfg in enumerate(self.plan.configurations):
            if cfg.name in self.out.given_up or self.counts[cfg.name] >= self.s.max_runs:
                continue
            d = stats.describe(self._ok_times(cfg.name), seed=self.s.seed)
            if d.ci_half_rel is None or d.ci_half_rel * 100 > precision:
                out.append((idx, cfg))
        return out

    def _ok_times(self, name: str) -> list[float]:
        return [r.wall_s for r in self.out.records if r.config == name and r.ok and not r.warmup]

    def _adaptive(self, rnd: int) -> None:
        """--runs auto: interleaved rounds of the configurations still undecided (and the baseline) until the
        stopping rule of stats.sequential says every comparison is decided, or the budget is spent."""
        by_name = {c.name: (i, c) for i, c in enumerate(self.plan.configurations)}
        stop = sequential.Stopper(list(by_name), self.plan.baseline, max_runs=self.s.max_runs, margin=self.s.margin)
        start = time.monotonic()
        rounds = [rnd]

        def run_round(names: list[str]) -> None:
            todo = [by_name[n] for n in names]
            self.planned += len(todo)
            self._round(rounds[0], todo, False)
            rounds[0] += 1
            for n in self.out.given_up:
                stop.drop(n)

        def out_of_time() -> bool:
            return self.s.max_time is not None and time.monotonic() - start >= self.s.max_time

        stop.run(run_round, lambda: {n: self._ok_times(n) for n in by_name}, out_of_time)
        self.out.decisions = dict(stop.decisions)
        self.out.looks = list(stop.looks)

    def run(self) -> Outcome:
        configs = list(enumerate(self.plan.configurations))
        rnd = 0
        for _ in range(self.s.warmup):
            self._round(rnd, configs, True)
            rnd += 1
        if self.s.auto:
            self._adaptive(rnd)
            return self.out
        for _ in range(self.s.runs):
            self._round(rnd, configs, False)
            rnd += 1
        if self.s.precision is not None:
            while True:
                todo = self._imprecise()
                if not todo:
                    break
                self.planned += len(todo)
                self._round(rnd, todo, False)
                rnd += 1
            reached = {}
            for cfg in self.plan.configurations:
                d = stats.describe(self._ok_times(cfg.name), seed=self.s.seed)
                reached[cfg.name] = d.ci_half_rel is not None and d.ci_half_rel * 100 <= self.s.precision
            self.out.precision_reached = reached
        return self.out


def prepare_command(template: str, prep: Prepared) -> str:
    """--prepare may use the template's placeholders; it sees this run's values."""
    parts = parse_template(template)
    missing = [p.name for p in parts if isinstance(p, Placeholder) and p.name not in prep.bound]
    if missing:
        raise UsageError(f"--prepare uses {{{missing[0]}}}, which the template does not define")
    return render(parts, prep.bound)
