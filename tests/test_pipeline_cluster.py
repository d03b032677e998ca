"""Whole pipelines through a real single-host Slurm (slurmctld + slurmd + munge, all state in a temporary
directory) and Snakemake from PyPI: every task profiled into one capture directory, one pipeline report whose
per-rule totals are the sums of the tasks' own captures.  Needs root and Debian's Slurm packages
(dev/apt-packages.d/pipelines.txt); skipped without them."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import iolens, unavailable
from helpers.slurm import SlurmUnavailable, local_slurm, slurm_missing, wait_jobs
from pipeline_helpers import assert_rules_equal_sums, independent_sums, pipeline_json, preload_lib

pytestmark = [pytest.mark.timeout(180), pytest.mark.root]
NEEDED = ("minimap2", "samtools")


@pytest.fixture(scope="module")
def slurm(tmp_path_factory):
    if os.geteuid() != 0:
        pytest.skip("the local Slurm needs root (slurmd)")
    why = slurm_missing(*NEEDED)
    if why:
        unavailable(why)
    try:
        with local_slurm(tmp_path_factory.mktemp("slurm")) as env:
            yield env
    except SlurmUnavailable as e:
        unavailable(str(e))


STEPS = """#!/bin/sh
# one genomics sample: synthetic reads -> minimap2 -> samtools sort (spilling) -> index
set -e
i=$SLURM_ARRAY_TASK_ID
{py} -m iolens data synth -o s$i --ref-size 100000 --pairs 8000 --seed $i --force > /dev/null
minimap2 -a -t 1 s$i/ref.fa s$i/reads_1.fq.gz 2> /dev/null > s$i/aln.sam
samtools sort -m 1M -T s$i/tmp -o s$i/aln.bam s$i/aln.sam 2> /dev/null
samtools index s$i/aln.bam
"""


def test_slurm_array_of_genomics_steps(slurm, tmp_path):
    cap = tmp_path / "cap"
    (cap / "parts").mkdir(parents=True)
    script = tmp_path / "steps.sh"
    script.write_text(STEPS.format(py=sys.executable))
    script.chmod(0o755)
    export = f"--export=ALL,LD_PRELOAD={preload_lib()},IOLENS_DIR={cap}/parts"
    job = subprocess.run(["sbatch", "--parsable", "-J", "genomics", "--array=1-4", "-o", f"{tmp_path}/%A_%a.out",
                          "-D", str(tmp_path), export, str(script)], env=slurm, check=True, capture_output=True,
                         text=True).stdout.strip()
    wait_jobs(slurm, job)
    rep, rc = pipeline_json(cap)
    assert rc == 0, rep["not_profiled"]
    assert rep["totals"]["tasks"] == 4 and [r["rule"] for r in rep["rules"]] == ["genomics"]
    assert len({t["names"]["slurm"]["job_id"] for t in rep["tasks"]}) == 4
    rule = rep["rules"][0]
    assert rule["temp_files"] > 0 and rule["storage"]["spills"]
    assert all((tmp_path / f"s{i}" / "aln.bam.bai").exists() for i in range(1, 5))
    assert_rules_equal_sums(rep, independent_sums(cap))


def test_slurm_task_prolog_lists_a_stripped_task(slurm, tmp_path):
    cap = tmp_path / "cap"
    pro = tmp_path / "prolog.sh"
    pro.write_text(iolens("wrap", "slurm", "--task-prolog", "-d", cap, check=True).stdout)
    pro.chmod(0o755)
    task = tmp_path / "task.sh"  # task 2 strips its environment
    task.write_text("i=$SLURM_ARRAY_TASK_ID\n[ $i = 2 ] && exec env -i /bin/sh -c 'seq 1 99 > b'\nseq 1 999 > a$i\n")
    job = subprocess.run(["sbatch", "--parsable", "-J", "count", "--array=1-3", "-D", str(tmp_path), "-o", "/dev/null",
                          "--wrap", f"srun --task-prolog={pro} sh {task}"], env=slurm, check=True,
                         capture_output=True, text=True).stdout.strip()
    wait_jobs(slurm, job)
    rep, rc = pipeline_json(cap)
    assert rc == 3
    got = sorted(t["names"]["slurm"]["array_task_id"] for t in rep["tasks"] if t["rule"] == "count")
    assert got == ["1", "3"]
    assert [n["names"]["slurm"]["array_task_id"] for n in rep["not_profiled"]] == ["2"]


SNAKEFILE = """
SAMPLES = ["a", "b", "c"]
rule all:
    input: expand("{{s}}.bam.bai", s=SAMPLES)
rule synth:
    output: "{{s}}/ref.fa", "{{s}}/reads_1.fq.gz"
    shell: "{py} -m iolens data synth -o {{wildcards.s}} --ref-size 100000 --pairs 1500 --force > /dev/null"
rule map:
    input: "{{s}}/ref.fa", "{{s}}/reads_1.fq.gz"
    output: "{{s}}.sam"
    shell: "minimap2 -a -t 1 {{input}} > {{output}} 2> /dev/null"
rule sort:
    input: "{{s}}.sam"
    output: "{{s}}.bam"
    shell: "samtools sort -m 1M -T {{wildcards.s}}.tmp -o {{output}} {{input}} 2> /dev/null"
rule index:
    input: "{{s}}.bam"
    output: "{{s}}.bam.bai"
    shell: "samtools index {{input}}"
"""


def _snakemake(tmp_path: Path, cap: Path, env: dict, *extra: str, on_engine: bool = True) -> Path:
    exe = Path(sys.executable).with_name("snakemake")
    if not exe.exists():
        pytest.skip("snakemake is not installed (pip install '.[test]')")
    (tmp_path / "Snakefile").write_text(SNAKEFILE.format(py=sys.executable))
    (cap / "parts").mkdir(parents=True)
    run_env = dict(env, LD_PRELOAD=preload_lib(), IOLENS_DIR=f"{cap}/parts") if on_engine else env
    subprocess.run([str(exe), "--cores", "2", *extra], cwd=tmp_path, env=run_env, check=True,
                   capture_output=True, timeout=150)
    return max((tmp_path / ".snakemake" / "log").glob("*.snakemake.log"))


def _check_snakemake(tmp_path: Path, cap: Path, log: Path) -> dict:
    rep, rc = pipeline_json(cap, "--snakemake-log", str(log))
    assert rc == 0, rep["not_profiled"]
    rules = {r["rule"]: r["tasks"] for r in rep["rules"] if not r["rule"].startswith("(")}
    assert rules == {"synth": 3, "map": 3, "sort": 3, "index": 3}
    wc = sorted(t["names"]["snakemake"]["wildcards"]["s"] for t in rep["tasks"] if t["rule"] == "sort")
    assert wc == ["a", "b", "c"]
    return rep


def test_snakemake_local(tmp_path):
    cap = tmp_path / "cap"
    log = _snakemake(tmp_path, cap, dict(os.environ))
    rep = _check_snakemake(tmp_path, cap, log)
    assert_rules_equal_sums(rep, independent_sums(cap, log))


def test_snakemake_local_without_its_log_names_rules_from_its_metadata(tmp_path):
    """Snakemake's log removed (and not given): each job's rule comes from the record Snakemake keeps of its
    outputs in `.snakemake/metadata`, not from the program the job ran."""
    import shutil

    cap = tmp_path / "cap"
    log = _snakemake(tmp_path, cap, dict(os.environ))
    shutil.rmtree(log.parent)
    assert list((tmp_path / ".snakemake" / "metadata").iterdir())
    rep, rc = pipeline_json(cap)
    assert rc == 0, rep["not_profiled"]
    rules = {r["rule"]: r["tasks"] for r in rep["rules"]}
    assert {k: rules.get(k) for k in ("synth", "map", "sort", "index")} == dict.fromkeys(
        ("synth", "map", "sort", "index"), 3), rules
    assert "samtools" not in rules and "minimap2" not in rules, rules
    sort = [t for t in rep["tasks"] if t["rule"] == "sort"]
    assert sorted(t["names"]["snakemake"]["output"] for t in sort) == ["a.bam", "b.bam", "c.bam"]


def test_snakemake_through_slurm(slurm, tmp_path):
    cap = tmp_path / "cap"
    # as `iolens wrap snakemake` says: the submit command carries the variables (a profiled snakemake
    # hides them from the programs it runs, sbatch included)
    export = f"--export=ALL,LD_PRELOAD={preload_lib()},IOLENS_DIR={cap}/parts"
    log = _snakemake(tmp_path, cap, slurm, "--executor", "cluster-generic", "--cluster-generic-submit-cmd",
                     f"sbatch --parsable -p debug -o /dev/null {export}", "--jobs", "4", "--latency-wait", "5",
                     # a look at the jobs each second, not Snakemake's 10: each of the four rules waits for one
                     "--seconds-between-status-checks", "1", on_engine=False)
    rep = _check_snakemake(tmp_path, cap, log)
    assert_rules_equal_sums(rep, independent_sums(cap, log))
