"""The `iolens` command: a thin group over one module per subcommand."""

from __future__ import annotations

import sys

import click

from iolens import __version__
from iolens.commands import COMMANDS
from iolens.errors import IolensError
from iolens.names import shown


class IolensGroup(click.Group):
    """Turns typed errors into one line on stderr and their exit code."""

    def invoke(self, ctx: click.Context):
        try:
            return super().invoke(ctx)
        except IolensError as err:
            click.echo(f"iolens: error: {shown(err)}", err=True)
            sys.exit(err.exit_code)
        except KeyboardInterrupt:
            click.echo("iolens: interrupted", err=True)
            sys.exit(130)
        except BrokenPipeError:
            sys.exit(141)


@click.group(cls=IolensGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="iolens")
def main() -> None:
    """Profile the file I/O of genomics pipeline steps, benchmark storage, and advise where data should live."""


for _command in COMMANDS:
    main.add_command(_command)
