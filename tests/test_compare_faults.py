"""iolens compare: the faults found when the published experiments were rerun, each with a run that shows it.

Wrappers placed with {name!words} and a \\, in a CPU list, warnings that fit the settings used, placements
that were never written, separate invocations of one program kept apart by --profile, emulated lab targets.
"""

from __future__ import annotations

import json
import os
import shutil

import pytest

from conftest import iolens

pytestmark = pytest.mark.timeout(300)


def compare(tmp_path, *args, json_name="r.json"):
    out = tmp_path / json_name
    res = iolens("compare", *args, "--json", out, "--db", tmp_path / "results.sqlite", "--seed", "7")
    return res, (json.loads(out.read_text()) if out.exists() else None)


# -- wrappers: nice -n 5, taskset -c 0 / 0,1 --------------------------------------------------------------------

def test_nice_wrapper_runs_as_a_command_not_one_quoted_word(tmp_path):
    # the command fails unless it really runs at the niceness the configuration says
    res, rep = compare(tmp_path, "{wrap!words} sh -c 'test \"$(nice)\" = \"$1\"' - {n}",
                       "--param", "wrap=env", "--param", "n=0",
                       "--config", "plain:wrap=env,n=0", "--config", "nice5:wrap=nice -n 5,n=5", "--runs", "2")
    assert res.returncode == 0, res.stdout + res.stderr
    assert [r["ok_runs"] for r in rep["results"]] == [2, 2]
    assert rep["results"][1]["command"].startswith("nice -n 5 sh -c ")


@pytest.mark.skipif(shutil.which("taskset") is None, reason="taskset (util-linux) is not installed")
def test_taskset_wrapper_with_a_cpu_list_that_holds_a_comma(tmp_path):
    if len(os.sched_getaffinity(0)) < 2 or not {0, 1} <= os.sched_getaffinity(0):
        pytest.skip("needs CPUs 0 and 1")
    cmd = "{wrap!words} sh -c 'grep -qx \"Cpus_allowed_list:.$1\" /proc/self/status' - {cpus}"
    res, rep = compare(tmp_path, cmd, "--param", "wrap=env", "--param", "cpus=0",
                       "--config", "cpu0:wrap=taskset -c 0,cpus=0",
                       "--config", r"cpu01:wrap=taskset -c 0\,1,cpus=0-1", "--runs", "2")
    assert res.returncode == 0, res.stdout + res.stderr
    assert [r["ok_runs"] for r in rep["results"]] == [2, 2]
    assert [r["parameters"]["wrap"] for r in rep["results"]] == ["taskset -c 0", "taskset -c 0,1"]
    # the same list as a matrix of --param values
    res, rep = compare(tmp_path, "{wrap!words} true", "--param", r"wrap=taskset -c 0,taskset -c 0\,1",
                       "--runs", "2", json_name="m.json")
    assert res.returncode == 0, res.stderr
    assert [r["name"] for r in rep["results"]] == ["taskset -c 0", "taskset -c 0,1"]
    assert [r["ok_runs"] for r in rep["results"]] == [2, 2]


# -- the first-run warning fits the settings used -----------------------------------------------------------------

SLOW_FIRST = "f={m}/first-{t}; test -e $f || {{ touch $f; sleep 0.6; }}"


def test_first_run_warning_with_cold_cache_does_not_advise_cold_cache(tmp_path):
    marks = tmp_path / "marks"
    marks.mkdir()
    inp = tmp_path / "in.txt"
    inp.write_text("x")
    res, rep = compare(tmp_path, SLOW_FIRST + "; cat {in} > /dev/null", "--param", f"m={marks}", "--param", "t=1,2",
                       "--input", f"in={inp}", "--runs", "5", "--cache", "cold", "--evict", "fadvise")
    assert res.returncode == 0, res.stderr
    slow = [w for w in rep["warnings"] if "the first run was slow" in w]
    assert len(slow) == 2
    for w in slow:
        assert "--cache cold" not in w.replace("evicted before every run (--cache cold)", "")
        assert "use --warmup 1" in w and "inputs were evicted before every run" in w
    # the same runs without --cache cold: the page cache is a suspect, and --cache cold is offered
    for f in marks.iterdir():
        f.unlink()
    res, rep = compare(tmp_path, SLOW_FIRST + "; cat {in} > /dev/null", "--param", f"m={marks}", "--param", "t=1,2",
                       "--input", f"in={inp}", "--runs", "5", json_name="warm.json")
    slow = [w for w in rep["warnings"] if "the first run was slow" in w]
    assert len(slow) == 2 and all("page cache? use --warmup 1, or --cache cold" in w for w in slow)


def test_first_run_advice_for_each_setting():
    from iolens.compare.report import first_run_advice
    from iolens.compare.runner import Settings

    assert "or --cache cold" in first_run_advice(Settings(cache="warm"), [])
    warm_warmup = first_run_advice(Settings(cache="warm", warmup=2), [])
    assert "--warmup 2 ran first" in warm_warmup and "add --warmup rounds" in warm_warmup
    assert "--cache cold" not in warm_warmup
    dropped = first_run_advice(Settings(cache="cold"), ["drop-caches"])
    assert "not the page cache" in dropped and "use --warmup 1" in dropped and "--cache cold" not in dropped
    fadvised = first_run_advice(Settings(cache="cold", warmup=1), ["fadvise"])
    assert "add --warmup rounds" in fadvised and "use --cache cold" not in fadvised


# -- --profile: two invocations of one program are two phases ------------------------------------------------------

def test_profile_keeps_two_invocations_of_one_program_apart(tmp_path):
    # like minimap2 -d (index) then minimap2 (map): the same program twice, with different work
    cmd = "sleep 0.3; sleep 0.05; {{ sleep 0.01; true; }} | cat; echo {t} > /dev/null"
    res, rep = compare(tmp_path, cmd, "--param", "t=1,2", "--runs", "2", "--profile")
    assert res.returncode == 0, res.stderr
    for r in rep["results"]:
        phases = r["profile"]["phases"]
        assert "sleep" not in phases
        assert phases["sleep #1"]["count"] == 1 and phases["sleep #2"]["count"] == 1
        assert 0.25 < phases["sleep #1"]["own_s"] < 0.6 and 0.03 < phases["sleep #2"]["own_s"] < 0.2
        assert "sleep #3" in phases and "cat" in phases
        # the forked subshell of `{ ...; } | cat` runs no new program: it stays in its shell's phase
        shells = [n for n in phases if n.split(" #")[0] in ("sh", "dash", "bash")]
        assert len(shells) == 1 and phases[shells[0]]["count"] == 2
    assert "sleep #1" in res.stdout and "sleep #2" in res.stdout


def test_phase_names_cap_many_invocations():
    from types import SimpleNamespace as NS

    from iolens.compare.profiling import MAX_INVOCATIONS, _phase_names

    sh = NS(pid=1, ppid=0, name="sh", argv=["sh", "-c", "x"], start_s=0.0, ended="exited")
    kids = [NS(pid=10 + k, ppid=1, name="gzip", argv=["gzip", str(k)], start_s=1.0 + k, ended="exited")
            for k in range(MAX_INVOCATIONS + 5)]
    names = _phase_names([sh, *kids], [sh, *kids])
    assert names[0] == "sh" and names[1] == "gzip #1" and names[MAX_INVOCATIONS - 1] == f"gzip #{MAX_INVOCATIONS - 1}"
    assert set(names[MAX_INVOCATIONS:]) == {f"gzip #{MAX_INVOCATIONS}+"}


# -- placements that were never written ----------------------------------------------------------------------------

def test_a_place_that_is_never_written_is_flagged_in_the_verdict(tmp_path):
    a, b = tmp_path / "a", tmp_path / "b"
    a.mkdir()
    b.mkdir()
    # like samtools sort with enough memory: -T is given but nothing spills
    res, rep = compare(tmp_path, "sort -T {tmp} /etc/hostname > /dev/null", "--place", f"tmp={a},{b}", "--runs", "2")
    assert res.returncode == 0, res.stderr
    msg = "tmp: nothing was written there in any run; the comparison does not test it"
    assert msg in rep["warnings"]
    assert [r["places_written"] for r in rep["results"]] == [{"tmp": False}, {"tmp": False}]
    (c,) = rep["comparisons"]
    assert c["untested"] == ["tmp"] and c["verdict"].endswith("; " + msg)
    assert msg in " ".join(res.stdout.split())  # the verdict wraps at the terminal width
    assert all(x["places_written"] == {"tmp": False} and x["place_bytes"] == {"tmp": 0}
               for r in rep["results"] for x in r["run_records"])


@pytest.mark.parametrize("writes", [
    "echo spilled > {tmp}/part.0.bam",  # left behind
    "echo spilled > {tmp}/part.0.bam; rm {tmp}/part.0.bam",  # a temp file removed before the command ends
])
def test_a_place_that_is_written_is_not_flagged(tmp_path, writes):
    a, b = tmp_path / "a", tmp_path / "b"
    a.mkdir()
    b.mkdir()
    res, rep = compare(tmp_path, writes, "--place", f"tmp={a},{b}", "--runs", "2", "--strategy", "direct")
    assert res.returncode == 0, res.stderr
    assert not any("nothing was written" in w for w in rep["warnings"])
    assert [r["places_written"] for r in rep["results"]] == [{"tmp": True}, {"tmp": True}]
    assert rep["comparisons"][0]["untested"] == [] and "nothing was written" not in rep["comparisons"][0]["verdict"]


def test_never_written_per_configuration_and_with_profile(tmp_path):
    a = tmp_path / "a"
    a.mkdir()
    # /dev/null is a device (not checked); a directory that the command writes only through --profile's eyes
    res, rep = compare(tmp_path, "test {n} = 0 || head -c 5000 /dev/zero > {tmp:x}; true", "--place",
                       f"tmp={a},{tmp_path}", "--param", "n=0,1", "--runs", "2", "--profile")
    assert res.returncode == 0, res.stderr
    by = {r["name"]: r for r in rep["results"]}
    assert by[f"n=0 tmp={a}"]["places_written"] == {"tmp": False}
    assert by[f"n=1 tmp={a}"]["places_written"] == {"tmp": True}
    recs = by[f"n=1 tmp={a}"]["run_records"]
    assert all(x["place_bytes"]["tmp"] >= 5000 for x in recs)
    never = [w for w in rep["warnings"] if "nothing was written" in w]
    assert sorted(never) == sorted(f"n=0 tmp={d}: tmp={d}: nothing was written there in any run; the comparison "
                                   "does not test it" for d in (a, tmp_path))


# -- results from an emulated lab target say so ----------------------------------------------------------------------

FAKE_LAB = ("import sys; from pathlib import Path; import iolens.lab as lab; base = Path(sys.argv.pop(1)); "
            "lab.resolve_target = lambda spec, root=None: base / spec[4:]; "
            "sys.argv[0] = 'iolens'; from iolens.cli import main; main()")


def test_results_on_an_emulated_lab_target_carry_emulated_and_its_name(tmp_path):
    import subprocess
    import sys

    from iolens import lab
    from iolens.store import ResultsStore

    emulated = next(t.name for t in lab.TARGETS.values() if t.emulated)
    plain = next(t.name for t in lab.TARGETS.values() if not t.emulated)
    mounts = tmp_path / "mounts"
    for name in (emulated, plain):
        (mounts / name).mkdir(parents=True)
    out = tmp_path / "r.json"
    db = tmp_path / "results.sqlite"
    res = subprocess.run([sys.executable, "-c", FAKE_LAB, str(mounts), "compare", "echo x > {out:f}",
                          "--place", f"out=lab:{plain},lab:{emulated},/dev/null", "--runs", "2", "--json", str(out),
                          "--db", str(db), "--seed", "3"], capture_output=True, text=True, timeout=300)
    assert res.returncode == 0, res.stderr
    rep = json.loads(out.read_text())
    by = {r["name"]: r for r in rep["results"]}
    assert by[f"lab:{emulated}"]["emulated"] is True and by[f"lab:{emulated}"]["emulated_targets"] == [emulated]
    assert [t["target"] for t in by[f"lab:{emulated}"]["lab_targets"]] == [f"lab:{emulated}"]
    assert by[f"lab:{plain}"]["emulated"] is False
    assert [t["target"] for t in by[f"lab:{plain}"]["lab_targets"]] == [f"lab:{plain}"]
    assert by["/dev/null"]["emulated"] is False and by["/dev/null"]["lab_targets"] == []
    locs = rep["provenance"]["locations"]
    assert locs[f"lab:{emulated}"]["emulated"] is True and locs[f"lab:{emulated}"]["lab"] == emulated
    assert locs["/dev/null"]["emulated"] is False
    with ResultsStore(db) as store:
        (run,) = store.runs(kind="compare")
        stored = {x["name"]: x for x in store.results(run["id"])}
    assert stored[f"lab:{emulated}"]["metrics"]["emulated"] is True
    assert stored[f"lab:{emulated}"]["provenance"]["emulated"] is True
    assert stored[f"lab:{emulated}"]["provenance"]["emulated_targets"] == [emulated]
    assert stored[f"lab:{plain}"]["provenance"]["emulated"] is False
