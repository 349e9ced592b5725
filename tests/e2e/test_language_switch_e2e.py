"""The header's language switch in a real Chromium, without a line of our JavaScript: an English
browser switches to French on the login page, logs in and moves through the app in French, then
switches back to English, at 1440 and 390 px (the button in view and nothing wider than the
window)."""

from __future__ import annotations

import pytest
from django.urls import reverse

from annotation.models import Role
from tests.e2e.conftest import needs_chromium, shoot
from tests.factories import PASSWORD, add_member, make_campaign, make_user

pytestmark = [pytest.mark.e2e, needs_chromium]


def in_view(page, selector: str) -> bool:
    box = page.locator(selector).bounding_box()
    width = page.viewport_size["width"]
    return box is not None and box["x"] >= 0 and box["x"] + box["width"] <= width and box["y"] >= 0


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("width", [1440, 390])
def test_a_person_switches_to_french_moves_around_and_switches_back(live_server, browser, width):
    campaign = make_campaign(name="Velmont (langues)")
    add_member(campaign=campaign, user=make_user(username="claire"), roles=[Role.MANAGER])
    context = browser.new_context(
        viewport={"width": width, "height": 900}, locale="en-GB", java_script_enabled=False
    )
    page = context.new_page()

    page.goto(live_server.url + reverse("login"))
    assert page.locator("html").get_attribute("lang") == "en"
    assert in_view(page, ".lang-switch button")
    shoot(page, f"login-en-{width}.png", full_page=False)
    with page.expect_navigation():
        page.click(".lang-switch button")  # "Français", its form submitted as the page gives it
    assert page.locator("html").get_attribute("lang") == "fr"
    assert page.locator("h1").inner_text() == "Se connecter"

    page.fill("#id_username", "claire")
    page.fill("#id_password", PASSWORD)
    with page.expect_navigation():
        page.click("main [type=submit]")
    overview = live_server.url + reverse("evaluation:campaign_overview", args=[campaign.slug])
    for url in (live_server.url + reverse("evaluation:campaign_list"), overview):
        page.goto(url)
        assert page.locator("html").get_attribute("lang") == "fr", url
        assert page.locator(".lang-switch button").inner_text() == "English"
        assert in_view(page, ".lang-switch button"), url
        assert page.evaluate("document.documentElement.scrollWidth") <= width, url
    shoot(page, f"overview-fr-{width}.png", full_page=False)

    with page.expect_navigation():
        page.click(".lang-switch button")
    assert page.url == overview
    assert page.locator("html").get_attribute("lang") == "en"
    page.reload()
    assert page.locator("html").get_attribute("lang") == "en"
    assert page.locator(".lang-switch button").inner_text() == "Français"
    shoot(page, f"overview-en-{width}.png", full_page=False)
    context.close()
