"""A real single-host Slurm for tests: slurmctld + slurmd + munge on localhost, all state in a given directory.

    from helpers.slurm import local_slurm, slurm_missing, wait_jobs

    with local_slurm(base) as env:        # env carries SLURM_CONF; sbatch/srun/squeue with env=env
        job = submit(...)
        wait_jobs(env, job)

Each instance takes two free ports, so two modules (or two test runs) can each have their own.  Needs root and
Debian's slurm-wlm (dev/apt-packages.d/pipelines.txt).  `srun --mpi=pmix` starts MPI ranks where
pmix_available() (OpenMPI must be installed before slurmd starts)."""

from __future__ import annotations

import contextlib
import os
import shutil
import socket
import subprocess
import time
from pathlib import Path
from typing import Iterator

NEEDED = ("slurmctld", "slurmd", "sbatch", "srun", "squeue", "munged")


class SlurmUnavailable(RuntimeError):
    """The local Slurm could not be started; the message says why."""


def slurm_missing(*also: str) -> str | None:
    """Why a local Slurm cannot run here, or None."""
    if os.geteuid() != 0:
        return "needs root (slurmd)"
    gone = [t for t in NEEDED + also if not shutil.which(t) and not os.path.exists(f"/usr/sbin/{t}")]
    return f"not installed: {', '.join(gone)}" if gone else None


def _mem_mb() -> int:
    for line in Path("/proc/meminfo").read_text().splitlines():
        if line.startswith("MemTotal:"):
            return int(line.split()[1]) // 1024 - 1024
    return 1024


def _free_ports(n: int) -> list[int]:
    socks = [socket.socket() for _ in range(n)]
    try:
        for s in socks:
            s.bind(("127.0.0.1", 0))
        return [s.getsockname()[1] for s in socks]
    finally:
        for s in socks:
            s.close()


def _munge_up() -> subprocess.Popen | None:
    """munged on its default socket: reused when running, else started here (and stopped at the end)."""
    if subprocess.run(["munge", "-n"], capture_output=True).returncode == 0:
        return None
    os.makedirs("/run/munge", exist_ok=True)
    shutil.chown("/run/munge", "munge", "munge")
    if not os.path.exists("/etc/munge/munge.key"):
        subprocess.run(["runuser", "-u", "munge", "--", "mungekey", "--create"], check=True)
    proc = subprocess.Popen(["runuser", "-u", "munge", "--", "/usr/sbin/munged", "--foreground"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    for _ in range(50):
        if subprocess.run(["munge", "-n"], capture_output=True).returncode == 0:
            return proc
        time.sleep(0.1)
    proc.terminate()
    raise SlurmUnavailable("munged did not start")


def pmix_available() -> bool:
    """True when Slurm's PMIx plugin is installed (`srun --mpi=pmix` can start MPI ranks)."""
    return any(Path(d).glob("mpi_pmix*.so") for d in ("/usr/lib/x86_64-linux-gnu/slurm-wlm",
                                                      "/usr/lib/aarch64-linux-gnu/slurm-wlm", "/usr/lib/slurm"))


def write_conf(base: Path, extra: str = "") -> Path:
    host = socket.gethostname().split(".")[0]
    ctl, slurmd = _free_ports(2)
    conf = base / "slurm.conf"
    conf.write_text(f"""ClusterName=iolens
SlurmctldHost={host}(127.0.0.1)
SlurmctldPort={ctl}
SlurmdPort={slurmd}
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
StateSaveLocation={base}/state
SlurmdSpoolDir={base}/spool
TmpFS={base}/tmp
SlurmctldPidFile={base}/slurmctld.pid
SlurmdPidFile={base}/slurmd.pid
SlurmctldLogFile={base}/slurmctld.log
SlurmdLogFile={base}/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
MpiDefault=none
ReturnToService=2
MinJobAge=300
NodeName={host} NodeAddr=127.0.0.1 CPUs={os.cpu_count() or 1} RealMemory={_mem_mb()} State=UNKNOWN
PartitionName=debug Nodes={host} Default=YES MaxTime=INFINITE State=UP
{extra}""")
    for d in ("state", "spool", "tmp"):  # tmp: srun --mpi=pmix's per-step directory, /tmp/spmix_appdir_UID_JOB.STEP
        # by default, which two instances (both numbering jobs from 1) would share and remove under each other
        (base / d).mkdir(exist_ok=True)
    return conf


@contextlib.contextmanager
def local_slurm(base: Path, extra: str = "") -> Iterator[dict[str, str]]:
    """Starts the local Slurm with its state under `base` (`extra`: more slurm.conf lines); yields the environment
    to run its commands with.
    Raises SlurmUnavailable (with the controller's log tail) when it does not come up; always stops it."""
    why = slurm_missing()
    if why:
        raise SlurmUnavailable(why)
    conf = write_conf(base, extra)
    env = dict(os.environ, SLURM_CONF=str(conf))
    munged = _munge_up()
    try:
        subprocess.run(["/usr/sbin/slurmctld", "-i"], env=env, check=True)
        subprocess.run(["/usr/sbin/slurmd"], env=env, check=True)
        for _ in range(100):
            out = subprocess.run(["sinfo", "-h", "-o", "%t"], env=env, capture_output=True, text=True).stdout
            if out.strip() == "idle":
                break
            time.sleep(0.2)
        else:
            log = base / "slurmctld.log"
            raise SlurmUnavailable(f"the local Slurm did not come up: {log.read_text()[-500:] if log.exists() else ''}")
        yield env
    finally:
        subprocess.run(["scancel", "--user=root"], env=env, capture_output=True)
        subprocess.run(["scontrol", "shutdown"], env=env, capture_output=True)
        for pidfile in ("slurmd.pid", "slurmctld.pid"):
            try:
                os.kill(int((base / pidfile).read_text()), 15)
            except (OSError, ValueError):
                pass
        if munged is not None:
            munged.terminate()
            munged.wait(10)


def wait_jobs(env: dict, job: str, timeout: float = 120) -> None:
    """Waits until `job` has left the queue."""
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        out = subprocess.run(["squeue", "-h", "-j", job], env=env, capture_output=True, text=True).stdout
        if not out.strip():
            return
        time.sleep(0.5)
    raise AssertionError(f"job {job} did not finish")
