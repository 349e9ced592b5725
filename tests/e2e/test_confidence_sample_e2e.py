"""The judge-confidence sample page in a real Chromium (DEBUG off, under the Content-Security-Policy):
at 1440 and 390 px, in English and French, the split is shown for the defaults, both forms submit
with the values the page gives them, and the draw lands on the sample's page; then the same
with each theme split by the judge's verdict."""

from __future__ import annotations

import pytest
from django.conf import settings
from django.urls import reverse

from annotation.models import Label, Role, Sample, Stage
from tests.e2e.conftest import needs_chromium, shoot
from tests.e2e.test_pages_e2e import STICKING_OUT, open_context, overflow, submit_with_defaults, visit
from tests.factories import add_member, judged_corpus, make_campaign, make_user

pytestmark = [pytest.mark.e2e, needs_chromium]


def _campaign(*, pilot: bool = True):
    campaign = make_campaign(name="Confidence e2e")
    criterion, judge, units = judged_corpus(campaign=campaign, answers_per_theme={"Finance": 10, "RH": 6})
    # A pilot of 24 labels (the judge wrong on one in four): its confidence recalibrated on them.
    for index, unit in enumerate(units[: 24 if pilot else 3]):
        Label.objects.create(
            unit=unit, criterion=criterion, stage=Stage.IMPORTED, value=(index + (index % 4 == 0)) % 2
        )
    manager = make_user(username="manon")
    add_member(campaign=campaign, user=manager, roles=[Role.MANAGER])
    return campaign, manager


@pytest.mark.django_db(transaction=True)
def test_the_split_then_the_draw_at_both_widths_in_english_and_french(live_server, browser):
    assert not settings.DEBUG
    campaign, manager = _campaign()
    path = reverse("evaluation:confidence_sample", args=[campaign.slug])
    words = {"en-GB": ("Split of the budget", "Draw about"), "fr-FR": (None, None)}
    drawn = 0
    for locale in ("en-GB", "fr-FR"):
        for width in (1440, 390):
            context, page, problems = open_context(
                browser, live_server, width=width, locale=locale, user=manager
            )
            visit(page, live_server.url + path, problems)
            heading, button = words[locale]
            if heading:
                assert page.locator("#plan-title").inner_text() == heading
                assert page.locator("#draw-confidence button").inner_text().startswith(button)
            assert page.locator("#split tbody tr").count() == 2
            shoot(page, f"{locale[:2]}-{width}.png")
            # The plan form (GET) with its defaults: the same split again.
            status = submit_with_defaults(page, form="form[method=get]", path=path, method="GET")
            assert status == 200 and problems == []
            assert overflow(page) <= 0, (locale, width, page.evaluate(STICKING_OUT))
            # The draw (POST) with the values the page gives it: the sample's page.
            status = submit_with_defaults(page, form="#draw-confidence", path=path, method="POST")
            drawn += 1
            assert status == 302, status
            sample = Sample.objects.order_by("-pk").first()
            assert page.url == live_server.url + reverse(
                "annotation:sample_detail", args=[campaign.slug, sample.pk]
            )
            assert sample.design == Sample.Design.CONFIDENCE
            assert problems == [], problems
            assert overflow(page) <= 0, (locale, width, page.evaluate(STICKING_OUT))
            # Split by the judge's verdict: two strata rows per theme, then the draw.
            visit(page, live_server.url + path, problems)
            page.locator("#id_by_verdict").check()
            status = submit_with_defaults(page, form="form[method=get]", path=path, method="GET")
            assert status == 200 and problems == []
            assert page.locator("#split tbody tr.stratum").count() == 4
            assert overflow(page) <= 0, (locale, width, page.evaluate(STICKING_OUT))
            shoot(page, f"{locale[:2]}-{width}-verdict.png")
            status = submit_with_defaults(page, form="#draw-confidence", path=path, method="POST")
            drawn += 1
            assert status == 302, status
            assert Sample.objects.order_by("-pk").first().design_parameters["by_verdict"] is True
            assert problems == [], problems
            context.close()
    assert Sample.objects.count() == drawn


@pytest.mark.django_db(transaction=True)
def test_without_a_pilot_the_page_says_what_to_label_and_draws_only_when_told(live_server, browser):
    campaign, manager = _campaign(pilot=False)
    path = reverse("evaluation:confidence_sample", args=[campaign.slug])
    for locale in ("en-GB", "fr-FR"):
        context, page, problems = open_context(browser, live_server, width=390, locale=locale, user=manager)
        visit(page, live_server.url + path, problems)
        # Three labels of the 20 a pilot needs: said, and no draw on an unchecked confidence.
        needed = page.locator("#pilot-needed").inner_text()
        title = "Veracity" if locale == "en-GB" else "Véracité"  # the criterion by its title
        assert "gpt" in needed and title in needed and " 3 " in needed and " 20" in needed
        assert page.locator("#draw-confidence").count() == 0
        page.locator("#id_without_pilot").check()
        status = submit_with_defaults(page, form="form[method=get]", path=path, method="GET")
        assert status == 200 and problems == []
        status = submit_with_defaults(page, form="#draw-confidence", path=path, method="POST")
        assert status == 302, status
        sample = Sample.objects.order_by("-pk").first()
        assert page.url == live_server.url + reverse(
            "annotation:sample_detail", args=[campaign.slug, sample.pk]
        )
        assert page.locator("#without-pilot").count() == 1
        assert problems == [], problems
        assert overflow(page) <= 0, (locale, page.evaluate(STICKING_OUT))
        context.close()
