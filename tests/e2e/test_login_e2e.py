"""The login and lockout pages in a real Chromium under the Content-Security-Policy (DEBUG off), in
English and French at 1440 and 390 px: their heading, nothing wider than the window, no policy
violation; locked out, even the right password gets the lockout page.

Skipped when the Chromium of tests/chromium.py is missing.
"""

from __future__ import annotations

import pytest
from django.urls import reverse

from tests.e2e.conftest import needs_chromium, shoot
from tests.e2e.test_pages_e2e import lock_out, open_context
from tests.factories import PASSWORD, make_user

pytestmark = [pytest.mark.e2e, needs_chromium]


@pytest.mark.django_db(transaction=True)
def test_login_and_lockout_pages_in_english_and_french_at_desktop_and_phone_widths(live_server, browser):
    make_user(username="claire")
    for locale, heading, lockout in (
        ("en-GB", "Log in", "Too many failed logins"),
        ("fr-FR", "Se connecter", "Trop d’échecs de connexion"),
    ):
        for width in (1440, 390):
            context, page, _ = open_context(browser, live_server, width=width, locale=locale)
            page.goto(live_server.url + reverse("login"))
            assert page.locator("h1").inner_text() == heading
            assert page.evaluate("document.documentElement.scrollWidth") <= width
            shoot(page, f"login-{locale[:2]}-{width}.png")
            assert lock_out(page, live_server, "claire").status == 429
            assert page.locator("h1").inner_text() == lockout
            assert page.evaluate("document.documentElement.scrollWidth") <= width
            shoot(page, f"lockout-{locale[:2]}-{width}.png")
            assert page.evaluate("window.__violations") == []
            context.close()
    # Locked out, even the right password gets the lockout page.
    context, page, _ = open_context(browser, live_server)
    page.goto(live_server.url + reverse("login"))
    page.fill("#id_username", "claire")
    page.fill("#id_password", PASSWORD)
    with page.expect_navigation() as navigation:
        page.click("form:not(.lang-switch) [type=submit]")
    assert navigation.value.status == 429
    context.close()
