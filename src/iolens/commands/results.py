"""iolens results: list, show and export what bench and compare stored, so machines can be compared.

Runs whose process died without saying so (kill -9) are shown `interrupted`; a damaged store or run is one line.
"""

from __future__ import annotations

import contextlib
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from iolens.errors import UsageError
from iolens.names import shown
from iolens.output import FORCE_OPTION, check_outputs, write_output
from iolens.render.terminal import Col, FitTable
from iolens.render.terminal import console as terminal

if TYPE_CHECKING:
    from collections.abc import Iterator

    from iolens.store import ResultsStore

DB_OPTION = click.option("--db", type=click.Path(dir_okay=False, path_type=Path),
                         help="Results store (default: IOLENS_DB, else the user data directory).")


def _open(db: Path | None) -> ResultsStore:
    from iolens.store import ResultsStore, default_db_path

    path = db or default_db_path()
    if not path.exists():
        raise UsageError(f"no results store at {path}; run `iolens bench` first, or give --db")
    return ResultsStore(path)


@contextlib.contextmanager
def _stored(what: str, db: Path | None) -> Iterator[None]:
    """Rendering stored runs: contents that are valid JSON but not what iolens wrote give one line, not a traceback."""
    from iolens.store import StoreError, default_db_path

    try:
        yield
    except (KeyError, TypeError, ValueError, AttributeError, IndexError) as err:
        raise StoreError(f"{what} in {db or default_db_path()} is damaged ({type(err).__name__}: {err}); "
                         "`iolens results export --format json` shows what is stored") from None


@click.group()
def results() -> None:
    """Browse and export stored benchmark and comparison results."""


@results.command("list")
@DB_OPTION
@click.option("--kind", help="Only runs of this kind (bench, compare, ...).")
@click.option("-n", "--limit", type=click.IntRange(min=1), default=50, show_default=True)
def list_runs(db: Path | None, kind: str | None, limit: int) -> None:
    """One line per run, newest first."""
    with _open(db) as store:
        runs = store.runs(kind=kind, limit=limit)
        counts = {r["id"]: len(store.results(r["id"])) for r in runs}
    tab = FitTable([Col("run"), Col("kind", "left"), Col("created", "left"), Col("status", "left", drop=3),
                    Col("host", "left", drop=4), Col("label", "left", flex="right", drop=2),
                    Col("targets", "left", wrap=True, drop=1), Col("results", drop=5)], header_style="bold")
    for r in runs:
        job = r.get("job") or {}
        targets = job.get("targets") or []
        tab.add_row(str(r["id"]), r["kind"], r["created"], r.get("status") or "", r.get("host") or "",
                    r.get("label") or "", ", ".join(map(str, targets)) if isinstance(targets, list) else str(targets),
                    str(counts[r["id"]]))
    terminal().print(tab)
    if not runs:
        click.echo("no runs stored yet", err=True)


@results.command()
@DB_OPTION
@click.argument("run_id", type=int)
@click.option("--json", "as_json", is_flag=True, help="The stored run as JSON.")
def show(db: Path | None, run_id: int, as_json: bool) -> None:
    """One run: a bench run as its side-by-side table, anything else as a list of results."""
    from iolens.render.bench_export import results_json

    with _open(db) as store:
        run = store.run(run_id)
    if as_json:
        sys.stdout.buffer.write(results_json([run]))
        return
    with _stored(f"run {run_id}", db):
        _show(run)


def _show(run: dict[str, Any]) -> None:
    console = terminal()
    if run["kind"] == "bench":
        from iolens.bench.storage import report_dict_from_store
        from iolens.render.bench_table import render_bench

        console.print(shown(f"run {run['id']} · {run['created']} · {run.get('host')} · iolens "
                            f"{run.get('iolens_version')} · {run.get('status')}"
                            + (f" · {run['label']}" if run.get("label") else "")))
        doc = report_dict_from_store(run)
        doc["run_id"] = None  # already said above
        render_bench(doc, console)
        return
    tab = FitTable([Col("target", "left", wrap=True), Col("name", "left", wrap=True),
                    Col("cache state", "left", drop=1), Col("metrics", "left", wrap=True)], keys=2,
                   title=f"run {run['id']} ({run['kind']}, {run['created']}, {run.get('status')})",
                   title_justify="left")
    for r in run["results"]:
        m = r.get("metrics") or {}
        summary = ", ".join(f"{k}={v['mean'] if isinstance(v, dict) and 'mean' in v else v}"
                            for k, v in list(m.items())[:6] if not isinstance(v, (list,)))
        tab.add_row(*(shown(x) for x in (r.get("target") or "", r["name"], r.get("cache_state") or "", summary)))
    console.print(tab)


@results.command()
@DB_OPTION
@click.argument("run_ids", nargs=-1, type=int)
@click.option("--kind", help="Only runs of this kind.")
@click.option("--format", "fmt", type=click.Choice(["json", "csv"]), default="json", show_default=True)
@click.option("-o", "--output", type=click.Path(dir_okay=False, allow_dash=True), default="-", show_default=True)
@FORCE_OPTION
def export(db: Path | None, run_ids: tuple[int, ...], kind: str | None, fmt: str, output: str,
           force: bool) -> None:
    """Runs (all, or the given ids) as JSON or CSV, to compare machines elsewhere."""
    from iolens.render.bench_export import results_csv, results_json

    check_outputs({"--output": output}, force=force)
    with _open(db) as store:
        ids = list(run_ids) or [r["id"] for r in store.runs(kind=kind)]
        runs = [store.run(i) for i in sorted(ids)]
    with _stored("a run", db):
        data = results_json(runs) if fmt == "json" else results_csv(runs)
    write_output(output, data, force=force, opt="--output")
    if output == "-":
        return
    click.echo(f"{len(runs)} run(s) written to {output}", err=True)


@results.command("import")
@DB_OPTION
@click.argument("files", nargs=-1, required=True, type=click.Path(dir_okay=False, path_type=Path))
def import_(db: Path | None, files: tuple[Path, ...]) -> None:
    """Add runs exported on another machine (`iolens results export --format json`) to this store.

    Each file is imported whole or not at all; runs already in the store are skipped, so importing twice is
    harmless.  Then `iolens results compare` puts them beside this machine's runs."""
    from iolens.store import ResultsStore, default_db_path, parse_export

    loaded = []
    for f in files:  # every file is checked before anything is written
        try:
            data = f.read_bytes()
        except OSError as err:
            raise UsageError(f"cannot read {f}: {err.strerror}") from None
        loaded.append((f, parse_export(data, str(f))))
    with ResultsStore(db or default_db_path()) as store:
        for f, runs in loaded:
            added, present = store.import_runs(runs, f.name)
            msg = f"{f}: {len(added)} run(s) imported"
            if added:
                msg += f" as {', '.join(map(str, added))}"
            if present:
                msg += f"; {len(present)} already here ({', '.join(map(str, present))})"
            click.echo(msg, err=True)


@results.command("compare")
@DB_OPTION
@click.argument("run_ids", nargs=-1, required=True, type=int)
@click.option("--json", "as_json", is_flag=True, help="The merged side-by-side report as JSON.")
def compare_runs(db: Path | None, run_ids: tuple[int, ...], as_json: bool) -> None:
    """Bench runs side by side, one column per (run, target): e.g. this machine's run beside an imported one."""
    from iolens.bench.storage import side_by_side
    from iolens.render.bench_export import bench_json
    from iolens.render.bench_table import render_bench

    with _open(db) as store:
        runs = [store.run(i) for i in run_ids]
    with _stored("a run", db):
        try:
            doc = side_by_side(runs)
        except ValueError as err:
            raise UsageError(f"{err}; `iolens results list --kind bench` shows the bench runs") from None
        if as_json:
            sys.stdout.buffer.write(bench_json(doc))
            return
        console = terminal()
        for run in runs:
            p = run.get("provenance") or {}
            console.print(shown(f"run {run['id']} · {run['created']} · {run.get('host')} · "
                                f"{p.get('kernel') or '?'} · {p.get('cpu_model') or '?'} · "
                                f"iolens {run.get('iolens_version')} · {run.get('status')}"
                                + (f" · imported from {p['imported']['from']}" if p.get("imported") else "")))
        render_bench(doc, console)
