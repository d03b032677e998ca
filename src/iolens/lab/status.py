"""`iolens lab status`: each target's health, filesystem and limits, as plain data (rendered by the command)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from iolens.lab import credits as nbd_credits
from iolens.lab import state as st
from iolens.lab.catalog import TARGETS, Target, lookup
from iolens.lab.kinds import kind_of

TAG = "iolens-lab-status"
SCHEMA_VERSION = (1, 3)  # 1.1: emulation, disk, published, not_emulated, device; 1.2: volume, credits, time_scale;
# 1.3: clients, servers (shared filesystems)


def describe(target: Target, rec: dict[str, Any] | None, state: dict[str, Any] | None) -> dict[str, Any]:
    """One target as a dict with every key present (null when not applicable)."""
    rec = rec or {}
    network = (state or {}).get("settings", {}).get("network") if target.remote else None
    profile = target.profile
    return {
        "name": target.name,
        "spec": f"lab:{target.name}",
        "status": rec.get("status", "down"),
        "healthy": None,
        "problem": None,
        "path": rec.get("path"),
        "fstype": target.fstype,
        "kind": target.kind,
        "emulates": target.emulates,
        "emulated": target.emulated,
        "emulation": target.emulation,
        "limits": target.limits.as_dict() if target.limits else None,
        "disk": target.disk,
        "published": profile.published if profile else None,
        "not_emulated": list(profile.not_emulated) if profile else None,
        "device": rec.get("device"),
        "network": network,
        "mount_options": target.mount_options,
        "loop": rec.get("loop"),
        "loop_direct_io": rec.get("loop_direct_io"),
        "cgroup": rec.get("cgroup"),
        "size": rec.get("size"),
        "endpoint_url": rec.get("endpoint_url"),
        "bucket": rec.get("bucket"),
        "error": rec.get("error"),
        "hint": rec.get("hint"),
        "notes": list(target.notes),
        "volume": target.option,
        "credits": _credits(rec),
        "time_scale": rec.get("time_scale"),
        "clients": rec.get("clients"),
        "servers": rec.get("servers"),
    }


def _credits(rec: dict[str, Any]) -> dict[str, Any] | None:
    """An emulated disk's burst bucket: as it started, and (while up) its balance and phase now."""
    if not rec.get("credits"):
        return None
    live = nbd_credits.read_state(Path(rec["nbd_dir"]) / nbd_credits.STATE) if rec.get("nbd_dir") else None
    bucket = (live or {}).get("bucket") or {}
    return {**rec["credits"], "balance": bucket.get("balance"), "phase": (live or {}).get("phase")}


def check(info: dict[str, Any], state: dict[str, Any]) -> tuple[bool, str | None]:
    """(healthy, problem) for a target recorded as up, as its kind checks it."""
    return kind_of(info["kind"]).healthy(info, state)


def collect(root: Path) -> dict[str, Any]:
    state = st.load(root)
    targets = []
    sized = [lookup(n) for n in (state or {}).get("targets", {}) if n not in TARGETS]  # lab:gp2:500G and the like
    for target in [*TARGETS.values(), *sized]:
        rec = state["targets"].get(target.name) if state else None
        info = describe(target, rec, state)
        if state and info["status"] == "up":
            info["healthy"], info["problem"] = check(info, state)
        targets.append(info)
    return {
        "tag": TAG,
        "schema_version": list(SCHEMA_VERSION),
        "dir": str(root),
        "lab_up": state is not None,
        "ports": state.get("ports") if state else None,
        "processes": {k: {"pid": v["pid"], "alive": st.process_alive(v)} for k, v in state["processes"].items()}
        if state else None,
        "targets": targets,
    }
