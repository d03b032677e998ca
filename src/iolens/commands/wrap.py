"""iolens wrap: print the lines that profile every task of a Slurm job, a Snakemake or a Nextflow workflow."""

from __future__ import annotations

import os

import click

ENGINES = ("slurm", "snakemake", "nextflow")


@click.command(short_help="Print the snippet that turns profiling on for ENGINE.")
@click.argument("engine", type=click.Choice(ENGINES))
@click.option("-d", "--capture-dir", default="iolens-captures", show_default=True, metavar="DIR",
              help="The pipeline's capture directory (on storage every node sees).")
@click.option("--task-prolog", is_flag=True, help="slurm: print only the TaskProlog script.")
def wrap(engine: str, capture_dir: str, task_prolog: bool) -> None:
    """Print the snippet that turns profiling on for ENGINE with its own mechanism.

    The interposer goes into every task through the scheduler's or engine's environment (no Python runs per
    task); each process leaves its part in DIR/parts, and `iolens report DIR` merges them per task and rule.

    \b
    Examples:
      iolens wrap slurm -d /shared/run1/iolens
      iolens wrap slurm -d /shared/run1/iolens --task-prolog > iolens-prolog.sh
      iolens wrap snakemake -d iolens-captures
    """
    from iolens.native import preload_library
    from iolens.pipeline import snippets

    lib = str(preload_library())
    where = os.path.abspath(capture_dir)
    if task_prolog:
        click.echo(snippets.task_prolog(lib, where), nl=False)
        return
    click.echo(snippets.ENGINES[engine](lib, where), nl=False)
