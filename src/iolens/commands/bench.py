"""iolens bench: measure storage the way genomics tools use it, honest about the page cache."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import click

from iolens.bench import suites
from iolens.errors import IolensError, UsageError
from iolens.output import FORCE_OPTION, check_outputs
from iolens.render import exports
from iolens.render.exports import export_options
from iolens.render.terminal import child_env
from iolens.render.terminal import console as terminal


class SuiteChoice(click.Choice):
    """The registered suites (bench/suites.py), read when the command line is parsed, so a suite registered after
    this module was imported is offered too."""

    def __init__(self) -> None:
        super().__init__(())

    @property
    def choices(self) -> tuple[str, ...]:
        return tuple(suites.SUITES)

    @choices.setter
    def choices(self, _value: object) -> None:
        pass  # click.Choice.__init__ assigns it; the registry is the only source


class EngineChoice(click.Choice):
    """The names the engine accepts for one job field (`iolens-bench --describe`), asked when the command line is
    parsed or help is shown, never at import; `hidden` names are the engine's but not offered here."""

    def __init__(self, field: str, hidden: tuple[str, ...] = ()) -> None:
        self.field = field
        self.hidden = hidden
        super().__init__(())

    @property
    def choices(self) -> tuple[str, ...]:
        from iolens.bench.engine import names

        return tuple(n for n in names(self.field) if n not in self.hidden)

    @choices.setter
    def choices(self, _value: object) -> None:
        pass  # click.Choice.__init__ assigns it; the engine is the only source

    def get_metavar(self, *args: Any, **kwargs: Any) -> str | None:
        try:
            return super().get_metavar(*args, **kwargs)
        except IolensError:  # no engine: help still shows, running says what is missing
            return "NAME"


def _threads(ctx: click.Context, param: click.Parameter, value: str | None) -> list[int] | None:
    if not value:
        return None
    try:
        out = [int(x) for x in value.split(",") if x.strip()]
    except ValueError:
        raise click.BadParameter("give thread counts like 1,4,8") from None
    if not out or any(n < 1 or n > 1024 for n in out):
        raise click.BadParameter("thread counts must be 1..1024")
    return out


def _size(ctx: click.Context, param: click.Parameter, value: str | None) -> int | None:
    if value is None:
        return None
    try:
        return suites.parse_size(value)
    except IolensError as err:
        raise click.BadParameter(str(err)) from None


@click.command(short_help="Benchmark storage targets side by side: dirs, lab:NAME, null.")
@click.argument("targets", nargs=-1, required=True)
@click.option("--suite", "suite_names", multiple=True, default=["classic"], show_default=True,
              type=SuiteChoice(), help=suites.suites_help())
@click.option("--size", callback=_size, metavar="SIZE",
              help="Large-file unit, e.g. 256M or 2G (default: scaled to free space and RAM, at most 1 GiB).")
@click.option("--files", type=click.IntRange(min=1), help="Small-file count (default scaled, at most 1000; "
              "meta: 10000).")
@click.option("--runtime", type=click.FloatRange(min=0.05), help="Seconds per time-based test (default 3).")
@click.option("--threads", callback=_threads, metavar="LIST",
              help="Thread counts / queue depths / stream counts instead of the suite's, e.g. 1,2.")
@click.option("--bs", callback=_size, metavar="SIZE", help="Sequential block size (default 1M).")
@click.option("--content", type=EngineChoice("contents", hidden=("template",)),
              help="What writes contain (default: genomics fastq, others random). Compressing filesystems are "
                   "measured honestly only on fastq/sam.")
@click.option("--template", type=click.Path(exists=True, dir_okay=False, path_type=Path),
              help="Write the bytes of this file (repeated), e.g. a real FASTQ.")
@click.option("--direct", is_flag=True, help="O_DIRECT where the filesystem supports it.")
@click.option("--warm", is_flag=True, help="Do not evict before reads: measure the cached case on purpose.")
@click.option("--drop-caches", is_flag=True, help="As root, also drop the whole page cache before each read "
              "(affects everything on the machine).")
@click.option("--shared", is_flag=True, help="streams: one shared file instead of a file per stream.")
@click.option("--read-share", type=click.FloatRange(0, 1), help="random: add a mixed test with this read share.")
@click.option("--ioengine", type=EngineChoice("engines", hidden=("null",)), default="psync", show_default=True,
              help="Queue depth for random tests: psync threads, or one thread with io_uring at that depth.")
@click.option("--repeat", type=click.IntRange(min=1, max=1000), default=1, show_default=True,
              help="Run everything N times, interleaving targets; report mean ± SD.")
@click.option("--seed", type=int, default=1, show_default=True)
@click.option("--db", type=click.Path(dir_okay=False, path_type=Path),
              help="Results store (default: IOLENS_DB, else the user data directory).")
@click.option("--no-store", is_flag=True, help="Do not record the run in the results store.")
@click.option("--label", help="A label for this run in the results store.")
@click.option("-q", "--quiet", is_flag=True, help="No progress bar.")
@click.option("--clients", type=click.IntRange(min=1, max=100_000),
              help="Run N clients at once, one engine per MPI rank (see docs/bench.md); started under mpirun or "
                   "srun this is the launcher's rank count.")
@click.option("--launcher", type=click.Choice(["mpirun", "srun"]), default="mpirun", show_default=True,
              help="What --clients starts the ranks with.")
@FORCE_OPTION
@export_options("bench")
@click.pass_context
def bench(ctx: click.Context, targets: tuple[str, ...], suite_names: tuple[str, ...], size: int | None,
          files: int | None, runtime: float | None, threads: list[int] | None, bs: int | None, content: str | None,
          template: Path | None, direct: bool, warm: bool, drop_caches: bool, shared: bool, read_share: float | None,
          ioengine: str, repeat: int, seed: int, outputs: dict[str, str | None], db: Path | None, no_store: bool,
          label: str | None, quiet: bool, force: bool, clients: int | None, launcher: str) -> None:
    """Benchmark storage targets side by side: directories, lab:NAME targets, or `null` (engine overhead).

    Files are written only inside a new iolens-bench-* directory under each target, which is removed at the end
    and on Ctrl-C or SIGTERM.
    """
    from iolens.bench.runner import run_bench
    from iolens.workspace.rails import Terminated
    from iolens.render.bench_table import render_bench

    check_outputs(exports.check("bench", outputs), force=force)
    if warm and (direct or drop_caches):
        raise UsageError("--warm measures the page cache; it cannot be combined with --direct or --drop-caches")
    if template is not None:
        content = "template"
    opts = suites.Options(size=size, files=files, runtime=runtime, threads=threads, bs=bs, content=content,
                          template=str(template.resolve()) if template else None, direct=direct, warm=warm,
                          drop_caches=drop_caches, shared=shared, read_share=read_share, ioengine=ioengine,
                          seed=seed)
    from iolens.bench import mpi

    if clients is not None or mpi.started_by_launcher():
        default = ctx.get_parameter_source("suite_names") == click.core.ParameterSource.DEFAULT
        _multi(mpi, targets, list(mpi.DEFAULT_SUITES if default else suite_names), opts, clients, launcher, outputs,
               db, no_store, label, force)
        return
    out_console = terminal(stderr=exports.to_stdout(outputs))
    err_console = terminal(stderr=True)

    store_cb = None
    store = None
    if not no_store:
        from iolens.bench.storage import BenchStore
        from iolens.store import ResultsStore

        store = ResultsStore(db, write=True)
        store_cb = BenchStore(store, label)

    show_progress = not quiet and err_console.is_terminal
    try:
        if show_progress:
            from rich.progress import BarColumn, Progress, TaskProgressColumn, TextColumn, TimeRemainingColumn

            with Progress(TextColumn("{task.description}"), BarColumn(), TaskProgressColumn(),
                          TimeRemainingColumn(), console=err_console, transient=True) as bar:
                task = bar.add_task("preparing", total=1.0)

                def on_progress(desc: str, done: float, total: float) -> None:
                    bar.update(task, description=desc, completed=done, total=max(total, 1e-9))

                report = run_bench(list(targets), list(suite_names), opts, repeat=repeat, on_progress=on_progress,
                                   store_run=store_cb)
        else:
            report = run_bench(list(targets), list(suite_names), opts, repeat=repeat, store_run=store_cb)
    except Terminated as err:
        raise IolensError(f"stopped by {err}; the benchmark directories were removed",
                          exit_code=128 + err.signum) from None
    except KeyboardInterrupt:
        click.echo("iolens: interrupted; the benchmark directories were removed", err=True)
        sys.exit(130)
    finally:
        if store is not None:
            store.close()

    doc = report.to_dict()
    exports.write("bench", outputs, doc, force=force)
    if not exports.to_stdout(outputs):
        render_bench(doc, out_console)


def _multi(mpi: Any, targets: tuple[str, ...], suite_names: list[str], opts: suites.Options, clients: int | None,
           launcher: str, outputs: dict[str, str | None], db: Path | None, no_store: bool, label: str | None,
           force: bool) -> None:
    """--clients: re-run under the launcher, or, as one of its ranks, run and (rank 0) store and render."""
    if not no_store and (not mpi.started_by_launcher() or mpi.rank() == 0):
        from iolens.store import check_before_writing

        check_before_writing(db)  # rank 0 stores
    if not mpi.started_by_launcher():
        sys.exit(mpi.launch(clients, launcher, env=child_env()))  # the ranks print as this process would
    if len(targets) != 1:
        raise UsageError("--clients measures one target at a time; give one directory or lab:NAME")
    try:
        doc = mpi.run_ranks(targets[0], suite_names, opts, clients=clients)
    except IolensError:
        if mpi.rank() != 0:
            sys.exit(0)  # rank 0 says what failed, once
        raise
    if mpi.rank() != 0:
        return
    if not no_store:
        mpi.store(doc, db, label)
    exports.write("bench", outputs, doc, force=force)
    if not exports.to_stdout(outputs):
        from iolens.render.bench_table import render_multi

        render_multi(doc, terminal())
