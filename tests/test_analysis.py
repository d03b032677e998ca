"""The report's analysis functions: breakdown split, wall-time scaling, timeline, classification, phases."""

from __future__ import annotations

import numpy as np
import pytest

from helpers.capture import build_capture, fil, proc
from iolens.analysis import breakdown as B
from iolens.analysis.classify import looks_temporary, storage_kind, text_format, tool_name
from iolens.analysis.report import NO_FILE, build_report
from iolens.analysis.thresholds import defaults, with_overrides
from iolens.analysis.timeline import Grid, common_grid, mount_shares, rebin
from iolens.errors import UsageError

MiB = 1 << 20
TH = defaults()


def split(f):
    return B.split_one({k: v for k, v in f.items() if not k.startswith("_")}, TH)


# ---- size classes ---------------------------------------------------------------------------------


def test_bin_split_shares_each_bin_once():
    frac, mean = B.bin_split(4096, 65536)
    assert np.allclose(frac.sum(axis=0), 1.0)
    # 4 KiB cuts the 1-10 KiB bin at log(4)/log(10); 64 KiB cuts 10-100 KiB at log(6.4)/log(10)
    assert frac[0, 2] == pytest.approx(np.log(4) / np.log(10))
    assert frac[1, 3] == pytest.approx(np.log(6.4) / np.log(10))
    assert frac[0, :2].tolist() == [1.0, 1.0] and frac[2, 4:].tolist() == [1.0] * 6
    assert (mean[frac > 0] > 0).all()


def test_threshold_on_a_bin_edge_gives_the_whole_bin_to_one_side():
    frac, _ = B.bin_split(1024, 102400)
    assert frac[:, 2].tolist() == [0.0, 1.0, 0.0] and frac[:, 3].tolist() == [0.0, 1.0, 0.0]


@pytest.mark.parametrize("size,cls", [(100, "tiny_read"), (3000, "tiny_read"), (8192, "small_read"),
                                      (50_000, "small_read"), (MiB, "streaming_read")])
def test_one_class_files_get_their_measured_time_exactly(size, cls):
    s = split(fil("/data/x", reads=1000, read_size=size, read_time=2.0, meta_time=0.5))
    assert s[cls] == pytest.approx(2.0)
    assert s["metadata"] == pytest.approx(0.5)
    assert sum(s.values()) == pytest.approx(2.5)


def test_large_backward_calls_are_random():
    s = split(fil("/data/x", reads=1001, read_size=MiB, read_seq=0.25, read_time=4.0))
    assert s["random_read"] == pytest.approx(3.0 * 1000 / 1001, rel=1e-6)
    assert s["streaming_read"] + s["random_read"] == pytest.approx(4.0)


def test_writes_sync_and_pipes_have_their_own_classes():
    s = split(fil("/data/x", writes=10, write_size=MiB, write_time=1.0, syncs=2, sync_time=0.25, pipe_time=0.5))
    assert s["streaming_write"] == pytest.approx(1.0)
    assert s["sync"] == pytest.approx(0.25) and s["pipe_wait"] == pytest.approx(0.5)


def test_mixed_sizes_split_by_the_cost_model():
    hist = [0] * 10
    hist[0], hist[5] = 1000, 10  # 1000 calls of <=100 B and 10 of 1-4 MiB
    f = fil("/data/x", read_hist=hist, reads=1010, bytes_read=1000 * 50 + 10 * 2 * MiB, read_time=1.0)
    s = split(f)
    tiny_w = 1000 * TH["call_cost_ns"] + 1000 * 50 * TH["byte_cost_ns"]
    big_w = 10 * TH["call_cost_ns"] + 10 * 2 * MiB * TH["byte_cost_ns"]
    assert s["tiny_read"] == pytest.approx(tiny_w / (tiny_w + big_w), rel=0.05)
    assert s["tiny_read"] + s["streaming_read"] == pytest.approx(1.0)


def test_a_cut_bin_is_sized_from_the_bytes_when_it_is_alone():
    hist = [0] * 10
    hist[2] = 100  # 1-10 KiB bin only: 8 KiB calls are small, 3 KB calls are tiny
    assert split(fil("/d/x", read_hist=hist, reads=100, bytes_read=100 * 8192, read_time=1.0))["small_read"] == 1.0
    assert split(fil("/d/x", read_hist=hist, reads=100, bytes_read=100 * 3000, read_time=1.0))["tiny_read"] == 1.0


def test_pattern_names():
    assert B.pattern(100, 99, TH) == "sequential"
    assert B.pattern(100, 10, TH) == "random"
    assert B.pattern(100, 70, TH) == "mixed"
    assert B.pattern(1, 0, TH) == "sequential" and B.pattern(0, 0, TH) == "-"


# ---- wall-clock scaling -----------------------------------------------------------------------------


def test_single_threaded_factors_are_one():
    f = B.process_factors([10, 20, 30, 0, 5], [10, 20, 30, 0, 5], 60e-9, 1.0, 5e-9)
    assert f.tolist() == pytest.approx([1.0, 1.0, 1.0, 0.0, 1.0])


def test_threads_are_scaled_to_wall_time():
    # 4 threads each reading 10 s at once: 40 s of calls, 10 s of wall time
    f = B.process_factors([40e9, 0, 0, 0, 0], [10e9, 0, 0, 0, 0], 10.0, 12.0, 0.0)
    assert f[0] == pytest.approx(0.25)
    # categories overlapping each other are scaled down to the I/O wall time together
    g = B.process_factors([10e9, 10e9, 0, 0, 0], [10e9, 10e9, 0, 0, 0], 10.0, 12.0, 0.0)
    assert g[:2].tolist() == pytest.approx([0.5, 0.5])


def test_multithreaded_process_breakdown_never_exceeds_its_time():
    cap = build_capture([proc(1, ["bwa", "mem", "-t", "4"], end=10, cpu=30, threads=4, files=[
        fil("/data/r.fq", reads=40_000, read_size=MiB, read_time=20.0)])])
    # the helper sets cat_wall = cat_time; make it look like 4 threads overlapping
    p = cap.processes[0]
    p.fields["cat_wall_ns"] = [5 * 10**9, 0, 0, 0, 0]
    p.fields["io_wall_ns"] = 5 * 10**9
    r = build_report(cap)
    assert r.breakdown["streaming_read"] == pytest.approx(5.0)
    assert sum(r.breakdown.values()) == pytest.approx(10.0)
    assert r.files[0].time_s == pytest.approx(5.0)


# ---- the report's sums ------------------------------------------------------------------------------


def crafted():
    return build_capture([
        proc(10, ["sh", "-c", "x"], end=100, wait=90, files=[fil("pipe:[7]", pipe_time=0.5)]),
        proc(11, ["minimap2", "-a"], ppid=10, start=1, end=61, files=[
            fil("/data/ref.fa", reads=100, read_size=MiB, read_time=2.0),
            fil("/data/aln.sam", writes=10_000, write_size=400, write_time=3.0, created=True)],
             extra_time={"read": 1.0}),
        proc(12, ["samtools", "sort", "-T", "/scratch/t"], ppid=10, start=61, end=99, files=[
            fil("/data/aln.sam", reads=80, read_size=50_000, read_time=1.5, read_seq=1.0),
            fil("/scratch/t.0000.bam", writes=20, write_size=MiB, write_time=1.0, reads=20, read_size=MiB,
                read_time=0.5, created=True, deleted=True, first=70, last=90),
            fil("/data/aln.bam", writes=30, write_size=MiB, write_time=1.2, syncs=1, sync_time=0.3, created=True)]),
    ])


def test_breakdown_adds_up_to_process_time_everywhere():
    r = build_report(crafted())
    assert sum(r.breakdown.values()) == pytest.approx(r.totals["own_s"])
    for p in r.processes:
        assert sum(p.breakdown.values()) == pytest.approx(p.own_s)
    io = sum(v for k, v in r.breakdown.items() if k != "compute")
    assert sum(m.time_s for m in r.mounts) == pytest.approx(io)
    assert sum(f.time_s for f in r.files) + next(m.time_s for m in r.mounts if m.mount == NO_FILE) == pytest.approx(io)


def test_unattributed_time_follows_the_process_split():
    r = build_report(crafted())
    mm = next(p for p in r.processes if p.name == "minimap2")
    assert mm.breakdown["streaming_read"] == pytest.approx(3.0)  # 2 s attributed + 1 s on an unnamed descriptor
    assert next(m for m in r.mounts if m.mount == NO_FILE).breakdown["streaming_read"] == pytest.approx(1.0)


def test_files_merge_across_processes_with_their_facts():
    r = build_report(crafted())
    sam = next(f for f in r.files if f.path == "/data/aln.sam")
    assert (sam.bytes_written, sam.bytes_read) == (4_000_000, 4_000_000)
    assert sam.readers == 1 and sam.writers == 1 and sam.processes == 2
    assert sam.text_format == "SAM" and sam.dominant_size == "101 B-1 KiB"
    assert sam.breakdown["tiny_write"] == pytest.approx(3.0) and sam.breakdown["small_read"] == pytest.approx(1.5)
    assert sam.tools == ["minimap2", "samtools sort"]
    tmp = next(f for f in r.files if f.path == "/scratch/t.0000.bam")
    assert tmp.temporary and tmp.lifetime_s == pytest.approx(20.0)
    assert tmp.mount == "/scratch" and tmp.storage == "local" and tmp.fstype == "ext4"
    assert not next(f for f in r.files if f.path == "/data/aln.bam").temporary


def test_mount_rows_carry_storage_and_temp_bytes():
    r = build_report(crafted())
    m = {row.mount: row for row in r.mounts}
    assert m["/scratch"].temp_files == 1 and m["/scratch"].temp_bytes == 20 * MiB
    assert m["/data"].storage == "local" and m["/data"].source == "/dev/sdb1"
    assert m["(pipes, sockets, terminals)"].breakdown["pipe_wait"] == pytest.approx(0.5)
    assert {a["mount"] for a in r.available_mounts} >= {"/", "/data", "/scratch", "/mnt/nfs", "/mnt/s3"}


def test_phases_have_subtree_totals_in_tree_order():
    r = build_report(crafted())
    assert [(p.name, p.depth) for p in r.processes] == [("sh", 0), ("minimap2", 1), ("samtools sort", 1)]
    root = r.processes[0]
    assert root.subtree_processes == 3
    assert root.subtree_io_s == pytest.approx(sum(p.io_s for p in r.processes))
    assert root.subtree_bytes_written == sum(p.bytes_written for p in r.processes)
    assert r.processes[2].start_s == pytest.approx(61) and r.processes[2].end_s == pytest.approx(99)


# ---- timeline ----------------------------------------------------------------------------------------


def test_rebin_keeps_totals_and_places_by_overlap():
    g = Grid(start_mono=0, bin_ns=10, nbins=4)
    out = rebin(np.array([4.0, 8.0]), 5, 10, g)  # bins [5,15) and [15,25)
    assert out.sum() == pytest.approx(12.0)
    assert out.tolist() == pytest.approx([2.0, 2.0 + 4.0, 4.0, 0.0])


def test_rebin_of_columns_side_by_side_is_each_column_rebinned_alone():
    # build_timeline rebins a process's counts and bytes together: the report must not change by a bit
    rng = np.random.default_rng(7)
    g = Grid(start_mono=1_000, bin_ns=777, nbins=50)
    for t0, width, n in ((0, 64, 300), (1_500, 1024, 20), (1_000, 777, 50), (40_000, 8, 10)):
        cols = np.floor(rng.random((n, 5)) * 1e6)
        together = rebin(cols, t0, width, g)
        for j in range(cols.shape[1]):
            assert together[:, j].tobytes() == rebin(cols[:, j], t0, width, g).tobytes()


def test_rebin_interpolates_as_numpy_interp_does_bit_for_bit():
    # rebin interpolates every column at once by np.interp's own formula: the report must not change by a bit
    from iolens.analysis.timeline import interp_columns

    rng = np.random.default_rng(11)
    cases = ((0, 64, 300, Grid(1_000, 777, 50)), (5, 10, 1, Grid(0, 10, 4)),
             (10**12 + 3, 1 << 20, 256, Grid(10**12, 3_000_001, 200)), (40_000, 8, 10, Grid(40_000, 8, 10)))
    for t0, width, n, g in cases:
        xp = t0 + width * np.arange(n + 1, dtype=np.float64)
        x = np.clip(g.edges, xp[0], xp[-1])
        fp = np.concatenate([[0.0], np.cumsum(np.floor(rng.random(n) * 1e6))])
        fp2 = np.column_stack([fp, fp[::-1].copy(), np.zeros(n + 1)])
        assert interp_columns(x, xp, fp).tobytes() == np.interp(x, xp, fp).tobytes()
        for j in range(fp2.shape[1]):
            assert interp_columns(x, xp, fp2)[:, j].tobytes() == np.interp(x, xp, fp2[:, j]).tobytes()
    # uneven points, and x on some of them: any other way of writing the line differs in a few last bits
    xp = np.cumsum(rng.random(3_001) * 7 + 0.1)
    x = np.sort(np.concatenate([rng.uniform(xp[0], xp[-1], 5_000), xp[::7], xp[-1:]]))
    fp = np.column_stack([np.cumsum(rng.random(3_001) * 1e3), rng.random(3_001)])
    for j in range(2):
        assert interp_columns(x, xp, fp)[:, j].tobytes() == np.interp(x, xp, fp[:, j]).tobytes()


def test_common_grid_is_never_finer_than_the_process_bins():
    g = common_grid(0, 1_000_000, 8_000, 200)
    assert g.bin_ns == 8_000 and g.nbins == 125
    assert common_grid(0, 10**12, 8_000, 200).nbins == 200


def test_mount_shares_follow_file_windows():
    sh = mount_shares(4, 0, 10, np.array([0, 20]), np.array([19, 39]), np.array([0, 1]), np.array([1.0, 1.0]), 2)
    assert sh.tolist() == [[1.0, 1.0, 0.0, 0.0], [0.0, 0.0, 1.0, 1.0]]


def test_report_timeline_totals_match_the_capture():
    r = build_report(crafted())
    tl = r.timeline
    assert sum(tl.read_bps) * tl.bin_s == pytest.approx(r.totals["bytes_read"], rel=1e-6)
    assert sum(tl.write_bps) * tl.bin_s == pytest.approx(r.totals["bytes_written"], rel=1e-6)
    assert set(tl.per_mount_bps) >= {"/data", "/scratch"}
    # the temp file was used from 70 s to 90 s only: /scratch has no traffic before 69 s
    first = next(i for i, v in enumerate(tl.per_mount_bps["/scratch"]) if v > 0)
    assert tl.t_s[first] >= 69


# ---- classification and thresholds -----------------------------------------------------------------


@pytest.mark.parametrize("fstype,source,kind", [
    ("ext4", "/dev/sda1", "local"), ("xfs", "/dev/nvme0n1", "local"), ("tmpfs", "tmpfs", "memory"),
    ("nfs4", "srv:/x", "network"), ("lustre", "mgs@tcp:/fs", "network"), ("fuse.s3fs", "s3fs", "object-store"),
    ("fuse", "mountpoint-s3", "object-store"), ("fuse.rclone", "remote:", "object-store"),
    ("fuse.sshfs", "u@h:/", "network"), ("fuse.gcsfuse", "bucket", "object-store"), ("fuse.myfs", "x", "fuse"),
    ("proc", "proc", "pseudo"), ("", "", "unknown")])
def test_storage_kind(fstype, source, kind):
    assert storage_kind(fstype, source) == kind


def test_text_formats_and_temp_names():
    assert text_format("/x/aln.sam") == "SAM" and text_format("/x/r_1.FASTQ") == "FASTQ"
    assert text_format("/x/r_1.fq.gz") is None and text_format("/x/a.bam") is None and text_format("/x/a.bin") is None
    assert looks_temporary("/x/out.bam.tmp.0003.bam", True, False)
    assert looks_temporary("/x/anything", True, True)
    assert not looks_temporary("/tmp/run/out.bam", True, False)
    assert not looks_temporary("/x/tmp.bam", False, False)
    assert tool_name(["samtools", "sort", "-o", "x"], "/usr/bin/samtools") == "samtools sort"
    assert tool_name(["minimap2", "-a"], "/usr/bin/minimap2") == "minimap2"


def test_threshold_overrides_are_checked():
    th = with_overrides(["small_bytes=131072"])
    assert th["small_bytes"] == 131072 and th["tiny_bytes"] == TH["tiny_bytes"]
    with pytest.raises(UsageError, match="unknown threshold 'smol'"):
        with_overrides(["smol=1"])
    with pytest.raises(UsageError, match="needs a number"):
        with_overrides(["small_bytes=big"])
    with pytest.raises(UsageError, match="NAME=VALUE"):
        with_overrides(["small_bytes"])
    with pytest.raises(UsageError, match="tiny_bytes must not be larger"):
        with_overrides(["tiny_bytes=1000000"])


def test_thresholds_move_calls_between_classes():
    cap = build_capture([proc(1, ["cat"], end=10, files=[fil("/data/x", reads=100, read_size=100_000, read_time=1.0)])])
    assert build_report(cap).breakdown["streaming_read"] == pytest.approx(1.0)
    assert build_report(cap, with_overrides(["small_bytes=131072"])).breakdown["small_read"] == pytest.approx(1.0)


def test_distinct_is_np_unique():
    from iolens.analysis.files import _distinct

    rng = np.random.default_rng(3)
    for a in (rng.integers(0, 50, 1_000), rng.integers(-(1 << 62), 1 << 62, 10_000), np.zeros(0, dtype=np.int64),
              np.array([7])):
        got = _distinct(a)
        assert got.dtype == np.unique(a).dtype and got.tolist() == np.unique(a).tolist()
