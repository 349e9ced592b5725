"""What every browser test shares: Debian's Chromium, its launch arguments and the browser."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from django.db import connections

CHROMIUM = Path("/usr/bin/chromium")
LAUNCH_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]
needs_chromium = pytest.mark.skipif(not CHROMIUM.exists(), reason="needs /usr/bin/chromium")

# Playwright's sync API runs an event loop in this thread; the ORM calls of the test are still
# plain synchronous calls made between browser steps.
os.environ["DJANGO_ALLOW_ASYNC_UNSAFE"] = "true"


@pytest.fixture
def browser():
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=str(CHROMIUM), args=LAUNCH_ARGS)
        yield browser
        browser.close()
        # While Playwright's loop runs, the test's ORM calls use a connection of that context;
        # close it here, or the test database cannot be dropped at the end of the run.
        connections.close_all()
