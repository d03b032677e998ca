"""What `iolens wrap` prints: the lines that turn profiling on with the scheduler's or engine's own mechanism.

Every snippet puts the interposer in LD_PRELOAD and points IOLENS_DIR at the capture directory's `parts/`;
no Python runs per task.  The Slurm TaskProlog also gives each task its own entry (with the job's names), so a
task that loses the interposer is listed as not profiled.
"""

from __future__ import annotations

import shlex

TASK_PROLOG = r"""#!/bin/sh
# iolens TaskProlog: one capture entry per Slurm task, named host.job_array.step.task.pid.time (never shared);
# every program it starts is a task's cost, so the host name is read, not asked of hostname
d={parts}
read -r h 2>/dev/null < /proc/sys/kernel/hostname || h=$(hostname)
h=${{h%%.*}}
n="$h.j${{SLURM_ARRAY_JOB_ID:-$SLURM_JOB_ID}}${{SLURM_ARRAY_TASK_ID:+_$SLURM_ARRAY_TASK_ID}}"
n="$n.${{SLURM_STEP_ID:-0}}.${{SLURM_PROCID:-0}}.$$.$(date +%s%N)"
{{ [ -d "$d" ] || mkdir -p "$d"; }} && mkdir "$d/$n" || exit 0
f='{{"host":"%s","names":{{"slurm":{{"job_id":"%s","job_name":"%s","array_job_id":"%s",'
f="$f"'"array_task_id":"%s","array_task_count":"%s","step_id":"%s"}}}}}}\n'
printf "$f" \
  "$h" "$SLURM_JOB_ID" "$SLURM_JOB_NAME" "$SLURM_ARRAY_JOB_ID" "$SLURM_ARRAY_TASK_ID" "$SLURM_ARRAY_TASK_COUNT" \
  "$SLURM_STEP_ID" > "$d/$n/.task.json.tmp" && mv "$d/$n/.task.json.tmp" "$d/$n/task.json"
echo "export IOLENS_DIR=$d/$n"
echo "export LD_PRELOAD={lib}${{LD_PRELOAD:+ $LD_PRELOAD}}"
"""


def task_prolog(lib: str, capture_dir: str) -> str:
    return TASK_PROLOG.format(parts=shlex.quote(f"{capture_dir}/parts"), lib=shlex.quote(lib))


def slurm(lib: str, capture_dir: str) -> str:
    parts = shlex.quote(f"{capture_dir}/parts")
    return f"""# Slurm, per job: the job's environment reaches every task (no Python per task)
mkdir -p {parts}
sbatch --export=ALL,LD_PRELOAD={shlex.quote(lib)},IOLENS_DIR={parts} job.sh
# or for every task of a job with its own entry (tasks that lose the interposer are then listed as not
# profiled): save the TaskProlog below as iolens-prolog.sh, chmod +x, and run
#   srun --task-prolog=$PWD/iolens-prolog.sh ...   (or TaskProlog=/path/iolens-prolog.sh in slurm.conf)
# then: iolens report {shlex.quote(capture_dir)}
{task_prolog(lib, capture_dir)}"""


def snakemake(lib: str, capture_dir: str) -> str:
    parts = shlex.quote(f"{capture_dir}/parts")
    q = shlex.quote(lib)
    return f"""# Snakemake, local execution: the variables set on the snakemake process reach every rule; the engine's
# own process and its helpers are set aside in the report
mkdir -p {parts}
LD_PRELOAD={q} IOLENS_DIR={parts} snakemake --cores 2 ...
# Snakemake through Slurm (generic cluster executor): the submit command carries them to every job (a
# profiled snakemake hides them from the programs it starts, sbatch included, so set them here instead)
snakemake --executor cluster-generic --jobs 100 \\
  --cluster-generic-submit-cmd "sbatch --parsable --export=ALL,LD_PRELOAD={lib},IOLENS_DIR={parts}" ...
# then, naming each task's rule and wildcards and listing the jobs that left no records:
iolens report {shlex.quote(capture_dir)} --snakemake-log .snakemake/log/LATEST.snakemake.log
"""


def nextflow(lib: str, capture_dir: str) -> str:
    parts = f"{capture_dir}/parts"
    return f"""// Nextflow: add to nextflow.config (or pass with -c iolens.config); then: iolens report {capture_dir}
// Containers: the library and the capture directory must be visible inside the container, e.g.
//   docker.runOptions = '-v {lib}:{lib}:ro -v {parts}:{parts}'   (Singularity/Apptainer: -B the same paths)
// A task whose image is a static binary or whose container does not mount them is listed as not profiled.
env {{
    LD_PRELOAD = '{lib}'
    IOLENS_DIR = '{parts}'
}}
process {{
    beforeScript = 'mkdir -p {parts}'
}}
"""


ENGINES = {"slurm": slurm, "snakemake": snakemake, "nextflow": nextflow}
