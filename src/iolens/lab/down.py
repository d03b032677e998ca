"""`iolens lab down`: stop each target its kind's way, then remove whatever `up` recorded, in reverse; idempotent."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any, Callable

from iolens.errors import IolensError
from iolens.lab import state as st
from iolens.lab.catalog import TARGETS
from iolens.lab.kinds import KINDS, release
from iolens.lab.sysops import (
    detach_loop,
    loops_backed_by,
    mounts_under,
    remove_cgroup,
    stop_process,
    unmount,
)


def stop_target(root: Path, state: dict[str, Any], name: str) -> list[str]:
    """Undo one target's own resources, its kind's way (the target stays recorded); returns what is left."""
    rec = state["targets"].get(name) or {}
    kind = KINDS.get(rec.get("kind") or (TARGETS[name].kind if name in TARGETS else ""))
    return list((kind.stop if kind else release)(root, state, name) or [])


def release_target(root: Path, state: dict[str, Any], name: str) -> None:
    """Undo one target's own resources and forget it (before it is brought up again)."""
    stop_target(root, state, name)
    state["targets"].pop(name, None)


def _remove_recorded(root: Path, state: dict[str, Any]) -> list[str]:
    """Remove what the state records, in reverse order of making it; returns what could not be removed."""
    problems: list[str] = []
    # 0. each target as its kind stops it (what it leaves behind, and the shared servers, go below)
    for name in reversed(list(state["targets"])):
        problems += stop_target(root, state, name)
    st.save(root, state)

    # 1. mounts, newest first (FUSE clients exit once unmounted)
    for path in reversed(list(state["mounts"])):
        if unmount(path):
            state["mounts"].remove(path)
        else:
            problems.append(f"{path} is still mounted")
    st.save(root, state)

    # 2. processes: FUSE clients first, then the servers they used
    order = sorted(state["processes"], key=lambda k: (":" not in k, k))
    for key in order:
        rec = state["processes"][key]
        if stop_process(rec):
            del state["processes"][key]
        else:
            problems.append(f"process {rec['pid']} ({rec['argv0']}) did not stop")
    st.save(root, state)

    # 3. loop devices, only while still backed by our images
    for loop in list(state["loops"]):
        if detach_loop(loop["device"], loop["image"]):
            state["loops"].remove(loop)
        else:
            problems.append(f"{loop['device']} is still attached to {loop['image']}")
    for cg in list(state["cgroups"]):
        if remove_cgroup(Path(cg)):
            state["cgroups"].remove(cg)
        else:
            problems.append(f"cgroup {cg} could not be removed")
    st.save(root, state)
    return problems


def _sweep(root: Path) -> list[str]:
    """Safety net: anything still mounted or attached under the lab directory is ours."""
    problems = []
    for path in sorted(mounts_under(root), key=len, reverse=True):
        if not unmount(path):
            problems.append(f"{path} is still mounted")
    for device, image in loops_backed_by(root):
        if not detach_loop(device, image):
            problems.append(f"{device} is still attached to {image}")
    return problems


def down(root: Path, say: Callable[[str], None]) -> list[str]:
    """Take the lab in `root` down. Returns what could not be removed (empty when all is gone)."""
    if not (root / st.STATE_FILE).exists():
        leftovers = mounts_under(root) + [dev for dev, _img in loops_backed_by(root)]
        if leftovers:
            raise IolensError(f"{root} has no lab state but {leftovers[0]} is still attached under it; "
                              "remove it by hand (umount / losetup -d)")
        say(f"no lab in {root}; nothing to do")
        return []
    with st.locked(root):
        state = st.load(root)
        assert state is not None
        problems = _remove_recorded(root, state) + _sweep(root)
        if problems:
            st.save(root, state)
            return sorted(set(problems))
        if mounts_under(root):  # never delete across a mount
            return [f"{mounts_under(root)[0]} is still mounted"]
    shutil.rmtree(root, ignore_errors=True)
    say(f"lab in {root} is down")
    return [] if not root.exists() else [f"{root} could not be removed"]
