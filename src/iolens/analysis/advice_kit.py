"""What the advice rules share: how much of the run a rule's time is, how bad that is, and where else data
could go (the rules are in analysis/advice.py and analysis/advice_coverage.py)."""

from __future__ import annotations

from operator import attrgetter, itemgetter
from typing import Any

import numpy as np

from iolens.analysis.breakdown import CLASSES
from iolens.analysis.model import Advice, FileRow, MountRow, Report
from iolens.units import human_seconds

SMALL = ("tiny_read", "small_read", "tiny_write", "small_write")


def _own(r: Report) -> float:
    return r.totals["own_s"] or 0.0


def _share(r: Report, seconds: float | None) -> float | None:
    own = _own(r)
    return seconds / own if own and seconds is not None else None


def _worth(r: Report, th: dict[str, float], seconds: float) -> bool:
    """A rule's time at stake is worth reporting: at least min_seconds (at the full input's size, scale_to) and
    min_share of process time; or, on a short step, at least short_share of it and short_min_seconds."""
    own = _own(r)
    share = seconds / own if own else 1.0
    if seconds * th["scale_to"] >= th["min_seconds"] and share >= th["min_share"]:
        return True
    return seconds >= th["short_min_seconds"] and share >= th["short_share"]


def _worth_hits(r: Report, th: dict[str, float], hits: list[tuple[Any, ...]]) -> float | None:
    """The summed time at stake of a rule's hits (each a tuple whose first item is its seconds) when worth
    reporting, with the hits sorted most first; else None."""
    if not hits:
        return None
    t = float(sum(h[0] for h in hits))
    if not _worth(r, th, t):
        return None
    hits.sort(key=lambda h: -h[0])
    return t


def _severity(share: float | None) -> str:
    if share is None:
        return "medium"
    return "high" if share >= 0.2 else "medium" if share >= 0.05 else "low"


def _make(r: Report, rule: str, title: str, seconds: float | None, evidence: list[str], fix: str,
          data: dict[str, Any], severity: str | None = None) -> Advice:
    share = _share(r, seconds)
    scale = r.thresholds.get("scale_to", 1.0)
    if seconds is not None and scale != 1.0:
        data = {**data, "scale_to": scale, "at_scale_s": seconds * scale}
        evidence = [*evidence, f"at {scale:g}x this input (--scale-to): about {human_seconds(seconds * scale)} at "
                    "stake, if this time grows with the input"]
    return Advice(rule=rule, title=title, severity=severity or _severity(share), time_at_stake_s=seconds,
                  share=share, evidence=evidence, fix=fix, data=data)


def _real_files(r: Report) -> list[FileRow]:
    """Regular files (and aggregates), computed once per report (kept out of the dataclass fields)."""
    cached = r.__dict__.get("_real_files")
    if cached is None or cached[0] is not r.files:
        cached = (r.files, [f for f in r.files if f.kind in ("file", "aggregate")])
        r.__dict__["_real_files"] = cached
    return cached[1]


_classes = itemgetter(*CLASSES)


def _real_column(r: Report, name: str) -> np.ndarray:
    """One field of every row of `_real_files(r)` as an array (strings as objects), made once per report, for the
    rules that look at every file: "breakdown" is (rows, CLASSES), each row's classes in CLASSES order.  The values
    are the rows' own (the same floats), so sums over them, taken in the same order, are the same to the bit."""
    rows = _real_files(r)
    cached = r.__dict__.setdefault("_real_columns", {}).get(name)
    made = r.__dict__.get("_columns")
    if (cached is None or cached[0] is not rows) and made is not None and made[0] is r.files and name in made[1]:
        cached = r.__dict__["_real_columns"][name] = (rows, made[1][name][made[1]["real"]])
    if cached is None or cached[0] is not rows:
        if name == "breakdown":
            try:
                classes = list(map(_classes, map(attrgetter("breakdown"), rows)))
            except KeyError:  # a row without some class: none of that time
                classes = [tuple(f.breakdown.get(c, 0.0) for c in CLASSES) for f in rows]
            col = np.array(classes, dtype=np.float64).reshape(len(rows), len(CLASSES))
        else:
            values = list(map(attrgetter(name), rows))
            col = np.array(values, dtype=object if values and isinstance(values[0], str) else None)
        cached = r.__dict__["_real_columns"][name] = (rows, col)
    return cached[1]


def _real_rows(r: Report, keep: np.ndarray) -> list[FileRow]:
    """The rows of `_real_files(r)` a mask over them keeps, in order: the few a rule's own test then looks at."""
    rows = _real_files(r)
    return [rows[i] for i in np.flatnonzero(keep).tolist()]


def _maybe_at_least(col: np.ndarray, threshold: float) -> np.ndarray:
    """Rows whose integer value may be at least `threshold`: numpy compares an int64 with a float as floats, exact
    below 2**53, so larger values are kept for the rule's own comparison (in Python, exact) to decide."""
    return (col >= threshold) | (np.abs(col) >= 1 << 53)


def attach_columns(r: Report, columns: dict[str, np.ndarray]) -> None:
    """Give the rules the report's file columns as they were made (files.Paths.rows, one entry per row of r.files,
    in its order, "real" naming the rows of _real_files) instead of reading them back out of the rows."""
    r.__dict__["_columns"] = (r.files, columns)


def _class_sum(bd: np.ndarray, classes: tuple[str, ...] | list[str]) -> np.ndarray:
    """Per row of a "breakdown" column, the sum of these classes added left to right, as sum() of a row's dict
    values in this order adds them."""
    out = bd[:, CLASSES.index(classes[0])].copy()
    for c in classes[1:]:
        out += bd[:, CLASSES.index(c)]
    return out


def _mount(r: Report, name: str) -> MountRow | None:
    cached = r.__dict__.get("_mounts")
    if cached is None or cached[0] is not r.mounts:
        cached = (r.mounts, {m.mount: m for m in r.mounts})
        r.__dict__["_mounts"] = cached
    return cached[1].get(name)


def _device(m: MountRow) -> str:
    return m.source if (m.source or "").startswith("/dev/") else (m.device or m.mount)


def _other_storage(r: Report, *, exclude_devices: set[str], need_bytes: int = 0) -> dict[str, Any] | None:
    """Another writable local device (or RAM, when the data fits in a quarter of memory) to suggest."""
    local = [a for a in r.available_mounts if a["storage"] == "local"
             and (a["source"] if a["source"].startswith("/dev/") else a["device"]) not in exclude_devices]
    if local:
        return min(local, key=lambda a: (a["mount"] == "/", len(a["mount"]), a["mount"]))
    mem = r.capture.get("mem_bytes") or 0
    ram = [a for a in r.available_mounts if a["storage"] == "memory"]
    if ram and mem and need_bytes <= mem / 4:
        return ram[0]
    return None


def _local_used(r: Report, exclude: str | None = None) -> dict[str, Any] | None:
    """The local storage the run already used most (its speed is measured in this run), as an available mount."""
    used = sorted((m for m in r.mounts if m.storage == "local" and _device(m) != exclude),
                  key=lambda m: -(m.bytes_read + m.bytes_written))
    return next(({"mount": m.mount, "fstype": m.fstype, "source": m.source, "device": m.device, "storage": m.storage}
                 for m in used), None)
