"""The case scripts (examples/cases/) take the iolens command from IOLENS_CMD, never from IOLENS: that name is the
profiler's own variable, which its interposer reads in every process it is loaded into."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

CASES_DIR = Path(__file__).resolve().parent.parent / "examples" / "cases"

pytestmark = pytest.mark.skipif(shutil.which("bash") is None, reason="the case scripts are bash scripts")


def _env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("IOLENS", "IOLENS_CMD")}
    return {**env, **extra}


def _lib_command(tmp_path: Path, env: dict[str, str]) -> list[str]:
    """The iolens command (one word a line) that examples/cases/lib.sh sets up for a case script."""
    res = subprocess.run(["bash", "-c", 'source "$1" "$2" && printf "%s\\n" "${iolens[@]}"', "case0_test",
                          str(CASES_DIR / "lib.sh"), str(tmp_path / "work")],
                         capture_output=True, text=True, env=env, timeout=60)
    assert res.returncode == 0, res.stderr
    return res.stdout.splitlines()


def test_lib_takes_the_command_from_iolens_cmd(tmp_path):
    env = _env(IOLENS_CMD="python3 -m iolens", IOLENS=f"{os.getpid()}t{tmp_path}")
    assert _lib_command(tmp_path, env) == ["python3", "-m", "iolens"]


def test_lib_ignores_iolens_the_profilers_variable(tmp_path):
    assert _lib_command(tmp_path, _env(IOLENS="/usr/bin/false")) == ["iolens"]


def _bare_path(tmp_path: Path) -> str:
    """A PATH with the few programs run_all.sh runs before its first iolens command, and no `iolens` on it."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for prog in ("bash", "mkdir", "id", "sed", "cut", "date", "dirname"):
        found = shutil.which(prog)
        assert found, f"{prog} is not installed"
        (bin_dir / prog).symlink_to(found)
    return str(bin_dir)


def _recording_command(tmp_path: Path) -> tuple[Path, Path]:
    """A command that writes its arguments to a log and fails, so that run_all.sh stops at `lab up`."""
    log = tmp_path / "calls.log"
    cmd = tmp_path / "fake-iolens"
    cmd.write_text(f'#!/bin/sh\necho "$*" >> {log}\n[ "$1 $2" = "lab install" ] || exit 3\n')
    cmd.chmod(0o755)
    return cmd, log


@pytest.mark.skipif(os.geteuid() != 0, reason="run_all.sh stops before running any iolens command unless root")
def test_run_all_runs_the_command_in_iolens_cmd(tmp_path):
    cmd, log = _recording_command(tmp_path)
    res = subprocess.run([str(CASES_DIR / "run_all.sh"), str(tmp_path / "work")], capture_output=True, text=True,
                         env=_env(IOLENS_CMD=str(cmd), PATH=_bare_path(tmp_path)), timeout=60)
    assert res.returncode != 0  # the recording command fails `lab up`
    calls = log.read_text().splitlines()
    assert calls[0] == "lab install --dry-run"
    assert calls[1].startswith("lab up --only tmpfs,")
    assert calls[-1] == "lab down -q"


@pytest.mark.skipif(os.geteuid() != 0, reason="run_all.sh stops before running any iolens command unless root")
def test_run_all_does_not_take_the_command_from_iolens(tmp_path):
    cmd, log = _recording_command(tmp_path)
    res = subprocess.run([str(CASES_DIR / "run_all.sh"), str(tmp_path / "work")], capture_output=True, text=True,
                         env=_env(IOLENS=str(cmd), PATH=_bare_path(tmp_path)), timeout=60)
    # it looked for `iolens` on PATH (none here), not $IOLENS, and said how to put it there, before making anything
    assert res.returncode == 2 and "run_all: iolens is not on PATH: activate the environment" in res.stderr
    assert 'sudo env PATH="$PATH"' in res.stderr and not (tmp_path / "work").exists()
    assert not log.exists()


def _lib_run(tmp_path: Path, script: str, **extra: str) -> subprocess.CompletedProcess[str]:
    """`script` run in bash after sourcing examples/cases/lib.sh, as a case script does."""
    return subprocess.run(["bash", "-c", f'source "$1" "$2"\n{script}', "case0_test", str(CASES_DIR / "lib.sh"),
                           str(tmp_path / "work")], capture_output=True, text=True, env=_env(**extra), timeout=120)


def test_saved_table_states_the_width_it_was_laid_out_at(tmp_path):
    table = tmp_path / "cost.txt"
    res = _lib_run(tmp_path, f'"${{iolens[@]}}" cost --list | save_table {table}',
                   IOLENS_CMD=f"{sys.executable} -m iolens")
    assert res.returncode == 0, res.stderr
    first, *lines = table.read_text(encoding="utf-8").splitlines()
    assert lines and "Priced options" in "\n".join(lines)
    width = max(len(line) for line in lines)
    assert first == f"# width: {width} columns, nothing cut"
    assert width > 80  # COLUMNS unset: laid out at the width the table needs, not a terminal's 80


def test_saved_table_says_when_a_cell_was_cut_and_tee_shows_it(tmp_path):
    table = tmp_path / "t.txt"
    res = _lib_run(tmp_path, f"printf 'name   size\\nlong-na…  12 MiB\\n' | save_table {table} tee")
    assert res.returncode == 0, res.stderr
    assert table.read_text(encoding="utf-8") == \
        "# width: 16 columns, some cell cut to fit (marked …)\nname   size\nlong-na…  12 MiB\n"
    assert res.stdout == "name   size\nlong-na…  12 MiB\n"


def test_a_failing_command_still_fails_the_case_through_save_table(tmp_path):
    res = _lib_run(tmp_path, f"false | save_table {tmp_path / 't.txt'}\necho not reached")
    assert res.returncode != 0 and "not reached" not in res.stdout
