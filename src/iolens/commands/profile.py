"""iolens profile: run a command with the interposer and record its file I/O and its children's."""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

from typing import TYPE_CHECKING

import click

from iolens.errors import UsageError
from iolens.names import shown
from iolens.output import FORCE_OPTION, check_outputs, directory_problem

if TYPE_CHECKING:  # rich, numpy and the analysis load when a command is profiled, not for `iolens --help`
    from rich.console import Console

    from iolens.capture.record import RecordingResult


def default_capture_name(argv: list[str]) -> Path:
    base = os.path.basename(argv[0]) or "run"
    stamp = time.strftime("%Y%m%d-%H%M%S")
    for i in range(1000):
        p = Path(f"iolens-{base}-{stamp}{'' if i == 0 else f'-{i}'}.iolens")
        if not p.exists():
            return p
    raise UsageError("cannot find a free capture name here; give one with -o")


def check_output(out: Path, *, force: bool = False) -> None:
    """Refuse, before the command runs, a capture that could not be written: an existing file unless `force`, a
    device or a pipe, a directory that is missing or not writable.  A run of hours whose capture is lost at the end
    is the worse outcome: the user asked for the capture."""
    if str(out) == "-":
        raise UsageError("-o - : a capture is binary and cannot go to standard output; give a file name")
    parent = out.parent if str(out.parent) else Path(".")
    problem = directory_problem(parent)  # first: a directory one cannot enter also makes `out.exists()` raise
    if problem:
        raise UsageError(f"cannot save the capture {shown(str(out))}: directory {shown(str(parent))} {problem[0]}; "
                         f"{problem[1]}give -o in a writable directory (the command was not run)")
    if ((out.exists() or out.is_symlink()) and not force) or (out.exists() and not out.is_file()):
        check_outputs({"-o": out})  # refuses, with the policy's message (a device or a pipe also with --force)


def render(result: RecordingResult, console: Console) -> None:
    """The summary, the top advice and where the capture went."""
    from rich.text import Text

    from iolens.analysis.summary import summarize
    from iolens.render.summary_text import render_summary
    if result.capture is not None:
        render_summary(summarize(result.capture), console)
        from iolens.analysis.report import top_advice
        from iolens.render.report_text import NO_ADVICE

        advice = [f"advice: {a}" for a in top_advice(result.capture, n=2)] or [
            f"{NO_ADVICE}; `iolens report` shows the full analysis"]
        for line in advice:
            console.print(Text(f"  {shown(line)}"))
        if result.path:
            path = shown(result.path)
            console.print(Text(f"  capture: {path}  (iolens parse {path} shows every record)"))


def capture_dir_entry(capture_dir: Path, argv: list[str]) -> tuple[Path, dict]:
    """A never-shared capture name in a pipeline's capture directory, and the task's workflow names."""
    from iolens.pipeline.naming import entry_name, workflow_names

    try:
        capture_dir.mkdir(parents=True, exist_ok=True)
    except OSError as err:
        raise UsageError(f"--capture-dir {capture_dir}: {err.strerror}") from None
    names = workflow_names(argv, os.environ, os.getcwd())
    return capture_dir / f"{entry_name(names)}.iolens", {"workflow": names}


def run_profiled(argv: list[str], output: Path | None, *, trace: bool = False, max_files: int | None = None,
                 quiet: bool = False, force: bool = False, console: Console | None = None,
                 capture_dir: Path | None = None) -> RecordingResult:
    from rich.text import Text

    from iolens.capture.record import Recording, reap_staging, resolve_command
    from iolens.render.summary_text import summary_console

    resolve_command(argv)
    meta = None
    if capture_dir is not None:
        output, meta = capture_dir_entry(capture_dir, argv)
    out = output or default_capture_name(argv)
    console = console or summary_console()
    check_output(out, force=force)
    reap_staging().say(lambda line: console.print(Text(line)))  # what killed recorders left in RAM
    rec = Recording(argv, output=out, overwrite=force, trace=trace, max_files=max_files,
                    warn=lambda msg: console.print(Text(shown(msg))), meta=meta)
    result = rec.run()
    if result.error:
        result.path = None
        console.print(Text(f"iolens: warning: could not save the capture to {shown(out)}: {shown(result.error)}"))
    elif not quiet:
        render(result, console)
    return result


class _ProfileCommand(click.Command):
    """Keeps the raw arguments, so that a mistyped option can be told from a command given after `--`."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        ctx.meta["iolens.profile.args"] = list(args)
        return super().parse_args(ctx, args)


def check_not_an_option(ctx: click.Context, command: tuple[str, ...]) -> None:
    """A first command word that starts with `-` and was not given after `--` is a mistyped option (unknown options
    are passed on as the command, so that `iolens profile samtools -h` works): say so, with click's own kind of
    suggestion (difflib over this command's options), rather than `command not found: --ouput`."""
    import difflib

    raw = ctx.meta.get("iolens.profile.args", [])
    n = len(command)
    after_dashes = 0 < n < len(raw) and raw[-n - 1] == "--" and tuple(raw[-n:]) == command
    if not command or not command[0].startswith("-") or command[0] == "-" or after_dashes:
        return
    word = command[0].split("=", 1)[0]
    names = [o for p in ctx.command.params if isinstance(p, click.Option) for o in p.opts + p.secondary_opts]
    close = difflib.get_close_matches(word, names)
    hint = f" (did you mean {' or '.join(close)}?)" if close else f" (options: {', '.join(sorted(names))})"
    raise UsageError(f"no such option: {shown(word)}{hint}; the command to profile goes after --, as in "
                     "iolens profile -o CAPTURE -- COMMAND [ARGS...]")


@click.command(cls=_ProfileCommand,
               context_settings={"ignore_unknown_options": True, "allow_interspersed_args": False})
@click.option("-o", "--output", type=click.Path(dir_okay=False, path_type=Path),
              help="Capture file to write (default: iolens-CMD-TIME.iolens here). "
                   "An existing file is replaced only with --force.")
@FORCE_OPTION
@click.option("--trace", is_flag=True, help="Also record every operation (time, op, file, offset, size, thread).")
@click.option("--max-files", type=click.IntRange(min=1), default=None,
              help="File records per process before the rest are aggregated per directory (default 1,000,000).")
@click.option("-q", "--quiet", is_flag=True, help="Do not print the summary.")
@click.option("--capture-dir", type=click.Path(file_okay=False, path_type=Path), default=None,
              help="A pipeline's capture directory: write this task's capture there under a name no other task "
                   "takes (host, job and task ids, pid, time); implies --quiet. See `iolens wrap`.")
@click.argument("command", nargs=-1, required=True, type=click.UNPROCESSED)
def profile(output: Path | None, force: bool, trace: bool, max_files: int | None, quiet: bool, capture_dir: Path | None,
            command: tuple[str, ...]) -> None:
    """Run COMMAND and record the file I/O of it and all its children.

    Exits with COMMAND's exit status (128+N if it died from signal N).
    stdin, stdout and stderr pass through untouched.

    \b
    Example:
      iolens profile -o sort.iolens -- samtools sort -o out.bam in.sam
    """
    check_not_an_option(click.get_current_context(), command)
    argv = list(command)
    if argv and argv[0] == "--":
        argv = argv[1:]
    if not argv:
        raise UsageError("no command given; usage: iolens profile [-o CAPTURE] -- COMMAND [ARGS...]")
    if capture_dir is not None and output is not None:
        raise UsageError("give either -o or --capture-dir, not both")
    result = run_profiled(argv, output, trace=trace, max_files=max_files, quiet=quiet or capture_dir is not None,
                          force=force, capture_dir=capture_dir)
    sys.exit(result.status)
