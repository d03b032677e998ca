"""Build crafted captures from Python dicts, for tests of the analysis and the renderers.

    from helpers.capture import proc, fil, build_capture, write_capture

    cap = build_capture([
        proc(100, ["samtools", "sort", "-o", "out.bam", "in.sam"], start=0, end=10, cpu=6,
             files=[fil("/data/in.sam", reads=1000, read_size=1 << 20, read_time=2.0),
                    fil("/data/out.bam.tmp.0000.bam", writes=500, write_size=1 << 20, write_time=1.0,
                        created=True, deleted=True)]),
    ])                                   # -> a Capture, as read_capture returns it
    write_capture(tmp_path / "x.iolens", [...])   # -> the same as a file

Times are seconds from the start of the run; sizes are bytes.  A process's PROC fields (category
times, bytes, kernel counters, op counts) are derived from its files unless given, so a crafted
capture is consistent the way a real one is: kernel counters equal the attributed bytes (100%
coverage) unless `kernel_read`/`kernel_written` say otherwise.  Files without a `dev` are placed on
a mount by path prefix; MOUNTS below is the default mount table.
"""

from __future__ import annotations

import math
import zlib
from pathlib import Path
from typing import Any

from iolens import _format as F
from iolens.capture.reader import Capture, decode
from iolens.capture.writer import (file_header, file_record, meta_record, pack_fixed, record, schema_payload,
                                   string_record)

T0 = 1_000_000_000_000  # monotonic ns of the run's start
CATS = [c.lower() for c in F.CATEGORIES]
OPS = [name for name, _cat in F.OPS]
PF = {name: bit for name, (bit, _doc) in F.PROC_FLAGS.items()}
FF = {name: bit for name, (bit, _doc) in F.FILE_FLAGS.items()}

MOUNTS = [
    {"mountpoint": "/", "dev": "254:1", "fstype": "ext4", "source": "/dev/vda1", "options": "rw,relatime", "root": "/"},
    {"mountpoint": "/data", "dev": "8:17", "fstype": "xfs", "source": "/dev/sdb1", "options": "rw,relatime",
     "root": "/"},
    {"mountpoint": "/scratch", "dev": "259:1", "fstype": "ext4", "source": "/dev/nvme0n1p1", "options": "rw",
     "root": "/"},
    {"mountpoint": "/mnt/nfs", "dev": "0:50", "fstype": "nfs4", "source": "fs1:/export", "options": "rw", "root": "/"},
    {"mountpoint": "/mnt/s3", "dev": "0:51", "fstype": "fuse", "source": "mountpoint-s3", "options": "rw", "root": "/"},
    {"mountpoint": "/dev/shm", "dev": "0:23", "fstype": "tmpfs", "source": "tmpfs", "options": "rw", "root": "/"},
    {"mountpoint": "/proc", "dev": "0:21", "fstype": "proc", "source": "proc", "options": "rw", "root": "/"},
]


def traced_calls(p) -> int:
    """The calls a process's trace events stand for: an event of consecutive buffered stdio calls stands for
    1 + repeats of them (EVENT version 2)."""
    ev = p.events
    return 0 if ev is None else len(ev) + int(ev["repeats"].sum())


def ns(seconds: float) -> int:
    return int(round(seconds * 1e9))


def hist_bin(size: int) -> int:
    for i, edge in enumerate(F.HIST_EDGES):
        if size <= edge:
            return i
    return len(F.HIST_EDGES)


def fil(path: str, *, reads: int = 0, read_size: int = 0, read_time: float = 0.0, read_seq: float = 1.0,
        writes: int = 0, write_size: int = 0, write_time: float = 0.0, write_seq: float = 1.0,
        opens: int = 1, stats: int = 0, metas: int = 0, meta_time: float = 0.0, syncs: int = 0,
        sync_time: float = 0.0, pipe_time: float = 0.0, first: float | None = None, last: float | None = None,
        created: bool = False, deleted: bool = False, flags: list[str] = (), dev: int = 0,
        read_hist: list[int] | None = None, write_hist: list[int] | None = None,
        bytes_read: int | None = None, bytes_written: int | None = None, size: int | None = None,
        mmap_bytes: int = 0) -> dict[str, Any]:
    """One FILE record.  reads/writes of read_size/write_size bytes; read_seq/write_seq is the fraction of
    calls after the first that continue forwards.  first/last default to the owning process's lifetime."""
    rh = list(read_hist) if read_hist else [0] * F.HIST_BINS
    wh = list(write_hist) if write_hist else [0] * F.HIST_BINS
    if reads and not read_hist:
        rh[hist_bin(read_size)] += reads
    if writes and not write_hist:
        wh[hist_bin(write_size)] += writes
    br = reads * read_size if bytes_read is None else bytes_read
    bw = writes * write_size if bytes_written is None else bytes_written
    fl = 0
    for name in flags:
        fl |= FF[name]
    if created:
        fl |= FF["CREATED"]
    if deleted:
        fl |= FF["DELETED"]
    if path.startswith(("pipe:", "socket:")) or path in ("/dev/null", "/dev/tty"):
        fl |= FF["NOT_A_FILE"]
    seq_r = int(round(max(0, reads - 1) * read_seq))
    seq_w = int(round(max(0, writes - 1) * write_seq))
    return {
        "path": path, "flags": fl, "dev": dev, "ino": zlib.crc32(path.encode("utf-8", "surrogateescape")),
        "mode": 0o100644,
        "opens": opens, "reads": reads, "writes": writes, "bytes_read": br, "bytes_written": bw,
        "read_hist": rh, "write_hist": wh, "seq_reads": seq_r, "seq_writes": seq_w,
        "consec_reads": seq_r, "consec_writes": seq_w, "rw_switches": 0,
        "max_read_end": size if size is not None else br, "max_write_end": size if size is not None else bw,
        "stats": stats, "seeks": 0, "syncs": syncs, "mmaps": 1 if mmap_bytes else 0, "mmap_bytes": mmap_bytes,
        "metas": metas,
        "cat_time_ns": [ns(read_time), ns(write_time), ns(meta_time), ns(sync_time), ns(pipe_time)],
        "_first": first, "_last": last, "_created": created, "_deleted": deleted,
    }


def proc(pid: int, argv: list[str], *, ppid: int = 1, start: float = 0.0, end: float = 1.0, cpu: float | None = None,
         files: list[dict[str, Any]] = (), exe: str | None = None, wait: float = 0.0, exit_status: int = 0,
         kernel_read: int | None = None, kernel_written: int | None = None, ops: dict[str, int] | None = None,
         extra_time: dict[str, float] | None = None, threads: int = 1, cwd: str = "/data",
         env: dict[str, str] | None = None, children: list[dict[str, Any]] = (), execed: bool = False,
         finalized: bool = True, timeline: bool = True) -> dict[str, Any]:
    """One process image.  extra_time adds unattributed call time per category (read, write, meta, sync,
    stream); cpu defaults to the wall time not spent in I/O."""
    return {k: v for k, v in locals().items()}


def _proc_records(p: dict[str, Any]) -> bytes:
    start, end = ns(p["start"]), ns(p["end"])
    files = []
    cat = [0] * len(CATS)
    for i, f in enumerate(p["files"]):
        f = dict(f)
        first = ns(f.pop("_first") if f["_first"] is not None else p["start"])
        last = ns(f.pop("_last") if f["_last"] is not None else p["end"])
        f.pop("_first", None), f.pop("_last", None)
        created, deleted = f.pop("_created"), f.pop("_deleted")
        f.update(index=i, first_mono=T0 + first, last_mono=T0 + last,
                 created_mono=T0 + first if created else 0, deleted_mono=T0 + last if deleted else 0)
        for c in range(len(CATS)):
            cat[c] += f["cat_time_ns"][c]
        files.append(f)
    for name, sec in (p["extra_time"] or {}).items():
        cat[CATS.index(name)] += ns(sec)
    io_wall = sum(cat[:4])
    wall = end - start
    cpu = ns(p["cpu"]) if p["cpu"] is not None else max(0, wall - io_wall - sum(cat[4:]) - ns(p["wait"]))
    br = sum(f["bytes_read"] for f in files)
    bw = sum(f["bytes_written"] for f in files)
    op_count = [0] * next(count for name, _t, count, _o in F.LAYOUTS["PROC"][3] if name == "op_count")
    defaults = {"READ": sum(f["reads"] for f in files), "WRITE": sum(f["writes"] for f in files),
                "OPEN": sum(f["opens"] for f in files), "STAT": sum(f["stats"] for f in files),
                "FSYNC": sum(f["syncs"] for f in files)}
    for name, n in {**defaults, **(p["ops"] or {})}.items():
        op_count[OPS.index(name)] = n
    flags = PF["FINALIZED"] | (PF["EXECED"] if p["execed"] else PF["EXITED"]) if p["finalized"] else 0
    if p["threads"] > 1:
        flags |= PF["MULTITHREADED"]
    kr = br if p["kernel_read"] is None else p["kernel_read"]
    kw = bw if p["kernel_written"] is None else p["kernel_written"]
    fields = {
        "pid": p["pid"], "ppid": p["ppid"], "flags": flags, "exit_status": p["exit_status"],
        "start_real": 1_700_000_000 * 10**9 + start, "start_mono": T0 + start,
        "end_mono": T0 + end if p["finalized"] else 0, "utime_ns": cpu, "stime_ns": 0,
        "k_rchar": kr, "k_wchar": kw, "k_read_bytes": kr, "k_write_bytes": kw,
        "bytes_read": br, "bytes_written": bw, "cat_time_ns": cat, "cat_wall_ns": cat, "io_wall_ns": io_wall,
        "op_count": op_count, "nfiles": len(files), "nthreads": p["threads"], "wait_ns": ns(p["wait"]),
    }
    out = record("PROC", pack_fixed("PROC", fields))
    exe = p["exe"] or ("/usr/bin/" + p["argv"][0].rsplit("/", 1)[-1])
    out += string_record("EXE", exe)
    out += string_record("ARGV", "\0".join(p["argv"]) + "\0")
    out += string_record("CWD", p["cwd"])
    if p["env"]:
        out += string_record("ENV", "\0".join(f"{k}={v}" for k, v in p["env"].items()) + "\0")
    for f in files:
        out += file_record(f)
    if p["timeline"]:
        out += record("TIMELINE", pack_fixed("TIMELINE", _timeline(start, end, files)))
    for c in p["children"]:
        out += record("CHILD", pack_fixed("CHILD", {**c, "end_mono": T0 + ns(c.get("end", 0))}))
    return out


def _timeline(start: int, end: int, files: list[dict[str, Any]]) -> dict[str, Any]:
    """Each file's calls and bytes spread evenly over the bins of its first-to-last use."""
    shift = F.TIMELINE_SHIFT0
    while ((end - start) >> shift) >= F.TIMELINE_BINS:
        shift += 1
    nb = F.TIMELINE_BINS
    count = [0.0] * (nb * len(CATS))
    rb = [0.0] * nb
    wb = [0.0] * nb
    for f in files:
        b0 = min(nb - 1, (f["first_mono"] - T0 - start) >> shift)
        b1 = min(nb - 1, max(b0, (f["last_mono"] - T0 - start) >> shift))
        k = b1 - b0 + 1
        per = {0: f["reads"], 1: f["writes"], 2: f["opens"] + f["stats"] + f["metas"], 3: f["syncs"]}
        stream = f["flags"] & FF["NOT_A_FILE"]
        for b in range(b0, b1 + 1):
            for c, n in per.items():
                cc = 4 if stream and c < 2 else c
                count[b * len(CATS) + cc] += n / k
            rb[b] += f["bytes_read"] / k
            wb[b] += f["bytes_written"] / k
    return {"t0_mono": T0 + start, "shift": shift, "nbins": nb, "count": [int(math.ceil(v)) for v in count],
            "bytes_read": [int(v) for v in rb], "bytes_written": [int(v) for v in wb]}


def capture_bytes(processes: list[dict[str, Any]], meta: dict[str, Any] | None = None) -> bytes:
    end = max((p["end"] for p in processes), default=0.0)
    m = {"tool": "iolens", "iolens_version": "0.1.0", "command": processes[0]["argv"] if processes else [],
         "cwd": "/data", "start_mono": T0, "end_mono": T0 + ns(end), "wall_s": end, "exit_status": 0,
         "host": "testhost", "kernel": "6.1.0", "cpus": 8, "mem_bytes": 32 << 30, "trace": False,
         "mounts": MOUNTS, "parent_pid": 1}
    m.update(meta or {})
    out = file_header(major=1) + record("SCHEMA", schema_payload()) + meta_record(m)  # unsealed: format 1.0
    for p in processes:
        out += _proc_records(p)
    return out + b"\0" * 8


def build_capture(processes: list[dict[str, Any]], meta: dict[str, Any] | None = None,
                  path: str = "crafted.iolens") -> Capture:
    return decode(capture_bytes(processes, meta), path)


def write_capture(path: str | Path, processes: list[dict[str, Any]], meta: dict[str, Any] | None = None) -> Path:
    p = Path(path)
    p.write_bytes(capture_bytes(processes, meta))
    return p


def traced_and_counted(tmp_path: Path) -> dict[bool, Capture]:
    """`cat` of a 5,000-byte file profiled twice in tmp_path, with `--trace` (True) and without (False): real
    captures of the current recorder, as `iolens profile` writes them."""
    from conftest import iolens
    from iolens.capture.reader import read_capture

    (tmp_path / "a").write_bytes(b"x" * 5000)
    out = {}
    for trace in (True, False):
        path = tmp_path / f"s{trace}.iolens"
        r = iolens("profile", "-q", *(["--trace"] if trace else []), "-o", path, "--", "cat", "a", cwd=tmp_path)
        assert r.returncode == 0, r.stderr
        out[trace] = read_capture(path)
    return out
