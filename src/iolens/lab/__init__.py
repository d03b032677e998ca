"""Real storage targets on one machine (`iolens lab`), and the API other commands use to reach them.

    resolve_target("lab:ext4")  -> Path of the mounted directory (plain paths come back unchanged)
    target_info("hdd")          -> dict: status, path, fstype, emulated, emulates, limits, cgroup, notes, ...
    emulation("lab:st1/x")      -> what a result from there must carry: target, emulated, limits, ... (None: no lab)
    client_paths("lab:moosefs") -> [Path, Path]: the same place through each client mount of a shared filesystem
    s3_endpoint("s3")           -> dict: endpoint_url, bucket, access_key_id, secret_access_key, region
    is_s3("s3-rclone")          -> True: an S3 bucket behind the mount (s3_endpoint works)
    join_cgroup("throttle", pid) -> put a process under the legacy target's blkio throttle

Every function takes an optional `root` (the lab directory; default: IOLENS_LAB_DIR, else the lab `lab up --dir`
brought up last, else $XDG_STATE_HOME/iolens/lab: `state.where`). See docs/lab.md.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Callable

from iolens.errors import TargetError
from iolens.lab import state as _state
from iolens.lab.catalog import TARGETS, Target, lookup, split
from iolens.lab.kinds import ACCESS_KEY, kind_of
from iolens.lab.status import check, describe

__all__ = ["TARGETS", "is_lab_spec", "is_s3", "resolve_target", "client_paths", "target_info", "emulation",
           "s3_endpoint", "s3_client", "join_cgroup", "preexec"]


def is_lab_spec(spec: str) -> bool:
    return split(spec) is not None


def is_s3(name: str) -> bool:
    """Whether a lab target (with or without `lab:`) is an S3 bucket behind its mount, reachable by s3_endpoint."""
    return kind_of(lookup(name).kind).s3


def _load(root: str | os.PathLike | None) -> tuple[Path, dict[str, Any] | None]:
    r = _state.lab_dir(root)
    return r, _state.load(r)


def target_info(name: str, root: str | os.PathLike | None = None) -> dict[str, Any]:
    """What a target is and how it is doing; works (status "down") when the lab is not up."""
    target = lookup(name)
    r, state = _load(root)
    info = describe(target, state["targets"].get(target.name) if state else None, state)
    if state and info["status"] == "up":
        info["healthy"], info["problem"] = check(info, state)
    info["lab_dir"] = str(r)
    return info


def emulation(spec: str, root: str | os.PathLike | None = None) -> dict[str, Any] | None:
    """What every result measured on `lab:NAME[/sub/path]` carries: the target's name, whether it is emulated, and
    how (None for a path outside the lab). From the catalogue alone, so it works whether or not the lab is up.

    emulation: "device" (slow for every process), "cgroup" (only inside its cgroup: `lab run`, bench's engine),
    "network" (toxiproxy), or None (a real filesystem, at the host's speed).
    """
    parts = split(spec)
    if parts is None:
        return None
    target = lookup(parts[0])
    profile = target.profile
    return {
        "target": f"lab:{target.name}",
        "emulated": target.emulated,
        "emulation": target.emulation,
        "emulates": target.emulates,
        "limits": target.limits.as_dict() if target.limits else None,
        "published": profile.published if profile else None,
        "not_emulated": list(profile.not_emulated) if profile else None,
        "volume": target.option,
        **_credits(target, root),
    }


def _credits(target: Target, root: str | os.PathLike | None) -> dict[str, Any]:
    """The burst model of an emulated disk with credits, and the time scale it runs under when it is up scaled
    (tests only: a result made under it says so)."""
    profile = target.profile
    if profile is None or profile.perf is None or not profile.bucket:
        return {"credits": None, "time_scale": None}
    scale = None
    try:
        _r, state = _load(root)
        scale = ((state or {}).get("targets", {}).get(target.name) or {}).get("time_scale")
    except (OSError, ValueError):
        pass
    model = {**profile.perf.as_dict(), "note": "a new volume starts with a full bucket (`lab up --credits` sets it)"}
    if scale and scale != 1:
        model["note"] = (f"TIME-SCALED x{scale:g} (tests only): the bucket is 1/{scale:g} of the real one, so "
                         f"bursts and refills take 1/{scale:g} of their real time")
    return {"credits": model, "time_scale": scale}


def resolve_target(spec: str, root: str | os.PathLike | None = None) -> Path:
    """`lab:NAME` -> the mounted directory of that target; TargetError if the lab or the target is not up."""
    parts = split(spec)
    if parts is None:
        return Path(spec)
    target = lookup(parts[0])
    r, source = _state.where(root)
    state = _state.load(r)
    if state is None:
        raise TargetError(f"{spec}: no lab is up: {_state.not_found_hint(r, source)}; or run "
                          f"`iolens lab up --only {target.name}` (as root)")
    rec = state["targets"].get(target.name)
    if rec is None:
        raise TargetError(f"{spec} is not part of the lab in {r} ({source}); run `iolens lab up --only "
                          f"{target.name}`, or set IOLENS_LAB_DIR to a lab that has it")
    if rec.get("status") != "up":
        hint = f" ({rec['hint']})" if rec.get("hint") else ""
        raise TargetError(f"{spec} did not come up: {rec.get('error')}{hint}")
    info = describe(target, rec, state)
    healthy, problem = check(info, state)
    if not healthy:
        raise TargetError(f"{spec} is not healthy: {problem}; run `iolens lab up --only {target.name}` to rebuild it")
    return Path(rec["path"])


def client_paths(spec: str, root: str | os.PathLike | None = None) -> list[Path]:
    """The directory `spec` names as each client of a shared filesystem mounts it (lab:moosefs/x -> the client
    mounts joined with x); one path for any other target, the directory itself for a plain path."""
    parts = split(spec)
    if parts is None:
        return [Path(spec)]
    path = resolve_target(spec, root)  # up and healthy, or a one-line error
    _r, state = _load(root)
    clients = ((state or {}).get("targets", {}).get(lookup(parts[0]).name) or {}).get("clients")
    if not clients:
        return [path / parts[1] if parts[1] else path]
    return [Path(c) / parts[1] if parts[1] else Path(c) for c in clients]


def s3_endpoint(name: str = "s3", root: str | os.PathLike | None = None) -> dict[str, Any]:
    """How to reach an S3 lab target through the S3 API (boto3), for staging that bypasses the mount.

    `lab:s3-remote` gives the endpoint through toxiproxy, so API transfers see the same latency as the mount.
    """
    target = lookup(name)
    if not is_s3(target.name):
        raise TargetError(f"lab:{target.name} is not an S3 target; use lab:s3, lab:s3-rclone or lab:s3-remote")
    r, source = _state.where(root)
    state = _state.load(r)
    rec = (state or {}).get("s3", {}).get(target.name)
    if state is None or rec is None or state["targets"].get(target.name, {}).get("status") != "up":
        raise TargetError(f"lab:{target.name} is not up: {_state.not_found_hint(r, source)}; or run "
                          f"`iolens lab up --only {target.name}`")
    return {
        "endpoint_url": rec["endpoint_url"],
        "bucket": rec["bucket"],
        "access_key_id": ACCESS_KEY,
        "secret_access_key": state["settings"]["s3_secret"],
        "region": "us-east-1",
        "addressing_style": "path",
        "mount": state["targets"][target.name]["path"],
    }


def s3_client(name: str = "s3", root: str | os.PathLike | None = None) -> Any:
    """A boto3 S3 client for an S3 lab target (path-style addressing)."""
    import boto3
    from botocore.config import Config

    ep = s3_endpoint(name, root)
    return boto3.client("s3", endpoint_url=ep["endpoint_url"], aws_access_key_id=ep["access_key_id"],
                        aws_secret_access_key=ep["secret_access_key"], region_name=ep["region"],
                        config=Config(s3={"addressing_style": "path"}))


def join_cgroup(name: str, pid: int = 0, root: str | os.PathLike | None = None) -> bool:
    """Move `pid` (0: this process) into a throttled target's cgroup. False when the target has no limits."""
    info = target_info(name, root)
    if info["status"] != "up":
        raise TargetError(f"lab:{info['name']} is not up; run `iolens lab up --only {info['name']}`")
    if not info["cgroup"]:
        return False
    try:
        with open(Path(info["cgroup"]) / "cgroup.procs", "w") as fh:
            fh.write(str(pid or os.getpid()))
    except PermissionError:
        raise TargetError(f"cannot join the cgroup of lab:{info['name']}: run as root") from None
    except OSError as err:
        raise TargetError(f"cannot join the cgroup of lab:{info['name']}: {err.strerror}") from None
    return True


def preexec(name: str, root: str | os.PathLike | None = None) -> Callable[[], None] | None:
    """A `preexec_fn` for subprocess that runs the child inside the target's cgroup (None when unthrottled)."""
    info = target_info(name, root)
    if not info["cgroup"]:
        return None
    procs = str(Path(info["cgroup"]) / "cgroup.procs")

    def enter() -> None:
        with open(procs, "w") as fh:
            fh.write("0")  # "0" means the writing process itself

    return enter
