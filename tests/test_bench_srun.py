"""iolens bench --clients under a real single-host Slurm (slurmctld + slurmd + munge, state in a temporary
directory): `--launcher srun` inside an sbatch allocation, iolens started by `srun --mpi=pmix` itself, a failing
rank, and srun without MPI refused.  Needs root, Debian's Slurm packages with the PMIx plugin, OpenMPI and mpi4py;
a missing part fails under CI."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import unavailable
from helpers.slurm import SlurmUnavailable, local_slurm, pmix_available, slurm_missing, wait_jobs

from iolens.bench import mpi

pytestmark = [pytest.mark.timeout(180), pytest.mark.root]

IOLENS = [sys.executable, "-m", "iolens"]
MiB = 1 << 20


@pytest.fixture(scope="module")
def slurm(tmp_path_factory):
    if os.geteuid() != 0:
        pytest.skip("the local Slurm needs root (slurmd)")
    why = slurm_missing("mpirun")
    if why:
        unavailable(why)
    if not pmix_available():
        unavailable("Slurm's PMIx plugin is missing (Debian slurm-wlm-basic-plugins): srun --mpi=pmix cannot start")
    try:
        import mpi4py  # noqa: F401
    except ImportError:
        unavailable("needs mpi4py (dev/setup installs it)")
    try:
        with local_slurm(tmp_path_factory.mktemp("slurm")) as env:
            for k in mpi.LAUNCHER_ENV:
                env.pop(k, None)
            env["PATH"] = f"{Path(sys.executable).parent}:{env['PATH']}"
            yield env
    except SlurmUnavailable as e:
        unavailable(str(e))


def _leftovers(d: Path) -> list[str]:
    return sorted(p.name for p in d.iterdir() if p.name.startswith("iolens-bench-"))


def _bench_args(target: Path, out: Path) -> list[str]:
    return ["bench", str(target), "--suite", "streams", "--size", "16G", "--bs", "1M", "--runtime", "0.4",
            "--json", str(out), "-q", "--no-store"]


def _check_two_ranks(doc: dict) -> None:
    """Two ranks ran; each write's aggregate is what the ranks' files hold; each rank read its neighbour's data."""
    assert doc["tag"] == "iolens-bench-multi" and doc["clients"] == 2 and len(doc["hosts"]) == 2
    by = {r["phase"]: r for r in doc["results"]}
    w = by["file-per-client write"]
    assert [c["rank"] for c in w["clients"]] == [0, 1]
    assert all(c["stonewalled"] and c["bytes"] < 16 << 30 for c in w["clients"])
    assert [c["files_bytes"] for c in w["clients"]] == [c["bytes"] for c in w["clients"]]
    assert w["bytes"] == sum(c["files_bytes"] for c in w["clients"]) > 0
    assert w["last_done_Bps"] == pytest.approx(w["bytes"] / w["last_done_s"])
    assert w["first_done_bytes"] <= w["bytes"]
    for name in ("file-per-client", "shared-file"):
        wrote = [c["bytes"] for c in by[f"{name} write"]["clients"]]
        rd = by[f"{name} read (neighbour)"]
        assert [c["reads_rank"] for c in rd["clients"]] == [1, 0]
        for r, c in enumerate(rd["clients"]):
            whole = (wrote[(r + 1) % 2] // MiB) * MiB
            assert 0 < c["bytes"] <= whole and (c["bytes"] == whole or c["stonewalled"])
    assert not doc["warnings"]


def test_launcher_srun_inside_an_sbatch_allocation(slurm, tmp_path):
    target, out = tmp_path / "t", tmp_path / "r.json"
    target.mkdir()
    cmd = " ".join(IOLENS + _bench_args(target, out) + ["--clients", "2", "--launcher", "srun"])
    # sbatch --wait polls at growing intervals (tens of seconds); squeue every half second is quicker
    job = subprocess.run(["sbatch", "--parsable", "-n", "2", "-o", str(tmp_path / "job.out"), "-D", str(tmp_path),
                          "--wrap", cmd], env=slurm, check=True, capture_output=True, text=True).stdout.strip()
    wait_jobs(slurm, job, timeout=150)
    log = (tmp_path / "job.out").read_text() if (tmp_path / "job.out").exists() else ""
    assert out.exists(), log
    _check_two_ranks(json.loads(out.read_text()))
    assert _leftovers(target) == []


def test_started_by_srun_with_pmix(slurm, tmp_path):
    target, out = tmp_path / "t", tmp_path / "r.json"
    target.mkdir()
    p = subprocess.run(["srun", "-n", "2", "--mpi=pmix"] + IOLENS + _bench_args(target, out), env=slurm,
                       capture_output=True, text=True, timeout=150, cwd=tmp_path)
    assert p.returncode == 0, p.stderr
    _check_two_ranks(json.loads(out.read_text()))
    assert _leftovers(target) == []


def test_a_failing_rank_under_srun_names_it_and_every_file_goes(slurm, tmp_path):
    good, bad = tmp_path / "good", tmp_path / "missing"
    good.mkdir()
    common = "--clients 2 --suite streams --runtime 0.2 --size 8M -q --no-store"
    conf = tmp_path / "ranks.conf"  # srun --multi-prog: rank 0 gets a good target, rank 1 one that does not exist
    conf.write_text(f"0 {' '.join(IOLENS)} bench {good} {common}\n1 {' '.join(IOLENS)} bench {bad} {common}\n")
    p = subprocess.run(["srun", "-n", "2", "--mpi=pmix", "--multi-prog", str(conf)], env=slurm,
                       capture_output=True, text=True, timeout=150, cwd=tmp_path)
    assert p.returncode != 0
    errors = [ln for ln in p.stderr.splitlines() if ln.startswith("iolens: error:")]
    assert len(errors) == 1, p.stderr
    assert "rank 1 of 2" in errors[0] and "no such directory" in errors[0]
    assert _leftovers(good) == []


def test_srun_without_mpi_is_refused_in_one_line(slurm, tmp_path):
    target = tmp_path / "t"
    target.mkdir()
    p = subprocess.run(["srun", "-n", "2", "--mpi=none"] + IOLENS + ["bench", str(target), "--suite", "meta",
                                                                      "-q", "--no-store"],
                       env=slurm, capture_output=True, text=True, timeout=150, cwd=tmp_path)
    assert p.returncode != 0
    errors = [ln for ln in p.stderr.splitlines() if ln.startswith("iolens: error:")]
    assert len(errors) == 2 and all("srun --mpi=pmix" in e for e in errors), p.stderr  # one line per task
    assert _leftovers(target) == []
