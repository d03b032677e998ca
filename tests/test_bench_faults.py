"""Faults found when the published experiments were rerun, each pinned by a test.

The device share of a mixed test, the compressing-filesystem exemption, bursts over a throttle, object-store free
space, random content on a compressing filesystem, work directories that are not ours, and the op sets and CLI
choices the engine describes.
"""

from __future__ import annotations

import json
import shutil
import os
import socket
import subprocess
import sys

import pytest
from rich.console import Console

from conftest import iolens, unavailable
from iolens import workdirs
from iolens.bench import cache, engine, metrics, runner, suites
from iolens.workspace import rails as safety
from iolens.workspace import target as targets
from iolens.bench.metrics import from_phase
from iolens.bench.report import ResultRow
from iolens.workspace.target import Target
from iolens.render.bench_table import cell, device_shares, render_bench

MiB = 1 << 20


def group(op="read", nbytes=100 * MiB, **kw):
    g = {"op": op, "engine": "psync", "dir": 0, "threads": 1, "bs": MiB, "sync": "none", "content": None,
         "direct_requested": False, "direct_used": False, "direct_refused": False, "bytes": nbytes, "ops": 100,
         "sync_s": 0.0, "latency_ns": {"count": 100, "min": 1000, "mean": 2000.0, "max": 9000, "p50": 1800.0,
                                       "p90": 3000.0, "p99": 8000.0, "p99.9": 9000.0},
         "series_bytes": [nbytes], "series_ops": [100],
         "per_thread": [{"thread": 0, "bytes": nbytes, "ops": 100, "start_s": 0.0, "first_done_s": 0.01,
                         "last_done_s": 0.5, "end_s": 0.5, "cpu_s": 0.1}]}
    g.update(kw)
    return g


def phase(*groups, device=None, wall=0.5):
    for g in groups:
        for th in g["per_thread"]:
            th["end_s"] = wall
    ph = {"name": "p", "wall_s": wall, "cpu_user_s": 0.01, "cpu_sys_s": 0.04,
          "cache": {"evict_requested": True, "evicted": True, "dropped": False, "drop_requested": False,
                    "resident_fraction": 0.0},
          "groups": list(groups) or [group()]}
    if device is not None:
        ph["devices"] = [{"read_bytes": device[0], "write_bytes": device[1], "read_ios": 1, "write_ios": 1}]
    return ph


def target(**kw) -> Target:
    t = Target(spec="/data", kind="dir", fstype="ext4", device="vda", device_class="virtual",
               plausible_read_Bps=16e9, limit_source="virtual device class")
    for k, v in kw.items():
        setattr(t, k, v)
    return t


def row_of(ph, t, test="align", job=None):
    g0 = ph["groups"][0]
    r = ResultRow(target=t.spec, test=test, group=test, suite="genomics", op=g0["op"], threads=1, bs=g0["bs"],
                  content=None, primary=metrics.primary_metric(ph["groups"]),
                  job={"dirs": ["/x"], "phase": job or {"groups": [dict(op=g["op"]) for g in ph["groups"]]}})
    r.add(ph, t, cache.state_of(ph, t, (r.job or {})["phase"]))
    return r.to_dict()


# ---- the device share is per direction ----------------------------------------------------------------------

def test_a_mixed_tests_device_share_is_per_direction():
    """align reads 48 MiB and writes 144 MiB; the device read all 48 and wrote all 144: 100% each, not 25%."""
    ph = phase(group("read", 48 * MiB), group("write", 144 * MiB, sync="fdatasync"),
               device=(48 * MiB, 144 * MiB))
    m = from_phase(ph)
    assert m["read_bytes"] == 48 * MiB and m["write_bytes"] == 144 * MiB and m["bytes"] == 192 * MiB
    row = row_of(ph, target())
    assert device_shares(row) == [("read", 100.0), ("write", 100.0)]
    text = cell(row).plain
    assert "device read 100%, write 100%" in text and "25%" not in text
    # half the input came from the device: the read share says 50%, whatever was written
    half = row_of(phase(group("read", 48 * MiB), group("write", 144 * MiB), device=(24 * MiB, 0)), target())
    assert device_shares(half) == [("read", 50.0), ("write", 0.0)]


def test_a_plain_reads_share_is_unchanged_and_stored_rows_still_show_it():
    row = row_of(phase(group("read"), device=(99 * MiB, 0)), target(), test="seq-read t1")
    assert device_shares(row) == [("", 99.0)] and "device 99%" in cell(row).plain
    # a result stored before read_bytes existed: the phase's groups say which bytes were read
    for key in ("read_bytes", "write_bytes"):
        del row["metrics"][key]
    assert device_shares(row) == [("", 99.0)]
    mixed = row_of(phase(group("read", 48 * MiB), group("write", 144 * MiB), device=(48 * MiB, 0)), target())
    for key in ("read_bytes", "write_bytes"):
        del mixed["metrics"][key]
    assert device_shares(mixed) == []  # cannot be told apart: shown as nothing rather than 25%


# ---- the compressing-filesystem exemption applies ------------------------------------------------------------

BTRFS = dict(fstype="btrfs", mount_options="rw,relatime,compress=zstd:3")


def test_fastq_read_back_on_a_compressing_filesystem_is_cold():
    """The engine's result names no content for a plain read; the phase as sent does (the suite marks it)."""
    ph = phase(group("read"), device=(30 * MiB, 0))  # 100 MiB of FASTQ in 30 MiB on disk
    assert ph["groups"][0]["content"] is None
    sent = {"groups": [{"op": "read", "content": "fastq"}]}
    assert cache.state_of(ph, target(**BTRFS), sent) == "cold-evicted"
    r = row_of(ph, target(**BTRFS), test="seq-read t1", job=sent)
    assert r["cache_state"] == "cold-evicted" and not r["warnings"]
    # random data read back does not shrink: 30% from the device is a cache
    assert cache.state_of(ph, target(**BTRFS), {"groups": [{"op": "read", "content": "random"}]}) == "warm"
    # unknown content is judged, as before; the same FASTQ on ext4 is judged too
    assert cache.state_of(ph, target(**BTRFS)) == "warm"
    assert cache.state_of(ph, target(), sent) == "warm"


def test_suites_mark_what_their_reads_read():
    sc = suites.Scale(size=64 * MiB, files=16, meta_files=100, runtime=0.1, bs=MiB)

    def reads(suite, **opts):
        out = {}
        for t in suites.build(suite, "/t", sc, suites.Options(**opts)):
            for p in t.phases:
                for g in p["groups"]:
                    if g["op"] in metrics.read_ops():
                        out[p["name"]] = g.get("content")
        return out

    assert set(reads("classic", content="fastq").values()) == {"fastq"}
    assert set(reads("classic").values()) == {"random"}
    assert set(reads("streams", content="sam").values()) == {"sam"}
    g = reads("genomics")
    assert g["align"] == "random" and g["sort-merge"] == "random" and g["index-load"] == "random"
    assert g["ref-lookup"] == "fastq" and g["workdir-read"] == "fastq"
    tmpl = reads("classic", content="fastq", template="/dev/null")
    assert set(tmpl.values()) == {"template"}


def test_compressing_filesystem_is_read_from_mount_options_or_the_lab_catalogue(tmp_path, monkeypatch):
    assert targets.compression_of("rw,relatime,compress=zstd:3,space_cache=v2") == "zstd:3"
    assert targets.compression_of("rw,compress-force=lzo") == "lzo"
    assert targets.compression_of("rw,compress") == "zlib"
    assert targets.compression_of("rw,compress=no") is None and targets.compression_of("rw,relatime") is None
    monkeypatch.setattr(targets.lab, "resolve_target", lambda spec, root=None: tmp_path)
    monkeypatch.setattr(targets.lab, "target_info", lambda name: {"mount_options": "compress=zstd:3"})
    monkeypatch.setattr(targets.lab, "preexec", lambda name: None)
    t = targets.resolve("lab:btrfs-zstd")
    assert t.compression == "zstd:3" and cache.compressing(t)


# ---- a burst over the limit that the device delivered is not a cache -----------------------------------------

def test_a_burst_the_device_delivered_is_not_called_cache():
    hdd = target(plausible_read_Bps=120 * MiB, limit_source="lab:hdd throttle")
    ph = phase(group("read", 70 * MiB), device=(70 * MiB, 0))  # 140 MiB/s over 0.5 s
    m = from_phase(ph)
    assert m["read_Bps"] == pytest.approx(140 * MiB)
    assert cache.plausibility("seq-read", hdd, ph, "cold-evicted", m) == []
    notes = cache.burst_notes("seq-read", hdd, ph, "cold-evicted", m)
    assert len(notes) == 1 and "delivered the bytes read" in notes[0] and "not a cache" in notes[0]
    r = row_of(ph, hdd, test="seq-read t1")
    assert not r["warnings"] and any("burst" in n for n in r["notes"])
    # the device delivered a tenth: that one was a cache
    cached = phase(group("read", 70 * MiB), device=(7 * MiB, 0))
    w = cache.plausibility("seq-read", hdd, cached, "cold-evicted", from_phase(cached))
    assert len(w) == 1 and "probably served from a cache" in w[0]
    assert cache.burst_notes("seq-read", hdd, cached, "cold-evicted", from_phase(cached)) == []


# ---- object stores have no size -------------------------------------------------------------------------------

def test_an_object_stores_placeholder_size_is_reported_as_unknown(tmp_path, monkeypatch):
    fake = os.statvfs_result((4096, 4096, (1 << 64) // 4096 - 1, (1 << 64) // 4096 - 1, (1 << 64) // 4096 - 1,
                              1 << 30, 1 << 30, 1 << 30, 0, 255))
    monkeypatch.setattr(targets.os, "statvfs", lambda p: fake)
    t = Target(spec="lab:s3", kind="dir", path=tmp_path, fstype="fuse.s3fs")
    t.refresh_space()
    assert t.free_bytes is None and t.total_bytes is None and "object store" in (t.free_unknown or "")
    safety.check_space(t, 10 << 30, 10, "the classic suite")  # nothing to refuse against
    doc = {"targets": [t.facts()], "results": [], "suites": ["classic"], "repeat": 1, "warnings": []}
    c = Console(record=True, width=200)
    render_bench(doc, c)
    out = c.export_text()
    assert "TiB of" not in out and "16777216" not in out and "unknown (unlimited" in out
    # rclone's 1 PiB is a placeholder on an object store, a 1 PiB Lustre is real
    assert targets.placeholder_space("fuse.rclone", 1 << 50) and not targets.placeholder_space("lustre", 1 << 50)
    assert targets.placeholder_space("ext4", 1 << 64)


# ---- random content on a compressing filesystem gets one caveat -----------------------------------------------

def test_random_content_on_a_compressing_filesystem_gets_one_caveat():
    zstd = target(spec="lab:btrfs-zstd", fstype="btrfs", compression="zstd:3")
    ext4 = target(spec="/ext4")
    sc = suites.Scale(size=64 * MiB, files=16, meta_files=100, runtime=0.1, bs=MiB)

    def caveats(suite_names, **opts):
        o = suites.Options(**opts)
        return runner.content_caveats(runner.plan([zstd, ext4], suite_names, o, sc), o)

    w = caveats(["classic", "random"])
    assert len(w) == 1 and w[0].startswith("lab:btrfs-zstd compresses") and "--content fastq" in w[0]
    assert "classic+random" in w[0]
    assert caveats(["classic"], content="fastq") == []
    assert caveats(["genomics"]) == []  # its random files stand for gzipped reads and BGZF on purpose
    assert caveats(["meta"]) == []  # empty files: no content at all
    assert len(caveats(["genomics"], content="random")) == 1


# ---- work directories: only provably ours are cleaned ---------------------------------------------------------

def dead_pid() -> int:
    p = subprocess.Popen([sys.executable, "-c", "pass"])
    p.wait()
    return p.pid


def test_work_directories_carry_a_marker(tmp_path):
    t = Target(spec=str(tmp_path), kind="dir", path=tmp_path)
    with safety.WorkDirs() as wd:
        d = wd.create(t)
        m = workdirs.read_marker(d)
        assert m and m["pid"] == os.getpid() and m["host"] == socket.gethostname() and m["started"]
        assert workdirs.owner_of(d).owner == "running"
    assert not d.exists()


def test_bench_leaves_a_users_directory_alone_and_cleans_a_killed_runs(tmp_path, monkeypatch):
    monkeypatch.setenv("IOLENS_DB", str(tmp_path / "results.sqlite"))
    tgt = tmp_path / "target"
    tgt.mkdir()
    mine = tgt / "iolens-bench-mine"
    mine.mkdir()
    (mine / "notes.txt").write_text("mine")
    killed = tgt / "iolens-bench-k1ll3d"
    killed.mkdir()
    workdirs.write_marker(killed, {**workdirs.marker_of_this_process(), "pid": dead_pid(), "start": None})
    res = iolens("bench", str(tgt), "--suite", "meta", "--threads", "1", "--files", "10", "-q", "--no-store",
                 "--json", "-")
    assert res.returncode == 0, res.stderr
    doc = json.loads(res.stdout)
    assert (mine / "notes.txt").read_text() == "mine" and not killed.exists()
    assert sorted(p.name for p in tgt.iterdir()) == ["iolens-bench-mine"]
    everything = json.dumps(doc["warnings"] + doc["notes"])
    assert "left by an earlier run" not in everything
    assert any("iolens-bench-mine is not an iolens work directory" in n for n in doc["notes"])
    assert any(n.startswith("removed 1 leftover directory of iolens runs that were killed: ") and str(killed) in n
               for n in doc["notes"])


# ---- the op sets and CLI choices are the engine's -------------------------------------------------------------

def test_importing_bench_does_not_start_the_engine():
    code = ("import iolens.bench.metrics, iolens.bench.cache, iolens.bench.suites, iolens.render.bench_table, "
            "iolens.commands.bench\nfrom iolens.bench import engine\n"
            "assert engine.describe.cache_info().currsize == 0, 'the engine ran at import'")
    env = {**os.environ, "IOLENS_BENCH_ENGINE": "/nonexistent/iolens-bench"}
    res = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=60)
    assert res.returncode == 0, res.stderr


@pytest.fixture
def bigger_engine(monkeypatch):
    """An engine that describes one more op, content and I/O engine than today's."""
    real = engine.describe()
    d = json.loads(json.dumps(real))
    d["ops"]["readmore"] = {"kind": "seq", "io": "read", "doc": "x"}
    d["contents"] = list(d["contents"]) + ["vcf"]
    d["engines"] = list(d["engines"]) + ["aio"]
    engine.op_names.cache_clear()
    monkeypatch.setattr(engine, "describe", lambda: d)
    yield d
    engine.op_names.cache_clear()


def test_op_sets_come_from_the_engine(bigger_engine):
    assert "readmore" in metrics.READ_OPS and "readmore" in metrics.SEQ_OPS
    assert "readmore" in metrics.read_ops() and "readmore" in metrics.reading_ops()
    assert "randrw" in metrics.reading_ops() and "randrw" not in metrics.read_ops()
    ph = phase(group("readmore"), device=(10 * MiB, 0))
    assert cache.state_of(ph, target()) == "warm"  # judged as a read: the device delivered a tenth


def test_cli_choices_come_from_the_engine(bigger_engine):
    from iolens.commands.bench import bench

    params = {p.name: p for p in bench.params}
    assert params["content"].type.choices == tuple(c for c in bigger_engine["contents"] if c != "template")
    assert params["ioengine"].type.choices == tuple(e for e in bigger_engine["engines"] if e != "null")
    assert "vcf" in params["content"].type.choices and "aio" in params["ioengine"].type.choices


def test_cli_refuses_an_engine_name_the_engine_does_not_know(tmp_path):
    res = iolens("bench", str(tmp_path), "--content", "vcf", "-q", "--no-store")
    assert res.returncode == 2 and "'vcf' is not one of" in res.stderr and "'fastq'" in res.stderr
    res = iolens("bench", str(tmp_path), "--ioengine", "null", "-q", "--no-store")
    assert res.returncode == 2 and "io_uring" in res.stderr


def test_a_loop_file_is_named_by_the_device_holding_it(tmp_path):
    """A filesystem in a loop file (the lab's ext4) showed 'plausible read 16 GB/s (virtual device class)', naming
    the class of the disk that holds the file as if it were the target's own: it says it is a loop file on it."""
    if os.geteuid() != 0:
        pytest.skip("a loop device and its mount need root")
    if shutil.which("losetup") is None or shutil.which("mkfs.ext4") is None:
        unavailable("losetup or mkfs.ext4 is not installed")
    img, mnt = tmp_path / "fs.img", tmp_path / "mnt"
    with open(img, "wb") as f:
        f.truncate(32 << 20)
    mnt.mkdir()
    subprocess.run(["mkfs.ext4", "-q", "-F", str(img)], check=True, capture_output=True)
    dev = subprocess.run(["losetup", "--find", "--show", str(img)], check=True, capture_output=True,
                         text=True).stdout.strip()
    try:
        subprocess.run(["mount", dev, str(mnt)], check=True, capture_output=True)
        try:
            t = targets.resolve(str(mnt))
            holder = targets.resolve(str(tmp_path))
        finally:
            subprocess.run(["umount", str(mnt)], check=True, capture_output=True)
    finally:
        subprocess.run(["losetup", "-d", dev], check=True, capture_output=True)
    assert t.device_class == "loop", t
    if holder.device_class == "memory":  # memory speed is real: no ceiling to say
        assert t.limit_source is None, t
    elif holder.device_class in ("hdd", "ssd", "nvme", "virtual"):
        assert t.limit_source == f"loop file on a {holder.device_class} device", t
    else:
        assert t.limit_source == "loop device, its backing unknown", t
    c = Console(record=True, width=200)
    render_bench({"targets": [vars(t) | {"name": str(mnt)}], "results": []}, c)
    out = " ".join(c.export_text().split())
    assert "device class)" not in out and "plausible read: the fastest a read" in out, out
