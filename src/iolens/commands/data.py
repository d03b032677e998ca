"""iolens data: make realistic genomics inputs locally (nothing is downloaded)."""

from __future__ import annotations

import os
from pathlib import Path

import click

from iolens.errors import UsageError
from iolens.units import human_bytes


@click.group()
def data() -> None:
    """Generate test data for profiling, benchmarks and comparisons."""


@data.command()
@click.option("-o", "--outdir", type=click.Path(file_okay=False, path_type=Path), default=Path("synth"),
              show_default=True, help="Directory to write ref.fa, reads_1.fq.gz and reads_2.fq.gz into.")
@click.option("--ref-size", "ref_bases", type=click.IntRange(min=100_000), default=5_000_000, show_default=True,
              help="Reference length in bases.")
@click.option("--pairs", type=click.IntRange(min=1), default=100_000, show_default=True,
              help="Read pairs to simulate.")
@click.option("--read-length", type=click.IntRange(min=30, max=1000), default=150, show_default=True)
@click.option("--seed", type=int, default=1, show_default=True)
@click.option("--quality", type=click.Choice(["binned", "full"]), default="binned", show_default=True,
              help="binned: 4-level qualities as NovaSeq writes them; full: every Phred score 2..41, as older "
                   "instruments wrote them (compresses far worse).")
@click.option("--force", is_flag=True, help="Replace existing files of the same names.")
def synth(outdir: Path, ref_bases: int, pairs: int, read_length: int, seed: int, quality: str, force: bool) -> None:
    """A synthetic reference and gzipped paired reads with binned (or full-resolution) qualities and a few % errors."""
    from iolens.synth import synth as make

    names = ["ref.fa", "reads_1.fq.gz", "reads_2.fq.gz"]
    existing = [n for n in names if (outdir / n).exists()]
    if existing and not force:
        raise UsageError(f"{outdir}/{existing[0]} already exists; use --force to replace it or choose another -o")
    if outdir.exists() and not os.access(outdir, os.W_OK):
        raise UsageError(f"{outdir} is not writable; choose another directory with -o")
    try:
        res = make(outdir, ref_bases=ref_bases, pairs=pairs, read_len=read_length, seed=seed, quality=quality)
    except OSError as err:
        raise UsageError(f"cannot write to {outdir}: {err.strerror}") from None
    from iolens.names import shown
    from iolens.render.terminal import console

    con = console()  # folded at the terminal's width as every command's prose, a path whole on a pipe
    for p in (res.reference, res.reads1, res.reads2):
        con.print(shown(f"{p}  {human_bytes(p.stat().st_size)}"))
    con.print(f"{res.ref_bases:,} reference bases, {res.pairs:,} pairs, substitution error rate "
              f"{100 * res.error_rate:.2f}%")
