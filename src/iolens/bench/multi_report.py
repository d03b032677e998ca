"""Storing and rendering a multi-client run (`iolens bench --clients N`): the document bench/mpi.py returns."""

from __future__ import annotations

from pathlib import Path
from typing import Any


def store(doc: dict[str, Any], db: Path | None, label: str | None) -> None:
    """Records the run in the results store: one result per phase, with every rank's host and figures."""
    from iolens.store import ResultsStore

    st = ResultsStore(db)
    try:
        job = {k: doc[k] for k in ("clients", "target", "suites", "threads_per_client", "bytes_per_thread",
                                   "stonewall_s")}
        run_id = st.add_run("bench-multi", job, {"hosts": doc["hosts"], "iolens_version": doc["iolens_version"],
                                                 "created": doc["created"]}, label=label)
        for r in doc["results"]:
            metrics = {k: r[k] for k in ("bytes", "ops_done", "first_done_s", "last_done_s", "first_done_Bps",
                                         "last_done_Bps", "first_done_iops", "last_done_iops")}
            st.add_result(run_id, r["phase"], metrics, target=doc["target"],
                          provenance={"clients": r["clients"], "spread": r["spread"], "test": r["test"],
                                      "stonewall_s": r["stonewall_s"], "hosts": doc["hosts"]})
        doc["run_id"] = run_id
        doc["db"] = str(st.path)
    finally:
        st.close()


# ---- rendering (formats only) ------------------------------------------------------------------------------------

def _fmt(a: dict[str, Any], which: str) -> str:
    from iolens.units import human_bytes

    if a["bytes"]:
        v = a[f"{which}_Bps"]
        return f"{human_bytes(v)}/s" if v is not None else "-"
    v = a[f"{which}_iops"]
    return f"{v:,.0f} ops/s" if v is not None else "-"


def render(doc: dict[str, Any], console: Any) -> None:
    """The aggregate of every phase beside the per-client figures and their spread."""
    from rich.table import Table

    from iolens.units import human_bytes

    hosts = sorted(set(doc["hosts"]))
    tab = Table(title=f"{doc['target']}: {doc['clients']} clients on {len(hosts)} host(s) ({', '.join(hosts)}), "
                      f"stonewall {doc['stonewall_s']:g} s")
    for col in ("phase", "aggregate first done", "aggregate last done", "client mean", "client min-max", "CV",
                "first/last done"):
        tab.add_column(col, justify="left" if col == "phase" else "right")
    for a in doc["results"]:
        sp = a["spread"]
        unit = (lambda v: f"{human_bytes(v)}/s") if sp["metric"] == "throughput_Bps" else (lambda v: f"{v:,.0f}/s")
        mean = unit(sp["mean"]) if sp["mean"] is not None else "-"
        rng = f"{unit(sp['min'])} - {unit(sp['max'])}" if sp["min"] is not None else "-"
        cv = f"{100 * sp['cv']:.1f}%" if sp["cv"] is not None else "-"
        tab.add_row(a["phase"], _fmt(a, "first_done"), _fmt(a, "last_done"), mean, rng, cv,
                    f"{a['first_done_s']:.2f}/{a['last_done_s']:.2f} s")
    console.print(tab)
    if doc.get("stand_in"):
        console.print(f"{doc['target']} stands in for {doc['stand_in']['volume']}: {doc['stand_in']['emulates']}")
    if len(set(doc.get("client_paths") or [])) > 1:
        console.print("client mounts: " + ", ".join(f"rank {r}: {p}" for r, p in enumerate(doc["client_paths"])))
    for w in doc["warnings"]:
        console.print(f"[yellow]warning:[/] {w}")
    if doc.get("run_id") is not None:
        console.print(f"stored as run {doc['run_id']}")
