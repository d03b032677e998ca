"""Every command that reads a capture reads it one way (iolens.capture.load): the same exit status for the same
damage, and what could be read is still printed.

- A file that is not a capture is refused after its header, whatever its size (a sparse file of 4 GiB here: read
  whole, it took gigabytes of memory and seconds before "bad magic").
- A capture header followed by zeros is a capture cut short: exit status 3 and a message saying so, from every
  command (`parse` printed "0 process image(s)" and exited 0).
- Mutants of a real capture (benchmarks/fuzz_capture.py's damage) and the fuzz corpus: report, parse, diff, replay,
  predict and cost give one exit status for each (diff and replay exited 0 where report and parse said 3).
"""

from __future__ import annotations

import json
import os
import random
import re
from pathlib import Path

import pytest

from conftest import datapath, iolens
from helpers.fuzz import READERS, Readers

pytestmark = pytest.mark.timeout(600)


@pytest.fixture(scope="module")
def traced(tmp_path_factory) -> Path:
    """A real, sealed capture with a trace, as `iolens profile --trace` writes it."""
    d = tmp_path_factory.mktemp("traced")
    cap = d / "c.iolens"
    res = iolens("profile", "-q", "--trace", "-o", cap, "--", "sh", "-c",
                 "echo data > x; cat x > /dev/null; seq 1 2000 > n; sort -r n > s; rm n", cwd=d)
    assert res.returncode == 0, res.stderr
    return cap


@pytest.fixture(scope="module")
def readers(tmp_path_factory) -> Readers:
    return Readers(tmp_path_factory.mktemp("readers"))


def one_line_error(stderr: str) -> str:
    lines = stderr.strip().splitlines()
    assert lines and lines[-1].startswith("iolens: error:") and "Traceback" not in stderr, stderr
    return lines[-1]


NOT_A_CAPTURE = "not an iolens capture (it does not start as one does); give a file written by iolens profile -o"


def test_a_large_file_that_is_not_a_capture_is_refused_at_its_header(tmp_path, readers):
    big = tmp_path / "big.bin"
    with open(big, "wb") as f:
        f.truncate(4 << 30)  # sparse: no disk space, but 4 GiB to a reader that reads it whole
    for command, (rc, err) in readers.statuses(big).items():
        assert rc == 3, (command, err)
        assert one_line_error(err) == f"iolens: error: {big}: {NOT_A_CAPTURE}", command
    big.write_bytes(b"\x7fELF" + bytes(4000))  # a program given by mistake
    res = iolens("report", big)
    assert res.returncode == 3 and res.stderr == f"iolens: error: {big}: {NOT_A_CAPTURE}\n"


@pytest.mark.parametrize("zeros", [8, 4096, 3 << 30], ids=["end-marker", "4KiB", "3GiB-sparse"])
def test_a_header_followed_by_zeros_is_a_capture_cut_short(tmp_path, readers, zeros):
    from iolens.capture.writer import file_header

    cap = tmp_path / "zeros.iolens"
    with open(cap, "wb") as f:
        f.write(file_header())
        f.truncate(len(file_header()) + zeros)
    got = readers.statuses(cap)
    for command, (rc, err) in got.items():
        assert rc == 3, (command, err)
        assert "no records after the header" in one_line_error(err) and "at byte 16" in err, (command, err)
    res = iolens("parse", cap)  # the dump prints what there is (the header), then the one-line error
    assert res.returncode == 3 and res.stdout.startswith(f"capture {cap} format 2.0, 0 process image(s)")
    assert res.stderr.count("\n") == 1 and "cut short" in res.stderr


def test_every_reader_gives_one_exit_status_for_the_same_damage(traced, readers, tmp_path):
    """A sample of the mutants benchmarks/fuzz_capture.py counts (cuts, insertions, changed bytes) and of the fuzz
    corpus: each command's exit status is report's (3 for damage, 0 for a mutant the checksums prove whole), and a
    status other than 0 comes with a one-line error or a warning that names the damage."""
    from helpers.fuzz import MUTATIONS, mutate

    rnd = random.Random(11)
    data = traced.read_bytes()
    files = []
    for i in range(12):
        m = tmp_path / f"m{i}.iolens"
        m.write_bytes(mutate(data, rnd, MUTATIONS[i % len(MUTATIONS)]))
        files.append(m)
    corpus = sorted(datapath("fuzz").glob("*.iolens"))
    files += random.Random(5).sample(corpus, 6)
    files.append(traced)  # whole: 0 everywhere
    statuses = {}
    for f in files:
        got = readers.statuses(f)
        codes = {c: rc for c, (rc, _err) in got.items()}
        assert len(set(codes.values())) == 1, (f.name, codes, {c: e[-300:] for c, (_r, e) in got.items()})
        rc = codes["report"]
        statuses[f.name] = rc
        assert rc in (0, 3), (f.name, got["report"])
        for command, (_rc, err) in got.items():
            assert "Traceback" not in err
            if rc:
                assert re.search(r"at byte \d+|not an iolens capture|no process records", err), (command, err)
    assert statuses[traced.name] == 0
    assert sum(1 for rc in statuses.values() if rc == 3) >= 10, statuses  # the sample is mostly damage


def test_a_partial_capture_is_read_up_to_the_damage_by_every_command(traced, readers, tmp_path):
    """Cut short, a capture still gives each command's output from what came before the cut, a warning that says
    so, and exit status 3."""
    data = traced.read_bytes()
    cut = tmp_path / "cut.iolens"
    cut.write_bytes(data[: len(data) * 3 // 4])
    for command in READERS:
        args = readers.argv(command, cut)
        res = readers.invoke(args)
        assert res.exit_code == 3, (command, res.output)
        if command == "parse":
            assert json.loads(res.stdout)["processes"] and "at byte" in one_line_error(res.stderr)
            continue
        assert re.search(r"iolens: warning: .* at byte \d+; \w+( \w+)? what came before it", res.stderr), (command,
                                                                                                         res.stderr)
        if command == "report":
            continue
        out = Path(args[-1])
        if command == "replay" and not out.exists():  # the cut took the whole trace: said so
            assert "no trace is left before the damage" in one_line_error(res.stderr)
            continue
        assert out.stat().st_size > 0, command  # the output was written, from what was read
        if command != "replay":
            json.loads(out.read_text())


def test_a_capture_with_no_process_is_refused_by_the_commands_that_need_one(tmp_path, readers):
    """A whole capture of a command that ran unprofiled (no part): parse dumps it (exit 0); the commands that
    analyse it say there is nothing to analyse (exit 3)."""
    from iolens.capture.writer import Sealer, meta_record

    cap = tmp_path / "empty.iolens"
    with open(cap, "wb") as f:
        s = Sealer(f)
        s.add(meta_record({"tool": "iolens", "command": ["true"], "parts": 0}))
        s.close_block()
        s.finish()
    got = readers.statuses(cap)
    assert got.pop("parse")[0] == 0
    for command, (rc, err) in got.items():
        assert rc == 3 and "holds no process records" in one_line_error(err), (command, err)


def test_a_file_reads_as_the_same_bytes_in_memory_and_a_shrinking_one_as_cut_short(traced, tmp_path):
    """A capture file is read in order through a buffer, never whole: it reads as the same bytes in memory do
    (sealed and format 1.0); one that shrinks while it is read (told a larger size) is cut short, not a crash."""
    from helpers.fuzz import fingerprint
    from iolens.capture.reader import decode, read_capture
    from iolens.capture.walk import _Walk

    old = datapath("capture", "v1.0-bash-trace.iolens")
    for path in (traced, old):
        from_file, in_memory = read_capture(path), decode(path.read_bytes(), str(path))
        assert from_file.complete and in_memory.complete
        assert fingerprint(from_file) == fingerprint(in_memory)
    with open(old, "rb") as fh:
        walk = _Walk(fh, str(old), [], os.path.getsize(old) + 4096)
        recs = list(walk.records())
    assert recs and walk.damage and walk.damage[0].partial and "ends sooner than its size" in walk.problems[0]
