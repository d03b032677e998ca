"""Where a storage target is, resolved once for every command that takes one (bench, compare, compress, replay,
predict, cost): a directory, a lab target (`lab:NAME[:SIZE[:iops=N]...][/sub/path]`), or the null sink.

    parse("lab:gp2:500G/work") -> Resolved: kind "lab", the sized catalogue target, sub "work"
    parse("/scratch")          -> Resolved: kind "dir"
    r.path()                   -> the directory (a lab target's mount, which must be up; TargetError otherwise)
    r.option, r.emulation      -> the priced option it stands for, and what its results must carry (lab only)

No other module reads the `lab:` prefix (the lab catalogue's `split` is the one reader).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from iolens.lab.catalog import Target, lookup, split

NULL = "null"


@dataclass(frozen=True)
class Resolved:
    spec: str  # as the user gave it
    kind: str  # "dir", "lab" or "null"
    target: Target | None = None  # lab: the catalogue's target (sized when the spec gives a size)
    sub: str = ""  # lab: a path inside the target's directory

    @property
    def lab(self) -> str | None:
        """The lab target's name (gp2, st1:2048G), None for others."""
        return self.target.name if self.target else None

    @property
    def option(self) -> str | None:
        """The priced option a lab target stands for, size included (None for a directory or the null sink)."""
        return self.target.option if self.target else None

    @property
    def emulated(self) -> bool:
        return bool(self.target and self.target.emulated)

    def emulation(self) -> dict[str, Any] | None:
        from iolens import lab

        return lab.emulation(f"lab:{self.target.name}") if self.target else None

    def path(self, root: str | os.PathLike | None = None) -> Path:
        """The directory to use: a lab target's mount (TargetError when it is not up) joined with sub."""
        if self.kind == NULL:
            raise ValueError("the null sink has no path")
        if self.target is None:
            return Path(self.spec).expanduser()
        from iolens import lab

        base = lab.resolve_target(f"lab:{self.target.name}", root)
        return base / self.sub if self.sub else base


def parse(spec: str) -> Resolved:
    """What the user typed -> Resolved; UsageError (one line) for a lab target that does not exist."""
    if spec == NULL:
        return Resolved(spec, NULL)
    parts = split(spec)
    if parts is None:
        return Resolved(spec, "dir")
    return Resolved(spec, "lab", lookup(parts[0]), parts[1])


def is_lab(spec: str) -> bool:
    return split(spec) is not None
