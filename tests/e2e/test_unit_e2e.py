"""The disagreements and the unit page in Chromium with DEBUG off: an analyst submits the filters
with their default values and follows a row to its unit, whose judge reasoning stays text; both
pages in English and French at 1440 and 390 px."""

from __future__ import annotations

import pytest
from django.conf import settings
from django.urls import reverse

from annotation.models import Criterion, Label, Level, Role, Stage, Unit
from evaluation.models import Judge, Judgment
from tests.e2e.conftest import needs_chromium, settle, shoot
from tests.e2e.test_pages_e2e import open_context, overflow, visit
from tests.factories import add_member, make_answer, make_campaign, make_user

pytestmark = [pytest.mark.e2e, needs_chromium]

REASONING = "<script>window.__pwned = 1</script> La réponse parle de la paie, hors du sujet posé."


def disagreeing(campaign) -> Judge:
    criterion = Criterion.objects.get(campaign=campaign, name="relevance")
    judge = Judge.objects.create(campaign=campaign, name="gpt-judge")
    for n, theme in enumerate(["Finance", "RH", "Finance", "IT"]):
        answer = make_answer(campaign=campaign, theme=theme)
        unit = Unit.objects.get(answer=answer, level=Level.ANSWER)
        Label.objects.create(unit=unit, criterion=criterion, stage=Stage.IMPORTED, value=0, comment="")
        Judgment.objects.create(
            unit=unit, criterion=criterion, judge=judge, value=n % 3 != 2, reasoning=REASONING
        )
    return judge


@pytest.mark.django_db(transaction=True)
def test_an_analyst_filters_the_disagreements_and_opens_a_unit(live_server, browser):
    assert not settings.DEBUG
    campaign = make_campaign(name="Velmont disagreements (e2e)")
    disagreeing(campaign)
    anna = make_user(username="anna")
    add_member(campaign=campaign, user=anna, roles=[Role.ANALYST])
    url = live_server.url + reverse("evaluation:disagreements", args=[campaign.slug, "relevance"])
    for locale in ("en-GB", "fr-FR"):
        for width in (1440, 390):
            context, page, problems = open_context(
                browser, live_server, width=width, locale=locale, user=anna
            )
            visit(page, url, problems)
            with page.expect_navigation():
                page.click("form.history-filters [type=submit]")
            assert page.url.startswith(url + "?")
            assert page.locator("table.disagreements tbody tr").count() == 3
            shoot(page, f"disagreements-{locale}-{width}.png")
            with page.expect_navigation():
                page.click("table.disagreements tbody tr:first-child a")
            settle(page)
            assert "/units/" in page.url
            assert page.locator(".judge-reasoning").first.inner_text().startswith("<script>")
            assert page.evaluate("window.__pwned") is None
            assert page.evaluate("window.__violations") == [] and problems == []
            assert overflow(page) <= 0
            shoot(page, f"unit-{locale}-{width}.png")
            context.close()
