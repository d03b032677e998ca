"""`iolens bench`: a storage benchmark shaped like genomics tools, honest about the page cache.

iolens.workspace resolves and checks targets (target.py) and owns the iolens-bench-* work directories and the
free-space check (rails.py), for replay and predict too; suites.py turns a suite into engine jobs; engine.py runs
the native engine; cache.py classifies cache state and plausibility; report.py turns engine output into plain
result rows; runner.py ties them together.
"""
