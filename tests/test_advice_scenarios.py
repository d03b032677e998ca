"""Held-out scenarios for the advice: each a small step a bioinformatician profiles, and the decision they need.

Each scenario is either a real run under `iolens profile` (where it is cheap: unbuffered writes, temp files synced
and deleted, GNU sort's spills, a compute-bound step) or a crafted capture in the real capture format
(helpers/capture.py) where the storage it needs (a slow disk, NFS) is not on this machine.  A scenario states what
the advice must say: the rule, the option to change (-T, -m, -S, -o, -@, -t, the level), the time at stake and,
for short steps, its share.
"""

from __future__ import annotations

import json
import os
import re
import sys
from pathlib import Path

import pytest

from conftest import iolens, tool
from helpers.capture import build_capture, fil, proc
from iolens.analysis.report import build_report
from iolens.analysis.thresholds import with_overrides
from iolens.units import human_seconds

MiB = 1 << 20
KiB = 1 << 10
GiB = 1 << 30


def advice_of(procs, thresholds=None, **meta):
    r = build_report(build_capture(procs, meta or None), with_overrides(thresholds))
    return {a.rule: a for a in r.advice}, r


def words(a) -> str:
    return " ".join([a.title, *a.evidence, a.fix])


# ---- temp files -------------------------------------------------------------------------------------


def samtools_sort_spills(tmp_prefix: str, n: int = 193, sync_each: float = 0.4, end: float = 100.0):
    """`samtools sort -m 2M -T PREFIX`: n spill files of 2 MiB, each written, synced once, read back and deleted."""
    temps = [fil(f"{tmp_prefix}.{i:04d}.bam", writes=8, write_size=256 * KiB, write_time=0.01, reads=8,
                 read_size=256 * KiB, read_time=0.005, syncs=1, sync_time=sync_each, metas=1, meta_time=0.002,
                 created=True, deleted=True) for i in range(n)]
    return [proc(100, ["samtools", "sort", "-m", "2M", "-T", tmp_prefix, "-o", "/data/out.bam", "/data/in.sam"],
                 end=end, files=[fil("/data/in.sam", reads=400, read_size=MiB, read_time=3.0), *temps,
                                 fil("/data/out.bam", writes=200, write_size=MiB, write_time=2.0, created=True)])]


def test_samtools_sort_temp_files_on_a_slow_disk_names_T_and_m():
    """88% of the step in 193 syncs, one per spill file: where the spills go (-T) or fewer of them (-m)."""
    adv, r = advice_of(samtools_sort_spills("/data/part"))
    a = adv["temp_placement"]
    assert a.time_at_stake_s == pytest.approx(193 * (0.4 + 0.01 + 0.005 + 0.002), rel=0.01)
    assert "-T" in a.fix and "-m" in a.fix
    assert "tmpfs" in a.fix or "/scratch" in a.fix
    assert "one sync per temp file" in words(a)
    assert "193" in a.title
    for other in adv.values():  # nothing says what did not happen
        assert "after every write" not in words(other)


def test_samtools_sort_temp_files_on_tmpfs_are_fine():
    adv, _r = advice_of(samtools_sort_spills("/dev/shm/part", sync_each=0.0001, end=20.0))
    assert "temp_placement" not in adv


def test_gnu_sort_spilling_to_nfs_names_T_and_S():
    temps = [fil(f"/mnt/nfs/tmp/sort{i:06d}", writes=64, write_size=64 * KiB, write_time=0.3, reads=64,
                 read_size=64 * KiB, read_time=0.2, metas=2, meta_time=0.05, created=True, deleted=True)
             for i in range(40)]
    procs = [proc(100, ["sort", "-S", "1M", "-T", "/mnt/nfs/tmp", "-o", "/data/sorted.tsv", "/data/big.tsv"],
                  end=60.0, files=[fil("/data/big.tsv", reads=160, read_size=MiB, read_time=2.0), *temps,
                                   fil("/data/sorted.tsv", writes=160, write_size=MiB, write_time=2.0, created=True)])]
    adv, _r = advice_of(procs)
    a = adv["temp_placement"]
    assert a.time_at_stake_s == pytest.approx(40 * 0.55, rel=0.01)
    assert "-T" in a.fix and "-S" in a.fix and "/scratch" in a.fix
    assert "network" in a.title


def test_short_step_syncing_and_deleting_its_own_temp_files():
    """0.6 s, 51% of it syncing and deleting 50 temp files: advice with its share, in words of what happened."""
    temps = [fil(f"/data/work/chunk{i:03d}.tmp", writes=1, write_size=32 * KiB, write_time=0.0002, syncs=1,
                 sync_time=0.005, metas=1, meta_time=0.0011, created=True, deleted=True) for i in range(50)]
    adv, _r = advice_of([proc(100, ["python3", "chunker.py"], end=0.6, files=temps)])
    a = adv["temp_placement"]
    assert a.share == pytest.approx(0.32 / 0.6, rel=0.05)
    assert "one sync per temp file" in words(a)
    assert "after every write" not in words(a)
    assert "%" in a.title or any("% of" in e for e in a.evidence)


# ---- output placement -------------------------------------------------------------------------------


def aligner_out(out: str, write_time: float):
    return [proc(100, ["minimap2", "-t", "8", "-a", "/scratch/ref.fa", "/scratch/in.fq", "-o", out], end=100.0,
                 threads=8, files=[fil("/scratch/ref.fa", reads=100, read_size=MiB, read_time=1.0),
                                   fil("/scratch/in.fq", reads=1000, read_size=MiB, read_time=5.0),
                                   fil(out, writes=2000, write_size=MiB, write_time=write_time, created=True)])]


def test_output_on_network_storage_names_o_and_a_local_disk():
    adv, _r = advice_of(aligner_out("/mnt/nfs/out.sam", 40.0), cpus=8)
    a = adv["output_placement"]
    assert a.time_at_stake_s == pytest.approx(40.0, rel=0.01)
    assert "-o /scratch/out.sam" in a.fix
    assert "copy" in a.fix


def test_output_on_fast_local_storage_is_quiet():
    adv, _r = advice_of(aligner_out("/scratch/out.sam", 2.0), cpus=8)
    assert "output_placement" not in adv


# ---- staging ----------------------------------------------------------------------------------------


def test_reference_read_from_nfs_by_every_task_is_staged_once():
    procs = [proc(100 + i, ["bwa", "mem", "/mnt/nfs/ref.fa", f"/scratch/s{i}.fq"], start=i * 30, end=i * 30 + 30,
                  files=[fil("/mnt/nfs/ref.fa", reads=1024, read_size=MiB, read_time=10.0, size=GiB)])
             for i in range(3)]
    adv, _r = advice_of(procs)
    a = adv["reread"]
    assert a.time_at_stake_s == pytest.approx(20.0)
    assert re.search(r"`cp /mnt/nfs/ref\.fa /(data|scratch)/`", a.fix)  # a local disk


# ---- codec and threads ------------------------------------------------------------------------------


def test_gzip_level_9_on_a_compute_bound_step_names_the_level():
    procs = [proc(100, ["gzip", "-9", "-c", "/scratch/reads.fq"], end=60.0, cpu=58.0,
                  files=[fil("/scratch/reads.fq", reads=1000, read_size=MiB, read_time=1.0),
                         fil("pipe:[1]", writes=300, write_size=MiB, pipe_time=0.5)])]
    adv, _r = advice_of(procs, cpus=8)
    a = adv["compression"]
    assert "-9" in words(a) and "-6" in a.fix
    assert "bgzip" in a.fix or "pigz" in a.fix
    assert 0 < a.time_at_stake_s <= 58.0 + 1e-9  # at most its CPU time


def test_single_threaded_samtools_sort_on_8_cpus_names_the_thread_option():
    procs = [proc(100, ["samtools", "sort", "-o", "/scratch/out.bam", "/scratch/in.bam"], end=100.0, cpu=95.0,
                  files=[fil("/scratch/in.bam", reads=500, read_size=MiB, read_time=2.0),
                         fil("/scratch/out.bam", writes=500, write_size=MiB, write_time=2.0, created=True)])]
    adv, _r = advice_of(procs, cpus=8)
    a = adv["threads"]
    assert "-@" in a.fix
    assert a.time_at_stake_s == pytest.approx(95.0 * (1 - 1 / 8), rel=0.05)


def test_threads_quiet_when_the_tool_already_uses_the_cpus():
    procs = [proc(100, ["samtools", "sort", "-@", "8", "-o", "/scratch/out.bam", "/scratch/in.bam"], end=20.0,
                  cpu=95.0, threads=8, files=[fil("/scratch/in.bam", reads=500, read_size=MiB, read_time=2.0)])]
    adv, _r = advice_of(procs, cpus=8)
    assert "threads" not in adv


# ---- short steps and scale --------------------------------------------------------------------------


def unbuffered_lines(end: float = 0.5):
    """0.5 s, 40% of it in 400,000 one-line writes."""
    return [proc(100, ["python3", "to_bed.py"], end=end,
                 files=[fil("/data/out.bed", writes=400_000, write_size=12, write_time=0.4 * end, created=True)])]


def test_short_step_with_unbuffered_one_line_writes_gets_advice_with_its_share():
    adv, _r = advice_of(unbuffered_lines())
    a = adv["small_requests"]
    assert a.share == pytest.approx(0.4, rel=0.02)
    assert "buffer" in a.fix


def test_full_input_size_states_the_time_at_stake_at_full_size():
    adv, _r = advice_of(unbuffered_lines(), ["scale_to=200"])
    a = adv["small_requests"]
    assert a.data["at_scale_s"] == pytest.approx(0.2 * 200, rel=0.02)
    assert "200x" in a.short() and human_seconds(40.0) in a.short()


def test_a_6_ms_step_is_never_storage_advice():
    procs = [proc(100, ["uname", "-a"], end=0.0066, files=[fil("/etc/os-release", reads=2, read_size=300,
                                                                read_time=0.005, stats=5, meta_time=0.001)])]
    adv, _r = advice_of(procs)
    assert [a for a in adv.values() if a.severity != "info"] == []


def test_compute_bound_step_is_told_storage_is_not_the_bottleneck_only():
    procs = [proc(100, ["minimap2", "-t", "8", "-a", "/data/ref.fa", "/data/in.fq"], end=100.0, cpu=97.0, threads=8,
                  files=[fil("/data/in.fq", reads=300, read_size=MiB, read_time=1.5),
                         fil("/data/ref.fa", reads=100, read_size=MiB, read_time=0.5)])]
    adv, _r = advice_of(procs, cpus=8)
    assert list(adv) == ["storage_not_bottleneck"]


# ---- real runs --------------------------------------------------------------------------------------


def profile_report(tmp_path: Path, argv: list[str], *sets: str) -> dict:
    cap = tmp_path / "run.iolens"
    res = iolens("profile", "-q", "-o", cap, "--", *argv, cwd=tmp_path)
    assert res.returncode == 0, res.stderr
    out = tmp_path / "report.json"
    args = [a for s in sets for a in ("--set", s)]
    res = iolens("report", cap, "--json", out, *args, cwd=tmp_path)
    assert res.returncode == 0, res.stderr
    return json.loads(out.read_text())


def test_real_unbuffered_one_line_writes(tmp_path):
    (tmp_path / "w.py").write_text("import os\nfd = os.open('out.bed', os.O_WRONLY | os.O_CREAT | os.O_TRUNC)\n"
                                   "for i in range(400000):\n    os.write(fd, b'chr1\\t%d\\tA\\n' % i)\n")
    rep = profile_report(tmp_path, [sys.executable, "w.py"])
    adv = {a["rule"]: a for a in rep["advice"]}
    a = adv["small_requests"]
    assert a["share"] >= 0.2
    assert any("out.bed" in e for e in a["evidence"])


def test_real_subsample_scaled_to_the_full_input(tmp_path):
    """`report --scale-to 50`: the advice of a short real step states its time at stake at 50x the input."""
    (tmp_path / "w.py").write_text("import os\nfd = os.open('out.bed', os.O_WRONLY | os.O_CREAT | os.O_TRUNC)\n"
                                   "for i in range(400000):\n    os.write(fd, b'chr1\\t%d\\tA\\n' % i)\n")
    cap = tmp_path / "run.iolens"
    assert iolens("profile", "-q", "-o", cap, "--", sys.executable, "w.py", cwd=tmp_path).returncode == 0
    res = iolens("report", cap, "--scale-to", "50", env={**os.environ, "COLUMNS": "200"}, cwd=tmp_path)
    assert res.returncode == 0, res.stderr
    rep = json.loads(iolens("report", cap, "--scale-to", "50", "--json", "-", cwd=tmp_path).stdout)
    a = next(a for a in rep["advice"] if a["rule"] == "small_requests")
    assert a["data"]["at_scale_s"] == pytest.approx(50 * a["time_at_stake_s"])
    assert f"about {human_seconds(a['data']['at_scale_s'])} at stake" in res.stdout
    bad = iolens("report", cap, "--scale-to", "0", cwd=tmp_path)
    assert bad.returncode == 2 and "Traceback" not in bad.stderr


def test_real_temp_files_synced_and_deleted(tmp_path):
    (tmp_path / "work").mkdir()
    (tmp_path / "t.py").write_text(
        "import os\nfor i in range(300):\n    p = os.path.join('work', 'part.%04d.tmp' % i)\n"
        "    with open(p, 'wb') as f:\n        f.write(b'x' * 4096); f.flush(); os.fsync(f.fileno())\n"
        "    os.unlink(p)\n")
    rep = profile_report(tmp_path, [sys.executable, "t.py"])
    adv = {a["rule"]: a for a in rep["advice"]}
    a = adv["temp_placement"]
    text = " ".join([a["title"], *a["evidence"], a["fix"]])
    assert "300" in a["title"] and "one sync per temp file" in text
    assert a["share"] > 0.2


def test_real_gnu_sort_spills_name_its_options(tmp_path):
    sort = tool("sort")
    (tmp_path / "spill").mkdir()
    (tmp_path / "in.txt").write_text("".join(f"{(i * 7919) % 300000}\n" for i in range(300000)))
    rep = profile_report(tmp_path, [sort, "-S", "64K", "-T", "spill", "-o", "sorted.txt", "in.txt"],
                         "min_seconds=0", "min_share=0", "temp_share=0", "temp_bytes=0")
    adv = {a["rule"]: a for a in rep["advice"]}
    a = adv["temp_placement"]
    assert "-T" in a["fix"] and "-S" in a["fix"]
    assert a["data"]["files"] >= 10  # a spill file per 64 KiB of input


def test_real_samtools_sort_spills_name_T_and_m(tmp_path):
    """`samtools sort -m 2M -T spill/part` on 60,000 reads: its spill files, created and deleted within the run,
    are found, and the fix names -T (where) and -m (how many), with the size that would keep them in memory."""
    samtools = tool("samtools")
    import random

    rng = random.Random(1)
    lines = ["@HD\tVN:1.6\tSO:unsorted", "@SQ\tSN:chr1\tLN:10000000"]
    lines += [f"r{i}\t0\tchr1\t{rng.randint(1, 9_999_000)}\t60\t100M\t*\t0\t0\t"
              f"{''.join(rng.choice('ACGT') for _ in range(100))}\t{'I' * 100}" for i in range(60_000)]
    (tmp_path / "in.sam").write_text("\n".join(lines) + "\n")
    (tmp_path / "spill").mkdir()
    rep = profile_report(tmp_path, [samtools, "sort", "-m", "2M", "-T", "spill/part", "-o", "out.bam", "in.sam"],
                         "min_seconds=0", "min_share=0", "temp_share=0", "temp_bytes=0")
    a = {a["rule"]: a for a in rep["advice"]}["temp_placement"]
    n = a["data"]["files"]
    assert n >= 3 and a["title"].startswith(f"{n} temp files")
    assert "`samtools sort -T /dev/shm/part ...`" in a["fix"]
    assert f"raise -m (now 2M, {n} temp files)" in a["fix"] and f"`-m {2 * n}M`" in a["fix"]


def test_real_compute_bound_step(tmp_path):
    rep = profile_report(tmp_path, [sys.executable, "-c", "print(sum(i * i for i in range(3_000_000)))"])
    assert [a["rule"] for a in rep["advice"]] == ["storage_not_bottleneck"]
