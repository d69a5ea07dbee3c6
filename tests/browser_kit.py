"""Test helpers: the distribution's headless Chromium, driven by Playwright (Playwright's own
browser download is not reachable here). Without `chromium` a browser test module is skipped
with a message saying how to get it, unless FEEDBACKD_REQUIRE_BROWSER=1 (set by .ci/run), which
turns the skip into a failure."""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from contextlib import contextmanager

import pytest
from playwright.sync_api import Browser, sync_playwright

# The headless shell first: Chromium's engine without the desktop browser around it, the one
# Playwright itself drives for headless runs. It renders the panel as `chromium --headless` does
# in a third less CPU (the browser tests: 25 s of CPU, not 39 s).
CHROMIUM = next(
    filter(None, map(shutil.which, ("chromium-headless-shell", "chromium", "chromium-browser"))),
    None,
)
CHROMIUM_ARGS = [
    "--no-sandbox",  # the tests run as root in CI
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",  # this machine's network is closed
    "--disable-component-update",
    "--disable-sync",
]


def skip_without_chromium() -> None:
    """At a browser test module's top: skip it (or fail, where the browser is required) when
    there is no chromium. Read at collection, before the tests' clean environment drops
    FEEDBACKD_* variables."""
    if CHROMIUM is not None:
        return
    message = (
        "browser tests need Debian's chromium: run `make test` as root (it installs it), or "
        "`apt-get install chromium-headless-shell`"
    )
    if os.environ.get("FEEDBACKD_REQUIRE_BROWSER") == "1":
        raise RuntimeError(message)
    pytest.skip(message, allow_module_level=True)


@contextmanager
def chromium() -> Iterator[Browser]:
    """A headless Chromium, closed after."""
    with sync_playwright() as playwright:
        launched = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            yield launched
        finally:
            launched.close()
