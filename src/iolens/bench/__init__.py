"""`iolens bench`: a storage benchmark shaped like genomics tools, honest about the page cache.

targets.py resolves and checks targets; safety.py owns the iolens-bench-* work directories and the free-space
check; suites.py turns a suite into engine jobs; engine.py runs the native engine; cache.py classifies cache
state and plausibility; report.py turns engine output into plain result rows; runner.py ties them together.
"""
