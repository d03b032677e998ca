"""Facts about this machine that results carry: mounts, host, kernel, CPU, memory, proactive reclaim."""

from __future__ import annotations

import math
import os
import platform
import socket
from pathlib import Path
from typing import Any

from iolens.pagecache import proactive_reclaim


def _unescape(s: str) -> str:
    # mountinfo escapes space, tab, newline and backslash as octal
    out, i = [], 0
    while i < len(s):
        if s[i] == "\\" and i + 3 < len(s) and s[i + 1 : i + 4].isdigit():
            out.append(chr(int(s[i + 1 : i + 4], 8)))
            i += 4
        else:
            out.append(s[i])
            i += 1
    return "".join(out)


def mounts(path: str = "/proc/self/mountinfo") -> list[dict[str, Any]]:
    """Mounts as dicts: mountpoint, dev ("maj:min"), fstype, source, options."""
    out: list[dict[str, Any]] = []
    try:
        text = Path(path).read_text()
    except OSError:
        return out
    for line in text.splitlines():
        left, _, right = line.partition(" - ")
        a, b = left.split(), right.split()
        if len(a) < 6 or len(b) < 2:
            continue
        out.append(
            {
                "mountpoint": _unescape(a[4]),
                "dev": a[2],
                "root": _unescape(a[3]),
                "options": a[5],
                "fstype": b[0],
                "source": _unescape(b[1]),
                "super_options": b[2] if len(b) > 2 else "",
            }
        )
    return out


def containing_mount(path: str, table: list[dict[str, Any]], dev: str | None = None) -> dict[str, Any] | None:
    """The mount of `table` that holds the absolute, resolved `path`: the longest mount point containing it,
    preferring mounts of device `dev` ("maj:min") when given; of stacked mounts, the last mounted wins."""
    inside = [m for m in table if path == m["mountpoint"] or path.startswith(m["mountpoint"].rstrip("/") + "/")]
    pick = [m for m in inside if m["dev"] == dev] if dev else []
    return max(reversed(pick or inside), key=lambda m: len(m["mountpoint"]), default=None)


def mount_of(path: str | os.PathLike[str]) -> dict[str, Any] | None:
    """The mount holding a path on this machine (for a path that does not exist yet, the mount it would be on)."""
    try:
        dev: str | None = dev_string(os.stat(path).st_dev)
    except OSError:
        dev = None
    return containing_mount(os.path.realpath(path), mounts(), dev)


def dev_string(dev: int) -> str:
    """Linux dev_t as "major:minor"."""
    major = ((dev >> 8) & 0xFFF) | ((dev >> 32) & ~0xFFF)
    minor = (dev & 0xFF) | ((dev >> 12) & ~0xFF)
    return f"{major}:{minor}"


def host_facts() -> dict[str, Any]:
    mem = None
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal:"):
                mem = int(line.split()[1]) * 1024
    except OSError:
        pass
    cpu = platform.processor() or ""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return {
        "host": socket.gethostname(),
        "kernel": platform.release(),
        "cpu_model": cpu,
        "cpus": os.cpu_count(),
        "mem_bytes": mem,
        # where the kernel pages out memory idle this many seconds by itself (DAMON): a "warm" page cache decays
        "proactive_reclaim_idle_s": proactive_reclaim(),
    }


def device_io(path: str | os.PathLike[str]) -> tuple[int, int] | None:
    """Bytes read and written so far by the block device that holds `path` (its /sys/dev/block/MAJ:MIN/stat,
    in 512-byte sectors whatever the device's own); None for a filesystem with no block device (tmpfs, FUSE)."""
    try:
        dev = os.stat(path).st_dev
        if os.major(dev) == 0:
            return None
        f = Path(f"/sys/dev/block/{os.major(dev)}:{os.minor(dev)}/stat").read_text().split()
        return int(f[2]) * 512, int(f[6]) * 512
    except (OSError, ValueError, IndexError):
        return None


def cpu_seconds(path: str = "/proc/stat") -> dict[str, float] | None:
    """The machine's CPU time since boot over all CPUs, in seconds: `busy` (user, nice, system, irq, softirq) and
    `steal` (time a virtual CPU had work to run while its hypervisor ran something else: the task's own CPU times
    leave it out where the kernel accounts steal, so it shows only as wall time); None where unreadable."""
    try:
        with open(path) as f:
            first = f.readline().split()
        tick = os.sysconf("SC_CLK_TCK")
        user, nice, system, _idle, _iowait, irq, softirq, steal = (int(x) for x in first[1:9])
    except (OSError, ValueError):
        return None
    return {"busy": (user + nice + system + irq + softirq) / tick, "steal": steal / tick, "tick": 1 / tick}


def cpu_delta(before: dict[str, float] | None, after: dict[str, float] | None) -> dict[str, float] | None:
    """The machine's busy and stolen CPU seconds between two cpu_seconds() readings (META machine_cpu_s, read by
    steal_share); None when either is missing."""
    if before is None or after is None:
        return None
    return {"busy": round(after["busy"] - before["busy"], 6), "steal": round(after["steal"] - before["steal"], 6),
            "tick": after["tick"]}


def cpu_probe_ok(m: Any) -> bool:
    """Whether `m` has the shape of a META cpu_probe record: {"loop": the replayer's burn loop version,
    "ns_per_block": [one or two costs of a block, before and after the step, each finite and positive]}."""
    if not isinstance(m, dict) or set(m) != {"loop", "ns_per_block"}:
        return False
    loop, ns = m["loop"], m["ns_per_block"]
    return (isinstance(loop, int) and not isinstance(loop, bool) and isinstance(ns, list) and 1 <= len(ns) <= 2
            and all(isinstance(v, (int, float)) and not isinstance(v, bool) and 0 < v < 1e6 for v in ns))


def cpu_probe_ns(meta: dict[str, Any], loop: int) -> float | None:
    """The cost of one block of the replayer's burn loop `loop` while the capture was taken (the mean of the probes
    before and after the step); None when the capture has none, or one of another loop."""
    m = meta.get("cpu_probe")
    if not isinstance(m, dict) or not cpu_probe_ok(m) or m["loop"] != loop:
        return None
    ns: list[float] = m["ns_per_block"]
    return sum(ns) / len(ns)


STEAL_NOTE = 0.02  # a steal share from this on is said in notes and warnings
STEAL_MAX = 0.9  # a steal share above this is taken as this (cpu * f / (1 - f) has no bound as f nears 1)


def cpu_record_ok(m: Any) -> bool:
    """Whether `m` has the shape of a cpu_delta() record (META machine_cpu_s): exactly busy, steal and tick, the
    first two finite and not negative, the tick a finite fraction of a second."""
    if not isinstance(m, dict) or set(m) != {"busy", "steal", "tick"}:
        return False
    if not all(isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v) for v in m.values()):
        return False
    return m["busy"] >= 0 and m["steal"] >= 0 and 0 < m["tick"] <= 1


def steal_share(meta: dict[str, Any]) -> float:
    """The share of the CPU time the machine asked for that its hypervisor took (steal) while a capture ran: 0
    where the capture does not say (older captures, no /proc/stat, a record out of shape).  /proc/stat counts in
    ticks per CPU, so a tick per CPU is taken off the stolen time and added to the whole: the share is a lower
    bound, and a short step shows steal only when it surely had some."""
    m = meta.get("machine_cpu_s")
    if not isinstance(m, dict) or not cpu_record_ok(m):
        return 0.0
    cpus = meta.get("cpus")
    slack = m["tick"] * (cpus if isinstance(cpus, int) and not isinstance(cpus, bool) and cpus > 0 else 1)
    whole = m["busy"] + m["steal"] + slack
    return min(STEAL_MAX, max(0.0, m["steal"] - slack) / whole)


def stolen_wait(cpu_s: float, f: float) -> float:
    """The wall time a process that got `cpu_s` of CPU waited for steal, a share `f` of the CPU time asked for
    being stolen: cpu * f / (1 - f), f taken within [0, STEAL_MAX]."""
    f = min(STEAL_MAX, max(0.0, f))
    return cpu_s * f / (1.0 - f)


def steal_notes(meta: dict[str, Any], what: str) -> list[str]:
    """The line for notes and warnings when the capture's steal share reaches STEAL_NOTE, ending with `what`
    (what the reader makes of it); none below it."""
    return steal_lines(steal_share(meta), what)


def steal_lines(f: float | None, what: str) -> list[str]:
    """steal_notes from a steal share already worked out (a report's `capture.steal_share`; None: not recorded)."""
    if f is None or f < STEAL_NOTE:
        return []
    return [f"the hypervisor took {f:.0%} of the CPU time asked for while the step was recorded (steal): {what}"]
