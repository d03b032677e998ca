"""Human units (sizes, rates, durations, shares): below every layer, used by analysis, bench and the renderers."""

from __future__ import annotations

import re
import signal

from iolens.errors import UsageError

DURATION = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(s|m|min|h|d|w|month|months)\s*$")
UNIT_S = {"s": 1, "m": 60, "min": 60, "h": 3600, "d": 86400, "w": 7 * 86400, "month": 730 * 3600,
          "months": 730 * 3600}


def duration_s(text: str) -> float | None:
    """A positive duration like 90s, 30m, 2h, 7d, 3months (a month is 730 h) in seconds; None if it is not one."""
    m = DURATION.match(text.strip().lower())
    if not m or float(m.group(1)) <= 0:
        return None
    return float(m.group(1)) * UNIT_S[m.group(2)]


def human_bytes(n: float | int | None) -> str:
    if n is None:
        return "-"
    n = float(n)
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if abs(n) < 1024 or unit == "TiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n:.1f} TiB"


def exit_text(status: int | None, signal_number: int | None = None, *, short: bool = False) -> str:
    """An exit status as shown: `139 (killed by SIGSEGV)` when the wait status said the command died of a signal,
    `139 (128+11: SIGSEGV)` when only the shell convention (a shell's child killed by signal N) says so.
    `short`, for a table's cell: `SIGSEGV` for a process killed by a signal, else the status (`-` unknown)."""
    if short:
        if signal_number is not None:
            return _signal_name(signal_number) or str(status)
        return "-" if status is None else str(status)
    if status is None:
        return "?"
    if signal_number is not None:
        return f"{status} (killed by {_signal_name(signal_number) or f'signal {signal_number}'})"
    if 128 < status <= 128 + signal.NSIG and (name := _signal_name(status - 128)):
        return f"{status} (128+{status - 128}: {name})"
    return str(status)


def _signal_name(n: int) -> str | None:
    """SIGSEGV for 11; None for a number that names no signal here."""
    try:
        return signal.Signals(n).name
    except ValueError:
        return None


def human_seconds(s: float | None) -> str:
    if s is None:
        return "-"
    if s < 1e-3:
        return f"{s * 1e6:.0f} µs"
    if s < 1:
        return f"{s * 1e3:.1f} ms"
    if s < 120:
        return f"{s:.2f} s"
    m, sec = divmod(s, 60)
    if m < 60:
        return f"{int(m)} m {sec:.0f} s"
    h, m = divmod(m, 60)
    return f"{int(h)} h {int(m)} m"


def pct(part: float, whole: float) -> str:
    return f"{100.0 * part / whole:.1f}%" if whole else "-"


def parse_size(text: str) -> int:
    """"64M", "1.5G", "500k", "4096", "2GiB" -> bytes (binary units)."""
    s = text.strip().lower().removesuffix("b").removesuffix("i")
    mult = 1
    for suffix, m in (("k", 1 << 10), ("m", 1 << 20), ("g", 1 << 30), ("t", 1 << 40)):
        if s.endswith(suffix):
            s, mult = s[:-1], m
            break
    try:
        value = float(s)
    except ValueError:
        raise UsageError(f"cannot read the size {text!r}; write it like 64M, 1.5G or 4096") from None
    if value <= 0:
        raise UsageError(f"the size {text!r} must be positive")
    return int(value * mult)
