"""What every browser test shares: the browser (``tests/chromium.py`` says which Chromium), its
screenshots when asked for, the live server and its requests waited for, a page settled."""

from __future__ import annotations

import os
import shutil
import subprocess
import threading
import time
from pathlib import Path

import pytest
from django.core.signals import request_finished, request_started
from django.db import connections

from tests.chromium import CHROMIUM, DEBIAN_PACKAGE, LAUNCH_ARGS

needs_chromium = pytest.mark.skipif(
    not CHROMIUM.exists(), reason=f"needs {CHROMIUM} (make browser installs {DEBIAN_PACKAGE})"
)
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


# Screenshots of what the browser tests see, for a person to look at: written when
# ATTEST_SCREENSHOTS names a directory (`ATTEST_SCREENSHOTS=var/screenshots make test-browser`),
# under a folder per test module; not taken otherwise, since nothing reads them back and a
# full-page screenshot costs Chromium more than rendering the page did.
SCREENSHOTS_DIR = os.environ.get("ATTEST_SCREENSHOTS", "")


def shoot(target, name: str, *, full_page: bool = True) -> Path | None:
    """Save a screenshot of ``target`` as ``name`` when screenshots are asked for, and say where:
    a page (all of it, or with ``full_page=False`` what the window shows) or a locator's element."""
    if not SCREENSHOTS_DIR:
        return None
    test = os.environ.get("PYTEST_CURRENT_TEST", "browser").split("::")[0]
    folder = Path(SCREENSHOTS_DIR) / Path(test).stem
    folder.mkdir(parents=True, exist_ok=True)
    options = {"full_page": full_page} if hasattr(target, "goto") else {}
    target.screenshot(path=str(folder / name), **options)
    return folder / name


# Playwright's sync API runs an event loop in this thread; the ORM calls of the test are still
# plain synchronous calls made between browser steps.
os.environ["DJANGO_ALLOW_ASYNC_UNSAFE"] = "true"


@pytest.fixture(scope="session")
def browser():
    """One Chromium per test process: launching Playwright's driver and Chromium costs about a
    second of CPU, paid once instead of once per test. The contexts (cookies, storage, pages) a
    test opened are closed after it (``pytest_runtest_teardown`` below), so that the next test
    starts from none."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=str(CHROMIUM), args=LAUNCH_ARGS)
        yield browser
        browser.close()
    # While Playwright's loop runs, the tests' ORM calls use a connection of that context;
    # close it here, or the test database cannot be dropped at the end of the run.
    connections.close_all()


# The live server answers each connection in a thread of its own (socketserver's ThreadingMixIn
# names them after their target). A page's last requests (a prefetch that takes a lease, a
# report's lazy parts) can still be running there when the test returns; if pytest-django then
# empties the tables, its TRUNCATE and the request's transaction wait for each other's locks
# (PostgreSQL ends it as a deadlock, the tables stay full and the next test fails on them).
# Threads waiting for a next request on a connection kept alive are no danger: Chromium may keep
# such connections after its contexts are closed, so what is waited for is the requests Django is
# answering (between its request_started and request_finished signals).
REQUEST_THREAD = "(process_request_thread)"
SERVER_QUIET_S = 30.0
QUIET_CHECK_S = 0.025


class ServerRequests:
    """The requests the live server's threads are answering."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._answering: dict[int, threading.Thread] = {}

    def started(self, **kwargs) -> None:
        thread = threading.current_thread()
        if thread.name.endswith(REQUEST_THREAD):
            with self._lock:
                self._answering[threading.get_ident()] = thread

    def finished(self, **kwargs) -> None:
        with self._lock:
            self._answering.pop(threading.get_ident(), None)

    def running(self) -> int:
        with self._lock:
            return sum(thread.is_alive() for thread in self._answering.values())

    def wait_until_quiet(self, timeout: float) -> int:
        """Wait until no request is being answered at two looks ``QUIET_CHECK_S`` apart (a request
        the browser sent just before its context closed may still be on its way to a thread);
        the requests still running after ``timeout`` seconds."""
        deadline = time.monotonic() + timeout
        quiet_looks = 0
        while quiet_looks < 2 and time.monotonic() < deadline:
            quiet_looks = quiet_looks + 1 if self.running() == 0 else 0
            time.sleep(QUIET_CHECK_S)
        return self.running()


SERVER_REQUESTS = ServerRequests()
request_started.connect(SERVER_REQUESTS.started, weak=False, dispatch_uid="e2e-server-requests-started")
request_finished.connect(SERVER_REQUESTS.finished, weak=False, dispatch_uid="e2e-server-requests-finished")


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_teardown(item, nextitem):
    """Before any fixture of the test is torn down (the tables emptied among them): the
    browser's contexts closed, so that no page sends another request, and the requests the live
    server was answering for them finished."""
    chromium = getattr(item, "funcargs", {}).get("browser")
    if chromium is None:
        return
    for context in chromium.contexts:
        context.close()
    left = SERVER_REQUESTS.wait_until_quiet(SERVER_QUIET_S)
    connections.close_all()
    assert not left, f"{left} live server requests still running {SERVER_QUIET_S:.0f} s after the test"


# Runs before any script of a page: counts the page's own requests (fetch and XMLHttpRequest) in
# flight, for ``settle``.
COUNT_REQUESTS = """
window.__inflight = 0;
(() => {
  const done = () => { window.__inflight -= 1; };
  const fetch = window.fetch;
  window.fetch = function (...args) {
    window.__inflight += 1;
    return fetch.apply(this, args).finally(done);
  };
  const send = XMLHttpRequest.prototype.send;
  XMLHttpRequest.prototype.send = function (...args) {
    window.__inflight += 1;
    this.addEventListener("loadend", done, { once: true });
    return send.apply(this, args);
  };
})();
"""

# Loaded, no request of the page's in flight, htmx neither requesting, swapping nor settling
# (settling runs the triggers of what it swapped in, such as a lazy slot's load), every image in.
SETTLED = """
() => document.readyState === "complete"
  && window.__inflight === 0
  && !document.querySelector(".htmx-request, .htmx-swapping, .htmx-settling, .htmx-added")
  && [...document.images].every((image) => image.complete)
"""


def mark_document(page) -> None:
    """Mark the page's document before an action that may load another (see ``settle``)."""
    page.evaluate("window.__marked = true")


def settle(page, request=None) -> None:
    """Wait until the page has done what it does on its own once loaded: its lazy parts fetched
    and swapped in, its prefetch answered (needs ``COUNT_REQUESTS`` as an init script of the
    context). Given the ``request`` an action sent after ``mark_document``, and if that request
    loads a document (a form without htmx, a redirect after), waits for that new document first.
    Unlike Playwright's ``networkidle``, no half second of quiet after each page."""
    if page.evaluate("window.__inflight === undefined"):
        raise AssertionError("settle needs COUNT_REQUESTS as an init script of the page's context")
    if request is not None and request.is_navigation_request():
        page.wait_for_function("() => window.__marked === undefined")
    page.wait_for_function(SETTLED)


@pytest.fixture(scope="module")
def shared_live_server(django_db_setup, django_db_blocker):
    """A live server whose rows a module's tests share, for browser walks that only need what a
    module-scoped fixture built once: pytest-django's ``live_server`` makes each test
    transactional, its tables emptied after it, so that each test builds its rows again. Here
    the tables are emptied after the module's last test instead, and each test of the module
    takes ``shared_db`` for the database (no transaction: the server's thread reads through a
    connection of its own on PostgreSQL) and sees what the module's earlier tests wrote."""
    from django.test import TransactionTestCase
    from pytest_django.live_server_helper import LiveServer

    class Flush(TransactionTestCase):
        def runTest(self):  # never run: only its tear-down, which empties the tables
            pass

    server = LiveServer(os.getenv("DJANGO_LIVE_TEST_SERVER_ADDRESS") or "localhost")
    server._live_server_modified_settings.enable()
    try:
        yield server
    finally:
        server._live_server_modified_settings.disable()
        server.stop()
        with django_db_blocker.unblock():
            Flush()._post_teardown()


@pytest.fixture
def shared_db(shared_live_server, django_db_blocker):
    """The database for a test on ``shared_live_server``: no transaction, nothing emptied after."""
    with django_db_blocker.unblock():
        yield
