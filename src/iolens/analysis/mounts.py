"""Which mount a file is on: by device number, else the longest mount-point prefix of its path."""

from __future__ import annotations

from typing import Any

from iolens.analysis.classify import storage_kind
from iolens.sysinfo import containing_mount, dev_string


class MountResolver:
    """Mount of a file: by device number, else the longest mount-point prefix (cached per directory)."""

    def __init__(self, mounts: list[dict[str, Any]]):
        self.by_dev: dict[str, dict[str, Any]] = {}
        for m in mounts:
            self.by_dev.setdefault(m["dev"], m)
        self.mounts = mounts
        self.dev_cache: dict[int, dict[str, Any] | None] = {}
        self.dir_cache: dict[str, dict[str, Any] | None] = {}
        self.kinds: dict[str, str] = {}

    def __call__(self, dev: int, path: str) -> dict[str, Any] | None:
        if dev:
            if dev not in self.dev_cache:
                self.dev_cache[dev] = self.by_dev.get(dev_string(dev))
            m = self.dev_cache[dev]
            if m is not None:
                return m
        if not path.startswith("/"):
            return None
        d = path.rsplit("/", 1)[0] or "/"
        if d not in self.dir_cache:
            self.dir_cache[d] = containing_mount(path, self.mounts)
        return self.dir_cache[d]

    def kind(self, m: dict[str, Any] | None) -> str:
        if m is None:
            return "unknown"
        mp = m["mountpoint"]
        if mp not in self.kinds:
            self.kinds[mp] = storage_kind(m["fstype"], m.get("source", ""))
        return self.kinds[mp]
