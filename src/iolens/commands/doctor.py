"""iolens doctor: what this machine supports, in one screen."""

from __future__ import annotations

import click

WIDTH = 80  # at most: the details fold at the terminal's width below this
NAME_W = 14


@click.command(short_help="Say what this machine supports: native parts, kernel, FUSE, lab.")
@click.option("--json", "as_json", is_flag=True, help="Print the findings as JSON (tag iolens-doctor, schema [1, 0]).")
def doctor(as_json: bool) -> None:
    """Say what this machine supports: the native parts, the interposer profiling a real command, kernel
    features, FUSE, root and the lab's tools.

    Exits 1 when iolens cannot profile here (a native part missing, the interposer not recording).

    \b
    Example:
      iolens doctor
      iolens doctor --json
    """
    import json

    from iolens.doctor import collect
    from iolens.render.terminal import UNBOUNDED, fold, width

    at = width()
    most = at if at >= UNBOUNDED else min(WIDTH, at)  # a pipe's: fold() wraps it at 80, a path whole

    d = collect()
    if as_json:
        click.echo(json.dumps(d, indent=1))
    else:
        h = d["host"]
        first = (f"iolens {h['iolens_version']}, Python {h['python']}, {h['machine']}, Linux {h['kernel']}, "
                 f"{h['libc'] or 'libc unknown'}")
        click.echo("\n".join(fold(first, most, "")))
        for c in d["checks"]:  # a detail folded under itself, a path whole (or broken after a separator)
            mark = {"ok": "ok", "no": "NO", "info": "--"}[c["state"]]
            lead = f"{mark:2}  {c['name']:{NAME_W}}"
            click.echo("\n".join(fold(f"{lead} {c['detail']}", most, " " * (len(lead) - 1))))
        if not d["ok"]:
            click.echo("iolens cannot profile on this machine (see the NO lines above)", err=True)
    if not d["ok"]:
        raise SystemExit(1)
