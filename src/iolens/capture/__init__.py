"""The capture format's Python side: reading, writing and merging."""

from iolens.capture.reader import Capture, Process, decode, read_capture

__all__ = ["Capture", "Process", "decode", "read_capture"]
