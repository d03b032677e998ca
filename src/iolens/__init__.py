"""iolens: where a genomics pipeline step's time goes, which storage to put it on, and what it costs."""

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("iolens")
except PackageNotFoundError:  # running from a source tree
    __version__ = "0.0.0+src"
