"""The stability page in Chromium with DEBUG off: a manager finds it from the campaign's
overview, reads the figures worked by hand in tests/evaluation/measures/test_stability.py,
submits the form with its defaults and reads the same figures; the page in English and French
at 1440 and 390 px, without sideways scroll."""

from __future__ import annotations

from urllib.parse import urlparse

import pytest
from django.conf import settings
from django.urls import reverse

from annotation.models import Criterion, Role
from evaluation.models import Judge
from tests.e2e.conftest import mark_document, needs_chromium, settle, shoot
from tests.e2e.test_annotators_e2e import open_page
from tests.evaluation.measures.test_stability import repeated
from tests.factories import add_member, make_campaign, make_user

pytestmark = [pytest.mark.e2e, needs_chromium]


def build():
    campaign = make_campaign(name="Velmont stability (e2e)")
    manager = make_user(username="manon")
    add_member(campaign=campaign, user=manager, roles=[Role.MANAGER])
    judge = Judge.objects.create(campaign=campaign, name="gpt", kind=Judge.Kind.OPENAI)
    relevance = Criterion.objects.get(campaign=campaign, name="relevance")
    table = {"Finance-1": [1, 1, 0], "Finance-2": [0, 0, 0], "IT-1": [1, 1, 1]}
    repeated(campaign, table, judge=judge, criterion=relevance)
    return campaign, manager


def cell(page, selector: str) -> str:
    return " ".join(page.locator(selector).first.inner_text().split())


def check_figures(page, *, decimal: str = ".") -> None:
    overall = "tr[data-theme='overall']"
    assert cell(page, f"{overall} [data-figure='icc']").startswith(f"0{decimal}67")
    assert cell(page, f"{overall} [data-figure='disagree']").startswith(f"33{decimal}3")
    assert "(1/3)" in cell(page, f"{overall} [data-figure='disagree']")
    assert cell(page, "tr[data-question='Finance-1'] .stability-values").startswith("1 1 0")
    assert page.locator("tr[data-repetitions]").count() == 3
    assert page.locator("figure svg.chart polyline").count() == 2


@pytest.mark.django_db(transaction=True)
def test_a_manager_reads_the_figures_and_submits_the_form_with_its_defaults(live_server, browser):
    assert not settings.DEBUG
    campaign, manager = build()
    path = reverse("evaluation:stability", args=[campaign.slug])
    context, page, problems = open_page(browser, live_server, manager)
    page.goto(live_server.url + reverse("evaluation:campaign_overview", args=[campaign.slug]))
    with page.expect_navigation():
        page.click(f"a[href='{path}']")
    assert urlparse(page.url).path == path
    check_figures(page)
    mark_document(page)
    with page.expect_request(lambda r: r.method == "GET" and urlparse(r.url).path == path) as sent:
        page.locator("form.stability-form button[type=submit]").click()
    assert sent.value.response().status == 200
    settle(page, sent.value)
    assert "measure=criterion%3Arelevance" in page.url and "judge=gpt" in page.url
    check_figures(page)
    with page.expect_download() as download:
        page.click("a[download][href*='export.csv']")
    assert download.value.suggested_filename.endswith(".csv")
    assert problems == []
    context.close()


@pytest.mark.django_db(transaction=True)
def test_the_page_in_english_and_french_at_desktop_and_phone_widths(live_server, browser):
    campaign, manager = build()
    path = reverse("evaluation:stability", args=[campaign.slug])
    for locale in ("en-GB", "fr-FR"):
        for width in (1440, 390):
            context, page, problems = open_page(browser, live_server, manager, width=width, locale=locale)
            page.goto(live_server.url + path)
            settle(page)
            shoot(page, f"stability-{locale[:2]}-{width}.png")
            assert page.get_attribute("html", "lang") == locale[:2]
            assert page.evaluate("document.documentElement.scrollWidth - window.innerWidth") <= 0
            check_figures(page, decimal="," if locale == "fr-FR" else ".")
            with page.expect_navigation():
                page.locator("form.stability-form button[type=submit]").click()
            check_figures(page, decimal="," if locale == "fr-FR" else ".")
            assert problems == []
            context.close()
