"""Where a run works, for every command that writes on a storage target (bench, replay, predict): the checked
target (target.py: a directory, `lab:NAME` through the resolver, or `null`; what it is, and the free space there)
and the rails of working there (rails.py: the `iolens-bench-*` work directories, their removal on every exit, the
free-space check, SIGTERM/SIGHUP as exceptions)."""
