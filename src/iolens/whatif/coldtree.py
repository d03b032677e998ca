"""The cold-metadata part of a cold calibration: what a step pays to read an existing tree's directories, inodes and
small files back from the storage after the page cache was dropped, which no other calibration class prices (the
metadata calibration's files are ones it just created, so their inodes and directory blocks are cached).

A tree of COLD_FILES small files is laid out on the target, the page cache dropped (pagecache.make_cold: the whole
cache with its dentries and inodes where allowed, else the files' pages only), and a child process in the target's
cgroup (its preexec: a throttled lab disk throttles it) lists the directory, stats every file by name, then opens,
reads and closes each; then does the same again, warm.  Each kind's cold time less its warm time, per entry or file,
is the premium a step pays on its first touch of an existing file in a cold cell (COLD_KINDS; whatif/predict.py
counts the first touches).  The child's own per-call cost is in both passes and drops out of the difference.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time

from iolens.pagecache import make_cold
from iolens.workspace.rails import WorkDirs
from iolens.workspace.target import Target

# Premiums in seconds: per directory entry listed, per existing file first stat'ed or opened (its inode), per existing
# file first read (its first data block).  A cold `tar cf` of 12,000 files of 2 KB took 3.44 s on the root disk where
# the model, with only the warm-created metadata and readahead-helped reads, predicted 0.21 s.
COLD_KINDS = ("cold_list", "cold_inode", "cold_read")
COLD_FILES = 300
COLD_FILE_BYTES = 2000  # the corpus's tree of small files has files of this size
COLD_SAMPLES = 3


def tree_pass(d: str) -> list[int]:
    """ns to list d, to stat each of its files by name, and to open, read 4 KiB of and close each."""
    fd = os.open(d, os.O_RDONLY | os.O_DIRECTORY)
    try:
        t0 = time.perf_counter_ns()
        names = os.listdir(fd)
        t1 = time.perf_counter_ns()
        for n in names:
            os.stat(n, dir_fd=fd, follow_symlinks=False)
        t2 = time.perf_counter_ns()
        for n in names:
            f = os.open(n, os.O_RDONLY, dir_fd=fd)
            os.read(f, 4096)
            os.close(f)
        t3 = time.perf_counter_ns()
    finally:
        os.close(fd)
    return [t1 - t0, t2 - t1, t3 - t2]


def premiums(cold: list[int], warm: list[int], files: int) -> dict[str, float]:
    """Seconds per entry or file that each kind cost more cold than warm (never below 0)."""
    per = (files + 2, files, files)  # a listing returns the two dots too
    return {k: max(0.0, (c - w) / 1e9 / n) for k, c, w, n in zip(COLD_KINDS, cold, warm, per)}


def calibrate_cold_tree(t: Target, files: int = COLD_FILES, samples: int = COLD_SAMPLES) -> dict[str, float]:
    """The median premium of each COLD_KINDS kind on t over `samples` drops of the page cache."""
    with WorkDirs() as wd:
        tree = wd.create(t) / "tree"
        tree.mkdir()
        paths = []
        for i in range(files):
            p = tree / f"f{i:05d}"
            p.write_bytes(b"x" * COLD_FILE_BYTES)
            paths.append(str(p))
        got: list[dict[str, float]] = []
        for _ in range(samples):
            make_cold(paths, "auto")
            r = subprocess.run([sys.executable, "-m", "iolens.whatif.coldtree", str(tree)], capture_output=True,
                               text=True, preexec_fn=t.preexec, timeout=600)
            if r.returncode:
                raise RuntimeError(f"the cold-tree calibration on {t.spec} failed: {r.stderr.strip()[-300:]}")
            cold, warm = json.loads(r.stdout)
            got.append(premiums(cold, warm, files))
    return {k: sorted(g[k] for g in got)[len(got) // 2] for k in COLD_KINDS}


if __name__ == "__main__":  # the child: a cold pass, then a warm one
    print(json.dumps([tree_pass(sys.argv[1]), tree_pass(sys.argv[1])]))
