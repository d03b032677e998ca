"""The charges of one storage choice for one workload: plain arithmetic on a price snapshot, no I/O.

Per run, for each storage a configuration uses, and its instance:

- storage: billed size x price per GB-month x time held / 730 h. The billed size is the provisioned size for
  block volumes and file systems (raised to the option's minimum, rounded up to its step), the smallest size
  tier that fits for tiered disks, and the stored bytes for object stores and EFS, with every object raised to
  the class's minimum object size.  The time held is the run's wall time, or --held-for, raised to the
  minimum billed time (60 s for volumes, the minimum storage duration of infrequent-access classes);
  `always` means the storage exists all month and each run carries 1/runs-per-month of it.
- provisioned IOPS and throughput above what is included (gp3: 3,000 IOPS, 125 MiB/s), on the same time basis;
  graduated tiers (io2) are summed tier by tier.
- requests (per 1,000 writes/PUT-class and reads/GET-class), retrieval per GB read, restore requests,
  I/O requests per million (EBS magnetic, Azure standard disks), and data moved per GB (EFS Elastic
  throughput): per run, from the operation counts of a capture when given, else estimated from bytes.
- compute: wall time x the instance's hourly price (local NVMe options carry their own instance type).

Per month = per run x runs per month, except storage held `always`, which is one month whatever the runs.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

from iolens.cost.prices import GB, MONTH_S, Instance, Option, PriceError, Snapshot

PART_BYTES = 8 << 20  # object-store clients read and write in parts of 8 MiB (Mountpoint, s3fs, gcsfuse defaults)
BLOCK_IO_BYTES = 256 << 10  # EBS counts I/O in units of up to 256 KiB
PARTS = ("storage", "provisioned", "requests", "retrieval", "data", "compute")
ALIASES = {"aws:magnetic": "aws:ebs-standard", "aws:ebs-magnetic": "aws:ebs-standard",
           "aws:nvme": "aws:ec2-instance-nvme", "aws:instance-nvme": "aws:ec2-instance-nvme"}
SPEC_KEYS = ("size", "iops", "throughput", "instance")


@dataclass
class Usage:
    """What one run of the step did to one storage, as far as it is known."""

    wall_s: float
    read_bytes: float = 0.0
    written_bytes: float = 0.0
    stored_bytes: float | None = None  # left on object stores / EFS; default: written_bytes
    object_sizes: list[int] | None = None  # each stored object's size (a capture), for minimum object sizes
    objects: int | None = None  # else a count (objects taken as equal in size)
    write_requests: float | None = None  # PUT-class requests; None: estimated from bytes
    read_requests: float | None = None
    io_requests: float | None = None
    basis: str = "measured bytes"  # where the counts come from, for the table
    times: list[float] | None = None  # every run's wall time (a compare run), for the intervals


@dataclass(frozen=True)
class Storage:
    """A priced storage option with its provisioned parameters (from an option spec)."""

    option: Option
    size_gb: float | None = None  # provisioned size; stored size for object stores (None: the usage's bytes)
    iops: float | None = None
    throughput_mibps: float | None = None
    instance: str | None = None  # local storage on another instance type of the same family

    @property
    def spec(self) -> str:
        extra = [f"{k}={_g(v)}" for k, v in (("size", self.size_gb), ("iops", self.iops),
                                             ("throughput", self.throughput_mibps), ("instance", self.instance))
                 if v is not None]
        return ":".join([self.option.id, *extra])


def _g(v: Any) -> str:
    return f"{v:g}" if isinstance(v, float) else str(v)


@dataclass(frozen=True)
class Workload:
    runs_per_month: float = 1.0
    held_for_s: float | None = None  # None: the run's wall time
    always: bool = False  # storage exists all month


@dataclass
class Charge:
    part: str  # one of PARTS
    what: str
    quantity: float
    unit: str
    price: float | None  # per unit (None for tiered)
    per_run: float
    per_month: float
    basis: str

    def to_dict(self) -> dict[str, Any]:
        return {"part": self.part, "what": self.what, "quantity": self.quantity, "unit": self.unit,
                "price": self.price, "per_run": self.per_run, "per_month": self.per_month, "basis": self.basis}


@dataclass
class Costed:
    name: str
    time_s: float
    storages: list[Storage]
    instance: Instance | None
    charges: list[Charge] = field(default_factory=list)

    @property
    def per_run(self) -> float:
        return sum(c.per_run for c in self.charges)

    @property
    def per_month(self) -> float:
        return sum(c.per_month for c in self.charges)

    def parts(self) -> dict[str, float]:
        out = {p: 0.0 for p in PARTS}
        for c in self.charges:
            out[c.part] += c.per_run
        return out

    def shares(self) -> dict[str, float | None]:
        total = self.per_run
        return {p: (v / total if total else None) for p, v in self.parts().items()}


# -- option specs ---------------------------------------------------------------------------------------------

def parse_spec(text: str, snap: Snapshot) -> Storage:
    """`aws:ebs-io2:size=100:iops=500` -> Storage; PriceError (one line) for an unknown option or key."""
    bits = text.strip().split(":")
    if len(bits) < 2 or not bits[0] or not bits[1]:
        raise PriceError(f"{text!r} is not an option; write PROVIDER:NAME[:size=GB][:iops=N][:throughput=MiBps], "
                         "e.g. aws:ebs-gp3:size=500")
    oid = ALIASES.get(f"{bits[0]}:{bits[1]}", f"{bits[0]}:{bits[1]}")
    opt = snap.option(oid)
    vals: dict[str, Any] = {}
    for kv in bits[2:]:
        key, eq, val = kv.partition("=")
        if not eq or key not in SPEC_KEYS:
            raise PriceError(f"{text!r}: {kv!r} is not one of {', '.join(k + '=' for k in SPEC_KEYS)}")
        if key == "instance":
            vals[key] = val if ":" in val else f"{opt.provider}:{val}"
            snap.instance(vals[key])
            continue
        try:
            num = float(val)
        except ValueError:
            num = -1.0
        if not math.isfinite(num) or num < 0:
            raise PriceError(f"{text!r}: {key} must be a number >= 0")
        vals[key] = num
    if "iops" in vals and "iops" not in opt.prices:
        raise PriceError(f"{text!r}: {oid} has no provisioned-IOPS price")
    if "throughput" in vals and "throughput" not in opt.prices:
        raise PriceError(f"{text!r}: {oid} has no provisioned-throughput price")
    if "instance" in vals and opt.billing != "local":
        raise PriceError(f"{text!r}: instance= applies to local (instance) storage only; use --instance")
    return Storage(opt, size_gb=vals.get("size"), iops=vals.get("iops"), throughput_mibps=vals.get("throughput"),
                   instance=vals.get("instance"))


# -- the charges ----------------------------------------------------------------------------------------------

def billed_size_gb(st: Storage) -> float:
    o = st.option
    size = st.size_gb if st.size_gb is not None else (o.default_size_gb or 0.0)
    if o.max_size_gb is not None and size > o.max_size_gb:
        raise PriceError(f"{st.spec}: {size:g} GB is above the largest {o.id} ({o.max_size_gb:g} GB)")
    size = max(size, o.min_size_gb)
    if o.size_step_gb:
        size = math.ceil(size / o.size_step_gb - 1e-9) * o.size_step_gb
    return size


def graduated(tiers: tuple[dict[str, Any], ...], amount: float) -> float:
    """Sum over graduated tiers [{upto, price}] (the last upto None = no limit)."""
    total, low = 0.0, 0.0
    for t in tiers:
        high = t["upto"] if t["upto"] is not None else math.inf
        if amount > low:
            total += (min(amount, high) - low) * t["price"]
        low = high
    return total


def disk_tier(tiers: tuple[dict[str, Any], ...], size_gb: float, what: str) -> dict[str, Any]:
    for t in sorted(tiers, key=lambda t: t["size_gb"]):
        if size_gb <= t["size_gb"] + 1e-9:
            return t
    raise PriceError(f"{what}: {size_gb:g} GB is above the largest priced disk tier")


def _hold(st: Storage, use: Usage, wl: Workload) -> tuple[float, float, str]:
    """(month fraction per run, month fraction per month, basis) for time-based charges."""
    if wl.always:
        return 1.0 / wl.runs_per_month, 1.0, "held all month, shared by the runs"
    held = wl.held_for_s if wl.held_for_s is not None else use.wall_s
    basis = "held for the run" if wl.held_for_s is None else f"held {held / 3600:.4g} h per run"
    floor = max(st.option.min_billed_s, st.option.min_duration_days * 86400.0)
    if held < floor:
        held = floor
        basis += (f", billed the minimum {st.option.min_duration_days:g} days" if st.option.min_duration_days
                  else f", billed the minimum {floor:g} s")
    frac = held / MONTH_S
    return frac, frac * wl.runs_per_month, basis


def _stored_gb(st: Storage, use: Usage) -> tuple[float, str]:
    o = st.option
    if st.size_gb is not None:
        stored = st.size_gb * GB
        basis = "stated size"
    else:
        stored = use.stored_bytes if use.stored_bytes is not None else use.written_bytes
        basis = "bytes written by the run" if use.stored_bytes is None else "stored bytes"
    min_b = o.min_object_kb * 1024
    if min_b and use.object_sizes is not None and st.size_gb is None:
        billed = float(sum(max(s, min_b) for s in use.object_sizes))
        if billed > stored:
            small = sum(1 for s in use.object_sizes if s < min_b)
            basis += f", {small} object{'s' if small != 1 else ''} raised to {o.min_object_kb:g} KB"
        return max(billed, stored) / GB, basis
    if min_b and use.objects:
        billed = max(stored, use.objects * min_b)
        if billed > stored:
            basis += f", {use.objects} objects of at least {o.min_object_kb:g} KB"
        return billed / GB, basis
    return stored / GB, basis


def _requests(use: Usage) -> tuple[float, float, float, str]:
    """(write requests, read requests, I/O requests, basis) per run."""
    def parts(n: float) -> float:
        return float(math.ceil(n / PART_BYTES)) if n > 0 else 0.0

    estimated = []
    w = use.write_requests
    if w is None:
        w = parts(use.written_bytes)
        estimated.append("writes")
    r = use.read_requests
    if r is None:
        r = parts(use.read_bytes)
        estimated.append("reads")
    io = use.io_requests
    if io is None:
        io = float(math.ceil((use.read_bytes + use.written_bytes) / BLOCK_IO_BYTES))
    basis = use.basis if not estimated else f"{' and '.join(estimated)} estimated as one request per 8 MiB"
    return w, r, io, basis


def storage_charges(st: Storage, use: Usage, wl: Workload) -> list[Charge]:
    o = st.option
    out: list[Charge] = []
    run_frac, month_frac, hold_basis = _hold(st, use, wl)
    label = o.id.split(":", 1)[1]

    def timed(part: str, what: str, qty: float, unit: str, price: float | None, monthly: float, basis: str) -> None:
        out.append(Charge(part, what, qty, unit, price, monthly * run_frac, monthly * month_frac, basis))

    if o.billing in ("provisioned", "stored"):
        p = o.prices["storage"].flat()
        if o.billing == "provisioned":
            size, basis = billed_size_gb(st), "provisioned"
        else:
            size, basis = _stored_gb(st, use)
        timed("storage", f"{label} {'capacity' if o.billing == 'provisioned' else 'stored'}", size, "GB-month", p,
              size * p, f"{basis}, {hold_basis}")
    elif o.billing == "tiered":
        size = st.size_gb if st.size_gb is not None else (o.default_size_gb or 0.0)
        tier = disk_tier(o.prices["disk"].tiers, max(size, o.min_size_gb), st.spec)
        timed("storage", f"{label} disk ({tier['size_gb']:g} GB tier)", 1, "disk-month", tier["price"],
              tier["price"], hold_basis)
    if "iops" in o.prices:
        iops = st.iops if st.iops is not None else (o.default_iops or 0.0)
        extra = max(0.0, iops - o.included_iops)
        pr = o.prices["iops"]
        monthly = graduated(pr.tiers, extra) if pr.tiers else extra * pr.flat()
        inc = f" above the included {o.included_iops:g}" if o.included_iops else ""
        timed("provisioned", f"{label} provisioned IOPS", extra, "IOPS-month", pr.price, monthly,
              f"{iops:g} IOPS{inc}, {hold_basis}")
    if "throughput" in o.prices:
        tput = st.throughput_mibps if st.throughput_mibps is not None else (o.default_throughput_mibps or 0.0)
        extra = max(0.0, tput - o.included_throughput_mibps)
        p = o.prices["throughput"].flat()
        inc = f" above the included {o.included_throughput_mibps:g}" if o.included_throughput_mibps else ""
        timed("provisioned", f"{label} provisioned throughput", extra, "MiBps-month", p, extra * p,
              f"{tput:g} MiB/s{inc}, {hold_basis}")

    w, r, io, req_basis = _requests(use)

    def per_run(part: str, what: str, qty: float, unit: str, dim: str, divisor: float, basis: str) -> None:
        if dim not in o.prices:
            return
        p = o.prices[dim].flat()
        cost = qty / divisor * p
        out.append(Charge(part, what, qty, unit, p, cost, cost * wl.runs_per_month, basis))

    per_run("requests", f"{label} write requests", w, "requests", "write_requests", 1000, req_basis)
    per_run("requests", f"{label} read requests", r, "requests", "read_requests", 1000, req_basis)
    per_run("requests", f"{label} I/O requests", io, "requests", "io_requests", 1e6,
            use.basis if use.io_requests is not None else "estimated as one per 256 KiB moved")
    per_run("retrieval", f"{label} retrieval", use.read_bytes / GB, "GB", "retrieval", 1, "bytes read by the run")
    per_run("retrieval", f"{label} restore requests", r, "requests", "retrieval_requests", 1000, req_basis)
    per_run("data", f"{label} data read", use.read_bytes / GB, "GB", "data_read", 1, "bytes read by the run")
    per_run("data", f"{label} data written", use.written_bytes / GB, "GB", "data_written", 1,
            "bytes written by the run")
    return out


def compute_charge(inst: Instance, use: Usage, wl: Workload) -> Charge:
    p = inst.price.flat()
    hours = use.wall_s / 3600.0
    return Charge("compute", f"{inst.type} instance", hours, "hours", p, hours * p, hours * p * wl.runs_per_month,
                  "wall time of the run")


def choose_instance(storages: list[Storage], snap: Snapshot, instance: str | None) -> Instance | None:
    """The instance a configuration runs on: a local storage's own type, else --instance, else the default of the
    first storage's provider.  `none` = no compute charge."""
    local = [s for s in storages if s.option.billing == "local"]
    if local and instance == "none":
        raise PriceError(f"{local[0].spec} is priced through its instance type; --instance none would make it free: "
                         "leave --instance out")
    if local:
        iid = local[0].instance or local[0].option.instance
        return snap.instance(iid) if iid else None
    if instance == "none":
        return None
    if instance:
        return snap.instance(instance)
    prov = storages[0].option.provider if storages else "aws"
    iid = snap.default_instances.get(prov)
    return snap.instance(iid) if iid else None


def cost(name: str, storages: list[Storage], use: Usage, wl: Workload, snap: Snapshot,
         instance: str | None = None) -> Costed:
    if wl.runs_per_month <= 0:
        raise PriceError("--runs-per-month must be above 0")
    inst = choose_instance(storages, snap, instance)
    c = Costed(name=name, time_s=use.wall_s, storages=list(storages), instance=inst)
    for st in storages:
        c.charges.extend(storage_charges(st, use, wl))
    if inst is not None:
        c.charges.append(compute_charge(inst, use, wl))
        if any(st.option.billing == "local" for st in storages):
            hold = local_hold_charge(inst, use, wl)
            if hold is not None:
                c.charges.append(hold)
    return c


def local_hold_charge(inst: Instance, use: Usage, wl: Workload) -> Charge | None:
    """Instance storage keeps its data only while the instance runs: holding it longer than the run keeps the
    whole instance up (all month with `always`)."""
    p = inst.price.flat()
    if wl.always:
        month_h = max(0.0, MONTH_S / 3600.0 - use.wall_s / 3600.0 * wl.runs_per_month)
        return Charge("storage", f"{inst.type} kept running to hold the data", month_h, "hours", p,
                      month_h * p / wl.runs_per_month, month_h * p,
                      "instance storage: the instance stays up all month beside the runs")
    if wl.held_for_s is None or wl.held_for_s <= use.wall_s:
        return None
    hours = (wl.held_for_s - use.wall_s) / 3600.0
    return Charge("storage", f"{inst.type} kept running to hold the data", hours, "hours", p, hours * p,
                  hours * p * wl.runs_per_month, "instance storage: the instance stays up while the data is held")
