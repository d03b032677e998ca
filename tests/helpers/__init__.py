"""Test helpers shared by several test modules: crafted captures (capture.py) and a headless browser (browser.py)."""
