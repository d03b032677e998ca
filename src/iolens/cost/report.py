"""Items + prices -> the cost report, as plain data (the JSON export is this dict; docs/cost.md lists every key).

Every key is always present (null when it does not apply).
"""

from __future__ import annotations

from typing import Any

from iolens.cost import pareto
from iolens.cost.inputs import Item
from iolens.cost.model import Costed, Workload, billed_size_gb, cost
from iolens.cost.prices import Snapshot

TAG = "iolens-cost"
SCHEMA_VERSION = [1, 0]


def _storage_dict(c: Costed) -> list[dict[str, Any]]:
    out = []
    for st in c.storages:
        o = st.option
        out.append({"option": o.id, "spec": st.spec, "title": o.title, "provider": o.provider, "region": o.region,
                    "billing": o.billing,
                    "size_gb": billed_size_gb(st) if o.billing == "provisioned" else st.size_gb,
                    "iops": st.iops if st.iops is not None else o.default_iops,
                    "throughput_mibps": (st.throughput_mibps if st.throughput_mibps is not None
                                         else o.default_throughput_mibps),
                    "note": o.note})
    return out


def build_report(items: list[Item], snap: Snapshot, wl: Workload, *, instance: str | None, held_for: str,
                 source: dict[str, Any], notes: list[str], size_gb: float | None = None,
                 stored_gb: float | None = None) -> dict[str, Any]:
    costed = [cost(it.name, it.storages, it.usage, wl, snap, instance) for it in items]
    points = [pareto.Point(c.name, c.time_s, c.per_run) for c in costed]
    dom = pareto.dominated_by(points)
    best = pareto.best_value(points)
    trade = {t["name"]: t for t in pareto.tradeoffs(points)}
    fastest = min(c.time_s for c in costed)
    cheapest = min(c.per_run for c in costed)
    options = []
    for it, c in zip(items, costed):
        t = trade.get(c.name)
        u = it.usage
        options.append({
            "name": c.name,
            "storages": _storage_dict(c),
            "placements": dict(it.placements),
            "instance": None if c.instance is None else {
                "id": c.instance.id, "type": c.instance.type, "price_per_hour": c.instance.price.price,
                "local_nvme_gb": c.instance.local_nvme_gb},
            "time_s": c.time_s,
            "time_rel": c.time_s / fastest if fastest else None,
            "per_run": c.per_run,
            "per_month": c.per_month,
            "cost_rel": c.per_run / cheapest if cheapest else None,
            "parts": c.parts(),
            "shares": c.shares(),
            "charges": [ch.to_dict() for ch in c.charges],
            "on_front": dom[c.name] is None,
            "dominated_by": dom[c.name],
            "best_value": c.name == best.name,
            "faster_than_best": t["faster"] if t else None,
            "more_than_best": t["more"] if t else None,
            "cost_per_pct_saved": t["cost_per_pct_saved"] if t else None,
            "usage": {"read_bytes": u.read_bytes, "written_bytes": u.written_bytes, "stored_bytes": u.stored_bytes,
                      "objects": len(u.object_sizes) if u.object_sizes is not None else u.objects,
                      "write_requests": u.write_requests, "read_requests": u.read_requests,
                      "io_requests": u.io_requests, "basis": u.basis},
        })
    used = [p for c in costed for s in c.storages for p in s.option.prices.values()]
    used += [c.instance.price for c in costed if c.instance is not None]
    used = list({id(p): p for p in used}.values())
    warning = snap.age_warning(prices=used)
    transcribed = [p for p in used if p.transcribed and not p.retrieved]
    return {
        "tag": TAG,
        "schema_version": SCHEMA_VERSION,
        "currency": "USD",
        "source": {"kind": source.get("kind"), "run_id": source.get("run_id"), "db": source.get("db"),
                   "command_template": source.get("command_template"), "created": source.get("created"),
                   "host": source.get("host"), "capture": source.get("capture")},
        "prices": {"file": snap.source, "as_of": snap.as_of, "retrieved": snap.retrieved,
                   "transcribed": snap.transcribed, "prices_used": len(used),
                   "prices_transcribed": len(transcribed), "warning": warning},
        "settings": {"runs_per_month": wl.runs_per_month, "held_for": held_for, "held_for_s": wl.held_for_s,
                     "always": wl.always, "instance": instance, "size_gb": size_gb, "stored_gb": stored_gb,
                     "month_hours": 730},
        "options": options,
        "front": [p.name for p in pareto.front(points)],
        "best_value": best.name,
        "verdict": pareto.verdict(points),
        "warnings": [w for w in [warning] if w],
        "notes": list(notes),
        "store": None,
    }
