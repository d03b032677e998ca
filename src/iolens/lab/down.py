"""`iolens lab down`: remove exactly what `up` recorded, in reverse order; idempotent."""

from __future__ import annotations

import os
import shutil
import subprocess
import time
from pathlib import Path
from typing import Any, Callable

from iolens.errors import IolensError
from iolens.lab import state as st
from iolens.lab import tools
from iolens.lab.sysops import (
    loop_backing_file,
    loops_backed_by,
    mount_at,
    mounts_under,
    remove_cgroup,
    stop_process,
)


def unmount(path: str) -> bool:
    """Unmount `path` (FUSE or not); lazily if it stays busy. True when nothing is mounted there any more."""
    for _ in range(20):  # stacked mounts: unmount each layer
        m = mount_at(path)
        if m is None:
            return True
        attempts: list[list[str]] = []
        if m["fstype"].startswith("fuse") and os.geteuid() != 0:
            attempts += [["fusermount3", "-u", path], ["fusermount", "-u", path]]
        attempts += [["umount", path], ["umount", "-l", path]]
        for argv in attempts:
            exe = tools.find(argv[0])
            if exe is None:
                continue
            subprocess.run([exe, *argv[1:]], capture_output=True, stdin=subprocess.DEVNULL, timeout=60)
            if mount_at(path) is None or mount_at(path) != m:
                break
            time.sleep(0.2)
        if mount_at(path) == m:
            return False
    return mount_at(path) is None


def detach_loop(device: str, image: str) -> bool:
    """Detach `device` only while it is still backed by our image."""
    if loop_backing_file(device) != image:
        return True
    exe = tools.find("losetup") or "losetup"
    for _ in range(10):
        subprocess.run([exe, "-d", device], capture_output=True, stdin=subprocess.DEVNULL, timeout=30)
        if loop_backing_file(device) != image:
            return True
        time.sleep(0.3)  # a lazily unmounted filesystem lets go a moment later
    return False


def release_target(root: Path, state: dict[str, Any], name: str) -> None:
    """Undo one target's own resources (before it is brought up again)."""
    mnt = str(root / "mnt" / name)
    for key, rec in list(state["processes"].items()):
        if key.endswith(f":{name}"):
            unmount(mnt)
            stop_process(rec)
            del state["processes"][key]
    unmount(mnt)
    image = str(root / "images" / f"{name}.img")
    for loop in list(state["loops"]):
        if loop["image"] == image and detach_loop(loop["device"], image):
            state["loops"].remove(loop)
    state["targets"].pop(name, None)


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
        problems: list[str] = []

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

        # 4. safety net: anything still mounted or attached under the lab directory is ours
        for path in sorted(mounts_under(root), key=len, reverse=True):
            if not unmount(path):
                problems.append(f"{path} is still mounted")
        for device, image in loops_backed_by(root):
            if not detach_loop(device, image):
                problems.append(f"{device} is still attached to {image}")

        if problems:
            st.save(root, state)
            return sorted(set(problems))
        if mounts_under(root):  # never delete across a mount
            return [f"{mounts_under(root)[0]} is still mounted"]
    shutil.rmtree(root, ignore_errors=True)
    say(f"lab in {root} is down")
    return [] if not root.exists() else [f"{root} could not be removed"]
