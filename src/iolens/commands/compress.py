"""iolens compress: which codec, level and thread count for these files, on this storage."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import TYPE_CHECKING

import click

from iolens.errors import UsageError
from iolens.output import FORCE_OPTION, check_outputs
from iolens.render import exports
from iolens.render.exports import export_options

if TYPE_CHECKING:
    from rich.console import Console

OnProgress = Callable[[str, int, int], None]  # (what, done, total)


def _threads(text: str) -> list[int]:
    try:
        out = sorted({int(x) for x in text.split(",") if x.strip()})
    except ValueError:
        raise UsageError(f"--threads {text}: give thread counts like 1,4") from None
    if not out or out[0] < 1:
        raise UsageError(f"--threads {text}: thread counts are 1 or more")
    return out


# the default run: a sample, the quick codec set at one thread, figures repeated for a short time
QUICK_SAMPLE = "4M"
QUICK_MIN_TIME = 0.1
FULL_MIN_TIME = 0.5


def _list_codecs() -> None:
    from iolens.compress.codecs import REGISTRY
    from iolens.render.terminal import Col, FitTable, console

    t = FitTable([Col("codec", "left"), Col("by default", "left"), Col("--full", "left"), Col("levels", "left"),
                  Col("threads", "left", drop=2), Col("also named", "left", wrap=True, drop=1),
                  Col("library", "left", wrap=True, drop=3), Col("what a level means", "left", wrap=True),
                  Col("unavailable", "left", wrap=True)], show_edge=False, pad_edge=False)
    for c in REGISTRY.values():
        t.add_row(c.name, "/".join(c.quick) or "-", "/".join(c.default_levels), f"{c.levels[0]}..{c.levels[-1]}",
                  "yes" if c.threads else "no", ", ".join(c.aliases) or "-", c.library, c.level_meaning,
                  c.available() or "-")
    con = console()
    con.print(t)
    con.print("by default: the levels measured without --codecs, one thread; --full: the levels --full measures, "
              "with 1 and all CPUs")


@click.command(short_help="Measure codecs on FILES: ratio, speed, CPU, memory, round trip.",
               context_settings={"max_content_width": 110})
@click.argument("files", nargs=-1, type=str)
@click.option("--codecs", multiple=True, metavar="NAME[:L/L...],...",
              help="Codecs and levels, e.g. zstd:1/3/19,gz,bgzip:6 (levels separated by /); `all`; see --list.")
@click.option("--threads", "threads_text", default=None, metavar="1,N",
              help="Thread counts for codecs that can use threads. [default: 1; with --full 1 and all CPUs]")
@click.option("--sample", "sample_text", default=None, metavar="SIZE",
              help=f"Measure SIZE bytes taken in 1 MiB blocks from across larger files. [default: {QUICK_SAMPLE}; "
                   "with --full the whole file]")
@click.option("--full", is_flag=True, help="Everything: every codec, 1 and all CPUs, whole files, figures repeated "
                                           f"for {FULL_MIN_TIME} s (minutes per file, not seconds).")
@click.option("--min-time", type=click.FloatRange(min=0.01), default=None,
              help=f"Seconds each figure is repeated for, at least (at most 10x, 1 s or more). [default: "
                   f"{QUICK_MIN_TIME}; with --full {FULL_MIN_TIME}]")
@click.option("--on", "on", multiple=True, metavar="TARGET",
              help="A directory, lab:NAME or stored target with `iolens bench` results, or NAME=READ,WRITE in MB/s: "
                   "storage-effective time per GB there.")
@click.option("--fs", "fs", default=None, metavar="TARGET,...",
              help="Instead: copy FILES onto each filesystem (lab:btrfs-zstd, a directory) and report its on-disk "
                   "ratio and cold read/write throughput.")
@click.option("--run", "run", default=None, metavar="CMD",
              help="With --fs: run CMD on each filesystem through the compare engine; {dir} holds the files, "
                   "{threads} is the largest --threads.")
@click.option("--runs", type=click.IntRange(min=2), default=5, show_default=True,
              help="With --run: runs per filesystem.")
@click.option("--list", "list_codecs", is_flag=True, help="List the codecs, their levels and what a level means.")
@click.option("--db", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="Results store. [default: $IOLENS_DB or ~/.local/share/iolens/results.sqlite]")
@click.option("--no-store", is_flag=True, help="Do not record the result in the results store.")
@click.option("-q", "--quiet", is_flag=True, help="No progress bar (on a terminal) or progress lines (on a pipe).")
@FORCE_OPTION
@export_options("compress", also=("compress-fs",))
def compress(files: tuple[str, ...], codecs: tuple[str, ...], threads_text: str | None, sample_text: str | None,
             full: bool, min_time: float | None, on: tuple[str, ...], fs: str | None, run: str | None, runs: int,
             list_codecs: bool, outputs: dict[str, str | None], db: Path | None, no_store: bool, quiet: bool,
             force: bool) -> None:
    """Measure codecs on FILES: ratio, compress/decompress speed, CPU and memory, verified round trips.

    \b
    Examples:
      iolens compress reads.fq --codecs zstd:1/3/19,lz4,libdeflate:6,pigz:6 --threads 1,8
      iolens compress reads.fq --on lab:hdd --on s3=90,60 --html codecs.html
      iolens compress --fs lab:btrfs,lab:btrfs-lzo,lab:btrfs-zstd,lab:btrfs-zlib in.sam \\
        --run 'samtools sort -@ {threads} -o {dir}/out.bam {dir}/in.sam' --threads 2
    """
    if list_codecs:
        _list_codecs()
        return
    if not files:
        raise UsageError("give one or more FILES to measure (or --list)")
    threads = _threads(threads_text) if threads_text else sorted({1, os.cpu_count() or 1}) if full or fs else [1]
    if run and not fs:
        raise UsageError("--run needs --fs: it runs the command on each filesystem")
    check_outputs(exports.check("compress-fs" if fs else "compress", outputs), force=force, inputs=list(files))
    if not no_store:
        from iolens.store import check_before_writing

        check_before_writing(db)
    if fs:
        return _fs(files, fs, run, max(threads), runs, outputs, db, no_store, quiet, force)
    from iolens.bench.suites import parse_size
    from iolens.compress.codecs import parse_codecs
    from iolens.compress.run import measure
    from iolens.compress.storage import resolve_targets

    if full and sample_text:
        raise UsageError("--full measures whole files; give --sample SIZE or --full, not both")
    sample = None if full else parse_size(sample_text or QUICK_SAMPLE)
    min_time = min_time if min_time is not None else FULL_MIN_TIME if full else QUICK_MIN_TIME
    chosen = parse_codecs(codecs, full=full)
    targets = resolve_targets(list(on), str(db) if db else None)
    _tidy(files, [])
    mode = "full" if full else "custom" if (codecs or threads_text or sample_text) else "quick"
    with _progress(quiet) as progress:
        doc = measure(list(files), codecs=chosen, threads=threads, sample=sample, min_time=min_time, targets=targets,
                      progress=progress, mode=mode)
    if not no_store:
        _store(doc, db)
    _emit(doc, outputs, force)


class _progress:
    """A rich progress bar on stderr when it is a terminal; else one line per codec (a heartbeat for logs)."""

    def __init__(self, quiet: bool):
        from rich.console import Console

        self.console = Console(stderr=True)
        self.bar = None
        self.quiet = quiet
        if not quiet and self.console.is_terminal:
            from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

            self.bar = Progress(TextColumn("{task.description:40}"), BarColumn(), TextColumn("{task.completed}/"
                                "{task.total}"), TimeElapsedColumn(), console=self.console, transient=True)

    def __enter__(self) -> OnProgress | None:
        if self.bar is None:
            return None if self.quiet else _heartbeat()
        self.bar.start()
        task = self.bar.add_task("", total=1)

        def update(text: str, done: int, total: int) -> None:
            assert self.bar is not None
            self.bar.update(task, description=text[:40], completed=done, total=max(total, 1))

        return update

    def __exit__(self, *exc: object) -> None:
        if self.bar is not None:
            self.bar.stop()


def _heartbeat() -> OnProgress:
    import time

    start = time.monotonic()

    def beat(text: str, done: int, total: int) -> None:
        s = int(time.monotonic() - start)
        click.echo(f"iolens compress: {done}/{total} {text} ({s // 60}:{s % 60:02d})", err=True)

    return beat


def _out_console() -> Console:
    from iolens.render.terminal import console

    return console()


def _tidy(files: Iterable[str], roots: list) -> None:
    """Once the files are known good: what killed compress runs left in RAM and in the filesystems' roots."""
    from iolens.compress.measure import reap_leftovers
    from iolens.compress.run import check_file

    for f in files:
        check_file(str(f))
    reap_leftovers(roots).say(lambda line: click.echo(line, err=True))


def _store(doc: dict, db: Path | None) -> None:
    from iolens.store import ResultsStore

    with ResultsStore(db) as store:
        job = {"files": [i["path"] for i in doc["inputs"]], "settings": doc["settings"], "targets": doc["targets"]}
        run_id = store.add_run("compress", job, doc["host"], label=" ".join(job["files"])[:80])
        for inp in doc["inputs"]:
            for r in inp["rows"]:
                store.add_result(run_id, r["label"], r, target=inp["path"],
                                 provenance={"library": doc["libraries"].get(r["codec"]), "content": inp["content"]})
        doc["store"] = {"db": str(store.path), "run_id": run_id}


def _emit(doc: dict, outputs: dict[str, str | None], force: bool) -> None:
    from iolens.render.compress_text import render_text

    con = _out_console()
    render_text(doc, con)
    exports.write_exports(con, "compress", outputs, doc, doc["store"], force=force)


def _fs(files: tuple[str, ...], fs: str, run: str | None, threads: int, runs: int, outputs: dict[str, str | None],
        db: Path | None, no_store: bool, quiet: bool, force: bool) -> None:
    from iolens.compress.fs import measure_all, resolve_fs
    from iolens.render.compress_text import render_fs_text

    specs = [s.strip() for s in fs.split(",") if s.strip()]
    _tidy(files, [resolve_fs(s) for s in specs])
    con = _out_console()
    say = None if quiet else (lambda text: click.echo(f"  {text} ...", err=True))
    doc = measure_all(specs, list(files), run=run, threads=threads, runs=runs, progress=say)
    if not no_store:
        from iolens.store import ResultsStore

        with ResultsStore(db) as store:
            run_id = store.add_run("compress-fs", {"files": list(files), "filesystems": specs, "command": run,
                                                   "threads": threads}, doc["host"], label=",".join(specs)[:80])
            for r in doc["filesystems"]:
                store.add_result(run_id, "fs", r, target=r["target"])
            doc["store"] = {"db": str(store.path), "run_id": run_id}
    render_fs_text(doc, con)
    exports.write_exports(con, "compress-fs", outputs, doc, doc["store"], force=force)
