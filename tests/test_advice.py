"""Every advice rule against a crafted capture that triggers it and one that does not."""

from __future__ import annotations

import pytest

from helpers.capture import build_capture, fil, proc
from iolens.analysis import advice as A
from iolens.analysis.report import build_report, top_advice
from iolens.analysis.thresholds import with_overrides

GiB = 1 << 30
MiB = 1 << 20


def report(procs, **meta):
    return build_report(build_capture(procs, meta or None))


def fire(rule, procs, **meta):
    r = report(procs, **meta)
    return rule(r, r.thresholds)


def one(argv, files, end=100.0, **kw):
    return [proc(100, argv, end=end, files=files, **kw)]


# ---- small requests --------------------------------------------------------------------------------


def test_small_requests_fires_on_many_tiny_reads():
    a = fire(A.small_requests, one(["python3", "parse.py"], [
        fil("/data/reads.fq", reads=2_000_000, read_size=100, read_time=20.0)]))
    assert a is not None and a.rule == "small_requests"
    assert a.time_at_stake_s == pytest.approx(20.0)
    assert "2,000,000" in a.title
    assert any("/data/reads.fq" in e and "0-100 B" in e for e in a.evidence)
    assert "buffer" in a.fix


def test_small_requests_quiet_on_large_streaming_reads():
    assert fire(A.small_requests, one(["python3", "parse.py"], [
        fil("/data/reads.fq", reads=2000, read_size=MiB, read_time=20.0)])) is None


def test_small_requests_on_network_suggests_local_copy():
    a = fire(A.small_requests, one(["awk"], [fil("/mnt/nfs/reads.fq", reads=500_000, read_size=8192, read_time=30.0)]))
    assert a is not None and "local copy" in a.fix


# ---- metadata storm --------------------------------------------------------------------------------


def test_metadata_storm_fires_on_many_stats():
    a = fire(A.metadata_storm, one(["find"], [fil("/data/samples", stats=50_000, meta_time=15.0)]))
    assert a is not None
    assert a.time_at_stake_s == pytest.approx(15.0)
    assert a.data["ops"]["STAT"] == 50_000
    assert any("stat 50,000" in e for e in a.evidence)


def test_metadata_storm_quiet_when_cheap():
    assert fire(A.metadata_storm, one(["find"], [fil("/data/samples", stats=50_000, meta_time=0.1)])) is None


def test_metadata_storm_counts_many_small_files():
    files = [fil(f"/data/cells/c{i}.txt", reads=1, read_size=500, meta_time=0.01) for i in range(1500)]
    a = fire(A.metadata_storm, one(["python3", "collect.py"], files))
    assert a is not None and a.data["small_files"] == 1500


# ---- fsync storm -----------------------------------------------------------------------------------


def test_fsync_storm_fires():
    a = fire(A.fsync_storm, one(["sqlite3"], [fil("/data/db.sqlite", writes=5000, write_size=4096, write_time=1.0,
                                                  syncs=5000, sync_time=12.0)]))
    assert a is not None and a.time_at_stake_s == pytest.approx(12.0)
    assert any("/data/db.sqlite: 5,000 syncs" in e for e in a.evidence)


def test_fsync_storm_quiet_with_few_syncs():
    assert fire(A.fsync_storm, one(["sqlite3"], [fil("/data/db.sqlite", writes=5000, write_size=4096,
                                                     write_time=1.0, syncs=3, sync_time=12.0)])) is None


# ---- temp placement --------------------------------------------------------------------------------


def sort_run(tmp_dir: str):
    return one(["samtools", "sort", "-o", "/data/out.bam", "/data/in.sam"], [
        fil("/data/in.sam", reads=2048, read_size=MiB, read_time=10.0),
        fil(f"{tmp_dir}/out.bam.tmp.0000.bam", writes=1024, write_size=MiB, write_time=8.0, reads=1024,
            read_size=MiB, read_time=4.0, created=True, deleted=True),
        fil("/data/out.bam", writes=1024, write_size=MiB, write_time=6.0, created=True),
    ])


def test_temp_files_next_to_inputs_fire_with_samtools_T():
    a = fire(A.temp_placement, sort_run("/data"))
    assert a is not None
    assert a.time_at_stake_s == pytest.approx(12.0)
    assert a.title == "1 temp file cost 12.00 s on /data, the same device as the inputs and outputs"
    assert "samtools sort -T /scratch/tmp/sort" in a.fix
    assert a.data["alternatives"] == ["/dev/shm", "/scratch/tmp"]


def test_temp_files_on_another_device_are_fine():
    assert fire(A.temp_placement, sort_run("/scratch")) is None


def test_temp_files_on_network_storage_fire():
    a = fire(A.temp_placement, sort_run("/mnt/nfs"))
    assert a is not None and a.title == "1 temp file cost 12.00 s on /mnt/nfs, network storage"


# ---- reading and writing one device ----------------------------------------------------------------


def aligner(out_dir: str):
    return one(["minimap2", "-a", "ref.fa", "in.fq"], [
        fil("/data/in.fq", reads=1024, read_size=MiB, read_time=20.0),
        fil(f"{out_dir}/out.sam", writes=1024, write_size=MiB, write_time=25.0, created=True),
    ])


def test_same_device_read_write_fires_when_another_disk_exists():
    a = fire(A.same_device_read_write, aligner("/data"))
    assert a is not None
    assert a.time_at_stake_s == pytest.approx(20.0)
    assert "/scratch" in a.fix and "-o /scratch/out.sam" in a.fix


def test_same_device_read_write_quiet_when_output_elsewhere():
    assert fire(A.same_device_read_write, aligner("/scratch")) is None


def test_same_device_read_write_quiet_without_another_disk():
    only_root = [{"mountpoint": "/", "dev": "254:1", "fstype": "ext4", "source": "/dev/vda1", "options": "rw",
                  "root": "/"}]
    files = [fil("/srv/in.fq", reads=1024, read_size=MiB, read_time=20.0),
             fil("/srv/out.sam", writes=1024, write_size=MiB, write_time=25.0, created=True)]
    assert fire(A.same_device_read_write, one(["minimap2"], files), mounts=only_root) is None


# ---- re-read -------------------------------------------------------------------------------------


def test_reread_fires_for_a_file_read_three_times():
    procs = [proc(100 + i, ["bwa", "mem", "/mnt/nfs/ref.fa"], start=i * 30, end=i * 30 + 30,
                  files=[fil("/mnt/nfs/ref.fa", reads=1024, read_size=MiB, read_time=10.0, size=GiB)])
             for i in range(3)]
    a = fire(A.reread, procs)
    assert a is not None
    assert a.time_at_stake_s == pytest.approx(20.0)  # 30 s of reads, a third of them needed
    assert "read 3.0x" in a.evidence[0] and "3 process(es)" in a.evidence[0]
    assert "stage it onto local disk" in a.fix


def test_reread_quiet_for_a_single_read():
    assert fire(A.reread, one(["bwa"], [fil("/data/ref.fa", reads=1024, read_size=MiB, read_time=10.0)])) is None


def test_reread_suggests_write_index_after_sort():
    procs = [proc(100, ["samtools", "sort", "-o", "/data/o.bam"], end=50,
                  files=[fil("/data/o.bam", writes=1024, write_size=MiB, write_time=5.0, created=True)]),
             proc(101, ["samtools", "index", "/data/o.bam"], start=50, end=70,
                  files=[fil("/data/o.bam", reads=1024, read_size=MiB, read_time=8.0, size=GiB)]),
             proc(102, ["samtools", "flagstat", "/data/o.bam"], start=70, end=90,
                  files=[fil("/data/o.bam", reads=1024, read_size=MiB, read_time=8.0, size=GiB)])]
    a = fire(A.reread, procs)
    assert a is not None and "--write-index" in a.fix


# ---- random access on network/FUSE ------------------------------------------------------------------


def test_remote_random_fires_on_nfs():
    a = fire(A.remote_random, one(["blastn"], [fil("/mnt/nfs/db.idx", reads=100_000, read_size=MiB, read_seq=0.2,
                                                   read_time=50.0)]))
    assert a is not None
    assert a.data["jumps"] == 79_999  # the first call is neither forwards nor back
    assert a.time_at_stake_s == pytest.approx(40.0, rel=0.01)
    assert "local disk" in a.fix


def test_remote_random_quiet_on_local_disk():
    assert fire(A.remote_random, one(["blastn"], [fil("/data/db.idx", reads=100_000, read_size=MiB, read_seq=0.2,
                                                      read_time=50.0)])) is None


# ---- object-store-hostile writes -------------------------------------------------------------------


def test_object_store_random_writes_fire():
    a = fire(A.object_store_writes, one(["samtools", "index"], [
        fil("/mnt/s3/out.bam", writes=100, write_size=MiB, write_seq=0.5, write_time=2.0, created=True)]))
    assert a is not None and a.severity == "high"
    assert "non-sequential writes" in a.evidence[0]
    assert "copy each finished file" in a.fix


def test_object_store_rename_and_append_fire():
    a = fire(A.object_store_writes, one(["tool"], [
        fil("/mnt/s3/a.log", writes=10, write_size=100, flags=["APPEND"]),
        fil("/mnt/s3/big.bam", writes=64, write_size=MiB, created=True, flags=["RENAMED_TO"])]))
    assert a is not None and len(a.data["files"]) == 2


def test_object_store_sequential_new_file_is_fine():
    assert fire(A.object_store_writes, one(["samtools", "view"], [
        fil("/mnt/s3/out.bam", writes=100, write_size=MiB, write_time=2.0, created=True)])) is None


# ---- uncompressed text re-read ---------------------------------------------------------------------


def text_run(name: str):
    return [proc(100, ["minimap2", "-a"], end=60, files=[
                fil(f"/data/{name}", writes=2048, write_size=MiB, write_time=10.0, created=True)]),
            proc(101, ["samtools", "sort", f"/data/{name}"], start=60, end=100, files=[
                fil(f"/data/{name}", reads=2048, read_size=MiB, read_time=5.0)])]


def test_uncompressed_sam_written_then_read_fires():
    a = fire(A.uncompressed_text, text_run("aln.sam"))
    assert a is not None
    assert a.time_at_stake_s == pytest.approx(15.0)
    assert "SAM" in a.title and "samtools sort" in a.fix


def test_compressed_bam_is_fine():
    assert fire(A.uncompressed_text, text_run("aln.bam")) is None


# ---- coverage --------------------------------------------------------------------------------------


def test_low_coverage_says_what_is_unseen():
    a = fire(A.low_coverage, one(["bowtie2-align-s"], [fil("/data/in.fq", reads=100, read_size=MiB, read_time=1.0)],
                                  kernel_read=1000 * MiB))
    assert a is not None
    assert a.data["unseen_bytes"] == 900 * MiB
    assert any("bowtie2-align-s [100]" in e for e in a.evidence)
    assert "lower bound" in a.fix


def test_full_coverage_is_quiet():
    assert fire(A.low_coverage, one(["cat"], [fil("/data/in.fq", reads=100, read_size=MiB, read_time=1.0)])) is None


# ---- storage is not the bottleneck -----------------------------------------------------------------


def test_storage_not_bottleneck_says_so_plainly():
    a = fire(A.storage_not_bottleneck, one(["minimap2"], [fil("/data/in.fq", reads=100, read_size=MiB, read_time=1.0)],
                                           cpu=99.0))
    assert a is not None and a.severity == "info"
    assert a.time_at_stake_s == pytest.approx(1.0)
    assert "No storage upgrade will help" in a.fix and "steal" not in " ".join(a.evidence)


def test_storage_not_bottleneck_rounds_its_share_as_the_stake_line():
    """The title's share and the stake line's share ("4% of process time") are one figure, rounded alike: not
    "I/O is 3.5% of process time (up to 165.0 ms at stake, 4% of process time)"."""
    a = fire(A.storage_not_bottleneck, one(["minimap2"], [fil("/data/in.fq", reads=100, read_size=MiB, read_time=3.5)],
                                           cpu=96.5))
    assert a is not None and a.share == pytest.approx(0.035, abs=0.002)
    stake_pct = f"{100 * a.share:.0f}%"  # as report_text and report_html print the stake line's share
    assert a.title.endswith(f"I/O is {stake_pct} of process time"), a.title
    assert f"({stake_pct})" in a.evidence[0] and "3.5%" not in " ".join([a.title] + a.evidence)


def test_storage_not_bottleneck_on_a_tiny_step_does_not_send_to_cpu():
    """`iolens profile -- true` (microseconds of process time): no advice to buy CPU, the step is too short."""
    tiny = fire(A.storage_not_bottleneck, one(["true"], [fil("/etc/ld.so.cache", reads=1, read_size=4096,
                                                             read_time=0.000002)], end=0.00005, cpu=0.00004))
    assert tiny is not None
    assert "Spend on CPU" not in tiny.fix and "too short" in tiny.fix, tiny.fix
    long = fire(A.storage_not_bottleneck, one(["minimap2"], [fil("/data/in.fq", reads=100, read_size=MiB,
                                                                 read_time=1.0)], cpu=99.0))
    assert long is not None and "Spend on CPU" in long.fix and "too short" not in long.fix


def test_storage_not_bottleneck_names_the_hypervisors_steal():
    """A compute-bound step on a VM whose CPUs were a fifth stolen: the advice says so, and what to do."""
    a = fire(A.storage_not_bottleneck, one(["minimap2"], [fil("/data/in.fq", reads=100, read_size=MiB, read_time=1.0)],
                                           cpu=99.0), machine_cpu_s={"busy": 80.0, "steal": 20.01, "tick": 0.01})
    assert a is not None and "took 20% of the CPU time" in " ".join(a.evidence)
    assert "CPU credits" in a.fix


def test_io_bound_run_is_not_told_storage_does_not_matter():
    assert fire(A.storage_not_bottleneck, one(["cp"], [
        fil("/data/in.fq", reads=30_000, read_size=MiB, read_time=30.0)])) is None


# ---- the list, the order, the summary line -----------------------------------------------------------


def test_every_rule_is_listed_and_documented():
    assert len(A.RULES) >= 11
    for rule in A.RULES:
        assert rule.__doc__
    from pathlib import Path

    doc = (Path(__file__).resolve().parents[1] / "docs" / "report.md").read_text()
    for rule in A.RULES:
        assert f"`{rule.__name__}`" in doc


def test_advice_is_sorted_by_time_at_stake_with_info_last():
    r = report(one(["samtools", "sort", "-@", "7"], [
        fil("/data/reads.fq", reads=2_000_000, read_size=100, read_time=6.0),
        fil("/data/db.sqlite", writes=10, write_size=4096, syncs=5000, sync_time=3.0)], cpu=91.0))
    rules = [a.rule for a in r.advice]
    # storage_not_bottleneck has the most at stake (all 9 s of I/O) but is informational, so it comes last
    assert rules == ["small_requests", "fsync_storm", "storage_not_bottleneck"]


def test_top_advice_gives_short_lines():
    cap = build_capture(one(["python3"], [fil("/data/reads.fq", reads=2_000_000, read_size=100, read_time=20.0)]))
    lines = top_advice(cap)
    assert len(lines) == 1 and lines[0].startswith("2,000,000 tiny or small I/O calls")
    assert "at stake" in lines[0]


def test_thresholds_change_what_fires():
    procs = one(["python3"], [fil("/data/reads.fq", reads=200_000, read_size=100, read_time=0.5)])
    assert fire(A.small_requests, procs) is None
    th = with_overrides(["min_seconds=0.1", "min_share=0", "small_requests_share=0.001"])
    r = build_report(build_capture(procs), th)
    assert A.small_requests(r, r.thresholds) is not None


# ---- the file columns the rules read -------------------------------------------------------------------


def test_file_columns_made_with_the_report_are_the_rows_own_values():
    """build_report hands the rules its file columns as it made them (advice_kit.attach_columns); each must hold
    exactly what the rows say, as read back out of the rows, or a rule would see other files than the report."""
    import numpy as np

    from conftest import datapath
    from iolens.analysis.advice_kit import _real_column
    from iolens.capture.reader import read_capture

    r = build_report(read_capture(datapath("report", "small.iolens")))
    made = r.__dict__["_columns"][1]
    assert made["real"].sum() == 12 and len(made["real"]) == len(r.files) == 13  # 12 files and a pipe
    for name in made:
        if name == "real":
            continue
        attached = _real_column(r, name)
        r.__dict__.pop("_columns")  # the same column read out of the rows
        r.__dict__.pop("_real_columns")
        from_rows = _real_column(r, name)
        attach = r.__dict__["_columns"] = (r.files, made)
        assert attach[0] is r.files
        assert attached.shape == from_rows.shape and attached.tolist() == from_rows.tolist(), name
        assert np.asarray(attached).dtype == np.asarray(from_rows).dtype or name in ("mount", "storage"), name
