"""A headless Chromium that loads a local HTML file, for tests of pages iolens writes.

    from helpers.browser import load_page

    with load_page(html_path, screenshot=tmp_path / "page.png") as page:
        assert page.console_errors == []          # console errors and uncaught page errors
        assert page.console_warnings == []        # console.warn() calls (plotly's "Invalid color", ...)
        assert page.dialogs == []                 # alert()/confirm()/prompt() calls, which must never happen
        n = page.evaluate("document.querySelectorAll('.js-plotly-plot').length")

`load_page` uses Debian's Chromium (/usr/bin/chromium, or $IOLENS_CHROMIUM) through Playwright, with no
network: any request that is not for the file itself is blocked and listed in `page.blocked`, so a
page that needs a CDN fails visibly.  It skips the test when Playwright or Chromium is missing.
`wait_for` is a JS expression that must become true before the screenshot (default: the page's
`data-rendered` marker on <body>, or the load event if the page has none).
"""

from __future__ import annotations

import contextlib
import os
import shutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterator

import pytest

CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--no-first-run"]


def chromium_path() -> str:
    for cand in (os.environ.get("IOLENS_CHROMIUM"), "/usr/bin/chromium", shutil.which("chromium"),
                 shutil.which("chromium-browser")):
        if cand and os.path.exists(cand):
            return cand
    pytest.skip("Chromium is not installed (Debian package chromium); dev/setup installs it as root")


@dataclass
class Page:
    """What a loaded page did, plus the live Playwright page for queries (evaluate, locator...)."""

    raw: Any
    console_errors: list[str] = field(default_factory=list)
    console_warnings: list[str] = field(default_factory=list)
    dialogs: list[str] = field(default_factory=list)
    blocked: list[str] = field(default_factory=list)

    def evaluate(self, expression: str, arg: Any = None) -> Any:
        return self.raw.evaluate(expression, arg)

    def headers_outside(self, right: float) -> list[str]:
        """Every table header cell whose right edge is past `right` (CSS pixels, page not scrolled)."""
        return self.raw.evaluate("""right => Array.from(document.querySelectorAll('table th'))
            .filter(th => th.getBoundingClientRect().right > right + 0.5)
            .map(th => (th.closest('table').id
                        || th.closest('section, body').querySelector('h2, h1')?.textContent || '?')
                 + ': ' + th.textContent.trim() + ' @ ' + Math.round(th.getBoundingClientRect().right))""", right)


@contextlib.contextmanager
def load_page(html: str | Path, *, screenshot: str | Path | None = None, width: int = 1400, height: int = 900,
              wait_for: str | None = None, timeout_ms: int = 60_000) -> Iterator[Page]:
    sync_api = pytest.importorskip("playwright.sync_api", reason="playwright is not installed (pip install playwright)")
    exe = chromium_path()
    url = Path(html).resolve().as_uri()
    with sync_api.sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=exe, headless=True, args=CHROMIUM_ARGS)
        try:
            ctx = browser.new_context(viewport={"width": width, "height": height})
            raw = ctx.new_page()
            page = Page(raw)

            def on_console(m):
                if m.type == "error":
                    page.console_errors.append(m.text)
                elif m.type in ("warning", "trace"):  # plotly.js warns through console.trace
                    page.console_warnings.append(m.text)

            raw.on("console", on_console)
            raw.on("pageerror", lambda e: page.console_errors.append(f"uncaught: {e}"))

            def on_dialog(d):
                page.dialogs.append(f"{d.type}: {d.message}")
                d.dismiss()

            raw.on("dialog", on_dialog)

            def route(r):
                if r.request.url == url or r.request.url.startswith("data:"):
                    r.continue_()
                else:
                    page.blocked.append(r.request.url)
                    r.abort()

            raw.route("**/*", route)
            raw.goto(url, wait_until="load", timeout=timeout_ms)
            cond = wait_for or ("document.body.getAttribute('data-rendered') === '1' "
                                "|| !document.querySelector('script[id]')")
            raw.wait_for_function(cond, timeout=timeout_ms)
            if screenshot is not None:
                raw.screenshot(path=str(screenshot), full_page=True)
            yield page
        finally:
            browser.close()
