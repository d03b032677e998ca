"""Capture directories and the pipeline report, on this host: naming, killed and stripped tasks, per-rule sums,
the storage-bound rule, the wrap snippets and diff (Slurm and Snakemake: test_pipeline_cluster.py)."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys

import pytest
from conftest import iolens
from pipeline_helpers import assert_rules_equal_sums, independent_sums, pipeline_json, preload_lib, prolog, run_task

pytestmark = pytest.mark.timeout(120)


def test_fifty_concurrent_tasks_never_collide(tmp_path):
    cap = tmp_path / "cap"
    pro = prolog(tmp_path, cap)
    env = dict(os.environ, SLURM_JOB_ID="77", SLURM_JOB_NAME="count", SLURM_ARRAY_JOB_ID="77")
    procs = [run_task(pro, f"seq 1 {1000 + i} > out{i}.txt", dict(env, SLURM_ARRAY_TASK_ID=str(i)), tmp_path)
             for i in range(50)]
    assert [p.wait() for p in procs] == [0] * 50
    entries = sorted((cap / "parts").iterdir())
    assert len(entries) == 50 and len({e.name for e in entries}) == 50
    # and the merged path (iolens profile --capture-dir, a Python start-up per task): 16 at once
    flat = tmp_path / "flat"
    procs = [subprocess.Popen([sys.executable, "-m", "iolens", "profile", "--capture-dir", str(flat), "--",
                               "sh", "-c", f"echo {i} > o{i}"], cwd=tmp_path, env=env) for i in range(16)]
    assert [p.wait() for p in procs] == [0] * 16
    assert len(list(flat.glob("*.iolens"))) == 16 and not list(flat.glob(".*"))
    rep, rc = pipeline_json(cap)
    assert rc == 0 and rep["totals"]["tasks"] == 50
    assert {t["names"]["slurm"]["array_task_id"] for t in rep["tasks"]} == {str(i) for i in range(50)}
    assert rep["rules"][0]["rule"] == "count"
    assert rep["rules"][0]["bytes_written"] == sum(len("".join(f"{n}\n" for n in range(1, 1001 + i)))
                                                  for i in range(50))


def test_killed_task_reads_as_partial(tmp_path):
    cap = tmp_path / "cap"
    pro = prolog(tmp_path, cap)
    env = dict(os.environ, SLURM_JOB_ID="5", SLURM_JOB_NAME="killed")
    p = run_task(pro, "seq 1 5000 > a.txt; kill -KILL $$", env, tmp_path)
    assert p.wait() == -9
    ok = run_task(pro, "seq 1 10 > b.txt", dict(env, SLURM_JOB_NAME="fine"), tmp_path)
    assert ok.wait() == 0
    rep, rc = pipeline_json(cap)
    assert rc == 3
    partial = {t["rule"]: t["partial"] for t in rep["tasks"]}
    assert partial == {"killed": True, "fine": False}
    killed = next(r for r in rep["rules"] if r["rule"] == "killed")
    assert killed["bytes_written"] == len("".join(f"{n}\n" for n in range(1, 5001)))
    text = iolens("report", cap)
    assert text.returncode == 3 and "partial tasks" in text.stdout and "Traceback" not in text.stderr


def test_stripped_environment_is_listed_as_not_profiled(tmp_path):
    cap = tmp_path / "cap"
    pro = prolog(tmp_path, cap)
    env = dict(os.environ, SLURM_JOB_ID="9", SLURM_JOB_NAME="stripped", SLURM_ARRAY_TASK_ID="1")
    assert run_task(pro, "seq 1 10 > a.txt", env, tmp_path, strip=True).wait() == 0
    assert run_task(pro, "seq 1 10 > b.txt", dict(env, SLURM_JOB_NAME="kept"), tmp_path).wait() == 0
    rep, rc = pipeline_json(cap)
    assert rc == 3
    assert [t["rule"] for t in rep["tasks"]] == ["kept"]
    assert [n["names"]["slurm"]["job_name"] for n in rep["not_profiled"]] == ["stripped"]
    assert "exec'd a program that left no records" in rep["not_profiled"][0]["why"]
    assert "not profiled" in iolens("report", cap).stdout


def _loose(tmp_path, cap, cmd: str) -> None:
    """A task given only the environment (as Snakemake or `sbatch --export` pass it on)."""
    (cap / "parts").mkdir(parents=True, exist_ok=True)
    env = dict(os.environ, LD_PRELOAD=preload_lib(), IOLENS_DIR=str(cap / "parts"))
    subprocess.run(["sh", "-c", cmd], env=env, cwd=tmp_path, check=True)


def test_storage_bound_rule_is_named_and_rules_sum_their_tasks(tmp_path):
    cap = tmp_path / "cap"
    for i in range(3):  # one rule of synchronous small writes, among rules that only compute or stream
        _loose(tmp_path, cap, f"exec dd if=/dev/zero of=spill{i}.tmp bs=512 count=400 oflag=dsync status=none")
        _loose(tmp_path, cap, "exec awk 'BEGIN{for(i=0;i<300000;i++)s+=i*i; print s}' > /dev/null")
        _loose(tmp_path, cap, f"exec head -c 4000000 /dev/zero > big{i}.bin")
    rep, rc = pipeline_json(cap)
    assert rc == 0 and rep["totals"]["tasks"] == 9
    assert rep["storage_bound"][0]["rule"] == "dd"  # loose tasks are named by their program
    spill = next(r for r in rep["rules"] if r["rule"] == "dd")
    assert spill["advice_line"].startswith("rule dd: ") and "writes to " in spill["advice_line"]
    assert {r["rule"] for r in rep["rules"]} == {"dd", "awk", "head"}
    assert all(r["rule"] != "awk" for r in rep["storage_bound"])
    assert_rules_equal_sums(rep, independent_sums(cap))


def test_wrap_snippets_use_each_engines_mechanism(tmp_path):
    lib = preload_lib()
    slurm = iolens("wrap", "slurm", "-d", tmp_path / "c", check=True).stdout
    assert f"--export=ALL,LD_PRELOAD={lib},IOLENS_DIR={tmp_path}/c/parts" in slurm and "TaskProlog" in slurm
    smk = iolens("wrap", "snakemake", "-d", tmp_path / "c", check=True).stdout
    assert f"LD_PRELOAD={lib} IOLENS_DIR={tmp_path}/c/parts snakemake" in smk
    assert f'cluster-generic-submit-cmd "sbatch --parsable --export=ALL,LD_PRELOAD={lib},' in smk
    nf = iolens("wrap", "nextflow", "-d", tmp_path / "c", check=True).stdout
    assert f"LD_PRELOAD = '{lib}'" in nf and f"IOLENS_DIR = '{tmp_path}/c/parts'" in nf
    assert "beforeScript" in nf and "container" in nf.lower()
    assert nf.count("{") == nf.count("}")


def test_diff_compares_two_runs_rule_by_rule(tmp_path):
    a, b = tmp_path / "a", tmp_path / "b"
    _loose(tmp_path, a, "exec dd if=/dev/zero of=x.bin bs=1M count=1 status=none")
    _loose(tmp_path, b, "exec dd if=/dev/zero of=x.bin bs=1M count=3 status=none")
    res = iolens("diff", a, b, "--json", tmp_path / "d.json", check=True)
    assert "\ndd " in res.stdout
    d = json.loads((tmp_path / "d.json").read_text())
    row = next(r for r in d["rules"] if r["rule"] == "dd")
    assert (row["a"]["bytes_written"], row["b"]["bytes_written"]) == (1 << 20, 3 << 20)
    assert d["tag"] == "iolens-pipeline-diff" and d["schema_version"] == [2, 0] and "schema" not in d


def test_report_dir_html_and_errors(tmp_path):
    cap = tmp_path / "cap"
    _loose(tmp_path, cap, "exec dd if=/dev/zero of=x.bin bs=64k count=4 status=none")
    iolens("report", cap, "--html", tmp_path / "p.html", "-q", check=True)
    page = (tmp_path / "p.html").read_text()
    assert 'class="gantt"' in page and "Tasks by host" in page
    # each task on the time axis named by its rule, with its exit status (the command's own, without a wrapper)
    assert 'title="rule dd: ' in page and "exit status 0" in page and "time from the first task" in page
    axis = re.search(r'<div class="axis">(.*?)<span class="title">', page)
    assert axis, "no time axis"
    labels = re.findall(r">([^<]+)</span>", axis.group(1))
    units = {lab.split()[1] for lab in labels}
    assert labels[0] == f"0 {units.pop()}" and not units  # one unit on the axis, from 0
    empty = tmp_path / "empty"
    empty.mkdir()
    res = iolens("report", empty)
    assert res.returncode == 2 and res.stderr.count("\n") == 1 and "no task captures" in res.stderr
    rep, _rc = pipeline_json(cap)
    assert rep["tag"] == "iolens-pipeline" and rep["schema_version"] == [2, 0] and "schema" not in rep


@pytest.mark.parametrize(("span_s", "labels"), [
    (0.0004, ["0 µs", "100 µs", "200 µs", "300 µs", "400 µs"]), (0.9, ["0 ms", "200 ms", "400 ms", "600 ms", "800 ms"]),
    (2.7, ["0 s", "1 s", "2 s"]), (1.0, ["0 s", "0.2 s", "0.4 s", "0.6 s", "0.8 s", "1 s"]),
    (3000, ["0 min", "10 min", "20 min", "30 min", "40 min", "50 min"]), (11000, ["0 h", "1 h", "2 h", "3 h"])])
def test_html_task_time_axis_reads_in_its_own_unit_from_0(span_s, labels):
    from iolens.render.pipeline import time_axis

    ticks = time_axis(span_s)
    assert [lab for _, lab in ticks] == labels
    assert ticks[0][0] == 0 and ticks[-1][0] <= span_s * (1 + 1e-9)


@pytest.mark.parametrize("opt", [("--csv", "x.csv"), ("--chrome-trace", "x.json"), ("--multiqc", "x_mqc.json"),
                                 ("--sample", "S1")])
def test_report_dir_refuses_the_options_of_one_capture(tmp_path, opt):
    """A capture directory takes --html and --json; an option of one capture is refused, not silently ignored."""
    cap = tmp_path / "cap"
    _loose(tmp_path, cap, "exec true")
    res = iolens("report", cap, opt[0], tmp_path / opt[1] if opt[0] != "--sample" else opt[1])
    assert res.returncode == 2 and res.stderr.count("\n") == 1, res.stderr
    assert opt[0] in res.stderr and "capture directory" in res.stderr and "Traceback" not in res.stderr
    assert not (tmp_path / opt[1]).exists()
    one = iolens("report", tmp_path / "nothing.iolens", "--snakemake-log", tmp_path / "log")
    assert one.returncode == 2 and "--snakemake-log" in one.stderr


def test_pipeline_page_in_a_browser_sorts_its_rule_table(tmp_path):
    from helpers.browser import load_page

    cap = tmp_path / "cap"
    _loose(tmp_path, cap, "exec dd if=/dev/zero of=a.bin bs=64k count=2 status=none")
    _loose(tmp_path, cap, "exec head -c 3000000 /dev/zero > b.bin")
    _loose(tmp_path, cap, "exec seq 1 1000 > c.txt")
    html = tmp_path / "p.html"
    iolens("report", cap, "--html", html, "-q", check=True)
    rep, _ = pipeline_json(cap)
    with load_page(html, screenshot=tmp_path / "pipeline.png", width=1280) as page:
        assert page.console_errors == [] and page.console_warnings == [] and page.dialogs == [] and page.blocked == []
        col = "() => Array.from(document.querySelectorAll('#rules tbody tr')).map(r => r.cells[0].textContent)"
        assert page.evaluate(col) == [r["rule"] for r in rep["rules"]]  # as computed: by time
        written = page.raw.locator("#rules th", has_text="written")
        written.click()  # ascending, then descending
        assert page.evaluate(col) == [r["rule"] for r in sorted(rep["rules"], key=lambda r: r["bytes_written"])]
        written.click()
        assert page.evaluate(col) == ["head", "dd", "seq"]
        assert page.evaluate("document.querySelectorAll('#tasks tbody tr').length") == 3
        assert page.evaluate("document.querySelectorAll('.gantt .bar').length") == 3


NEXTFLOW_WORKFLOW = """
process count {
  input: val n
  output: path "n${n}.txt"
  script:
  \"\"\"
  seq 1 ${n}000 > n${n}.txt
  \"\"\"
}
process sortit {
  input: path f
  output: path "sorted.txt"
  script:
  \"\"\"
  sort -rn ${f} > sorted.txt
  \"\"\"
}
workflow { sortit(count(Channel.of(1, 2, 3))) }
"""


@pytest.mark.slow
@pytest.mark.timeout(900)
def test_nextflow_workflow_end_to_end(tmp_path):
    """Nextflow from Maven Central, run locally with the configuration `iolens wrap nextflow` prints: each task
    is one task of its process (its processes are grouped by work directory), named by process and hash."""
    from conftest import unavailable
    from pipeline_helpers import nextflow_command

    nf, why = nextflow_command()
    if nf is None:
        unavailable(why)
    cap = tmp_path / "cap"
    (tmp_path / "iolens.config").write_text(iolens("wrap", "nextflow", "-d", cap, check=True).stdout)
    (tmp_path / "main.nf").write_text(NEXTFLOW_WORKFLOW)
    env = dict(os.environ, NXF_HOME=str(tmp_path / "nxf-home"), NXF_OFFLINE="true", NXF_DISABLE_CHECK_LATEST="true")
    res = subprocess.run([*nf, "-q", "run", "main.nf", "-c", "iolens.config"], cwd=tmp_path, env=env,
                         capture_output=True, text=True, timeout=600)
    assert res.returncode == 0, res.stdout + res.stderr
    rep, rc = pipeline_json(cap)
    assert rc == 0, rep["not_profiled"]
    assert sorted(r["rule"] for r in rep["rules"]) == ["count", "sortit"]
    assert rep["totals"]["tasks"] == 6
    work = {str(d.relative_to(tmp_path / "work"))[:9] for d in (tmp_path / "work").glob("*/*")}
    assert {t["names"]["nextflow"]["hash"] for t in rep["tasks"]} == work
    count = next(r for r in rep["rules"] if r["rule"] == "count")
    assert count["tasks"] == 3
    assert count["bytes_written"] == sum(len("".join(f"{i}\n" for i in range(1, n * 1000 + 1))) for n in (1, 2, 3))
    assert_rules_equal_sums(rep, independent_sums(cap))


def test_a_reused_pid_is_another_task_and_an_exec_is_the_same_process():
    from iolens.pipeline.scan import PartHead, group_loose

    def head(name, pid, ppid, start, execed=False):
        return PartHead(name, pid, ppid, start, start, "h", [name], "/", {}, execed)

    heads = [head("sh1", 100, 1, 10, execed=True), head("tool1", 100, 1, 11), head("child1", 101, 100, 12),
             head("sh2", 100, 1, 50), head("child2", 102, 100, 51)]  # pid 100 again, after tool1 exited
    groups = sorted(sorted(h.path for h in g) for g in group_loose(heads))
    assert groups == [["child1", "sh1", "tool1"], ["child2", "sh2"]]


def test_the_terminal_report_fits_80_columns_with_long_paths_and_names():
    from iolens.render.pipeline import render_text

    where = [{"mount": "/shared/" + "x" * 70, "fstype": "nfs4", "bytes": 1 << 30}]
    rep = {"directory": "/scratch/" + "very-long-directory/" * 6,
           "totals": {"tasks": 3, "rules": 1, "hosts": 1, "not_profiled": 1, "partial": 1, "time_s": 12.0,
                      "io_s": 6.0},
           "storage_bound": [{"rule": "sort_and_index_" * 3, "time_at_stake_s": 6.0, "io_share": 0.5,
                              "advice": "rule sort: 41% of its time is small writes to /shared/tmp on nfs; " * 3}],
           "rules": [{"rule": "sort_and_index_" * 3, "tasks": 3, "time_s": 12.0, "io_s": 6.0, "io_share": 0.5,
                      "bytes_read": 1 << 30, "bytes_written": 1 << 30, "temp_bytes": 1 << 29,
                      "storage": {"reads": where, "writes": where, "spills": where}}],
           "not_profiled": [{"id": "host.j1_2", "rule": "sort", "why": "exec'd a program that left no records " * 3}],
           "tasks": [{"id": "host.j1_1", "rule": "sort", "partial": True, "exit_status": None,
                      "unprofiled": ["/opt/static-binary-with-a-long-name " * 3]}],
           "hosts": [{"host": "node-with-a-long-name-" * 3, "tasks": 3, "wall_s": 12.0, "io_s": 6.0}]}
    text = render_text(rep)
    assert max(len(line) for line in text.splitlines()) <= 80, text
    for word in ("sort_and_index_sort_and_index_sort_and_index_", "41% of its time", "exec'd a program",
                 "static-binary", "partial tasks", "nfs4"):
        assert word in text.replace("\n  ", " ").replace("\n    ", " "), word


def test_tiny_rules_are_never_storage_bound_and_advice_names_the_task_reports():
    """A 6.6 ms all-I/O rule beside a 10 s rule is not storage-bound; a rule with no advice names the command for
    its tasks."""
    from iolens.pipeline.merge import fold

    def task(i, rule, io, compute, advice=()):
        bd = {"compute": compute, "streaming_write": io}
        return {"id": f"t{i}", "rule": rule, "names": {}, "profiled": True, "host": "h", "start_real_ns": i,
                "wall_s": io + compute, "exit_status": 0, "partial": False, "problems": [], "breakdown": bd,
                "io_s": io, "cpu_s": compute, "bytes_read": 0, "bytes_written": 1 << 20, "processes": 1,
                "temp_files": 0, "temp_bytes": 0, "unprofiled": [], "report": f"DIR/parts/{i}-1.part",
                "mounts": [{"mount": "/", "fstype": "ext4", "storage": "local", "bytes_read": 0,
                            "bytes_written": 1 << 20, "time_s": io, "temp_files": 0, "temp_bytes": 0,
                            "breakdown": {"streaming_write": io}}],
                "files": [("/x", "/", "ext4", 0, 1 << 20, io, False)], "advice": list(advice)}

    rep = fold([task(1, "index", 0.0066, 0.0), task(2, "uname", 0.004, 0.0001), task(3, "align", 4.0, 6.0),
                task(4, "align", 5.0, 6.0)], [], "DIR")
    assert [b["rule"] for b in rep["storage_bound"]] == ["align"]
    line = next(r for r in rep["rules"] if r["rule"] == "align")["advice_line"]
    assert "see the task reports" not in line
    assert "`iolens report DIR/parts/4-1.part` or `iolens report DIR/parts/3-1.part`" in line


def test_slurm_job_names_the_engines_give_name_the_rule(tmp_path):
    """sbatch names a job after its script: Snakemake's `snakejob.RULE.JOBID.sh`; Nextflow names its jobs
    `nf-NAME_(TAG)`. Either gives the rule; any other job name is the rule itself."""
    cap = tmp_path / "cap"
    pro = prolog(tmp_path, cap)
    for i, job in enumerate(("snakejob.sort.7.sh", "snakejob.sort.8.sh", "nf-ALIGN_(sample_1)", "my-step")):
        env = dict(os.environ, SLURM_JOB_ID=str(40 + i), SLURM_JOB_NAME=job)
        assert run_task(pro, f"seq 1 {10 + i} > o{i}.txt", env, tmp_path).wait() == 0
    rep, rc = pipeline_json(cap)
    assert rc == 0
    assert sorted((r["rule"], r["tasks"]) for r in rep["rules"]) == [("ALIGN", 1), ("my-step", 1), ("sort", 2)]


NXF_COMMAND_RUN = """#!/bin/bash
### ---
### name: 'ALIGN (sample_{n})'
### container: null
### ...
set -e
nxf_main() {{
    /bin/bash .command.sh > .command.out 2> .command.err || echo $? > .exitcode
    [ -e .exitcode ] || echo 0 > .exitcode
}}
nxf_main
"""


def test_nextflow_work_directories_name_the_process_and_give_the_exit_status(tmp_path):
    """Work directories laid out as Nextflow writes them (`work/ab/cdef.../.command.run`, `.command.sh`, and
    `.exitcode` once the script ends), the task run as its executor runs it (`bash .command.run`) with only the
    interposer's variables: process name from `.command.run`, exit status from `.exitcode`."""
    cap = tmp_path / "cap"
    (cap / "parts").mkdir(parents=True)
    env = dict(os.environ, LD_PRELOAD=preload_lib(), IOLENS_DIR=str(cap / "parts"))
    for k in [k for k in env if k.startswith("NXF_")]:
        del env[k]
    hashes = []
    for n, status in ((1, 0), (2, 3)):
        wd = tmp_path / "work" / f"{n}f" / f"{n}a2b3c4d5e6f708192a3b4c5d6e7f80"
        wd.mkdir(parents=True)
        (wd / ".command.sh").write_text(f"#!/bin/bash -ue\nseq 1 {n * 1000} > aln.sam\nexit {status}\n")
        (wd / ".command.run").write_text(NXF_COMMAND_RUN.format(n=n))
        subprocess.run(["bash", ".command.run"], cwd=wd, env=env, check=False)
        assert (wd / ".exitcode").read_text().strip() == str(status)
        hashes.append(f"{n}f/{n}a2b3c")
    rep, rc = pipeline_json(cap)
    assert [r["rule"] for r in rep["rules"]] == ["ALIGN"] and rep["rules"][0]["tasks"] == 2
    by_hash = {t["names"]["nextflow"]["hash"]: t for t in rep["tasks"]}
    assert sorted(by_hash) == hashes
    assert [by_hash[h]["exit_status"] for h in hashes] == [0, 3]
    assert [by_hash[h]["names"]["nextflow"]["tag"] for h in hashes] == ["sample_1", "sample_2"]


def _two_runs(tmp_path):
    a, b = tmp_path / "a", tmp_path / "b"
    for d, n in ((a, 1), (b, 3)):
        _loose(tmp_path, d, f"exec dd if=/dev/zero of=x.bin bs=1M count={n} status=none")
        _loose(tmp_path, d, "exec head -c 1000 /dev/zero > small.bin")
    return a, b


def test_diff_dirs_takes_report_dirs_options(tmp_path):
    """`diff DIR DIR` takes `report DIR`'s options: --set, --thresholds, --top, -q, --force and the exports."""
    a, b = _two_runs(tmp_path)
    full = iolens("diff", a, b, check=True).stdout
    assert "\ndd " in full and "\nhead " in full
    top1 = iolens("diff", a, b, "--top", "1", check=True).stdout  # the rule with most time in either run
    lines = top1.splitlines()  # the heading may fold on a pipe (two run directories' paths), the table does not
    rows = lines[next(i for i, line in enumerate(lines) if line.startswith("rule ")) + 1:]
    assert len(rows) == 1 and ("\ndd " in top1) != ("\nhead " in top1), top1
    assert iolens("diff", a, b, "-q", check=True).stdout == ""
    out = tmp_path / "d.json"
    assert iolens("diff", a, b, "-q", "--json", out, check=True).stdout == "" and out.exists()
    res = iolens("diff", a, b, "-q", "--json", out)
    assert res.returncode == 2 and "--force" in res.stderr
    iolens("diff", a, b, "-q", "--json", out, "--force", check=True)
    d = json.loads(out.read_text())
    assert d["tag"] == "iolens-pipeline-diff"
    thresholds = iolens("diff", "--thresholds", check=True).stdout
    assert thresholds == iolens("report", "--thresholds", check=True).stdout and "small_bytes" in thresholds
    name = thresholds.split()[0]
    res = iolens("diff", a, b, "-q", "--set", f"{name}=-1")
    bad = iolens("report", a, "-q", "--set", f"{name}=-1")
    assert (res.returncode, res.stderr.replace("diff", "X")) == (bad.returncode, bad.stderr.replace("report", "X"))
    assert iolens("diff", a, b, "-q", "--set", "no_such_threshold=1").returncode == 2


def test_diff_dirs_takes_a_snakemake_log_for_each_run(tmp_path):
    a, b = _two_runs(tmp_path)
    logs = []
    for d in (a, b):  # a job the log lists but no task ran: listed as not profiled, as `report DIR` lists it
        log = tmp_path / f"{d.name}.snakemake.log"
        log.write_text(f"rule align:\n    output: {tmp_path}/never_{d.name}.sam\n    jobid: 1\n\n")
        logs.append(log)
    res = iolens("diff", a, b, "-q", "--snakemake-log", logs[0], "--snakemake-log", logs[1], "--json", "-")
    assert res.returncode == 3 and "not profiled" in res.stderr, res.stderr
    assert iolens("report", a, "-q", "--snakemake-log", logs[0]).returncode == 3
    res = iolens("diff", a, b, "--snakemake-log", logs[0])
    assert res.returncode == 2 and "give it twice" in res.stderr
    res = iolens("diff", a / "parts", b, "--snakemake-log", logs[0], "--snakemake-log", logs[1])
    assert res.returncode != 0 and "Traceback" not in res.stderr
