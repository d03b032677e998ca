"""The workflow's names for a task, and entry names that never collide between concurrent tasks.

An entry name is `host.ids.pid.time_ns` where ids are the scheduler's or engine's (Slurm job, array index, step,
task; Snakemake job; Nextflow task hash) when the environment gives them.  Host + pid + nanosecond time is
unique on its own; the ids only make the listing readable.  Entries are created with an exclusive create
(O_EXCL / mkdir) under a temporary name and renamed into place when whole: no locks, safe on NFS.
"""

from __future__ import annotations

import base64
import json
import os
import re
import shlex
import socket
import time
from collections.abc import Mapping, Sequence
from typing import Any

SLURM_KEYS = {"SLURM_JOB_ID": "job_id", "SLURM_JOB_NAME": "job_name", "SLURM_ARRAY_JOB_ID": "array_job_id",
              "SLURM_ARRAY_TASK_ID": "array_task_id", "SLURM_ARRAY_TASK_COUNT": "array_task_count",
              "SLURM_STEP_ID": "step_id", "SLURM_PROCID": "proc_id"}
SAFE = re.compile(r"[^A-Za-z0-9_+-]+")
# the task's name in .command.run: `# NEXTFLOW TASK: NAME (TAG)` (older releases) or `### name: 'NAME (TAG)'` (24.10)
NXF_HEADER = re.compile(r"^(?:# NEXTFLOW TASK: (?P<name>.+?)(?: \((?P<tag>.*)\))?|### name: '(?P<name2>.+?)"
                        r"(?: \((?P<tag2>.*)\))?')$", re.M)
TARGET_JOBS = re.compile(r"^(?P<rule>[A-Za-z_][\w]*)(?::(?P<wc>.*))?$")
# Slurm job names the engines give: Snakemake's job script `snakejob.RULE.JOBID.sh` (sbatch names a job after its
# script), Nextflow's `nf-NAME_(TAG)` (its task name, with ' ', '/', ':' ... written as '_')
SNAKEJOB = re.compile(r"^snakejob\.(?P<rule>[A-Za-z_]\w*)\.(?P<jobid>\d+)\.sh$")
NFJOB = re.compile(r"^nf-(?P<name>[^()]+?)(?:_\((?P<tag>.*)\))?$")


def safe(text: str, limit: int = 40) -> str:
    return SAFE.sub("_", text)[:limit].strip("_") or "x"


def slurm_names(env: Mapping[str, str]) -> dict[str, str]:
    return {name: env[key] for key, name in SLURM_KEYS.items() if env.get(key)}


def snakemake_names(argv: Sequence[str], env: Mapping[str, str]) -> dict[str, Any]:
    """Rule and wildcards from a Snakemake job's command line (`--target-jobs rule:k=v,...`), when visible."""
    words = list(argv)
    if len(words) >= 3 and words[-2] == "-c" and os.path.basename(words[0]) in ("sh", "bash", "dash"):
        try:
            words = words + shlex.split(words[-1])
        except ValueError:
            pass
    for i, w in enumerate(words):
        if w == "--target-jobs" and i + 1 < len(words):
            m = TARGET_JOBS.match(words[i + 1].strip("'\""))
            if m:
                wc = dict(kv.split("=", 1) for kv in (m["wc"] or "").split(",") if "=" in kv)
                return {"rule": m["rule"], "wildcards": wc}
    rule = env.get("SNAKEMAKE_RULE")
    return {"rule": rule} if rule else {}


def nextflow_names(cwd: str, env: Mapping[str, str]) -> dict[str, str]:
    """Process name and task hash of a Nextflow task: its work directory (…/work/ab/cdef…) and `.command.run`."""
    workdir = env.get("NXF_TASK_WORKDIR") or cwd
    parts = workdir.rstrip("/").split("/")
    if len(parts) < 3 or not re.fullmatch(r"[0-9a-f]{2}", parts[-2]) or not re.fullmatch(r"[0-9a-f]{6,}", parts[-1]):
        return {}
    out = {"hash": f"{parts[-2]}/{parts[-1][:6]}"}
    try:
        with open(os.path.join(workdir, ".command.run"), encoding="utf-8", errors="replace") as fh:
            m = NXF_HEADER.search(fh.read(4096))
        if m:
            out["process"] = (m["name"] or m["name2"]).replace("''", "'")
            if m["tag"] or m["tag2"]:
                out["tag"] = (m["tag"] or m["tag2"]).replace("''", "'")
    except OSError:
        pass
    return out


def nextflow_exit(workdir: str) -> int | None:
    """The exit status Nextflow's `.command.run` wrote to `.exitcode` in the task's work directory."""
    try:
        with open(os.path.join(workdir, ".exitcode"), encoding="ascii", errors="replace") as fh:
            return int(fh.read(16).strip())
    except (OSError, ValueError):
        return None


_METADATA_DIRS: dict[str, str | None] = {}


def _metadata_dir(directory: str) -> str | None:
    """The Snakemake working directory at or above `directory` (the one holding `.snakemake/metadata`)."""
    seen = []
    d = directory
    while d not in _METADATA_DIRS:
        seen.append(d)
        if os.path.isdir(os.path.join(d, ".snakemake", "metadata")):
            _METADATA_DIRS[d] = d
            break
        parent = os.path.dirname(d)
        if parent == d:
            _METADATA_DIRS[d] = None
            break
        d = parent
    found = _METADATA_DIRS[d]
    for x in seen:
        _METADATA_DIRS[x] = found
    return found


def _metadata_path(meta: str, output: str) -> str:
    """Where Snakemake keeps an output's record (`persistence.py`): the path as the rule names it, URL-safe
    base64, cut into pieces of at most NAME_MAX - 1 characters with every piece but the last an `@` directory."""
    b64 = base64.urlsafe_b64encode(output.encode()).decode()
    try:
        step = os.pathconf(meta, "PC_NAME_MAX") - 1
    except (OSError, ValueError):
        step = 254
    pieces = [b64[i:i + step] for i in range(0, len(b64), step)]
    return os.path.join(meta, *["@" + p for p in pieces[:-1]], pieces[-1])


def snakemake_metadata(written: Sequence[str]) -> dict[str, Any]:
    """Rule of the Snakemake job that made one of these files, from the record Snakemake keeps of each output in
    `.snakemake/metadata/` of its working directory (written when the job ends, log or no log)."""
    for path in written:
        root = _metadata_dir(os.path.dirname(path) or "/")
        if root is None:
            continue
        meta = os.path.join(root, ".snakemake", "metadata")
        for name in (os.path.relpath(path, root), path):  # as the rule names it: relative, or absolute
            try:
                with open(_metadata_path(meta, name), encoding="utf-8") as fh:
                    rec = json.load(fh)
            except (OSError, ValueError):
                continue
            if isinstance(rec, dict) and isinstance(rec.get("rule"), str):
                return {"rule": rec["rule"], "output": name, "from": "metadata"}
    return {}


def left_behind_names(cwd: str, written: Sequence[str]) -> dict[str, Any]:
    """The names a task gets from what its engine left on disk, for a task the environment did not name:
    Snakemake's `.snakemake/metadata` record of an output it wrote, Nextflow's work directory (`.command.run`'s
    name, `.exitcode`)."""
    names: dict[str, Any] = {}
    if s := snakemake_metadata(written):
        names["snakemake"] = s
    if cwd and (nf := nextflow_names(cwd, {})):
        code = nextflow_exit(cwd)
        names["nextflow"] = dict(nf, **({"exitcode": code} if code is not None else {}))
    return names


def workflow_names(argv: Sequence[str], env: Mapping[str, str], cwd: str = "") -> dict[str, Any]:
    """Every name the environment, the command line and the work directory give this task."""
    names: dict[str, Any] = {}
    if s := slurm_names(env):
        names["slurm"] = s
    if s := snakemake_names(argv, env):
        names["snakemake"] = s
    if s := nextflow_names(cwd, env):
        names["nextflow"] = s
    return names


def slurm_job_rule(job_name: str) -> str:
    """The rule in a Slurm job name an engine made (`snakejob.sort.7.sh` -> sort, `nf-ALIGN_(s1)` -> ALIGN), else
    the job name itself."""
    if m := SNAKEJOB.match(job_name):
        return m["rule"]
    if m := NFJOB.match(job_name):
        return m["name"]
    return job_name


def has_rule(names: Mapping[str, Any]) -> bool:
    """Whether the workflow's names give a task its rule (else it is named by its program)."""
    return rule_of(names, "") != "" and not names.get("engine")


def rule_of(names: Mapping[str, Any], fallback: str) -> str:
    """The rule (or process, or job name) a task belongs to, in order of precision."""
    if "snakemake" in names and names["snakemake"].get("rule"):
        return str(names["snakemake"]["rule"])
    if "nextflow" in names and names["nextflow"].get("process"):
        return str(names["nextflow"]["process"]).split(" (")[0]
    if "slurm" in names and names["slurm"].get("job_name"):
        return slurm_job_rule(str(names["slurm"]["job_name"]))
    if names.get("engine"):  # a helper the engine ran for itself (it wrote no job's output)
        return f"({names['engine']}) {fallback}"
    return fallback


def entry_name(names: Mapping[str, Any], *, host: str | None = None, pid: int | None = None,
               now_ns: int | None = None) -> str:
    """`host.ids.pid.time_ns`: unique per host, pid and nanosecond, readable by its ids."""
    ids = []
    s = names.get("slurm", {})
    if s.get("job_id"):
        job = s.get("array_job_id") or s["job_id"]
        ids.append(f"j{job}" + (f"_{s['array_task_id']}" if s.get("array_task_id") else ""))
    sm = names.get("snakemake", {})
    if sm.get("rule"):
        ids.append(sm["rule"])
    nf = names.get("nextflow", {})
    if nf.get("hash"):
        ids.append(nf["hash"].replace("/", ""))
    host = host or socket.gethostname().split(".")[0]
    pid = os.getpid() if pid is None else pid
    now_ns = time.time_ns() if now_ns is None else now_ns
    return ".".join([safe(host)] + [safe(i) for i in ids] + [str(pid), str(now_ns)])
