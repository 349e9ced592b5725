"""The Chromium the browser tests and the browser benches drive, and its launch arguments.

Debian's Chromium headless shell (package ``chromium-headless-shell``): the same Blink, V8 and
network stack as the desktop browser, built from the same source and release, without the
desktop browser's window layer, which headless Chromium still runs (a browser window per
context, with WebUI renderers for the browser's own interface: 12 such processes took as much CPU
as the pages' renderers on two test modules). It is what Playwright itself drives for headless
runs. Measured on the suite's browser part (82 tests, PostgreSQL, 3 processes on 2 cores):
Chromium took 545 s of CPU as the desktop browser, 104 s as the headless shell, and the part
371 s against 209 s of wall time, every test passing on both.
"""

from __future__ import annotations

from pathlib import Path

CHROMIUM = Path("/usr/bin/chromium-headless-shell")
DEBIAN_PACKAGE = "chromium-headless-shell"
LAUNCH_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]
