"""Rebuild the price snapshot from the official sources, in their own formats.

- AWS Price List bulk offer files (one per service and region, no key):
  `https://pricing.us-east-1.amazonaws.com/offers/v1.0/aws/{OFFER}/current/{REGION}/index.json`, shaped
  `{"offerCode", "publicationDate", "products": {sku: {"productFamily", "attributes": {...}}},
  "terms": {"OnDemand": {sku: {term: {"effectiveDate", "priceDimensions": {rate: {"unit", "beginRange",
  "pricePerUnit": {"USD"}}}}}}}}`.  A price is found by its `usagetype` (+ attributes) in the option's region.
- Azure Retail Prices API (no key): `https://prices.azure.com/api/retail/prices?$filter=...`, pages of
  `{"Items": [{"retailPrice", "unitOfMeasure", "armRegionName", "serviceName", "productName", "skuName",
  "meterName", "armSkuName", "type", "tierMinimumUnits", "effectiveStartDate", ...}], "NextPageLink"}`.
- The GCP Cloud Billing catalog needs an API key: GCP prices stay as they are in the base snapshot.

Each price found replaces the base snapshot's, with its source (offer file and SKU, or Azure meter), the
provider's effective date as `as_of` and the day it was read as `retrieved`; prices not found stay as they
were (still marked transcribed) and are listed.  Refreshing never invents a price.
"""

from __future__ import annotations

import copy
import datetime as dt
import json
import re
import urllib.error
import urllib.parse
import urllib.request
from dataclasses import dataclass, field
from typing import Any, Iterable

from iolens.cost.prices import PriceError, parse

AWS_URL = "https://pricing.us-east-1.amazonaws.com/offers/v1.0/aws/{offer}/current/{region}/index.json"
AZURE_URL = "https://prices.azure.com/api/retail/prices"
AZURE_FILTER = ("armRegionName eq '{region}' and (serviceName eq 'Storage' or "
                "(serviceName eq 'Virtual Machines' and armSkuName eq '{vm}'))")
REGION_NAMES = {"us-east-1": "US East (N. Virginia)"}

# (offer unit, snapshot unit) -> factor from the offer's price to ours
AWS_UNITS = {("GB-Mo", "GB-month"): 1.0, ("Requests", "1000 requests"): 1000.0, ("IOs", "1M requests"): 1e6,
             ("Hrs", "hour"): 1.0, ("GB", "GB"): 1.0, ("IOPS-Mo", "IOPS-month"): 1.0,
             ("MiBps-Mo", "MiBps-month"): 1.0, ("GiBps-mo", "MiBps-month"): 1 / 1024}
AZURE_UNITS = {("1 GB/Month", "GB-month"): 1.0, ("10K", "1000 requests"): 0.1, ("10K", "1M requests"): 100.0,
               ("1 GB", "GB"): 1.0, ("1/Month", "disk-month"): 1.0, ("1 Hour", "hour"): 1.0}
DISK_TIER_GB = {"1": 4, "2": 8, "3": 16, "4": 32, "6": 64, "10": 128, "15": 256, "20": 512, "30": 1024,
                "40": 2048, "50": 4096, "60": 8192, "70": 16384, "80": 32767}


@dataclass(frozen=True)
class AwsKey:
    target: str  # option or instance id
    dim: str
    offer: str
    usagetype: str
    attrs: tuple[tuple[str, str], ...] = ()
    tier: int | None = None  # graduated IOPS tier index


def _ebs(cls: str, dim: str, usage: str, tier: int | None = None) -> AwsKey:
    return AwsKey(f"aws:ebs-{cls}", dim, "AmazonEC2", usage, tier=tier)


def _s3(cls: str, code: str, retrieval: bool = False, restore: bool = False) -> list[AwsKey]:
    c = f"{code}-" if code else ""
    keys = [AwsKey(f"aws:s3-{cls}", "storage", "AmazonS3", f"TimedStorage-{c}ByteHrs"),
            AwsKey(f"aws:s3-{cls}", "write_requests", "AmazonS3", f"Requests-{c}Tier1"),
            AwsKey(f"aws:s3-{cls}", "read_requests", "AmazonS3", f"Requests-{c}Tier2")]
    if retrieval:
        keys.append(AwsKey(f"aws:s3-{cls}", "retrieval", "AmazonS3", f"Retrieval-{code}"))
    if restore:
        keys.append(AwsKey(f"aws:s3-{cls}", "retrieval_requests", "AmazonS3", f"Retrieval-{code}-Requests"))
    return keys


def _vm(itype: str) -> AwsKey:
    return AwsKey(f"aws:{itype}", "compute", "AmazonEC2", f"BoxUsage:{itype}",
                  (("operatingSystem", "Linux"), ("preInstalledSw", "NA"), ("capacitystatus", "Used"),
                   ("tenancy", "Shared")))


AWS_KEYS: list[AwsKey] = [
    *(_ebs(c, "storage", f"EBS:VolumeUsage.{u}") for c, u in (("gp2", "gp2"), ("gp3", "gp3"), ("st1", "st1"),
                                                               ("sc1", "sc1"), ("io1", "piops"), ("io2", "io2"))),
    _ebs("standard", "storage", "EBS:VolumeUsage"),
    _ebs("standard", "io_requests", "EBS:VolumeIOUsage"),
    _ebs("gp3", "iops", "EBS:VolumeP-IOPS.gp3"),
    _ebs("gp3", "throughput", "EBS:VolumeP-Throughput.gp3"),
    _ebs("io1", "iops", "EBS:VolumeP-IOPS.piops"),
    _ebs("io2", "iops", "EBS:VolumeP-IOPS.io2", 0),
    _ebs("io2", "iops", "EBS:VolumeP-IOPS.io2.tier2", 1),
    _ebs("io2", "iops", "EBS:VolumeP-IOPS.io2.tier3", 2),
    *_s3("standard", ""),
    *_s3("standard-ia", "SIA", retrieval=True),
    *_s3("onezone-ia", "ZIA", retrieval=True),
    *_s3("glacier-ir", "GIR", retrieval=True),
    *_s3("glacier-flexible", "GLACIER", retrieval=True, restore=True),
    *_s3("glacier-deep-archive", "GDA", retrieval=True, restore=True),
    *(k for cls, code in (("standard", ""), ("one-zone", "OZ-"), ("ia", "IA-")) for k in (
        AwsKey(f"aws:efs-{cls}", "storage", "AmazonEFS", f"TimedStorage-{code}ByteHrs"),
        AwsKey(f"aws:efs-{cls}", "data_read", "AmazonEFS", "ElasticThroughput-Read-Bytes"),
        AwsKey(f"aws:efs-{cls}", "data_written", "AmazonEFS", "ElasticThroughput-Write-Bytes"))),
    AwsKey("aws:efs-ia", "retrieval", "AmazonEFS", "IADataAccess-Bytes"),
    *(AwsKey(f"aws:fsx-lustre-{c}", "storage", "AmazonFSx", f"{c}-Storage")
      for c in ("scratch2", "persistent2-125", "persistent2-250")),
    *(_vm(t) for t in ("m5.xlarge", "m5d.xlarge", "m6id.8xlarge", "c5.2xlarge", "c5d.2xlarge")),
]
AWS_OFFERS = sorted({k.offer for k in AWS_KEYS})


@dataclass(frozen=True)
class AzureKey:
    target: str
    dim: str
    match: tuple[tuple[str, str], ...]  # exact field values
    disk_tiers: str | None = None  # a managed-disk family letter: every "<L>NN LRS Disk" meter is a size tier
    not_in_product: str | None = None


def _blob(cls: str) -> list[AzureKey]:
    c = cls.capitalize()
    base = (("serviceName", "Storage"), ("productName", "General Block Blob v2"), ("skuName", f"{c} LRS"))
    keys = [AzureKey(f"azure:blob-{cls}", "storage", (*base, ("meterName", f"{c} LRS Data Stored"))),
            AzureKey(f"azure:blob-{cls}", "write_requests", (*base, ("meterName", f"{c} LRS Write Operations"))),
            AzureKey(f"azure:blob-{cls}", "read_requests", (*base, ("meterName", f"{c} Read Operations")))]
    if cls != "hot":
        keys.append(AzureKey(f"azure:blob-{cls}", "retrieval", (*base, ("meterName", f"{c} Data Retrieval"))))
    return keys


AZURE_KEYS: list[AzureKey] = [
    *(k for cls in ("hot", "cool", "cold", "archive") for k in _blob(cls)),
    AzureKey("azure:disk-premium-ssd", "disk", (("serviceName", "Storage"),
                                                ("productName", "Premium SSD Managed Disks")), disk_tiers="P"),
    AzureKey("azure:disk-standard-ssd", "disk", (("serviceName", "Storage"),
                                                 ("productName", "Standard SSD Managed Disks")), disk_tiers="E"),
    AzureKey("azure:disk-standard-hdd", "disk", (("serviceName", "Storage"),
                                                 ("productName", "Standard HDD Managed Disks")), disk_tiers="S"),
    AzureKey("azure:disk-standard-ssd", "io_requests", (("serviceName", "Storage"),
                                                        ("productName", "Standard SSD Managed Disks"),
                                                        ("meterName", "Disk Operations"))),
    AzureKey("azure:disk-standard-hdd", "io_requests", (("serviceName", "Storage"),
                                                        ("productName", "Standard HDD Managed Disks"),
                                                        ("meterName", "Disk Operations"))),
    AzureKey("azure:D4s_v5", "compute", (("serviceName", "Virtual Machines"), ("armSkuName", "Standard_D4s_v5"),
                                         ("skuName", "D4s v5")), not_in_product="Windows"),
]


@dataclass
class Outcome:
    doc: dict[str, Any]
    refreshed: list[str] = field(default_factory=list)  # "target dim"
    missing: list[str] = field(default_factory=list)
    sources: list[str] = field(default_factory=list)


def _bad(name: str, what: str) -> PriceError:
    return PriceError(f"{name} is not {what}")


def check_aws_offer(doc: Any, name: str) -> dict[str, Any]:
    if not (isinstance(doc, dict) and isinstance(doc.get("products"), dict) and isinstance(doc.get("terms"), dict)
            and isinstance(doc["terms"].get("OnDemand", {}), dict)):
        raise _bad(name, "an AWS Price List offer file (products{sku: ...} and terms.OnDemand); download "
                         "index.json from the AWS Price List bulk API")
    return doc


def check_azure_page(doc: Any, name: str) -> dict[str, Any]:
    if not (isinstance(doc, dict) and isinstance(doc.get("Items"), list)):
        raise _bad(name, "an Azure Retail Prices API page ({\"Items\": [...], \"NextPageLink\"})")
    return doc


def _date(text: Any) -> str | None:
    m = re.match(r"(\d{4}-\d{2}-\d{2})", str(text or ""))
    return m.group(1) if m else None


def _aws_find(offers: dict[str, dict[str, Any]], key: AwsKey, region: str) -> tuple[float, str, str, str] | None:
    """(price, unit, sku, effective date) of the on-demand price for key, or None."""
    offer = offers.get(key.offer)
    if offer is None:
        return None
    for sku, prod in offer["products"].items():
        a = prod.get("attributes") or {}
        if a.get("usagetype") != key.usagetype:
            continue
        if a.get("regionCode", None) not in (region, None) or (
                "regionCode" not in a and a.get("location") != REGION_NAMES.get(region)):
            continue
        if any(a.get(k) != v for k, v in key.attrs):
            continue
        for term in (offer["terms"].get("OnDemand", {}).get(sku) or {}).values():
            dims = sorted((term.get("priceDimensions") or {}).values(), key=lambda d: float(d.get("beginRange") or 0))
            if not dims:
                continue
            d = dims[0]  # the first tier (S3's first 50 TB)
            usd: Any = (d.get("pricePerUnit") or {}).get("USD")
            try:
                return float(usd), str(d.get("unit")), sku, _date(term.get("effectiveDate")) or ""
            except (TypeError, ValueError):
                raise PriceError(f"{key.offer} offer: SKU {sku} has no USD price") from None
    return None


def _set(doc: dict[str, Any], target: str, dim: str) -> dict[str, Any] | None:
    section = "instances" if dim == "compute" else "options"
    entry = doc[section].get(target)
    if entry is None:
        return None
    return entry["prices"].setdefault(dim, {"unit": "hour" if dim == "compute" else None})


def refresh(base: dict[str, Any], *, aws_offers: Iterable[tuple[str, Any]] = (),
            azure_pages: Iterable[tuple[str, Any]] = (), today: dt.date | None = None) -> Outcome:
    """A new snapshot doc: base with every price found in the given offer files and API pages replaced."""
    today = today or dt.date.today()
    doc = copy.deepcopy(base)
    out = Outcome(doc)
    offers: dict[str, dict[str, Any]] = {}
    for name, raw in aws_offers:
        offer = check_aws_offer(raw, name)
        code = offer.get("offerCode") or name
        offers[code] = offer
        out.sources.append(f"AWS Price List {code} offer ({name}, published {_date(offer.get('publicationDate'))})")
    items: list[dict[str, Any]] = []
    for name, raw in azure_pages:
        items.extend(check_azure_page(raw, name)["Items"])
    if azure_pages:
        out.sources.append(f"Azure Retail Prices API ({len(items)} items)")
    stamp = today.isoformat()
    for key in AWS_KEYS if offers else []:
        region = (doc["options"].get(key.target) or doc["instances"].get(key.target) or {}).get("region", "")
        found = _aws_find(offers, key, region)
        if found is None:
            out.missing.append(f"{key.target} {key.dim} (AWS {key.offer} usagetype {key.usagetype})")
            continue
        price, unit, sku, eff = found
        entry = _set(doc, key.target, key.dim)
        if entry is None:
            continue
        factor = AWS_UNITS.get((unit, entry.get("unit") or ""))
        if factor is None:
            raise PriceError(f"AWS {key.offer} SKU {sku} ({key.usagetype}) is priced per {unit!r}; this refresh "
                             f"knows {sorted({u for u, _ in AWS_UNITS})}: update AWS_UNITS")
        value = round(price * factor, 10)
        if key.tier is not None:
            tiers = entry.get("tiers") or []
            if key.tier < len(tiers):
                tiers[key.tier]["price"] = value
        else:
            entry["price"] = value
            entry.pop("tiers", None)
        entry.update(source=f"AWS Price List {key.offer} offer, SKU {sku} (usagetype {key.usagetype})",
                     as_of=eff or stamp, retrieved=stamp, transcribed=False)
        out.refreshed.append(f"{key.target} {key.dim}")
    for akey in AZURE_KEYS if items else []:
        region = (doc["options"].get(akey.target) or doc["instances"].get(akey.target) or {}).get("region", "")
        _azure_apply(doc, akey, region, items, stamp, out)
    transcribed = any(p.get("transcribed", doc.get("transcribed")) and not p.get("retrieved")
                      for sec in ("options", "instances") for e in doc[sec].values() for p in e["prices"].values())
    doc["transcribed"] = transcribed
    doc["retrieved"] = stamp if not transcribed else None
    doc["as_of"] = stamp if not transcribed else doc.get("as_of")
    doc["refreshed"] = {"date": stamp, "sources": out.sources, "prices": len(out.refreshed),
                        "not_found": out.missing}
    parse(json.dumps(doc).encode(), "the refreshed snapshot")  # what we write must load
    return out


def _azure_candidates(items: list[dict[str, Any]], key: AzureKey, region: str) -> list[dict[str, Any]]:
    out = []
    for it in items:
        if it.get("armRegionName") != region or it.get("type", "Consumption") != "Consumption":
            continue
        if any(it.get(k) != v for k, v in key.match):
            continue
        if key.not_in_product and key.not_in_product in str(it.get("productName")):
            continue
        if float(it.get("tierMinimumUnits") or 0) != 0:
            continue
        out.append(it)
    return out


def _azure_apply(doc: dict[str, Any], key: AzureKey, region: str, items: list[dict[str, Any]], stamp: str,
                 out: Outcome) -> None:
    cands = _azure_candidates(items, key, region)
    entry = _set(doc, key.target, key.dim)
    if entry is None:
        return
    what = f"{key.target} {key.dim} (Azure {dict(key.match).get('productName') or dict(key.match).get('armSkuName')})"
    if key.disk_tiers:
        pat = re.compile(rf"^{key.disk_tiers}(\d+) LRS Disk$")
        tiers = []
        eff = []
        for it in cands:
            m = pat.match(str(it.get("meterName")))
            if not m or m.group(1) not in DISK_TIER_GB or it.get("unitOfMeasure") != "1/Month":
                continue
            tiers.append({"size_gb": DISK_TIER_GB[m.group(1)], "price": float(it["retailPrice"])})
            eff.append(_date(it.get("effectiveStartDate")) or stamp)
        if not tiers:
            out.missing.append(what)
            return
        entry["tiers"] = sorted(tiers, key=lambda t: t["size_gb"])
        entry.pop("price", None)
        entry.update(source=f"Azure Retail Prices API, {dict(key.match)['productName']}, {region}, "
                            f"{len(tiers)} size tiers (meters '{key.disk_tiers}NN LRS Disk')",
                     as_of=max(eff), retrieved=stamp, transcribed=False)
        out.refreshed.append(f"{key.target} {key.dim}")
        return
    if not cands:
        out.missing.append(what)
        return
    it = cands[0]
    factor = AZURE_UNITS.get((str(it.get("unitOfMeasure")), entry.get("unit") or ""))
    if factor is None:
        raise PriceError(f"Azure meter {it.get('meterName')!r} is priced per {it.get('unitOfMeasure')!r}; this refresh "
                         f"knows {sorted({u for u, _ in AZURE_UNITS})}: update AZURE_UNITS")
    entry["price"] = round(float(it["retailPrice"]) * factor, 10)
    entry.update(source=f"Azure Retail Prices API, meter {it.get('meterId') or it.get('meterName')} "
                        f"({it.get('productName')}, {it.get('skuName')}, {it.get('meterName')}, {region})",
                 as_of=_date(it.get("effectiveStartDate")) or stamp, retrieved=stamp, transcribed=False)
    out.refreshed.append(f"{key.target} {key.dim}")


# -- fetching (needs the network) --------------------------------------------------------------------------------

def _get_json(url: str, timeout: float = 120.0) -> Any:
    try:
        with urllib.request.urlopen(url, timeout=timeout) as r:  # noqa: S310 - fixed https URLs
            return json.load(r)
    except (urllib.error.URLError, TimeoutError, OSError) as err:
        raise PriceError(f"cannot fetch {url}: {getattr(err, 'reason', err)}; without the network, download the "
                         "files elsewhere and give them with --aws-offer / --azure-prices") from None
    except json.JSONDecodeError as err:
        raise PriceError(f"{url} did not return JSON ({err})") from None


def fetch_aws(region: str = "us-east-1") -> list[tuple[str, Any]]:
    return [(AWS_URL.format(offer=o, region=region), _get_json(AWS_URL.format(offer=o, region=region)))
            for o in AWS_OFFERS]


def fetch_azure(region: str = "eastus", vm: str = "Standard_D4s_v5", max_pages: int = 200) -> list[tuple[str, Any]]:
    url: str | None = AZURE_URL + "?" + urllib.parse.urlencode({"$filter": AZURE_FILTER.format(region=region, vm=vm)})
    pages: list[tuple[str, Any]] = []
    while url and len(pages) < max_pages:
        page = _get_json(url)
        pages.append((url, page))
        url = page.get("NextPageLink") if isinstance(page, dict) else None
    return pages
