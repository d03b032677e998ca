"""The price snapshot: one JSON file (`prices.json` beside this module, or the user's own with --prices).

Format (tag `iolens-prices`, schema_version [major, minor]; a newer major is refused, a newer minor is read):

    {"tag": "iolens-prices", "schema_version": [1, 0], "currency": "USD",
     "as_of": "2024-06",            # the period the prices are known for (YYYY-MM or YYYY-MM-DD)
     "retrieved": null,             # the date a refresh fetched them from the official sources, or null
     "transcribed": true,           # true: copied from the pricing pages by hand, not fetched
     "default_instances": {"aws": "aws:m5.xlarge", ...},
     "options": {"aws:ebs-gp3": {"provider", "region", "service", "class", "billing", "title",
                                 "prices": {DIMENSION: {"unit", "price" | "tiers", "source", "as_of",
                                                         "retrieved", "transcribed", "note"?}},
                                 "min_size_gb"?, "included"?, ...}},
     "instances": {"aws:m5.xlarge": {"provider", "region", "type", "vcpus", "memory_gib", "local_nvme_gb",
                                     "prices": {"compute": {"unit": "hour", ...}}}}}

Every dimension has one unit (DIMENSIONS); GB means 2^30 bytes and a month 730 hours, as the providers bill.
"""

from __future__ import annotations

import datetime as dt
import json
import math
import re
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any

from iolens.errors import IolensError

TAG = "iolens-prices"
SCHEMA_VERSION = (1, 0)
GB = 1 << 30
MONTH_S = 730 * 3600
STALE_DAYS = 183  # six months

# dimension -> the one unit its price is in
DIMENSIONS = {
    "storage": "GB-month",  # billed size (provisioned or stored) per month held
    "disk": "disk-month",  # a managed disk billed by size tier: tiers [{size_gb, price}]
    "iops": "IOPS-month",  # provisioned IOPS above the included ones; tiers [{upto, price}] are graduated
    "throughput": "MiBps-month",  # provisioned throughput above the included
    "write_requests": "1000 requests",
    "read_requests": "1000 requests",
    "retrieval": "GB",  # data read from a class that charges for retrieval
    "retrieval_requests": "1000 requests",
    "data_read": "GB",  # data moved, where the service bills it (EFS Elastic throughput)
    "data_written": "GB",
    "io_requests": "1M requests",  # every I/O to the volume (EBS magnetic, Azure standard disks)
    "compute": "hour",
}
BILLINGS = ("provisioned", "stored", "tiered", "local")
PROVIDERS = ("aws", "gcp", "azure")
HINT = "give a price file in the format of the one iolens ships (docs/cost.md)"


class PriceError(IolensError):
    """A price file that cannot be used, or a price that is not in it."""

    exit_code = 2


@dataclass(frozen=True)
class Price:
    dimension: str
    unit: str
    price: float | None
    tiers: tuple[dict[str, Any], ...]
    source: str
    as_of: str | None
    retrieved: str | None
    transcribed: bool
    note: str | None = None

    def flat(self) -> float:
        if self.price is None:
            raise PriceError(f"the {self.dimension} price is tiered; no single figure")
        return self.price


@dataclass(frozen=True)
class Option:
    id: str
    provider: str
    region: str
    service: str
    cls: str
    billing: str
    title: str
    prices: dict[str, Price]
    min_size_gb: float = 0.0
    max_size_gb: float | None = None
    default_size_gb: float | None = None
    size_step_gb: float | None = None
    min_billed_s: float = 0.0
    min_duration_days: float = 0.0
    min_object_kb: float = 0.0
    included_iops: float = 0.0
    included_throughput_mibps: float = 0.0
    default_iops: float | None = None
    default_throughput_mibps: float | None = None
    instance: str | None = None  # local storage: the instance type that carries it
    note: str | None = None


@dataclass(frozen=True)
class Instance:
    id: str
    provider: str
    region: str
    type: str
    vcpus: int | None
    memory_gib: float | None
    local_nvme_gb: float
    price: Price


@dataclass
class Snapshot:
    source: str  # the file it came from
    as_of: str | None
    retrieved: str | None
    transcribed: bool
    note: str | None
    options: dict[str, Option]
    instances: dict[str, Instance]
    default_instances: dict[str, str]
    doc: dict[str, Any] = field(repr=False, default_factory=dict)

    def option(self, oid: str) -> Option:
        try:
            return self.options[oid]
        except KeyError:
            raise PriceError(f"no priced option {oid!r} in {self.source}; known: {_near(oid, self.options)}") from None

    def instance(self, iid: str) -> Instance:
        try:
            return self.instances[iid]
        except KeyError:
            raise PriceError(f"no instance price {iid!r} in {self.source}; known: "
                             f"{', '.join(self.instances)}") from None

    @property
    def named(self) -> str:
        return named(self.source)

    def age_warning(self, today: dt.date | None = None, prices: list[Price] | None = None) -> str | None:
        """A warning when prices (those given, else the snapshot's own date) are over six months old or undated."""
        today = today or dt.date.today()
        dated: list[tuple[dt.date | None, Price | None]]
        if prices:
            dated = [(parse_date(p.retrieved) or parse_date(p.as_of), p) for p in prices]
        else:
            dated = [(parse_date(self.retrieved) or parse_date(self.as_of), None)]
        if any(d is None for d, _p in dated):
            return f"some prices in {self.named} are undated; check them against the providers' pages"
        old = [(d, p) for d, p in dated if d is not None and (today - d).days > STALE_DAYS]
        if not old:
            return None
        oldest = min(d for d, _p in old)
        fetched = any(p.retrieved for _d, p in old if p is not None) or (prices is None and self.retrieved)
        how = "" if fetched else " (transcribed from the pricing pages, not fetched)"
        count = f"{len(old)} of the {len(dated)} prices used" if prices else "the prices"
        return (f"{count} in {self.named} date from {oldest.isoformat()[:7]}, "
                f"{(today - oldest).days // 30} months ago{how}: prices change; rebuild them with "
                "`iolens cost --refresh-prices OUT` where the network reaches the official price lists, or give "
                "your own with --prices")


def _near(name: str, known: dict[str, Any]) -> str:
    prov = name.partition(":")[0]
    same = [k for k in known if k.startswith(prov + ":")] or list(known)
    return ", ".join(same)


def parse_date(text: str | None) -> dt.date | None:
    """YYYY-MM (taken as the month's first day) or YYYY-MM-DD; None for anything else."""
    if not isinstance(text, str):
        return None
    m = re.fullmatch(r"(\d{4})-(\d{2})(?:-(\d{2}))?", text.strip())
    if not m:
        return None
    try:
        return dt.date(int(m.group(1)), int(m.group(2)), int(m.group(3) or 1))
    except ValueError:
        return None


def named(source: str) -> str:
    """How a warning or a page names a price file: the price list shipped with iolens by that name (its installed
    path is long and says nothing more), any other by its path."""
    return "the price list shipped with iolens" if source == str(default_path()) else source


def default_path() -> Path:
    return Path(str(resources.files("iolens.cost").joinpath("prices.json")))


def load(path: str | Path | None = None) -> Snapshot:
    """The snapshot at `path` (default: the one shipped with iolens), validated; PriceError (one line) if not."""
    p = Path(path) if path is not None else default_path()
    try:
        data = p.read_bytes()
    except OSError as err:
        raise PriceError(f"cannot read the price file {p}: {err.strerror or err}") from None
    return parse(data, str(p))


def parse(data: bytes, source: str) -> Snapshot:
    try:
        doc = json.loads(data)
    except (UnicodeDecodeError, json.JSONDecodeError) as err:
        raise PriceError(f"{source} is not JSON ({err}); {HINT}") from None
    if not isinstance(doc, dict) or doc.get("tag") != TAG:
        raise PriceError(f"{source} is not an iolens price file (no \"tag\": \"{TAG}\"); {HINT}")
    ver = doc.get("schema_version")
    if not (isinstance(ver, list) and len(ver) == 2 and all(isinstance(v, int) for v in ver)):
        raise PriceError(f"{source} has no schema_version [major, minor]; {HINT}")
    if ver[0] != SCHEMA_VERSION[0]:
        newer = ver[0] > SCHEMA_VERSION[0]
        raise PriceError(f"{source} has price schema {ver[0]}.{ver[1]}; this iolens reads {SCHEMA_VERSION[0]}.x"
                         f"{': upgrade iolens' if newer else ''}")
    if doc.get("currency") != "USD":
        raise PriceError(f"{source}: currency {doc.get('currency')!r}; this iolens prices in USD only")
    try:
        return _build(doc, source)
    except _Bad as err:
        raise PriceError(f"{source}: {err}; {HINT}") from None


class _Bad(ValueError):
    pass


def _num(v: Any, where: str, *, optional: bool = False) -> float | None:
    if v is None and optional:
        return None
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v) or v < 0:
        raise _Bad(f"{where} is {v!r}, not a number >= 0")
    return float(v)


def _str(v: Any, where: str, *, optional: bool = False) -> str | None:
    if v is None and optional:
        return None
    if not isinstance(v, str) or not v:
        raise _Bad(f"{where} is {v!r}, not text")
    return v


def _price(dim: str, d: Any, where: str, top: dict[str, Any]) -> Price:
    if dim not in DIMENSIONS:
        raise _Bad(f"{where}: unknown price dimension {dim!r} (known: {', '.join(DIMENSIONS)})")
    if not isinstance(d, dict):
        raise _Bad(f"{where}.{dim} is not an object")
    unit = d.get("unit")
    if unit != DIMENSIONS[dim]:
        raise _Bad(f"{where}.{dim} has unit {unit!r}; a {dim} price is per {DIMENSIONS[dim]!r}")
    tiers: tuple[dict[str, Any], ...] = ()
    price = None
    if "tiers" in d:
        raw = d["tiers"]
        if dim not in ("iops", "disk") or not isinstance(raw, list) or not raw:
            raise _Bad(f"{where}.{dim}.tiers must be a non-empty list (iops and disk prices only)")
        key = "upto" if dim == "iops" else "size_gb"
        out = []
        for i, t in enumerate(raw):
            if not isinstance(t, dict):
                raise _Bad(f"{where}.{dim}.tiers[{i}] is not an object")
            last = dim == "iops" and i == len(raw) - 1
            out.append({key: _num(t.get(key), f"{where}.{dim}.tiers[{i}].{key}", optional=last),
                        "price": _num(t.get("price"), f"{where}.{dim}.tiers[{i}].price")})
        tiers = tuple(out)
    else:
        price = _num(d.get("price"), f"{where}.{dim}.price")
    transcribed = d.get("transcribed", top.get("transcribed", False))
    if not isinstance(transcribed, bool):
        raise _Bad(f"{where}.{dim}.transcribed is not true/false")
    return Price(dim, unit, price, tiers, _str(d.get("source"), f"{where}.{dim}.source") or "",
                 _str(d.get("as_of", top.get("as_of")), f"{where}.{dim}.as_of", optional=True),
                 _str(d.get("retrieved", top.get("retrieved")), f"{where}.{dim}.retrieved", optional=True),
                 transcribed, _str(d.get("note"), f"{where}.{dim}.note", optional=True))


def _option(oid: str, d: Any, top: dict[str, Any]) -> Option:
    where = f"options[{oid!r}]"
    if not isinstance(d, dict):
        raise _Bad(f"{where} is not an object")
    provider = _str(d.get("provider"), f"{where}.provider")
    if provider not in PROVIDERS or not oid.startswith(f"{provider}:"):
        raise _Bad(f"{where}: the name must be PROVIDER:NAME with provider one of {', '.join(PROVIDERS)}")
    billing = d.get("billing")
    if billing not in BILLINGS:
        raise _Bad(f"{where}.billing is {billing!r}, not one of {', '.join(BILLINGS)}")
    prices = d.get("prices")
    if not isinstance(prices, dict):
        raise _Bad(f"{where}.prices is not an object")
    parsed = {dim: _price(dim, p, where, top) for dim, p in prices.items()}
    need = {"provisioned": "storage", "stored": "storage", "tiered": "disk"}.get(billing)
    if need and need not in parsed:
        raise _Bad(f"{where} is billed {billing} but has no {need} price")
    inc = d.get("included") or {}
    if not isinstance(inc, dict):
        raise _Bad(f"{where}.included is not an object")
    inst = _str(d.get("instance"), f"{where}.instance", optional=True)
    if billing == "local" and inst is None:
        raise _Bad(f"{where} is local storage but names no instance type")
    return Option(
        id=oid, provider=provider or "", region=_str(d.get("region"), f"{where}.region") or "",
        service=_str(d.get("service"), f"{where}.service") or "", cls=_str(d.get("class"), f"{where}.class") or "",
        billing=billing, title=_str(d.get("title"), f"{where}.title") or "", prices=parsed,
        min_size_gb=_num(d.get("min_size_gb", 0), f"{where}.min_size_gb") or 0.0,
        max_size_gb=_num(d.get("max_size_gb"), f"{where}.max_size_gb", optional=True),
        default_size_gb=_num(d.get("default_size_gb"), f"{where}.default_size_gb", optional=True),
        size_step_gb=_num(d.get("size_step_gb"), f"{where}.size_step_gb", optional=True) or None,
        min_billed_s=_num(d.get("min_billed_s", 0), f"{where}.min_billed_s") or 0.0,
        min_duration_days=_num(d.get("min_duration_days", 0), f"{where}.min_duration_days") or 0.0,
        min_object_kb=_num(d.get("min_object_kb", 0), f"{where}.min_object_kb") or 0.0,
        included_iops=_num(inc.get("iops", 0), f"{where}.included.iops") or 0.0,
        included_throughput_mibps=_num(inc.get("throughput_mibps", 0), f"{where}.included.throughput_mibps") or 0.0,
        default_iops=_num(d.get("default_iops"), f"{where}.default_iops", optional=True),
        default_throughput_mibps=_num(d.get("default_throughput_mibps"), f"{where}.default_throughput_mibps",
                                      optional=True),
        instance=inst, note=_str(d.get("note"), f"{where}.note", optional=True))


def _instance(iid: str, d: Any, top: dict[str, Any]) -> Instance:
    where = f"instances[{iid!r}]"
    if not isinstance(d, dict) or not isinstance(d.get("prices"), dict) or "compute" not in d["prices"]:
        raise _Bad(f"{where} needs prices.compute (per hour)")
    provider = _str(d.get("provider"), f"{where}.provider") or ""
    if provider not in PROVIDERS or not iid.startswith(f"{provider}:"):
        raise _Bad(f"{where}: the name must be PROVIDER:TYPE with provider one of {', '.join(PROVIDERS)}")
    vcpus = d.get("vcpus")
    return Instance(iid, provider, _str(d.get("region"), f"{where}.region") or "",
                    _str(d.get("type"), f"{where}.type") or "", vcpus if isinstance(vcpus, int) else None,
                    _num(d.get("memory_gib"), f"{where}.memory_gib", optional=True),
                    _num(d.get("local_nvme_gb", 0), f"{where}.local_nvme_gb") or 0.0,
                    _price("compute", d["prices"]["compute"], where, top))


def _build(doc: dict[str, Any], source: str) -> Snapshot:
    for key in ("options", "instances"):
        if not isinstance(doc.get(key), dict):
            raise _Bad(f"no {key!r} object")
    transcribed = doc.get("transcribed", False)
    if not isinstance(transcribed, bool):
        raise _Bad("transcribed is not true/false")
    options = {oid: _option(oid, d, doc) for oid, d in doc["options"].items()}
    instances = {iid: _instance(iid, d, doc) for iid, d in doc["instances"].items()}
    for o in options.values():
        if o.instance is not None and o.instance not in instances:
            raise _Bad(f"options[{o.id!r}] names instance {o.instance!r}, which has no price")
    defaults = doc.get("default_instances") or {}
    if not isinstance(defaults, dict) or any(v not in instances for v in defaults.values()):
        raise _Bad("default_instances must name priced instances")
    return Snapshot(source=source, as_of=_str(doc.get("as_of"), "as_of", optional=True),
                    retrieved=_str(doc.get("retrieved"), "retrieved", optional=True), transcribed=transcribed,
                    note=_str(doc.get("note"), "note", optional=True), options=options, instances=instances,
                    default_instances=dict(defaults), doc=doc)
