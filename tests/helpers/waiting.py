"""Waiting for a condition a subprocess brings about (a directory appears), with a deadline."""

from __future__ import annotations

import time
from typing import Callable


def wait_for(pred: Callable[[], object], timeout: float = 20.0) -> bool:
    """True as soon as pred() holds, False when it has not by the deadline."""
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if pred():
            return True
        time.sleep(0.02)
    return False
