"""The annotators' page in Chromium with DEBUG off: a manager reads each person's figures (worked
by hand in tests/factories.reviewed_work), submits the criterion chooser with its default and
sees the same figures; the page in English and French at 1440 and 390 px, without sideways
scroll."""

from __future__ import annotations

from urllib.parse import urlparse

import pytest
from django.conf import settings
from django.test import Client
from django.urls import reverse

from annotation.models import Role
from tests.e2e.conftest import COUNT_REQUESTS, mark_document, needs_chromium, settle, shoot
from tests.factories import add_member, make_campaign, make_user, reviewed_work

pytestmark = [pytest.mark.e2e, needs_chromium]


def open_page(browser, live_server, user, *, width: int = 1440, locale: str = "en-GB"):
    """A browser context logged in as ``user``; the page and the problems it meets (console
    errors, 4xx/5xx responses)."""
    client = Client()
    client.force_login(user)
    context = browser.new_context(viewport={"width": width, "height": 900}, locale=locale)
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
    page.on("console", lambda m: problems.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda error: problems.append(str(error)))
    page.on("response", lambda r: problems.append(f"{r.status} {r.url}") if r.status >= 400 else None)
    return context, page, problems


def build():
    campaign = make_campaign(name="Velmont annotators (e2e)")
    people = {name: make_user(username=name) for name in ("manon", "claire", "marc", "sophie")}
    for name, role in (("manon", Role.MANAGER), ("claire", Role.ANNOTATOR), ("marc", Role.REVIEWER)):
        add_member(campaign=campaign, user=people[name], roles=[role])
    add_member(campaign=campaign, user=people["sophie"], roles=[Role.ADJUDICATOR])
    reviewed_work(campaign, people["claire"], people["marc"], people["sophie"])
    return campaign, people


def figure(page, person: str, stage: str, name: str) -> str:
    cell = page.locator(f"tr[data-person='{person}'][data-stage='{stage}'] [data-figure='{name}']")
    return " ".join(cell.inner_text().split())


@pytest.mark.django_db(transaction=True)
def test_a_manager_reads_the_figures_and_submits_the_chooser_with_its_default(live_server, browser):
    assert not settings.DEBUG
    campaign, people = build()
    path = reverse("evaluation:annotators", args=[campaign.slug])
    context, page, problems = open_page(browser, live_server, people["manon"])
    # From the campaign's overview, as a manager finds it.
    page.goto(live_server.url + reverse("evaluation:campaign_overview", args=[campaign.slug]))
    with page.expect_navigation():
        page.click(f"a[href='{path}']")
    assert urlparse(page.url).path == path

    def check_figures():
        assert figure(page, "claire", "label", "labels") == "4"
        assert figure(page, "claire", "label", "median") == "25.0"
        assert figure(page, "claire", "label", "per-hour") == "144"
        assert figure(page, "claire", "label", "overridden") == "33.3% (1/3)"
        assert figure(page, "claire", "label", "final").startswith("66.7% (2/3)")
        assert figure(page, "marc", "review", "median") == "40.0"
        assert figure(page, "marc", "review", "per-hour") == "90"
        assert figure(page, "marc", "review", "leases") == "1"
        assert figure(page, "marc", "review", "overrides") == "33.3% (1/3)"
        assert figure(page, "marc", "review", "final").startswith("100.0% (3/3)")
        assert figure(page, "sophie", "adjudication", "final") == "—"
        reliability = " ".join(page.locator("tr[data-criterion='relevance']").inner_text().split())
        assert "0.40" in reliability and "0.44" in reliability and "anchored" in reliability

    check_figures()
    before = page.content()
    mark_document(page)
    with page.expect_request(lambda r: r.method == "GET" and urlparse(r.url).path == path) as sent:
        page.locator("form.annotators-form button[type=submit]").click()
    assert sent.value.response().status == 200
    settle(page, sent.value)
    assert "criterion=relevance" in page.url and page.content() != before
    check_figures()
    assert problems == []
    context.close()


@pytest.mark.django_db(transaction=True)
def test_the_page_in_english_and_french_at_desktop_and_phone_widths(live_server, browser):
    campaign, people = build()
    path = reverse("evaluation:annotators", args=[campaign.slug])
    for locale in ("en-GB", "fr-FR"):
        for width in (1440, 390):
            context, page, problems = open_page(
                browser, live_server, people["manon"], width=width, locale=locale
            )
            page.goto(live_server.url + path)
            settle(page)
            shoot(page, f"annotators-{locale[:2]}-{width}.png")
            assert page.get_attribute("html", "lang") == locale[:2]
            assert page.evaluate("document.documentElement.scrollWidth - window.innerWidth") <= 0
            median = figure(page, "claire", "label", "median")
            assert median == ("25,0" if locale == "fr-FR" else "25.0")
            assert problems == []
            context.close()
