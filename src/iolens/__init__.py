"""iolens: where a genomics pipeline step's time goes, which storage to put it on, and what it costs."""

# The one place the version is written: pyproject.toml reads it from here (scikit-build-core's regex provider),
# so `iolens --version` needs no package-metadata lookup at start-up.
__version__ = "0.1.0"
