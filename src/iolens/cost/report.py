"""Items + prices -> the cost report, as plain data (the JSON export is this dict; docs/cost.md lists every key).

Every key is always present (null when it does not apply).
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from iolens.stats.samples import bootstrap_ci
from iolens.cost import pareto
from iolens.cost.inputs import Item
from iolens.cost.model import Costed, Workload, billed_size_gb, cost
from iolens.cost.prices import Snapshot

TAG = "iolens-cost"
SCHEMA_VERSION = [1, 1]  # 1.1: time_ci, per_run_ci, per_month_ci, faster_than_best_ci, tied_with_best, tied,
#                          assumptions; the verdict calls an option faster only when the runs' interval says so


def time_interval(times: list[float] | None) -> tuple[float, float] | None:
    """95% bootstrap interval of the median time (as compare reports it), or None without runs."""
    return bootstrap_ci(times) if times and len(times) >= 2 else None


def assumptions(costed: list[Costed], wl: Workload, held_for: str, stored_gb: float | None) -> str:
    """The settings the verdict rests on, in words: how long storage is held, the volumes' sizes, data stored."""
    held = ("storage kept all month" if wl.always else "storage held for each run's wall time"
            if wl.held_for_s is None else f"storage held {held_for} per run")
    sizes = {f"{st.option.id} {billed_size_gb(st):g} GB": None for c in costed for st in c.storages
             if st.option.billing == "provisioned"}
    stored = f", {stored_gb:g} GB stored" if stored_gb is not None else ""
    runs = f"{wl.runs_per_month:g} run{'' if wl.runs_per_month == 1 else 's'} per month"
    return f"assuming {held}{''.join(', ' + s for s in sizes)}{stored}, {runs}"


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
    spans = [time_interval(it.usage.times) for it in items]
    ends = [None if sp is None else tuple(cost(it.name, it.storages, replace(it.usage, wall_s=t), wl, snap, instance)
                                          for t in sp) for it, sp in zip(items, spans)]
    points = [pareto.Point(c.name, c.time_s, c.per_run, tuple(it.usage.times) if it.usage.times else None,
                           None if e is None else (e[0].per_run, e[1].per_run), sp)
              for it, c, e, sp in zip(items, costed, ends, spans)]
    order = pareto.TimeOrder.of(points)
    dom = pareto.dominated_by(points, order)
    best = pareto.best_value(points, order)
    trade = {t["name"]: t for t in pareto.tradeoffs(points, order)}
    tied = pareto.tied(points, order)
    said = assumptions(costed, wl, held_for, stored_gb)
    fastest = min(c.time_s for c in costed)
    cheapest = min(c.per_run for c in costed)
    options = []
    for it, c, span, e in zip(items, costed, spans, ends):
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
            "time_ci": None if span is None else list(span),
            "time_rel": c.time_s / fastest if fastest else None,
            "per_run": c.per_run,
            "per_month": c.per_month,
            "per_run_ci": None if e is None else [e[0].per_run, e[1].per_run],
            "per_month_ci": None if e is None else [e[0].per_month, e[1].per_month],
            "cost_rel": c.per_run / cheapest if cheapest else None,
            "parts": c.parts(),
            "shares": c.shares(),
            "charges": [ch.to_dict() for ch in c.charges],
            "on_front": dom[c.name] is None,
            "dominated_by": dom[c.name],
            "best_value": c.name == best.name,
            "faster_than_best": t["faster"] if t else None,
            "faster_than_best_ci": t["faster_ci"] if t else None,
            "tied_with_best": c.name in tied,
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
        "front": [p.name for p in pareto.front(points, order)],
        "best_value": best.name,
        "tied": tied,
        "assumptions": said,
        "verdict": f"{pareto.verdict(points, order)} ({said})",
        "warnings": [w for w in [warning] if w],
        "notes": list(notes),
        "store": None,
    }
