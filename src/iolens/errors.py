"""Typed errors: each carries a one-line message a user can act on, and an exit code."""

from __future__ import annotations


class IolensError(Exception):
    """A user-facing failure: printed as one line, never as a traceback."""

    exit_code = 2

    def __init__(self, message: str, *, exit_code: int | None = None):
        super().__init__(message)
        if exit_code is not None:
            self.exit_code = exit_code


class UsageError(IolensError):
    """The command line asks for something that cannot work."""

    exit_code = 2


class CaptureError(IolensError):
    """A capture file cannot be read (missing, not a capture, newer format)."""

    exit_code = 3


# The exit status of a command whose outputs were written from part of a capture (or of a pipeline's tasks): the
# same as a capture that cannot be read at all, so a script sees the damage either way (capture/load.py)
PARTIAL_EXIT = CaptureError.exit_code


class CaptureTruncated(CaptureError):
    """A capture ends early or is damaged at `offset`; what came before it is readable."""

    def __init__(self, path: str, offset: int, what: str):
        super().__init__(f"{path}: {what} at byte {offset}; the records before it were read")
        self.path = path
        self.offset = offset


class NativeMissing(IolensError):
    """The compiled parts of iolens are not where the package expects them."""

    exit_code = 4


class CommandNotFound(IolensError):
    exit_code = 127


class TargetError(IolensError):
    """A storage target is missing, read-only, full or unsafe to write to."""

    exit_code = 5


class Terminated(Exception):
    """The process got SIGTERM or SIGHUP (workspace.rails.signals_as_exceptions): unwind, clean up, exit 128 +
    signal."""

    def __init__(self, signum: int):
        import signal

        super().__init__(signal.Signals(signum).name)
        self.signum = signum
