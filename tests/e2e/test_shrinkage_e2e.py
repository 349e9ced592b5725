"""The report's small-themes option in Chromium with DEBUG off: an analyst submits the report's
form with its default values (no shrinkage: the page as it was), then with the option ticked,
and reads each theme's shrunk estimate beside PPI++ and the note on its guarantee; the page in
English and French at 1440 and 390 px, without sideways scroll."""

from __future__ import annotations

from urllib.parse import parse_qs, urlparse

import pytest
from django.conf import settings
from django.urls import reverse

from annotation.models import Role
from evaluation.estimates.report import compute_report
from inference.estimators.shrinkage import shrink_to_judge
from inference.intervals import standard_error
from tests.e2e.conftest import mark_document, needs_chromium, settle, shoot
from tests.e2e.test_pages_e2e import open_context, overflow
from tests.factories import add_member, make_campaign, make_user
from tests.judged import judged_campaign

pytestmark = [pytest.mark.e2e, needs_chromium]


def build():
    campaign = make_campaign(name="Velmont small themes (e2e)")
    analyst = make_user(username="anna")
    add_member(campaign=campaign, user=analyst, roles=[Role.ANALYST])
    criterion, judge, _ = judged_campaign(campaign)
    report = compute_report(criterion=criterion, judge=judge)
    expected = shrink_to_judge(
        estimates=[g.ppi.mean for g in report.themes],
        standard_errors=[standard_error(g.ppi) for g in report.themes],
        judge_means=[g.judge.mean for g in report.themes],
        alpha=report.alpha,
    )
    return campaign, analyst, report, expected


def submit(page, path: str) -> tuple[int, dict[str, list[str]]]:
    """Click the form's button: the response's status and the query the request sent."""
    mark_document(page)
    with page.expect_request(lambda r: r.method == "GET" and urlparse(r.url).path == path) as sent:
        page.locator("form.report-form button[type=submit]").click()
    response = sent.value.response()
    assert response is not None
    settle(page, sent.value)
    return response.status, parse_qs(urlparse(sent.value.url).query, keep_blank_values=True)


@pytest.mark.django_db(transaction=True)
def test_the_form_with_its_defaults_then_with_the_option_shows_the_shrunk_column(live_server, browser):
    assert not settings.DEBUG
    campaign, analyst, report, expected = build()
    path = reverse("evaluation:report", args=[campaign.slug, "relevance"])
    context, page, problems = open_context(browser, live_server, user=analyst)
    page.goto(live_server.url + path)
    settle(page)
    assert not page.locator("#shrinkage").is_checked()
    status, query = submit(page, path)
    assert status == 200 and "shrinkage" not in query and query["method"] == ["robust"]
    assert page.locator("th.shrunk").count() == 0 and page.locator("#shrinkage-note").count() == 0

    page.locator("#shrinkage").check()
    status, query = submit(page, path)
    assert status == 200 and query["shrinkage"] == ["on"]
    page.wait_for_function("() => location.search.includes('shrinkage=on')")  # pushed by htmx
    assert page.locator("th.shrunk").first.inner_text().strip() == "Shrunk toward the judge"
    for group, shrunk in zip(report.themes, expected, strict=True):
        row = page.locator("tr.estimate-row", has=page.locator(f"th:text-is({group.theme!r})"))
        cells = row.locator("td.shrunk")
        assert cells.nth(0).locator("strong").inner_text() == f"{shrunk.mean * 100:.1f}%"
        assert cells.nth(1).inner_text().strip() == f"{shrunk.weight:.2f}"
    note = page.locator("#shrinkage-note").inner_text()
    assert "95% on average over the themes, not for each theme" in note
    assert "86.6% in the worst single theme" in note
    # The option stays ticked, and the downloads carry it.
    assert page.locator("#shrinkage").is_checked()
    assert "shrinkage=on" in page.locator("a[href*='export.csv']").first.get_attribute("href")
    assert page.evaluate("window.__violations") == []
    assert problems == []
    context.close()


@pytest.mark.django_db(transaction=True)
def test_the_option_in_english_and_french_at_desktop_and_phone_widths(live_server, browser):
    campaign, analyst, _, _ = build()
    path = reverse("evaluation:report", args=[campaign.slug, "relevance"]) + "?shrinkage=on"
    for locale in ("en-GB", "fr-FR"):
        for width in (1440, 390):
            context, page, problems = open_context(
                browser, live_server, width=width, locale=locale, user=analyst
            )
            page.goto(live_server.url + path)
            settle(page)
            shoot(page, f"shrink-{locale[:2]}-{width}.png")
            shoot(page.locator("form.report-form"), f"shrink-{locale[:2]}-{width}-form.png")
            shoot(
                page.locator("section[aria-labelledby='agreement-title']"),
                f"shrink-{locale[:2]}-{width}-table.png",
            )
            assert page.get_attribute("html", "lang") == locale[:2]
            assert overflow(page) <= 0, (locale, width)
            assert page.locator("#shrinkage").is_checked()
            assert page.locator("td.shrunk").count() >= 6
            assert page.evaluate("window.__violations") == []
            assert problems == []
            context.close()
