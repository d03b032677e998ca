"""Storing a multi-client run (`iolens bench --clients N`): the document bench/mpi.py returns (rendered by
render/bench_table.py)."""

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
