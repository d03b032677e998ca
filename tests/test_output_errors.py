"""Standard output that cannot be written: a full disk (/dev/full) gets one error line and a non-zero exit, a
closed pipe (`iolens report | head -1`) ends quietly, as Unix tools do; never a traceback."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from conftest import _absolute_pythonpath, datapath

CAPTURE = str(datapath("report", "small.iolens"))

# commands that print a lot, each through a different path: rich (report, diff, cost), output.write_output ('-'),
# click.echo (--help of a command), the pre-rendered group help answered without click (entry.py)
COMMANDS = [
    ["report", CAPTURE],
    ["report", CAPTURE, "--json", "-"],
    ["diff", CAPTURE, CAPTURE],
    ["cost", "--list"],
    ["compress", "--list"],
    ["report", "--help"],
    ["--help"],
]


def _run(args: list[str], stdout: int) -> subprocess.CompletedProcess:
    env = _absolute_pythonpath(dict(os.environ, COLUMNS="100"))
    # the installed script's name, as a user types it (entry.py answers `iolens --help` itself)
    code = "import sys; sys.argv[0] = 'iolens'; from iolens.entry import main; main()"
    return subprocess.run([sys.executable, "-c", code, *args], stdout=stdout, stderr=subprocess.PIPE, text=True,
                          env=env, timeout=300)


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="no /dev/full on this system")
@pytest.mark.parametrize("args", COMMANDS, ids=lambda a: " ".join(a).replace(CAPTURE, "CAPTURE"))
def test_full_disk_is_one_line(args):
    with open("/dev/full", "w") as full:
        res = _run(args, full.fileno())
    assert "Traceback" not in res.stderr
    lines = res.stderr.splitlines()
    assert lines == ["iolens: error: cannot write the output: No space left on device; free space where it goes, "
                     "or send it elsewhere"], res.stderr
    assert res.returncode != 0


@pytest.mark.parametrize("args", COMMANDS, ids=lambda a: " ".join(a).replace(CAPTURE, "CAPTURE"))
def test_closed_pipe_is_quiet(args):
    read, write = os.pipe()
    os.close(read)  # nobody reads: the first write that reaches the pipe fails with EPIPE
    try:
        res = _run(args, write)
    finally:
        os.close(write)
    assert res.stderr == ""
    assert res.returncode == 141  # as a shell reports a tool ended by SIGPIPE
