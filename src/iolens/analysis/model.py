"""The analysis model: the plain dataclasses every fold fills and every renderer reads.

`Report` (built by analysis/report.py) and `RunSummary` (analysis/summary.py) are made only of the
rows below; JSON and CSV are written from these fields in this order, so a field added here appears
in every export.  A process image is known everywhere by its index in the capture (`Capture.processes`),
never by its pid and start time.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

from iolens import _format as F
from iolens.units import human_seconds

# op names of the capture format (native/include/iolens_format.h), in op_count order
OP_NAMES = [name for name, _cat in F.OPS]
# META-category ops that are bookkeeping on an open descriptor or mapping, not namespace traffic
_NOT_NAMESPACE = {"DUP", "MMAP", "MUNMAP", "FTELL", "FALLOCATE", "CLOSEDIR"}
# the calls a metadata storm is made of (open, stat, readdir, unlink, ...) and the fsync-type calls
META_OPS = frozenset(name for name, cat in F.OPS if cat == "META" and name not in _NOT_NAMESPACE)
SYNC_OPS = frozenset(name for name, cat in F.OPS if cat == "SYNC")

PIPES = "(pipes, sockets, terminals)"
NO_FILE = "(not attributed to a file)"
UNKNOWN = "(unknown mount)"


# ---- the report ----------------------------------------------------------------------------------


def killed_by(exit_status: int | None, ended: str) -> int | None:
    """The signal that killed a process image, when its capture says it ended by one (PROC flag SIGNALED: its
    exit_status is then 128 + the signal), else None."""
    if ended == "signaled" and exit_status is not None and exit_status > 128:
        return exit_status - 128
    return None


@dataclass
class Timeline:
    """Rates on the common grid: ops per second per category, bytes per second, and per mount."""

    bin_s: float
    nbins: int
    t_s: list[float]
    iops: dict[str, list[float]]
    read_bps: list[float]
    write_bps: list[float]
    per_mount_iops: dict[str, list[float]] = field(default_factory=dict)
    per_mount_bps: dict[str, list[float]] = field(default_factory=dict)
    per_mount_basis: str = "estimate"



@dataclass(slots=True)
class ProcRow:
    index: int  # the image's index in the capture: its identity
    pid: int
    ppid: int
    name: str
    argv: list[str]
    depth: int
    start_s: float
    end_s: float
    wall_s: float
    own_s: float
    cpu_s: float
    io_s: float
    bytes_read: int
    bytes_written: int
    files: int
    exit_status: int | None
    ended: str
    breakdown: dict[str, float]
    kernel_read: int = 0
    kernel_written: int = 0
    mmap_bytes: int = 0
    untracked_ops: int = 0
    subtree_io_s: float = 0.0
    subtree_cpu_s: float = 0.0
    subtree_bytes_read: int = 0
    subtree_bytes_written: int = 0
    subtree_processes: int = 1
    overflow: bool = False  # OVERFLOW: past --max-files (aggregated per directory) or out of room for records
    parent_index: int | None = None  # the parent's image that was running when this process was forked
    exec_from: int | None = None  # the image this one replaced by exec (same pid), or None
    chain: list[str] = field(default_factory=list)  # names of every image of this process's exec chain, in order
    chain_indices: list[int] = field(default_factory=list)  # their indices

    @property
    def exit_signal(self) -> int | None:
        """The signal that killed this image (`killed_by`); not a field, so no export gains a key."""
        return killed_by(self.exit_status, self.ended)


@dataclass(slots=True)
class FileRow:
    path: str
    kind: str
    mount: str
    fstype: str
    storage: str
    bytes_read: int
    bytes_written: int
    reads: int
    writes: int
    opens: int
    metadata_ops: int
    syncs: int
    time_s: float
    breakdown: dict[str, float]
    read_hist: list[int]
    write_hist: list[int]
    dominant_size: str
    read_pattern: str
    write_pattern: str
    pattern: str
    size: int
    times_read: float | None
    readers: int
    writers: int
    processes: int
    created: bool
    deleted: bool
    temporary: bool
    lifetime_s: float | None
    first_s: float | None
    last_s: float | None
    flags: list[str]
    text_format: str | None
    random_reads: int = 0
    random_writes: int = 0
    tools: list[str] = field(default_factory=list)
    program: bool = False  # an executable or shared library only looked up or mapped: no data calls


@dataclass(slots=True)
class MountRow:
    mount: str
    fstype: str
    source: str
    device: str
    storage: str
    bytes_read: int
    bytes_written: int
    reads: int
    writes: int
    metadata_ops: int
    time_s: float
    breakdown: dict[str, float]
    files: int
    temp_files: int
    temp_bytes: int
    read_window: list[float] | None = None
    write_window: list[float] | None = None


@dataclass
class Advice:
    rule: str
    title: str
    severity: str  # high, medium, low, info
    time_at_stake_s: float | None
    share: float | None
    evidence: list[str]
    fix: str
    data: dict[str, Any] = field(default_factory=dict)

    def short(self) -> str:
        stake = "" if self.time_at_stake_s is None else f" (up to {human_seconds(self.time_at_stake_s)} at stake" + (
            f", {100 * self.share:.0f}% of process time" if self.share is not None else "") + (
            f"; about {human_seconds(self.data['at_scale_s'])} at {self.data['scale_to']:g}x the input"
            if self.data.get("at_scale_s") is not None else "") + ")"
        return f"{self.title}{stake}: {self.fix}"


@dataclass
class Report:
    capture: dict[str, Any]
    totals: dict[str, Any]
    breakdown: dict[str, float]
    processes: list[ProcRow]
    files: list[FileRow]
    mounts: list[MountRow]
    histograms: dict[str, Any]
    timeline: Timeline
    ops: dict[str, int]
    thresholds: dict[str, float]
    available_mounts: list[dict[str, Any]]
    advice: list[Advice] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


# ---- the end-of-run summary ----------------------------------------------------------------------


@dataclass
class ProcSummary:
    pid: int
    ppid: int
    name: str
    argv: list[str]
    start_s: float
    wall_s: float
    own_s: float
    cpu_s: float
    io_wall_s: float
    cat_wall_s: dict[str, float]
    cat_time_s: dict[str, float]
    bytes_read: int
    bytes_written: int
    kernel_read: int
    kernel_written: int
    exit_status: int | None
    ended: str
    depth: int = 0
    files: int = 0
    index: int = 0  # the image's index in the capture
    exec_from: int | None = None  # the image this one replaced by exec
    chain: list[str] = field(default_factory=list)  # names of every image of its exec chain, in order

    @property
    def exit_signal(self) -> int | None:
        """The signal that killed this image (`killed_by`); not a field, so no export gains a key."""
        return killed_by(self.exit_status, self.ended)


@dataclass
class FileSummary:
    path: str
    mount: str
    fstype: str
    bytes_read: int
    bytes_written: int
    reads: int
    writes: int
    opens: int
    time_s: float
    cat_time_s: dict[str, float]
    created: bool
    deleted: bool
    lifetime_s: float | None
    processes: int
    kind: str
    mode: int = 0


@dataclass
class RunSummary:
    command: list[str]
    wall_s: float
    exit_status: int | None
    processes: int
    own_s: float
    io_wall_s: float
    cat_wall_s: dict[str, float]
    stream_s: float
    compute_s: float
    bytes_read: int
    bytes_written: int
    kernel_read: int
    kernel_written: int
    coverage: float | None
    files: int
    top_files: list[FileSummary] = field(default_factory=list)
    temp_files: list[FileSummary] = field(default_factory=list)
    tree: list[ProcSummary] = field(default_factory=list)
    mounts: list[dict[str, Any]] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    exit_signal: int | None = None  # the signal that killed the command, when the capture recorded it

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)
