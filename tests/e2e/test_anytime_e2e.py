"""The anytime page in a real Chromium (DEBUG off, under the Content-Security-Policy): at 1440 and
390 px, in English and French, the start form submits with its default values and the status
table follows; labels turn "waiting" into "stop" or "about N more labels"; the next batch is
drawn; the work page loads the status for a manager."""

from __future__ import annotations

import pytest
from django.conf import settings
from django.urls import reverse

from annotation.models import Label, Role, Sample, Stage
from tests.e2e.conftest import needs_chromium, shoot
from tests.e2e.test_pages_e2e import STICKING_OUT, open_context, overflow, submit_with_defaults, visit
from tests.factories import add_member, judged_corpus, make_campaign, make_user

pytestmark = [pytest.mark.e2e, needs_chromium]


def _campaign():
    campaign = make_campaign(name="Anytime e2e")
    criterion, judge, units = judged_corpus(campaign=campaign, answers_per_theme={"Finance": 10, "RH": 6})
    manager = make_user(username="manon")
    add_member(campaign=campaign, user=manager, roles=[Role.MANAGER])
    return campaign, criterion, manager


def _label_everything_drawn(sample) -> None:
    for shape in sample.design_parameters["themes"].values():
        for unit_id in {u for u, _ in shape["draws"]}:
            if not Label.objects.filter(unit_id=unit_id, criterion=sample.criterion).exists():
                Label.objects.create(
                    unit_id=unit_id, criterion=sample.criterion, stage=Stage.IMPORTED, value=unit_id % 3 > 0
                )


@pytest.mark.django_db(transaction=True)
def test_start_label_look_and_draw_again_at_both_widths_in_english_and_french(live_server, browser):
    assert not settings.DEBUG
    campaign, criterion, manager = _campaign()
    path = reverse("evaluation:anytime", args=[campaign.slug])
    words = {
        "en-GB": ("Start a sequence", "Waiting for", ("Precise enough, stop", "more label", "whole theme")),
        "fr-FR": (None, None, None),
    }
    for locale in ("en-GB", "fr-FR"):
        for width in (1440, 390):
            context, page, problems = open_context(
                browser, live_server, width=width, locale=locale, user=manager
            )
            visit(page, live_server.url + path, problems)
            heading, waiting, looked = words[locale]
            if heading:
                assert page.locator("#start-title").inner_text() == heading
            # The start form with the values the page gives it: back here with the table.
            status = submit_with_defaults(page, form="#anytime-start", path=path, method="POST")
            assert status == 302, status
            assert page.url == live_server.url + path
            sample = Sample.objects.order_by("-pk").first()
            assert sample.design == Sample.Design.SEQUENTIAL
            assert sample.design_parameters["batch_size"] == 20
            assert sample.design_parameters["target_halfwidth"] == 0.05
            table = page.locator("#anytime-sequences table.anytime-status")
            assert table.locator("tbody tr").count() == 2
            if waiting and width == 1440:  # the second run draws the same units, labeled by then
                assert waiting in table.inner_text()
            # The humans label the batch; the next look says stop or how many more.
            _label_everything_drawn(sample)
            visit(page, live_server.url + path, problems)
            if looked:
                assert any(words_ in table.inner_text() for words_ in looked), table.inner_text()
            shoot(page, f"anytime-{locale[:2]}-{width}.png")
            assert overflow(page) <= 0, (locale, width, page.evaluate(STICKING_OUT))
            # The next batch.
            nxt = reverse("evaluation:anytime_next", args=[campaign.slug, sample.pk])
            if page.locator("form.anytime-next").count():
                assert submit_with_defaults(page, form="form.anytime-next", path=nxt, method="POST") == 302
                latest = Sample.objects.order_by("-pk").first()
                assert latest.design_parameters["batches"] == 2
                assert latest.design_parameters["sequence"] == sample.design_parameters["sequence"]
            # The work page loads the status for a manager (htmx).
            visit(page, live_server.url + reverse("annotation:work", args=[campaign.slug]), problems)
            page.locator("#anytime-status #anytime-sequences").wait_for()
            assert page.locator("#anytime-status table.anytime-status tbody tr").count() == 2
            shoot(page, f"anytime-work-{locale[:2]}-{width}.png")
            assert overflow(page) <= 0, (locale, width, page.evaluate(STICKING_OUT))
            assert problems == [], problems
            context.close()
