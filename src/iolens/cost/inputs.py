"""What `iolens cost` prices: a stored compare run, or plain figures, turned into (name, storages, usage).

- A compare run: each configuration's median wall time and its bytes read and written (the command's and its
  children's syscall counters); the locations it used are mapped to priced options by --map, else by the lab
  target they name (LAB_OPTIONS), else refused.  A location that is the same in every configuration and has no
  mapping is left out (it costs every option the same) with a note.
- Plain figures: --option SPEC=SECONDS, where SPEC is a priced option (aws:ebs-gp3:size=500) or a lab target.
- A capture (--capture FILE) replaces the byte estimates with the step's own operation counts: one PUT per
  file written plus one per further 8 MiB part, GETs per 8 MiB read, stat/readdir/open-style calls as HEAD/LIST,
  each stored file as one object (for minimum object sizes).
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from iolens.cost.model import PART_BYTES, Storage, Usage, parse_spec
from iolens.cost.prices import PriceError, Snapshot
from iolens import resolve
from iolens.errors import UsageError
from iolens.lab.catalog import TARGETS, lookup
from iolens.volumes import default_size

if TYPE_CHECKING:  # the reader needs numpy: imported only when a capture is given
    from iolens.capture.reader import Capture

# Each lab target -> the priced option it stands for, size and provisioned figures included: derived from the lab
# catalogue and the volume types (iolens.volumes), never restated.
LAB_OPTIONS: dict[str, str] = {t.name: t.option for t in TARGETS.values()}
NOT_PRICED = "none"
SYSTEM_PREFIXES = ("/proc/", "/sys/", "/dev/", "/usr/", "/etc/", "/lib", "/bin/", "/sbin/", "/run/")


@dataclass
class Item:
    """One thing to price: a configuration of a compare run, or one --option."""

    name: str
    storages: list[Storage]
    usage: Usage
    placements: dict[str, str] = field(default_factory=dict)  # location -> option spec


def parse_maps(values: tuple[str, ...] | list[str]) -> dict[str, str]:
    """--map KEY=SPEC[,KEY=SPEC...] -> {KEY: SPEC}; SPEC `none` = not priced (e.g. /dev/null)."""
    out: dict[str, str] = {}
    for v in values:
        for part in (x.strip() for x in v.split(",")):
            if not part:
                continue
            key, eq, spec = part.partition("=")
            if not eq or not key.strip() or not spec.strip():
                raise UsageError(f"--map {part!r}: write --map LOCATION=PROVIDER:OPTION, "
                                 "e.g. --map /scratch=aws:ec2-instance-nvme,/data=aws:ebs-gp3:size=500")
            out[key.strip()] = spec.strip()
    return out


def lab_spec(name: str) -> str | None:
    """A lab target (lab:gp2, lab:st1:2T, ...) -> the priced option it stands for; None: no such target."""
    try:
        return lookup(name).option
    except UsageError:
        return None


def _default_size(option_id: str, snapshot_default: float | None) -> float | None:
    """The size assumed when none is given: the volume type's (iolens.volumes), else the price snapshot's."""
    ours = default_size(option_id)
    return ours if ours is not None else snapshot_default


def _with_size(spec: str, size_gb: float | None) -> str:
    if size_gb is None or ":size=" in spec:
        return spec
    return f"{spec}:size={size_gb:g}"


def spec_for(key: str, snap: Snapshot, size_gb: float | None) -> Storage | None:
    """An option spec, a lab target name or `none` -> Storage (None for `none`)."""
    if key == NOT_PRICED:
        return None
    lab_name = ":" not in key or resolve.is_lab(key)  # a lab target, or a priced option (PROVIDER:NAME)
    lab = lab_spec(key) if lab_name else None
    if lab is not None:
        key = lab
    elif lab_name:
        raise UsageError(f"{key!r} is neither a priced option (like aws:ebs-gp3) nor a lab target with a price "
                         f"({', '.join(LAB_OPTIONS)})")
    st = parse_spec(key, snap)
    if st.size_gb is None and st.option.billing in ("provisioned", "tiered"):
        size = size_gb if size_gb is not None else _default_size(st.option.id, st.option.default_size_gb)
        if size is not None:
            st = parse_spec(_with_size(key, size), snap)
    return st


def _match(location: str, info: dict[str, Any], maps: dict[str, str]) -> str | None:
    """The --map entry for a location: its raw text, its resolved path or a directory above it."""
    if location in maps:
        return maps[location]
    path = info.get("path") or location
    best = None
    for key, spec in maps.items():
        k = key.rstrip("/") or "/"
        for cand in (location, path):
            if cand == k or cand.startswith(k + "/") or k == "/":
                if best is None or len(k) > len(best[0]):
                    best = (k, spec)
    return best[1] if best else None


def from_compare(run: dict[str, Any], maps: dict[str, str], snap: Snapshot, *, size_gb: float | None,
                 notes: list[str]) -> list[Item]:
    """A stored compare run -> items; UsageError for failed configurations or unmapped locations."""
    rid = run.get("id")
    if run.get("kind") != "compare":
        raise UsageError(f"run {rid} is a {run.get('kind')} run; iolens cost prices compare runs (or --option)")
    if run.get("status") not in (None, "complete"):
        raise UsageError(f"compare run {rid} is {run.get('status')}; its times are incomplete: run it again")
    results = run.get("results") or []
    if not results:
        raise UsageError(f"compare run {rid} has no configurations")
    failed = [r["name"] for r in results
              if (r["metrics"].get("failed_runs") or 0) or r["metrics"].get("median") is None]
    if failed:
        raise UsageError(f"compare run {rid}: configuration {', '.join(failed)} had failed runs; its time is not "
                         "the step's: fix it and run the comparison again")
    locations: dict[str, Any] = (run.get("provenance") or {}).get("locations") or {}
    used = {r["name"]: [v for v in (r["metrics"].get("parameters") or {}).values() if v in locations]
            for r in results}
    everywhere = set.intersection(*(set(v) for v in used.values())) if used else set()
    items = []
    unpriced: dict[str, None] = {}  # locations in every configuration without a price, in order, said once
    for r in results:
        m = r["metrics"]
        storages: list[Storage] = []
        placements: dict[str, str] = {}
        for loc in used[r["name"]]:
            info = locations.get(loc) or {}
            spec = _match(loc, info, maps) or (lab_spec(info["lab"]) if info.get("lab") else None)
            if spec is None and maps.get(r["name"]):
                spec = maps[r["name"]]
            if spec is None:
                if info.get("kind") == "device":
                    continue
                if loc in everywhere:
                    unpriced[loc] = None
                    continue
                raise UsageError(f"configuration {r['name']!r}: location {loc} has no priced option; map it, e.g. "
                                 f"--map {loc}=aws:ebs-gp3 (`iolens cost --list` shows the options)")
            st = spec_for(spec, snap, size_gb)
            placements[loc] = st.spec if st else NOT_PRICED
            if st is not None:
                storages.append(st)
        io = m.get("io") or {}
        use = Usage(wall_s=float(m["median"]), read_bytes=float(io.get("rchar") or 0),
                    written_bytes=float(io.get("wchar") or 0), basis="bytes read/written by the command",
                    times=[float(t) for t in m.get("times") or []] or None)
        items.append(Item(r["name"], storages, use, placements))
    if len(unpriced) == 1:
        loc = next(iter(unpriced))
        notes.append(f"{loc} is in every configuration and has no price: left out (it costs each the same); "
                     f"--map {loc}=PROVIDER:OPTION to include it")
    elif unpriced:
        notes.append(f"{', '.join(unpriced)} are in every configuration and have no price: left out (they cost each "
                     "the same); --map LOCATION=PROVIDER:OPTION to include one")
    if not any(i.storages for i in items):
        raise UsageError(f"compare run {rid}: no location maps to a priced option; give --map LOCATION=OPTION")
    return items


def from_figures(options: tuple[str, ...] | list[str], snap: Snapshot, *, size_gb: float | None,
                 read_gb: float, written_gb: float) -> list[Item]:
    """--option SPEC=SECONDS -> items."""
    items = []
    seen = set()
    for text in options:
        spec, eq, secs = text.rpartition("=")
        try:
            wall = float(secs)
        except ValueError:
            wall = math.nan
        if not eq or not spec or not math.isfinite(wall) or wall <= 0:
            raise UsageError(f"--option {text!r}: write --option OPTION=SECONDS, e.g. --option aws:ebs-gp3=312 "
                             "or --option gp2=300 (a lab target)")
        if spec in seen:
            raise UsageError(f"--option {spec} is given twice")
        seen.add(spec)
        st = spec_for(spec, snap, size_gb)
        if st is None:
            raise UsageError(f"--option {text!r}: 'none' cannot be priced")
        use = Usage(wall_s=wall, read_bytes=read_gb * (1 << 30), written_bytes=written_gb * (1 << 30),
                    basis="stated figures")
        items.append(Item(spec, [st], use, {spec: st.spec}))
    return items


def capture_counts(cap: Capture) -> dict[str, Any]:
    """Operation counts of a capture's files (system paths and pipes left out)."""
    from iolens.analysis.report import build_report

    rep = build_report(cap, advise=False)
    files = [f for f in rep.files if f.kind == "file" and not f.path.startswith(SYSTEM_PREFIXES)]
    puts = gets = heads = 0
    sizes = []
    for f in files:
        if f.bytes_written:
            n = math.ceil(f.bytes_written / PART_BYTES)
            puts += 1 if n <= 1 else n + 2  # multipart: create, the parts, complete
        if f.bytes_read:
            gets += math.ceil(f.bytes_read / PART_BYTES)
        heads += f.metadata_ops
        if (f.created or f.bytes_written) and not f.deleted:
            sizes.append(int(f.size))
    return {"write_requests": puts, "read_requests": gets + heads,
            "io_requests": sum(f.reads + f.writes for f in files),
            "read_bytes": sum(f.bytes_read for f in files), "written_bytes": sum(f.bytes_written for f in files),
            "object_sizes": sizes, "files": len(files), "source": os.path.basename(cap.path)}


def apply_capture(items: list[Item], counts: dict[str, Any]) -> None:
    for it in items:
        u = it.usage
        u.write_requests = float(counts["write_requests"])
        u.read_requests = float(counts["read_requests"])
        u.io_requests = float(counts["io_requests"])
        u.object_sizes = list(counts["object_sizes"])
        u.read_bytes = float(counts["read_bytes"])
        u.written_bytes = float(counts["written_bytes"])
        u.stored_bytes = float(sum(counts["object_sizes"]))
        u.basis = f"operation counts of {counts['source']}"


def check_known(items: list[Item]) -> None:
    names = [i.name for i in items]
    dup = {n for n in names if names.count(n) > 1}
    if dup:
        raise PriceError(f"two options are both called {', '.join(sorted(dup))}")
