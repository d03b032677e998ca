"""Test helpers shared by several test modules: crafted captures (capture.py), a headless browser (browser.py) and
waiting with a deadline (waiting.py)."""
