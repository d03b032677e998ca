"""Where the compiled parts live inside the installed package."""

from __future__ import annotations

from pathlib import Path

from iolens.errors import NativeMissing

NATIVE_DIR = Path(__file__).resolve().parent / "_native"


def native_path(name: str) -> Path:
    """Path of a built native file; a clear error if the build did not install it."""
    path = NATIVE_DIR / name
    if not path.exists():
        raise NativeMissing(
            f"{name} is not installed in {NATIVE_DIR}; reinstall iolens with `pip install .` "
            "(it needs a C compiler)"
        )
    return path


def preload_library() -> Path:
    return native_path("libiolens_preload.so")
