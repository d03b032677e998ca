"""The `iolens` command: a thin group over one module per subcommand.

Only click and this package's typed errors are imported here: a subcommand's module (and rich, numpy, the store,
the native format module it may need) loads when that subcommand runs or shows its help, and the command list in
`iolens --help` comes from the generated summaries, so `iolens --help` and `--version` import no command at all.
The installed script starts in `iolens.entry`, which answers those two without importing click.
"""

from __future__ import annotations

import atexit
import gc
import os
import sys
from typing import Any

import click

from iolens import __version__
from iolens.commands import COMMANDS, load
from iolens.errors import IolensError, Terminated


class IolensGroup(click.Group):
    """Loads each command on first use, and turns typed errors into one line on stderr and their exit code."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(set(COMMANDS) | set(self.commands))

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name not in self.commands and cmd_name in COMMANDS:
            self.add_command(load(cmd_name), cmd_name)
        return self.commands.get(cmd_name)

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        """click's own layout, with each summary from commands/_summaries.py instead of the loaded command."""
        from iolens.commands._summaries import SUMMARIES

        names = self.list_commands(ctx)
        limit = formatter.width - 6 - max(len(n) for n in names)
        rows = []
        for name in names:
            if name in SUMMARIES:
                short, text = SUMMARIES[name]  # shortened by click itself, as for a loaded command
                rows.append((name, click.Command(name, help=text, short_help=short).get_short_help_str(limit)))
            else:  # added at run time (not in the list): asked directly
                cmd = self.get_command(ctx, name)
                if cmd is not None and not cmd.hidden:
                    rows.append((name, cmd.get_short_help_str(limit)))
        with formatter.section("Commands"):
            formatter.write_dl(rows)

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except IolensError as err:
            from iolens.names import shown

            click.echo(f"iolens: error: {shown(err)}", err=True)
            sys.exit(err.exit_code)
        except KeyboardInterrupt:
            click.echo("iolens: interrupted", err=True)
            sys.exit(130)
        except Terminated as err:
            click.echo(f"iolens: stopped by {err}", err=True)
            sys.exit(128 + err.signum)
        except BrokenPipeError:
            sys.exit(141)


@click.group(cls=IolensGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="iolens")
def main() -> None:
    """Profile the file I/O of genomics pipeline steps, benchmark storage, and advise where data should live."""


_left: list[Any] | None = None  # run() as the process: what a command leaves to the operating system at exit


def leave_at_exit(*objs: Any) -> None:
    """Keep `objs` (a command's finished, written result) until the process exits, and let it exit without freeing
    them: a large report is a million small objects, and freeing them one by one at exit costs more than any step
    of writing it.  The objects the process holds are set aside from the cycle collector too (gc.freeze), or its
    next collection would walk them all.  Only when the command line runs as the whole process (`run`); in-process
    callers free and collect as usual."""
    if _left is not None:
        _left.extend(objs)
        gc.freeze()


def _nothing_waits_for_exit() -> bool:
    """Nothing that os._exit would skip: no profiler or tracer (cProfile, coverage) to write its results, nothing
    registered to run at exit (atexit: logging, coverage), no other thread still running."""
    callbacks = getattr(atexit, "_ncallbacks", lambda: 1)()  # CPython's count; elsewhere, take the usual exit
    threads = sys.modules.get("threading")
    return (sys.getprofile() is None and sys.gettrace() is None and callbacks == 0
            and (threads is None or threads.active_count() == 1))


def _flushed() -> bool:
    """Standard output and error written out; False when one cannot be (a closed pipe): the usual exit handles it."""
    try:
        for stream in (sys.stdout, sys.stderr):
            if stream is not None:
                stream.flush()
    except (OSError, ValueError):
        return False
    return True


def run() -> None:
    """The command line as the whole process (the `iolens` script, `python -m iolens`): click's main, then the exit.
    When a command left its result to the exit (`leave_at_exit`) and nothing else waits for the exit, the process ends
    at once with the same status once standard output and error are flushed (its files are written, closed and moved
    into place by then)."""
    global _left
    _left = []
    try:
        main()
    except SystemExit as done:
        if _left and (done.code is None or isinstance(done.code, int)) and _nothing_waits_for_exit() and _flushed():
            os._exit(done.code or 0)
        raise
