"""The API's docs page (Swagger UI from the app's own static files) in a real Chromium under the
Content-Security-Policy, DEBUG off: every operation listed, no violation, no console error, and
nothing requested from another origin."""

from __future__ import annotations

from urllib.parse import urlparse

import pytest
from django.conf import settings
from django.test import Client

from tests.e2e.conftest import COUNT_REQUESTS, needs_chromium, settle
from tests.factories import make_user

pytestmark = [pytest.mark.e2e, needs_chromium]

WATCH_VIOLATIONS = """
window.__violations = [];
document.addEventListener("securitypolicyviolation", (event) => {
  window.__violations.push(event.violatedDirective + " " + (event.blockedURI || "inline"));
});
"""


@pytest.mark.django_db(transaction=True)
def test_the_api_docs_page_runs_under_the_policy_from_our_own_files(live_server, browser):
    assert not settings.DEBUG
    client = Client()
    client.force_login(make_user(username="reader"))
    context = browser.new_context(viewport={"width": 1440, "height": 900})
    context.add_init_script(WATCH_VIOLATIONS)
    context.add_init_script(COUNT_REQUESTS)
    context.add_cookies(
        [
            {
                "name": settings.SESSION_COOKIE_NAME,
                "value": client.cookies[settings.SESSION_COOKIE_NAME].value,
                "url": live_server.url,
            }
        ]
    )
    page = context.new_page()
    problems: list[str] = []
    hosts: set[str] = set()
    page.on("console", lambda m: problems.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda error: problems.append(str(error)))
    page.on("request", lambda request: hosts.add(urlparse(request.url).netloc))
    response = page.goto(live_server.url + "/api/v1/docs")
    assert response.status == 200
    assert "default-src 'self'" in response.headers["content-security-policy"]
    page.wait_for_selector(".opblock")
    settle(page)
    # One block per operation of the schema the page reads: every endpoint is drawn.
    schema = client.get("/api/v1/openapi.json").json()
    operations = sum(len(methods) for methods in schema["paths"].values())
    assert operations >= 21 and page.locator(".opblock").count() == operations
    assert page.evaluate("window.__violations") == []
    assert problems == []
    assert hosts == {urlparse(live_server.url).netloc}
    context.close()
