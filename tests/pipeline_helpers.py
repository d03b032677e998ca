"""Shared by the pipeline tests: the interposer's path, a TaskProlog run by hand, sums over task captures, and
Nextflow (its jars from Maven Central, as Nextflow is in no Python or Debian package)."""

from __future__ import annotations

import json
import os
import shlex
import shutil
import subprocess
import tempfile
from pathlib import Path

from conftest import iolens


def preload_lib() -> str:
    from iolens.native import preload_library

    return str(preload_library())


def prolog(tmp: Path, capture: Path) -> Path:
    """The TaskProlog `iolens wrap slurm --task-prolog` prints, saved as a script."""
    p = tmp / "prolog.sh"
    p.write_text(iolens("wrap", "slurm", "--task-prolog", "-d", capture, check=True).stdout)
    p.chmod(0o755)
    return p


def run_task(prolog_sh: Path, cmd: str, env: dict[str, str], cwd: Path, strip: bool = False) -> subprocess.Popen:
    """One task as Slurm starts it: the prolog's exports, then the command (`env -i` when `strip`)."""
    q = shlex.quote(cmd)
    inner = f"exec env -i /bin/sh -c {q}" if strip else f"exec sh -c {q}"
    script = f'eval "$({prolog_sh})"; {inner}'
    return subprocess.Popen(["sh", "-c", script], env=env, cwd=cwd)


def pipeline_json(capture: Path, *extra: str) -> tuple[dict, int]:
    res = iolens("report", capture, "--json", "-", *extra)
    assert res.returncode in (0, 3), res.stderr
    return json.loads(res.stdout), res.returncode


def independent_sums(capture: Path, snakemake_log: Path | None = None) -> dict[str, dict[str, float]]:
    """Per rule, the sums of each task's capture analysed alone (not through the pipeline merge); with a
    Snakemake log, a task is the job whose output it wrote."""
    from iolens.pipeline.expected import outputs_index, snakemake_jobs
    from iolens.analysis.report import build_report
    from iolens.pipeline.naming import rule_of
    from iolens.pipeline.scan import scan
    from iolens.pipeline.task import load_task

    sums: dict[str, dict[str, float]] = {}
    tasks, _ = scan(capture)
    for t in tasks:
        cap = load_task(t)
        rep = build_report(cap)
        first = min(cap.processes, key=lambda p: p.start_mono)
        root = max((p for p in cap.processes if p.pid == first.pid), key=lambda p: p.start_mono)
        names = dict(t.names or cap.meta.get("workflow") or {})
        if snakemake_log and "snakemake" not in names:
            outs = outputs_index(snakemake_jobs(snakemake_log))
            job = next((outs[f.path] for f in rep.files if f.path in outs and f.bytes_written), None)
            names.update(snakemake=job) if job else names.update(engine="snakemake")
        rule = rule_of(names, os.path.basename(root.argv[0]))
        s = sums.setdefault(rule, {"tasks": 0, "bytes_written": 0, "bytes_read": 0, "io_s": 0.0})
        s["tasks"] += 1
        s["bytes_written"] += rep.totals["bytes_written"]
        s["bytes_read"] += rep.totals["bytes_read"]
        s["io_s"] += rep.totals["io_s"]
    return sums


def assert_rules_equal_sums(rep: dict, sums: dict[str, dict[str, float]]) -> None:
    rules = {r["rule"]: r for r in rep["rules"]}
    assert set(rules) == set(sums)
    for name, s in sums.items():
        r = rules[name]
        assert r["tasks"] == s["tasks"], name
        assert r["bytes_written"] == s["bytes_written"], name
        assert r["bytes_read"] == s["bytes_read"], name
        assert abs(r["io_s"] - s["io_s"]) < 1e-6, name


NEXTFLOW = "24.10.0"  # io.nextflow:nextflow on Maven Central, with nf-commons, nf-httpfs and its libraries
NEXTFLOW_POM = f"""<project xmlns="http://maven.apache.org/POM/4.0.0"><modelVersion>4.0.0</modelVersion>
<groupId>iolens.tests</groupId><artifactId>nextflow</artifactId><version>1</version><dependencies><dependency>
<groupId>io.nextflow</groupId><artifactId>nextflow</artifactId><version>{NEXTFLOW}</version></dependency>
</dependencies></project>
"""


def nextflow_command() -> tuple[list[str] | None, str]:
    """(the command that starts Nextflow, or None; why not).  `nextflow` on PATH, else Nextflow's jars resolved
    once with Maven from Maven Central into the user's cache (the PyPI `nextflow` package only holds the launcher,
    which downloads its jar from outside the registries at first run)."""
    if shutil.which("nextflow"):
        return ["nextflow"], ""
    java, mvn = shutil.which("java"), shutil.which("mvn")
    if not (java and mvn):
        return None, "Nextflow needs java and mvn (Debian: openjdk-17-jre-headless, maven)"
    cache = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "iolens-tests" / f"nextflow-{NEXTFLOW}"
    lib = cache / "lib"
    if not lib.is_dir():
        cache.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryDirectory(dir=cache) as tmp:
            (Path(tmp) / "pom.xml").write_text(NEXTFLOW_POM)
            res = subprocess.run([mvn, "-q", "-B", "dependency:copy-dependencies", "-DoutputDirectory=lib"], cwd=tmp,
                                 capture_output=True, text=True, timeout=600)
            if res.returncode != 0:
                return None, f"cannot resolve Nextflow {NEXTFLOW} from Maven Central: {res.stdout[-300:]}"
            os.replace(Path(tmp) / "lib", lib)  # whole, or not at all
    return [java, "-cp", f"{lib}/*", "nextflow.cli.Launcher"], ""
