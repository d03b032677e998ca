"""The tasks a workflow engine says it ran, so that a task without records is listed, never silently missing.

Snakemake's log (`.snakemake/log/*.snakemake.log`) lists each job: rule, outputs, job id and wildcards.  A
task whose processes wrote one of a job's outputs is that job; a job no task matches ran unprofiled.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any

from iolens.errors import UsageError

JOB_START = re.compile(r"^(?:local)?(?:rule|checkpoint) (?P<rule>\w+):\s*$")
FIELD = re.compile(r"^\s+(?P<key>input|output|jobid|wildcards|log): (?P<value>.*)$")


def snakemake_jobs(log: str | os.PathLike[str]) -> list[dict[str, Any]]:
    """Jobs from a Snakemake log: rule, jobid, wildcards, outputs (absolute, resolved against the work dir)."""
    p = Path(log)
    try:
        text = p.read_text(errors="replace")
    except OSError as err:
        raise UsageError(f"{log}: cannot read the Snakemake log ({err.strerror})") from None
    workdir = p.resolve().parent.parent.parent if p.resolve().parent.parent.name == ".snakemake" else Path.cwd()
    jobs: list[dict[str, Any]] = []
    cur: dict[str, Any] | None = None
    for line in text.splitlines():
        m = JOB_START.match(line)
        if m:
            cur = {"rule": m["rule"], "jobid": None, "wildcards": {}, "outputs": []}
            jobs.append(cur)
            continue
        f = FIELD.match(line)
        if cur is None or not f:
            if line and not line.startswith((" ", "\t")):
                cur = None
            continue
        key, value = f["key"], f["value"].strip()
        if key == "output":
            cur["outputs"] = [str(workdir / o.strip()) for o in value.split(",") if o.strip()]
        elif key == "jobid":
            cur["jobid"] = value
        elif key == "wildcards":
            cur["wildcards"] = dict(kv.strip().split("=", 1) for kv in value.split(",") if "=" in kv)
    seen: set[str] = set()
    unique = []
    for j in jobs:  # a job is logged again when it is retried
        if j["jobid"] not in seen:
            seen.add(j["jobid"])
            unique.append(j)
    return unique


def outputs_index(jobs: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    return {o: {"rule": j["rule"], "wildcards": j["wildcards"], "jobid": j["jobid"]}
            for j in jobs for o in j["outputs"]}
