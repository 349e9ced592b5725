"""What every browser test shares: Debian's Chromium, its launch arguments and the browser."""

from __future__ import annotations

import os
import shutil
import subprocess
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
REPO = Path(__file__).resolve().parents[2]


def docs_status() -> str | None:
    """`git status` of docs/ (None outside a git checkout)."""
    if shutil.which("git") is None or not (REPO / ".git").exists():
        return None
    result = subprocess.run(
        ["git", "status", "--porcelain", "--untracked-files=all", "--", "docs"],
        cwd=REPO,
        capture_output=True,
        text=True,
    )
    return result.stdout if result.returncode == 0 else None


@pytest.fixture(autouse=True, scope="module")
def _docs_left_alone():
    """Browser tests write their screenshots to temporary directories, never into docs/ (whose
    screenshots `make screenshots` makes on purpose): docs/ is as it was after each module."""
    before = docs_status()
    yield
    assert docs_status() == before, "a browser test changed docs/"


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
