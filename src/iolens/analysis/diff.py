"""Compare two captures of the same command: what changed, per category, per mount and per file.

Files are matched by their path relative to each run's working directory (so the same step run in
/mnt/a/run and /mnt/b/run pairs up), then by exact path, then by file name when it is unique on both
sides.  Temporary files with numbered names (sort spills) match by name too.
"""

from __future__ import annotations

import os
from dataclasses import asdict, dataclass, field
from typing import Any

from iolens.analysis.model import Report
from iolens.analysis.breakdown import BREAKDOWN


@dataclass
class Change:
    name: str
    a: float | None
    b: float | None
    delta: float | None
    ratio: float | None


@dataclass
class FileChange:
    key: str
    path_a: str | None
    path_b: str | None
    time_a_s: float | None
    time_b_s: float | None
    delta_s: float | None
    bytes_a: int | None
    bytes_b: int | None
    mount_a: str | None
    mount_b: str | None
    breakdown_delta: dict[str, float]


@dataclass
class Diff:
    a: dict[str, Any]
    b: dict[str, Any]
    same_command: bool
    totals: list[Change]
    categories: list[Change]
    mounts_a: list[dict[str, Any]]
    mounts_b: list[dict[str, Any]]
    files: list[FileChange]
    advice_fixed: list[str] = field(default_factory=list)
    advice_new: list[str] = field(default_factory=list)
    advice_both: list[str] = field(default_factory=list)
    advice_titles: dict[str, str] = field(default_factory=dict)  # rule -> what it found (B's words, else A's)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def mostly(f: FileChange) -> str | None:
    """The class (BREAKDOWN) of a file's largest change in time, either way; None when nothing changed (not the
    first class, "tiny reads", for a file that was only written or stat'd)."""
    deltas = f.breakdown_delta
    most = max(deltas, key=lambda k: abs(deltas[k]), default=None)
    return most if most is not None and abs(deltas[most]) > 1e-9 else None


def change(name: str, a: float | None, b: float | None) -> Change:
    if a is None or b is None:
        return Change(name, a, b, None, None)
    return Change(name, a, b, b - a, (b / a) if a else None)


def _key(path: str, cwd: str | None) -> str:
    if cwd and path.startswith(cwd.rstrip("/") + "/"):
        return os.path.relpath(path, cwd)
    return path


def match_files(fa: list, fb: list, cwd_a: str | None, cwd_b: str | None) -> list[tuple[str, Any, Any]]:
    """Pairs (key, file row of A or None, file row of B or None)."""
    ka = {_key(f.path, cwd_a): f for f in fa}
    kb = {_key(f.path, cwd_b): f for f in fb}
    out = [(k, ka[k], kb.get(k)) for k in ka]
    left_b = {k: f for k, f in kb.items() if k not in ka}
    unmatched_a = [(i, k) for i, (k, _fa, fb_) in enumerate(out) if fb_ is None]
    names_a: dict[str, list[int]] = {}
    for i, k in unmatched_a:
        names_a.setdefault(os.path.basename(k), []).append(i)
    names_b: dict[str, list[str]] = {}
    for k in left_b:
        names_b.setdefault(os.path.basename(k), []).append(k)
    for name, idx in names_a.items():
        if len(idx) == 1 and len(names_b.get(name, [])) == 1:
            kb_ = names_b[name][0]
            k, f, _ = out[idx[0]]
            out[idx[0]] = (name, f, left_b.pop(kb_))
    out += [(k, None, f) for k, f in left_b.items()]
    return out


def diff_reports(ra: Report, rb: Report) -> Diff:
    ta, tb = ra.totals, rb.totals
    totals = [change(k, ta[k], tb[k]) for k in ("wall_s", "own_s", "cpu_s", "io_s", "compute_s", "pipe_wait_s",
                                               "bytes_read", "bytes_written")]
    cats = [change(c, ra.breakdown[c], rb.breakdown[c]) for c in BREAKDOWN]
    real = ("file", "aggregate")
    pairs = match_files([f for f in ra.files if f.kind in real], [f for f in rb.files if f.kind in real],
                        _cwd(ra), _cwd(rb))
    files = []
    for k, fa, fb in pairs:
        bd = {}
        if fa is not None or fb is not None:
            for c in fa.breakdown if fa is not None else fb.breakdown:
                bd[c] = (fb.breakdown[c] if fb is not None else 0.0) - (fa.breakdown[c] if fa is not None else 0.0)
        files.append(FileChange(
            key=k, path_a=fa.path if fa else None, path_b=fb.path if fb else None,
            time_a_s=fa.time_s if fa else None, time_b_s=fb.time_s if fb else None,
            delta_s=(fb.time_s if fb else 0.0) - (fa.time_s if fa else 0.0),
            bytes_a=(fa.bytes_read + fa.bytes_written) if fa else None,
            bytes_b=(fb.bytes_read + fb.bytes_written) if fb else None,
            mount_a=fa.mount if fa else None, mount_b=fb.mount if fb else None, breakdown_delta=bd))
    files.sort(key=lambda f: (-abs(f.delta_s or 0.0), f.key))
    rules_a = {a.rule for a in ra.advice}
    rules_b = {a.rule for a in rb.advice}

    def mounts(r: Report) -> list[dict[str, Any]]:
        return [{"mount": m.mount, "storage": m.storage, "fstype": m.fstype, "time_s": m.time_s,
                 "bytes_read": m.bytes_read, "bytes_written": m.bytes_written} for m in r.mounts]

    def info(r: Report) -> dict[str, Any]:
        return {"path": r.capture["path"], "command": r.capture["command"], "exit_status": r.capture["exit_status"],
                "host": r.capture["host"], "complete": r.capture["complete"]}

    return Diff(a=info(ra), b=info(rb), same_command=ra.capture["command"] == rb.capture["command"],
                totals=totals, categories=cats, mounts_a=mounts(ra), mounts_b=mounts(rb), files=files,
                advice_fixed=sorted(rules_a - rules_b), advice_new=sorted(rules_b - rules_a),
                advice_both=sorted(rules_a & rules_b),
                advice_titles={a.rule: a.title for r in (ra, rb) for a in r.advice})


def _cwd(r: Report) -> str | None:
    return r.capture.get("cwd")
