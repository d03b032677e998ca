"""What this machine supports, for `iolens doctor`: the native parts, the interposer at work on a real command, the
kernel features the benchmark and the lab use, FUSE, root, and the lab's tools. Plain data; the command renders.

Each check is (name, state, detail): state "ok", "no" (missing or failing) or "info" (a fact, not a verdict).
A check marked essential failing means iolens itself cannot profile here.
"""

from __future__ import annotations

import os
import platform
import shutil
import subprocess
import sys
import tempfile
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Callable

TAG = "iolens-doctor"
SCHEMA_VERSION = (1, 0)
NATIVE_FILES = ("libiolens_preload.so", "libiolens_redact.so", "iolens-bench", "iolens-replay")


@dataclass(frozen=True)
class Check:
    name: str
    state: str  # "ok", "no" or "info"
    detail: str
    essential: bool = False


def _read(path: str) -> str | None:
    try:
        return Path(path).read_text().strip()
    except OSError:
        return None


def check_native() -> Check:
    from iolens.native import NATIVE_DIR

    missing = [f for f in NATIVE_FILES if not (NATIVE_DIR / f).exists()]
    if missing:
        return Check("native parts", "no", f"missing in {NATIVE_DIR}: {', '.join(missing)}; reinstall iolens", True)
    return Check("native parts", "ok", f"interposer, bench engine, replayer in {NATIVE_DIR}", True)


def check_interposer() -> Check:
    """Profile `cat` reading a file of known size; the capture must hold exactly those bytes."""
    from iolens.analysis.report import build_report
    from iolens.analysis.thresholds import with_overrides
    from iolens.capture.record import Recording

    cat = shutil.which("cat")
    if cat is None:
        return Check("interposer", "no", "no `cat` on PATH to profile", True)
    size = 123_457
    with tempfile.TemporaryDirectory(prefix="iolens-doctor-") as tmp:
        probe = Path(tmp) / "probe"
        probe.write_bytes(b"x" * size)
        try:
            res = Recording([cat, str(probe)], stdio=subprocess.DEVNULL).run()
        except Exception as err:  # any failure is the finding
            return Check("interposer", "no", f"profiling `cat` failed: {err}", True)
    if res.capture is None:
        return Check("interposer", "no", f"profiling `cat` made no capture: {res.error or 'no staging'}", True)
    got = build_report(res.capture, with_overrides([])).totals["bytes_read"]
    if got != size:
        return Check("interposer", "no", f"profiled `cat` read {got} bytes of a {size}-byte file", True)
    return Check("interposer", "ok", f"profiled `cat`: {size} bytes read, as written", True)


def check_clock() -> Check:
    src = _read("/sys/devices/system/clocksource/clocksource0/current_clocksource")
    if src == "tsc":
        return Check("clock", "ok", "kernel clock source tsc: hooks read the TSC")
    return Check("clock", "info", f"kernel clock source {src or 'unknown'}: hooks use the vDSO clock (slower)")


def check_io_uring() -> Check:
    disabled = _read("/proc/sys/kernel/io_uring_disabled")
    if disabled not in (None, "0"):
        return Check("io_uring", "no", f"kernel.io_uring_disabled = {disabled}: bench --ioengine io_uring fails")
    return Check("io_uring", "ok" if os.path.exists("/proc/sys/kernel/io_uring_disabled") else "info",
                 "enabled (bench --ioengine io_uring)" if disabled == "0"
                 else "not reported by this kernel; bench --ioengine io_uring tries it")


def check_staging() -> Check:
    if os.access("/dev/shm", os.W_OK):
        return Check("staging", "ok", "/dev/shm writable: captures are staged in RAM")
    return Check("staging", "info", "/dev/shm not writable: set IOLENS_STAGING to a tmpfs directory")


def check_root() -> Check:
    if os.geteuid() == 0:
        return Check("root", "ok", "yes: lab up, --drop-caches and loop devices available")
    return Check("root", "info", "no: lab up and --drop-caches need root; profile, bench and replay do not")


def check_fuse() -> Check:
    from iolens.lab.tools import find

    dev, fm = os.path.exists("/dev/fuse"), find("fusermount3")
    if dev and fm:
        return Check("FUSE", "ok", "/dev/fuse and fusermount3: lab's S3, SFTP and emulated targets can mount")
    lacking = ([] if dev else ["/dev/fuse"]) + ([] if fm else ["fusermount3 (Debian fuse3)"])
    return Check("FUSE", "no", f"missing {', '.join(lacking)}: lab's FUSE targets cannot mount")


def check_loop() -> Check:
    if os.path.exists("/dev/loop-control"):
        return Check("loop devices", "ok", "/dev/loop-control: lab's loop filesystems possible (as root)")
    return Check("loop devices", "no", "no /dev/loop-control: lab's loop filesystems unavailable")


def check_lab_tools() -> Check:
    from iolens.lab.tools import TOOLS, find

    missing = [name for name in TOOLS if find(name) is None]
    if not missing:
        return Check("lab tools", "ok", f"all {len(TOOLS)} present")
    return Check("lab tools", "no" if len(missing) == len(TOOLS) else "info",
                 f"{len(TOOLS) - len(missing)} of {len(TOOLS)}; missing {', '.join(missing)} "
                 "(`iolens lab install`)")


def check_mpi() -> Check:
    for name in ("mpirun", "srun"):
        if shutil.which(name):
            return Check("MPI", "ok", f"{name}: bench --clients N can run many clients")
    return Check("MPI", "info", "no mpirun or srun: bench --clients runs one client only")


CHECKS: tuple[Callable[[], Check], ...] = (check_native, check_interposer, check_clock, check_io_uring, check_staging,
                                           check_root, check_fuse, check_loop, check_lab_tools, check_mpi)


def host() -> dict[str, Any]:
    from iolens import __version__

    glibc = os.confstr("CS_GNU_LIBC_VERSION") if "CS_GNU_LIBC_VERSION" in os.confstr_names else None
    return {"iolens_version": __version__, "python": platform.python_version(), "executable": sys.executable,
            "machine": platform.machine(), "kernel": platform.release(), "libc": glibc}


def collect() -> dict[str, Any]:
    """Every check, in order, and the host it ran on; `ok` is False when an essential check failed."""
    checks = [c() for c in CHECKS]
    return {"tag": TAG, "schema_version": list(SCHEMA_VERSION), "host": host(),
            "ok": not any(c.essential and c.state == "no" for c in checks),
            "checks": [asdict(c) for c in checks]}
