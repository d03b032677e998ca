"""Redaction of secrets in command lines and environments that iolens records or shows.

The rules live in one place, native/preload/redact.c and redact_value.c: the interposer links them to redact argv,
script text and the environment before anything reaches the capture, and the same files are built alone as
libiolens_redact.so, which this module loads, so everything Python writes (META, the reader's view of older
captures, compare's commands and store rows, `results` output) is redacted by the very same code.
"""

from __future__ import annotations

import ctypes
import functools
import os
from collections.abc import Callable, Mapping
from typing import Any

from iolens.native import native_path

MASK = "***"


@functools.cache
def _library() -> ctypes.CDLL:
    lib = ctypes.CDLL(str(native_path("libiolens_redact.so")))
    for fn in (lib.iolens_redact_argv, lib.iolens_capture_env):
        fn.restype = ctypes.c_size_t
    lib.iolens_redact_argv.argtypes = [ctypes.c_int, ctypes.POINTER(ctypes.c_char_p), ctypes.c_char_p,
                                       ctypes.c_size_t]
    lib.iolens_capture_env.argtypes = [ctypes.POINTER(ctypes.c_char_p), ctypes.c_char_p, ctypes.c_size_t]
    return lib


def _call(items: list[str], fn: Callable[..., int]) -> list[str]:
    """Runs a C rule over NUL-free strings; the output is NUL-separated, grown until it was not cut."""
    raw = [os.fsencode(s).split(b"\0", 1)[0] for s in items]
    arr = (ctypes.c_char_p * (len(raw) + 1))(*raw, None)
    cap = 2 * sum(len(b) + 1 for b in raw) + 256
    while True:
        buf = ctypes.create_string_buffer(cap)
        n = fn(len(raw), arr, buf, cap)
        if n + 1 < cap:
            break
        cap *= 4
    out = buf.raw[:n].split(b"\0")
    return [os.fsdecode(b) for b in out[:-1]] if out and out[-1] == b"" else [os.fsdecode(b) for b in out]


def redact_argv(argv: list[str]) -> list[str]:
    """argv with secret values replaced by "***" (flags, NAME=V, URLs, headers, connection strings, scripts)."""
    if not argv:
        return []
    return _call(list(argv), _library().iolens_redact_argv)


def capture_env(env: Mapping[str, str]) -> dict[str, str]:
    """The variables the interposer records (temp dirs, thread counts, scheduler, cloud), secrets redacted."""
    lib = _library()
    kv = [f"{k}={v}" for k, v in env.items()]
    if not kv:
        return {}
    out = _call(kv, lambda n, arr, buf, cap: lib.iolens_capture_env(arr, buf, cap))
    return dict(item.split("=", 1) for item in out if "=" in item)


def redact_command(command: str) -> str:
    """A shell command line (compare's template and commands, --prepare, a label) with its secrets masked."""
    return redact_argv(["sh", "-c", command])[2] if command else command


# the keys of stored and exported records whose values are command lines (text) or argv (lists)
COMMAND_KEYS = frozenset({"command", "command_template", "prepare", "argv"})


def redact_record(obj: Any) -> Any:
    """A JSON-like record (a store row's job or metrics, an export) with every command line in it redacted."""
    if isinstance(obj, dict):
        return {k: _redact_value(v) if k in COMMAND_KEYS else redact_record(v) for k, v in obj.items()}
    if isinstance(obj, list):
        return [redact_record(v) for v in obj]
    return obj


def _redact_value(value: Any) -> Any:
    if isinstance(value, str):
        return redact_command(value)
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        return redact_argv(value)
    return redact_record(value)
