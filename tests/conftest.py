"""Shared fixtures: run the CLI, compile the exact-I/O C programs, profile a command."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent


def datapath(*parts: str) -> Path:
    """A file under tests/data, found relative to this file, not the working directory."""
    return HERE.joinpath("data", *parts)


def _absolute_pythonpath(env: dict) -> dict:
    """Relative PYTHONPATH entries would resolve against the subprocess's cwd, not ours."""
    if env.get("PYTHONPATH"):
        env["PYTHONPATH"] = os.pathsep.join(os.path.abspath(p) for p in env["PYTHONPATH"].split(os.pathsep) if p)
    return env


def iolens(*args: str, check: bool = False, **kw) -> subprocess.CompletedProcess:
    kw["env"] = _absolute_pythonpath(dict(kw.get("env") or os.environ))
    kw.setdefault("capture_output", True)
    kw.setdefault("text", True)
    kw.setdefault("timeout", 600)
    return subprocess.run([sys.executable, "-m", "iolens", *map(str, args)], check=check, **kw)


@pytest.fixture(scope="session")
def cprog(tmp_path_factory):
    """Compile tests/native/NAME.c once per session; returns its path."""
    cc = shutil.which("cc") or shutil.which("gcc")
    if cc is None:
        pytest.skip("no C compiler (cc/gcc) on PATH; install gcc")
    out = tmp_path_factory.mktemp("cprog")
    built: dict[str, Path] = {}

    def build(name: str) -> Path:
        if name not in built:
            exe = out / name
            subprocess.run([cc, "-O0", "-fno-builtin", "-pthread", "-o", str(exe), str(HERE / "native" / f"{name}.c")],
                           check=True)
            built[name] = exe
        return built[name]

    return build


@pytest.fixture
def profiled(tmp_path):
    """Run argv under `iolens profile`; returns (completed process, Capture)."""
    from iolens.capture.reader import read_capture

    def run(argv, *extra: str, cwd: Path | None = None, **kw):
        cap = tmp_path / f"run{len(list(tmp_path.glob('run*.iolens')))}.iolens"
        res = iolens("profile", "-q", "-o", cap, *extra, "--", *map(str, argv), cwd=cwd or tmp_path, **kw)
        return res, (read_capture(cap) if cap.exists() else None)

    return run


def tool(name: str) -> str:
    path = shutil.which(name)
    if path is None:
        pytest.skip(f"{name} is not installed (Debian package {name}); dev/setup installs it as root")
    return path


def unavailable(why: str):
    """Skip where a real component genuinely cannot run; in CI (as root) that is a failure, not a skip."""
    if os.environ.get("CI") and os.geteuid() == 0:
        pytest.fail(f"component unavailable in CI: {why}")
    pytest.skip(why)


@pytest.fixture(autouse=True, scope="session")
def _own_state_home(tmp_path_factory):
    """The lab in use (`lab up --dir` remembers it under $XDG_STATE_HOME) is this test run's, not the user's."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("XDG_STATE_HOME", str(tmp_path_factory.mktemp("state-home")))
        yield


@pytest.fixture(autouse=True)
def _no_inherited_profiler(monkeypatch):
    if os.environ.get("PYTHONPATH"):
        monkeypatch.setenv("PYTHONPATH", _absolute_pythonpath(dict(os.environ))["PYTHONPATH"])
    # tests that profile must not be profiled themselves
    monkeypatch.delenv("IOLENS_DIR", raising=False)
    monkeypatch.delenv("IOLENS", raising=False)
    if "iolens_preload" in os.environ.get("LD_PRELOAD", ""):
        monkeypatch.delenv("LD_PRELOAD")


def lab_status(d: Path) -> dict:
    """`iolens lab status --dir D --json`: each target by name."""
    res = iolens("lab", "status", "--dir", d, "--json")
    assert res.returncode == 0, res.stderr
    return {t["name"]: t for t in json.loads(res.stdout)["targets"]}


def lab_up(tmp_path_factory, label: str, *up_args: str, needed: list[str] | None = None,
           check_down: bool = False):
    """A module's own lab under a temporary directory (`iolens lab up --dir D UP_ARGS`), taken down afterwards.

    Needs root (skipped without: the loop devices and mounts need it) and /dev/fuse; missing tools are installed
    through `iolens lab install` (cached) and, still missing, fail under CI. A failed `lab up` takes down what it
    made and fails the module. With check_down, the final `lab down` must succeed and leave nothing mounted."""
    from iolens.lab import tools
    from iolens.lab.sysops import mounts_under

    if os.geteuid() != 0:
        pytest.skip(f"{label}: the lab's loop devices and mounts need root")
    if not os.path.exists("/dev/fuse"):
        unavailable("no /dev/fuse: FUSE is not available here")
    if needed and tools.missing(needed):  # installs are cached: a no-op once done
        problems = tools.install(say=lambda m: print(m, file=sys.stderr))
        still = tools.missing(needed)
        if still:
            unavailable(f"missing {', '.join(still)} after `iolens lab install`: {'; '.join(problems)}")
    d = tmp_path_factory.mktemp(label) / "lab"
    res = iolens("lab", "up", "--dir", d, *up_args)
    print(res.stdout, res.stderr, file=sys.stderr)
    try:
        if res.returncode != 0:
            pytest.fail(f"iolens lab up failed: {res.stdout}{res.stderr}")
        yield d
    finally:
        down = iolens("lab", "down", "--dir", d)  # idempotent: a test may already have done it
        if check_down:
            assert down.returncode == 0, down.stderr
            assert not mounts_under(d), f"left mounted under the lab: {mounts_under(d)}"


@pytest.fixture(scope="session")
def page_runs(tmp_path_factory) -> dict:
    """Real runs whose pages and tables several modules read (tests/test_pages_layout.py, tests/test_page_words.py),
    made once: a compare of `cat` on two placements and two strategies, its cost, compress on a small VCF, and a
    capture directory of three tasks named by their Slurm job. Each `NAME` is the text it printed at 200 columns,
    each `NAME.html` the page's path."""
    import random

    from pipeline_helpers import preload_lib

    def ok(res: subprocess.CompletedProcess) -> str:
        assert res.returncode == 0, res.stderr
        return res.stdout

    d = tmp_path_factory.mktemp("pages")
    env = dict(os.environ, COLUMNS="200")
    out: dict = {f"{k}.html": d / f"{k}.html" for k in ("compare", "cost", "compress", "pipeline")}
    (d / "in.bin").write_bytes(os.urandom(1 << 20))
    places = [d / "placement_one", d / "placement_two"]
    for p in places:
        p.mkdir()
    db = d / "results.sqlite"
    out["compare"] = ok(iolens("compare", "cat {in} > {out:copy.bin}", "--input", f"in={d / 'in.bin'}", "--place",
                               f"out={places[0]},{places[1]}", "--strategy", "direct,stage", "--runs", "3",
                               "--warmup", "0", "--db", db, "--seed", "5", "--html", out["compare.html"], cwd=d,
                               env=env))
    out["cost"] = ok(iolens("cost", "--last", "--db", db, "--no-store", "--map",
                            f"{places[0]}=aws:ec2-instance-nvme,{places[1]}=aws:ebs-gp3:size=200",
                            "--runs-per-month", "30", "--held-for", "2h", "--html", out["cost.html"], env=env))
    rng = random.Random(1)
    vcf = d / "calls.vcf"
    vcf.write_text("##fileformat=VCFv4.2\n#CHROM\tPOS\tID\tREF\tALT\tQUAL\tFILTER\tINFO\n" + "".join(
        f"chr1\t{i * 37}\t.\tA\tG\t{rng.randint(10, 99)}\tPASS\tDP={rng.randint(1, 80)}\n" for i in range(40000)))
    out["compress"] = ok(iolens("compress", vcf, "--no-store", "--codecs", "zstd:1/3/19,lz4,gzip:1/6/9,bgzip:6",
                                "--min-time", "0.05", "--html", out["compress.html"], env=env))
    cap = d / "cap"
    (cap / "parts").mkdir(parents=True)
    for name, cmd in (("align", "exec dd if=/dev/zero of=a.bin bs=64k count=20 oflag=dsync status=none"),
                      ("sort", "exec head -c 3000000 /dev/zero > b.bin"), ("index", "exec seq 1 100000 > c.txt")):
        penv = dict(os.environ, LD_PRELOAD=preload_lib(), IOLENS_DIR=str(cap / "parts"), SLURM_JOB_ID="1",
                    SLURM_JOB_NAME=name)
        subprocess.run(["sh", "-c", cmd], env=penv, cwd=d, check=True)
    out["pipeline"] = ok(iolens("report", cap, env=env))
    ok(iolens("report", cap, "-q", "--html", out["pipeline.html"]))
    return out
