"""What a capture directory holds, as a list of tasks (without reading more than each part's first records).

    DIR/NAME.iolens          one task recorded by `iolens profile --capture-dir DIR` (merged, written atomically)
    DIR/parts/NAME/          one task whose entry a scheduler hook made (Slurm TaskProlog, Nextflow beforeScript):
                             task.json (the workflow's names) and the interposer's *.part files
    DIR/parts/*.part         parts of tasks that were given only the environment (IOLENS_DIR=DIR/parts): grouped
                             into tasks here by host and process tree (a Nextflow task: by its work directory);
                             a workflow engine's own process is set aside and each of its children is a task

An entry with task.json and no part is a task that ran unprofiled (its environment was stripped, or it ran a
static binary).  A part directory still named `.NAME.tmp` never finished.
"""

from __future__ import annotations

import json
import os
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from iolens.capture.layout import current_layouts, parse_schema
from iolens.capture.reader import argv_of, env_of
from iolens.capture.walk import iter_records
from iolens.pipeline.naming import workflow_names

HEAD_BYTES = 64 << 10  # a part's PROC and STRING records come first
ENGINES = ("snakemake", "nextflow")


@dataclass
class PartHead:
    path: str
    pid: int
    ppid: int
    start_mono: int
    start_real: int
    host: str
    argv: list[str]
    cwd: str
    env: dict[str, str]
    execed: bool = False  # the image was replaced by exec: the next image with this pid continues it


@dataclass
class Task:
    """One task of the pipeline: where its records are, and the names the workflow gives it."""

    id: str
    kind: str  # capture (a merged .iolens), parts (its own directory), loose (grouped from DIR/parts)
    paths: list[str]
    names: dict[str, Any] = field(default_factory=dict)
    info: dict[str, Any] = field(default_factory=dict)  # task.json: host, start, mounts, command when known


def read_head(path: str) -> PartHead | None:
    """The identity of one part (pid, parent, host, command, start) from its first records."""
    from iolens import _format as F

    try:
        with open(path, "rb") as fh:
            data = fh.read(HEAD_BYTES)
    except OSError:
        return None
    problems: list[str] = []
    head = PartHead(path, 0, 0, 0, 0, "", [], "", {})
    layouts: dict[str, Any] = current_layouts()  # a compact part has no SCHEMA: this build's (capture/merge.py)
    try:
        for rec in iter_records(data, path, problems):
            if rec.kind == "SCHEMA":
                layouts = {lay.kind: lay for lay in parse_schema(rec.payload, path).values()}
            elif rec.kind == "PROC":
                p = layouts["PROC"].decode(rec.payload)
                head.pid, head.ppid, head.start_mono, head.start_real = (p["pid"], p["ppid"], p["start_mono"],
                                                                        p["start_real"])
                head.execed = bool(p["flags"] & F.PROC_FLAGS["EXECED"][0])
            elif rec.kind == "STRING":
                lay = layouts["STRING"]
                s = lay.decode(rec.payload)
                text = bytes(rec.payload[lay.size: lay.size + s["len"]]).decode("utf-8", "replace")
                what = s["what"]
                if what == F.STRING_KINDS["ARGV"]:
                    head.argv = argv_of(text)
                elif what == F.STRING_KINDS["CWD"]:
                    head.cwd = text
                elif what == F.STRING_KINDS["HOST"]:
                    head.host = text
                elif what == F.STRING_KINDS["ENV"]:
                    head.env = env_of(text)
            elif rec.kind == "FILE":
                break
    except Exception:  # noqa: BLE001 - a damaged head: the part still counts, the analysis reports the damage
        pass
    return head if head.pid else None


def _is_engine(h: PartHead) -> bool:
    words = [os.path.basename(w) for w in h.argv[:3]]
    if any(w.startswith(e) for w in words for e in ENGINES) or (len(h.argv) > 2 and h.argv[1:3] == ["-m", "snakemake"]):
        # a Snakemake job started by a cluster executor is the engine too, but it names the job it runs
        return "--target-jobs" not in h.argv
    return any("nextflow" in w for w in h.argv[:6] if w.endswith(".jar") or w.endswith("Launcher"))


def group_loose(heads: list[PartHead]) -> list[list[PartHead]]:
    """Parts grouped into tasks: one tree of processes per host; an engine's children are each a task.

    A process is a chain of images with one pid, each but the last replaced by exec; a later image with the same
    pid after one that did not exec is another process (pids are reused, within minutes where pid_max is 32768)."""
    images: dict[tuple[str, int], list[PartHead]] = defaultdict(list)  # every image of a (host, pid), by start
    for h in heads:
        images[(h.host, h.pid)].append(h)
    chain_of: dict[int, list[PartHead]] = {}  # id(image) -> its process's images
    for v in images.values():
        v.sort(key=lambda h: h.start_mono)
        chain: list[PartHead] = []
        for h in v:
            if chain and not chain[-1].execed:
                chain = []
            chain.append(h)
            chain_of[id(h)] = chain

    def parent(h: PartHead) -> PartHead | None:
        """The first image of the process that started `h`'s process (h being its first image)."""
        cands = [p for p in images.get((h.host, h.ppid), []) if p.start_mono <= h.start_mono]
        return chain_of[id(cands[-1])][0] if cands else None

    root_of: dict[int, PartHead] = {}

    def root(h: PartHead) -> PartHead:
        key = id(h)
        if key in root_of:
            return root_of[key]
        node = chain_of[key][0]
        chain, seen = [h, node], {id(node)}
        while True:
            par = parent(node)
            if par is None or id(par) in seen or _is_engine(par):
                break
            node = par
            seen.add(id(node))
            chain.append(node)
        for c in chain:
            root_of[id(c)] = node
        return node

    groups: dict[Any, list[PartHead]] = defaultdict(list)
    for h in heads:
        r = root(h)
        if _is_engine(r):
            continue  # the engine's own process: not a task
        # a Nextflow task's wrapper (.command.run) sets the interposer for its children only, so its processes
        # are several trees: the work directory it names them by makes them one task
        wd = h.env.get("NXF_TASK_WORKDIR")
        groups[("nextflow", h.host, wd) if wd else id(r)].append(h)
    return list(groups.values())


def _task_json(d: Path) -> dict[str, Any]:
    try:
        return json.loads((d / "task.json").read_text())
    except (OSError, ValueError):
        return {}


def scan(root: Path) -> tuple[list[Task], list[Task]]:
    """(tasks with records, tasks known to have run without any)."""
    tasks: list[Task] = []
    unprofiled: list[Task] = []
    for p in sorted(root.glob("*.iolens")):
        tasks.append(Task(p.stem, "capture", [str(p)]))
    parts = root / "parts"
    if parts.is_dir():
        for d in sorted(x for x in parts.iterdir() if x.is_dir()):
            info = _task_json(d)
            files = sorted(str(f) for f in d.glob("*.part"))
            name = d.name[1:-4] if d.name.startswith(".") and d.name.endswith(".tmp") else d.name
            if d.name != name:
                info.setdefault("unfinished", True)
            t = Task(name, "parts", files, dict(info.get("names") or {}), info)
            (tasks if files else unprofiled).append(t)
        heads = [h for h in (read_head(str(f)) for f in sorted(parts.glob("*.part"))) if h is not None]
        for group in group_loose(heads):
            group.sort(key=lambda h: h.start_mono)
            r = group[0]
            names: dict[str, Any] = {}
            for h in group:  # the first process that names each thing (a job script's child names its rule)
                for k, v in workflow_names(h.argv, h.env, h.cwd).items():
                    names.setdefault(k, v)
            tid = f"{r.host}.{r.pid}.{r.start_real}"
            tasks.append(Task(tid, "loose", [h.path for h in group], names,
                              {"host": r.host, "command": r.argv, "cwd": r.cwd}))
    return tasks, unprofiled

