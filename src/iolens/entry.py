"""The `iolens` script.  `iolens --help` and `iolens --version` are answered here without importing click: the
help is the text click renders for the group at a terminal of 80 columns or more, pre-rendered into
`commands/_summaries.py` by `gen_summaries.py` (a test checks both that it is current and that it equals what the
click group prints).  Everything else, and the help on a narrower terminal, goes to `iolens.cli`."""

from __future__ import annotations

import errno
import os
import sys

HELP_COLUMNS = 80  # click wraps help at min(columns, 80) - 2: from 80 columns on, the text is the same


def _columns() -> int:
    """The terminal's columns, as shutil.get_terminal_size (which click uses) finds them."""
    try:
        cols = int(os.environ["COLUMNS"])
    except (KeyError, ValueError):
        cols = 0
    stdout = sys.__stdout__
    if cols <= 0 and stdout is not None:
        try:
            cols = os.get_terminal_size(stdout.fileno()).columns
        except (AttributeError, ValueError, OSError):
            cols = 0
    return cols or 80


# what a write to standard output can meet that is the place's doing, not iolens's: said in one line
_FULL = frozenset({errno.ENOSPC, errno.EDQUOT, errno.EFBIG, errno.EIO})


def _output_failed(err: OSError) -> int | None:
    """The exit status after standard output could not be written (`err`), said to the user: a closed pipe
    (`iolens report | head -1`) quietly, as Unix tools end (141, as a shell reports SIGPIPE); a full disk or a
    failing device in one line.  None when `err` is not such a failure.  A failed write to a stream carries no file
    name, where opening or writing a named file does; the files a command writes go through `output.write_output`,
    which says their own errors, so what is left without a name is standard output's."""
    if err.errno != errno.EPIPE and (err.errno not in _FULL or err.filename is not None):
        return None
    devnull = os.open(os.devnull, os.O_WRONLY)  # what is still buffered goes nowhere, so the exit cannot fail again
    os.dup2(devnull, sys.stdout.fileno() if sys.stdout is not None else 1)
    os.close(devnull)
    if err.errno == errno.EPIPE:
        return 141
    advice = "check the device it goes to" if err.errno == errno.EIO else "free space where it goes"
    try:
        sys.stderr.write(f"iolens: error: cannot write the output: {err.strerror}; {advice}, or send it elsewhere\n")
        sys.stderr.flush()
    except (OSError, ValueError, AttributeError):
        pass
    return 1  # as coreutils end after a failed write


def _flush_stdout() -> None:
    if sys.stdout is not None and not sys.stdout.closed:
        sys.stdout.flush()


def main() -> None:
    """The script: standard output is flushed here, before the interpreter's exit would, so that a failure to
    write it (full disk, closed pipe) is said in one line, whichever command printed (`_output_failed`)."""
    try:
        try:
            _main()
        finally:
            _flush_stdout()
    except OSError as err:
        code = _output_failed(err)
        if code is None:
            raise
        sys.exit(code)


def _main() -> None:
    args = sys.argv[1:]
    if os.path.basename(sys.argv[0]) == "iolens" and args in (["--version"], ["--help"], ["-h"]):
        if args == ["--version"]:
            from iolens import __version__

            sys.stdout.write(f"iolens, version {__version__}\n")
            return
        if _columns() >= HELP_COLUMNS:
            from iolens.commands._summaries import HELP

            sys.stdout.write(HELP)
            return
    from iolens.cli import run

    run()
