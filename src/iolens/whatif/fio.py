"""Export a replay plan as a fio iolog, version 3 (`fio --read_iolog=FILE`).

fio replays data operations only.  What it cannot express, and how the export treats it:
- metadata (stat, readdir, unlink, rename, mkdir) and the stdio buffering of small reads and writes: left out
  (stdio calls are written as the calls themselves, which fio issues unbuffered; consecutive calls a stream's
  buffer served are one event in the trace, so one call of their bytes here);
- threads and processes: one iolog is one job, so all threads are merged into one stream in the order of their
  recorded times (each thread's from when it began in the recording); the ordering between processes (fork,
  wait, pipes) is kept only as far as those times say;
- compute gaps: kept as the timestamps (milliseconds since the start), which fio waits for before each op;
- file names: fio opens the names as written, so they are written relative and flat for a run in an empty
  scratch directory, never the capture's own paths: every byte but letters, digits, `.`, `_` and `-` as `%XX`
  (`a/b c` becomes `a%2Fb%20c`), so that no two files share a name and none holds the whitespace that ends a
  name in the iolog; a name over fio's 255 characters keeps its end, after a digest of the whole.  Files are
  `add`ed and `open`ed at first use;
  fio does not lay out files for a replayed log, so the files the step reads are listed with their sizes in
  FILE.layout (`SIZE NAME` lines): create them first, e.g. `while read s n; do head -c $s /dev/urandom > $n; done`.
"""

from __future__ import annotations

import hashlib
import string

import numpy as np

from iolens.whatif.engine import op_codes
from iolens.whatif.plan import Plan
from iolens.whatif.schedule import op_times

HEADER = "fio version 3 iolog\n"


_SAFE = frozenset(string.ascii_letters + string.digits + "._-")
NAME_MAX = 255  # fio reads an iolog v3 name with sscanf("%256s"); a file name's own limit is 255 bytes


def fio_name(rel: str) -> str:
    """The file's name in the iolog and its layout list (see above): flat, unambiguous, no whitespace."""
    raw = rel.encode("utf-8", "surrogateescape")
    name = "".join(chr(b) if chr(b) in _SAFE else f"%{b:02X}" for b in raw)
    if len(name) > NAME_MAX:
        digest = hashlib.sha256(raw).hexdigest()[:16]
        name = f"{digest}~{name[-(NAME_MAX - len(digest) - 1):]}"
    return name


def iolog(plan: Plan) -> bytes:
    """The plan as iolog v3 text."""
    c = op_codes()
    ops = plan.ops
    t = op_times(plan)
    data = {c["READ"]: "read", c["SREAD"]: "read", c["COPY_FROM"]: "read", c["WRITE"]: "write",
            c["SWRITE"]: "write", c["COPY"]: "write", c["FSYNC"]: "sync", c["FDATASYNC"]: "datasync"}
    sel = np.nonzero(np.isin(ops["op"], list(data)))[0]
    order = sel[np.argsort(t[sel], kind="stable")]
    lines = [HEADER]
    opened: set[int] = set()
    t0 = int(t[order[0]]) if len(order) else 0
    for i in order:
        o = ops[i]
        f = plan.handles[int(o["obj"])]
        name = fio_name(plan.files[f].rel)
        ms = max(0, (int(t[i]) - t0) // 1_000_000)
        if f not in opened:
            opened.add(f)
            lines.append(f"{ms} {name} add\n{ms} {name} open\n")
        act = data[int(o["op"])]
        if act in ("read", "write"):
            if int(o["size"]) == 0:
                continue
            lines.append(f"{ms} {name} {act} {int(o['offset'])} {int(o['size'])}\n")
        else:
            lines.append(f"{ms} {name} {act} 0 0\n")
    end = max(0, (int(t[order[-1]]) - t0) // 1_000_000) if len(order) else 0
    for f in sorted(opened):
        lines.append(f"{end} {fio_name(plan.files[f].rel)} close\n")
    return "".join(lines).encode()


def layout_list(plan: Plan) -> bytes:
    """`SIZE NAME` for each file the step reads and did not create: what to lay out before `fio --read_iolog`."""
    return "".join(f"{f.layout} {fio_name(f.rel)}\n" for f in plan.files
                   if not f.created and not f.dir and f.layout > 0).encode()
