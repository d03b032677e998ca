"""iolens cost: what each storage choice costs in time and money, from a compare run or stated figures."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import click

from iolens.errors import UsageError
from iolens.output import FORCE_OPTION, check_outputs, write_output
from iolens.render import exports
from iolens.render.exports import export_options
from iolens.units import duration_s



def parse_held(text: str) -> tuple[float | None, bool]:
    """--held-for: `run` (the run's wall time), `always` (all month), or a duration like 2h, 7d, 3months."""
    t = text.strip().lower()
    if t == "run":
        return None, False
    if t in ("always", "month-always"):
        return None, True
    held = duration_s(t)
    if held is None:
        raise UsageError(f"--held-for {text!r}: write run, always, or a duration like 30m, 2h, 7d, 3months")
    return held, False


def _source_run(db: Path | None, run_id: int | None, last: bool) -> tuple[dict[str, Any], str]:
    from iolens.store import ResultsStore, default_db_path

    path = db or default_db_path()
    if not Path(path).exists():
        raise UsageError(f"no results store at {path}; run `iolens compare` first, or give --db")
    with ResultsStore(path) as store:
        if last:
            runs = store.runs(kind="compare", limit=1)
            if not runs:
                raise UsageError(f"no compare run in {path}; run `iolens compare` first")
            run_id = runs[0]["id"]
        assert run_id is not None
        return store.run(run_id), str(store.path)


def _refresh(out: Path, prices: Path | None, aws_offers: tuple[Path, ...], azure: tuple[Path, ...],
             force: bool) -> None:
    from iolens.cost import prices as P
    from iolens.cost import refresh as R

    check_outputs({"--refresh-prices": out}, force=force)
    base = P.load(prices).doc

    def read(p: Path) -> tuple[str, Any]:
        try:
            return str(p.name), json.loads(p.read_bytes())
        except OSError as err:
            raise UsageError(f"cannot read {p}: {err.strerror or err}") from None
        except (UnicodeDecodeError, json.JSONDecodeError) as err:
            raise P.PriceError(f"{p} is not JSON ({err})") from None

    if aws_offers or azure:
        offers = [read(p) for p in aws_offers]
        pages = [read(p) for p in azure]
    else:
        offers, pages = R.fetch_aws(), R.fetch_azure()
    res = R.refresh(base, aws_offers=offers, azure_pages=pages)
    write_output(out, (json.dumps(res.doc, indent=1) + "\n").encode(), force=force, opt="--refresh-prices")
    click.echo(f"{len(res.refreshed)} prices refreshed from {'; '.join(res.sources) or 'nothing'}; "
               f"{len(res.missing)} not found in the sources (kept as they were, still marked transcribed); "
               f"GCP prices kept (its catalog needs an API key): {out}")
    for m in res.missing:
        click.echo(f"  not found: {m}", err=True)


def _list(prices: Path | None) -> None:
    from iolens.cost import prices as P
    from iolens.cost.inputs import LAB_OPTIONS
    from iolens.render.terminal import Col, FitTable, console

    snap = P.load(prices)
    t = FitTable([Col("option", "left"), Col("what", "left", wrap=True), Col("prices", "left", wrap=True)],
                 show_edge=False, pad_edge=False, title=f"Priced options ({snap.named}, as of {snap.as_of})",
                 title_justify="left")
    for o in snap.options.values():
        ps = ", ".join(f"{d} {('tiered' if p.price is None else f'{p.price:g}')}/{p.unit}" for d, p in o.prices.items())
        t.add_row(o.id, f"{o.title} ({o.region})", ps or f"on {o.instance}")
    for i in snap.instances.values():
        t.add_row(i.id, f"{i.type} instance ({i.region}), local NVMe {i.local_nvme_gb:g} GB",
                  f"{i.price.price:g}/hour")
    con = console()
    con.print(t)
    con.print("lab targets: " + ", ".join(f"{k}={v}" for k, v in LAB_OPTIONS.items()))


@click.command(short_help="Price measured time: $ per run and month, the best value.",
               context_settings={"max_content_width": 110})
@click.option("--run", "run_id", type=int, default=None, help="A compare run of the results store.")
@click.option("--last", is_flag=True, help="The newest compare run of the results store.")
@click.option("--option", "figures", multiple=True, metavar="OPTION=SECONDS",
              help="A stated time instead of a run: a priced option (aws:ebs-gp3:size=500) or a lab target.")
@click.option("--map", "maps", multiple=True, metavar="LOC=OPTION[,LOC=OPTION...]",
              help="Price a location of the compare run (as given, or a directory above it) as an option, e.g. "
                   "/scratch=aws:ec2-instance-nvme, out=aws:s3-standard; `none` leaves it out. Lab targets are "
                   "mapped by default.")
@click.option("--runs-per-month", type=click.FloatRange(min=0, min_open=True), default=1.0, show_default=True,
              help="Runs of the step per month.")
@click.option("--held-for", default="run", show_default=True, metavar="run|always|DURATION",
              help="How long the storage (and the data on it) is kept per run: the run itself, a duration (2h, 7d, "
                   "3months), or always (all month, shared by the runs).")
@click.option("--size", "size_gb", type=click.FloatRange(min=0, min_open=True), default=None, metavar="GB",
              help="Provisioned size of volumes and file systems without one in their spec. [default: the "
                   "option's, 100 GB for EBS]")
@click.option("--stored", "stored_gb", type=click.FloatRange(min=0), default=None, metavar="GB",
              help="Data kept on object stores and EFS. [default: the bytes the run wrote]")
@click.option("--read", "read_gb", type=click.FloatRange(min=0), default=0.0, metavar="GB",
              help="With --option: data the step reads (retrieval, data moved, requests).")
@click.option("--written", "written_gb", type=click.FloatRange(min=0), default=0.0, metavar="GB",
              help="With --option: data the step writes.")
@click.option("--capture", type=click.Path(dir_okay=False, exists=True, path_type=Path), default=None,
              help="A capture of the step (iolens profile): its operation counts replace the estimates of requests "
                   "and objects.")
@click.option("--instance", default=None, metavar="PROVIDER:TYPE|none",
              help="The instance the step runs on (local NVMe options bring their own). [default: aws:m5.xlarge "
                   "for AWS]")
@click.option("--prices", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="Your own price file, in the format of the shipped one (negotiated prices, other regions).")
@click.option("--details", is_flag=True, help="Also print every charge of every option.")
@click.option("--db", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="Results store. [default: $IOLENS_DB or ~/.local/share/iolens/results.sqlite]")
@click.option("--no-store", is_flag=True, help="Do not record the cost analysis in the results store.")
@click.option("--list", "list_options", is_flag=True, help="List the priced options and instances, then stop.")
@click.option("--refresh-prices", "refresh_out", type=click.Path(dir_okay=False, path_type=Path), default=None,
              metavar="OUT", help="Rebuild the price snapshot from the official sources into OUT, then stop.")
@click.option("--aws-offer", "aws_offers", multiple=True, type=click.Path(dir_okay=False, exists=True, path_type=Path),
              help="With --refresh-prices: an AWS Price List offer file (index.json) already downloaded.")
@click.option("--azure-prices", "azure_pages", multiple=True,
              type=click.Path(dir_okay=False, exists=True, path_type=Path),
              help="With --refresh-prices: a page of the Azure Retail Prices API already downloaded.")
@FORCE_OPTION
@export_options("cost")
def cost(run_id: int | None, last: bool, figures: tuple[str, ...], maps: tuple[str, ...], runs_per_month: float,
         held_for: str, size_gb: float | None, stored_gb: float | None, read_gb: float, written_gb: float,
         capture: Path | None, instance: str | None, prices: Path | None, outputs: dict[str, str | None],
         details: bool, db: Path | None, no_store: bool, list_options: bool, refresh_out: Path | None,
         aws_offers: tuple[Path, ...], azure_pages: tuple[Path, ...], force: bool) -> None:
    """Join measured time with storage and instance prices: $ per run and per month, the time-vs-cost front and
    the best value.

    \b
    Example: the published six-volume survey, in the lab
      iolens compare 'STEP {work}' --place work=lab:gp2,lab:gp3,lab:st1,lab:io2-100,lab:io2-500,lab:magnetic
      iolens cost --last --runs-per-month 30 --html cost.html
    Example: your own placements, or plain figures
      iolens cost --last --map /scratch=aws:ec2-instance-nvme,/data=aws:ebs-gp3:size=500
      iolens cost --option gp2=300 --option aws:ec2-instance-nvme=294 --option st1=456 --held-for always
    """
    from iolens.cost import inputs as I
    from iolens.cost import prices as P
    from iolens.cost.model import Workload
    from iolens.cost.report import build_report

    if refresh_out is not None:
        return _refresh(refresh_out, prices, aws_offers, azure_pages, force)
    if aws_offers or azure_pages:
        raise UsageError("--aws-offer and --azure-prices go with --refresh-prices OUT")
    if list_options:
        return _list(prices)
    # parse and validate everything before any work
    sources = sum(1 for x in (run_id is not None, last, bool(figures)) if x)
    if sources != 1:
        raise UsageError("say what to price: --run ID, --last (a compare run), or --option OPTION=SECONDS ...")
    if figures and maps:
        raise UsageError("--map applies to compare runs; with --option, name the priced option itself")
    if (read_gb or written_gb) and not figures:
        raise UsageError("--read/--written go with --option; a compare run has its own byte counts")
    check_outputs(exports.check("cost", outputs), force=force)
    held_s, always = parse_held(held_for)
    if instance is not None and instance != "none" and ":" not in instance:
        instance = f"aws:{instance}"
    snap = P.load(prices)
    if instance not in (None, "none"):
        snap.instance(instance)
    wl = Workload(runs_per_month=runs_per_month, held_for_s=held_s, always=always)
    notes: list[str] = []
    map_table = I.parse_maps(maps)
    if figures:
        items = I.from_figures(figures, snap, size_gb=size_gb, read_gb=read_gb, written_gb=written_gb)
        source: dict[str, Any] = {"kind": "figures"}
    else:
        run, db_path = _source_run(db, run_id, last)
        items = I.from_compare(run, map_table, snap, size_gb=size_gb, notes=notes)
        source = {"kind": "compare", "run_id": run["id"], "db": db_path,
                  "command_template": (run.get("job") or {}).get("command_template"), "created": run.get("created"),
                  "host": run.get("host")}
    I.check_known(items)
    cap = None
    if capture is not None:
        from iolens.capture.load import load_capture

        cap = load_capture(str(capture), doing="pricing")
        I.apply_capture(items, I.capture_counts(cap))
        source["capture"] = str(capture)
    if stored_gb is not None:
        for it in items:
            it.usage.stored_bytes = stored_gb * (1 << 30)
    rep = build_report(items, snap, wl, instance=instance, held_for=held_for, source=source, notes=notes,
                       size_gb=size_gb, stored_gb=stored_gb)

    if not no_store:
        from iolens import __version__
        from iolens.store import ResultsStore
        from iolens.sysinfo import host_facts

        with ResultsStore(db) as store:
            job = {"source": rep["source"], "settings": rep["settings"], "prices": rep["prices"],
                   "options": [o["name"] for o in rep["options"]]}
            prov = {**host_facts(), "iolens_version": __version__, "created": time.strftime("%Y-%m-%dT%H:%M:%S%z")}
            sid = store.add_run("cost", job, prov, label=rep["verdict"][:80])
            for o in rep["options"]:
                store.add_result(sid, o["name"], o, target=" + ".join(s["spec"] for s in o["storages"]))
            rep["store"] = {"db": str(store.path), "run_id": sid}

    from iolens.render.cost_text import render_charges, render_cost
    from iolens.render.terminal import console as terminal

    console = terminal()

    render_cost(rep, console)
    if details:
        render_charges(rep, console)
    exports.write_exports(console, "cost", outputs, rep, rep["store"], force=force)
    if cap is not None:
        from iolens.capture.load import exit_if_partial

        exit_if_partial(cap)
