"""The planner of several judges in Chromium with DEBUG off: a manager reads each theme's plan,
in English and French at 1440 and 390 px (under the content security policy, no error, no
sideways scroll of the page), and submits its three forms with their defaults: the plan, the
hourly rate, and the draw of the shares, which starts the judge on its share."""

from __future__ import annotations

import pytest
from django.conf import settings
from django.urls import reverse

from annotation.models import Role
from evaluation.models import Judge, JudgeRun, JudgeShare
from tests.e2e.conftest import needs_chromium, shoot
from tests.e2e.test_pages_e2e import STICKING_OUT, open_context, overflow, submit_with_defaults, visit
from tests.factories import add_member, make_campaign, make_user
from tests.judge_planned import planned

pytestmark = [pytest.mark.e2e, needs_chromium]


def build():
    campaign = make_campaign(name="Velmont planner (e2e)")
    manager = make_user(username="maud")
    add_member(campaign=campaign, user=manager, roles=[Role.MANAGER])
    planned(campaign=campaign)
    # Offline judges, so that the run the draw starts judges without a server.
    Judge.objects.filter(campaign=campaign).update(kind=Judge.Kind.LEXICAL, model="")
    return campaign, manager


@pytest.mark.django_db(transaction=True)
def test_the_planner_in_english_and_french_at_desktop_and_phone_widths(live_server, browser):
    assert not settings.DEBUG
    campaign, manager = build()
    path = reverse("evaluation:judge_plan", args=[campaign.slug, "relevance"])
    for locale in ("en-GB", "fr-FR"):
        for width in (1440, 390):
            context, page, problems = open_context(
                browser, live_server, width=width, locale=locale, user=manager
            )
            visit(page, live_server.url + path, problems)
            shoot(page, f"judge-plan-{locale[:2]}-{width}.png")
            assert page.get_attribute("html", "lang") == locale[:2]
            assert page.locator("tr.plan-row").count() == 2
            assert overflow(page) <= 0, page.evaluate(STICKING_OUT)
            status = submit_with_defaults(page, form="form.judge-plan-form", path=path, method="GET")
            assert status == 200 and "target=0.05" in page.url and "judges=cheap" in page.url
            assert page.locator("tr.plan-row").count() == 2
            assert problems == []
            context.close()


@pytest.mark.django_db(transaction=True)
def test_a_manager_saves_the_rate_and_draws_the_shares_with_the_defaults(live_server, browser):
    campaign, manager = build()
    path = reverse("evaluation:judge_plan", args=[campaign.slug, "relevance"])
    rate = reverse("evaluation:judge_plan_rate", args=[campaign.slug, "relevance"])
    draw = reverse("evaluation:judge_plan_draw", args=[campaign.slug, "relevance"])
    context, page, problems = open_context(browser, live_server, width=390, user=manager)
    # At +/-15 points the plan runs the dear judge on a share of each theme.
    visit(page, live_server.url + path + "?target=0.15", problems)
    assert submit_with_defaults(page, form="form.plan-rate-form", path=rate, method="POST") == 302
    assert "The hourly rate of labelling is saved." in page.content()
    visit(page, live_server.url + path + "?target=0.15", problems)
    campaign.refresh_from_db()
    assert campaign.label_hourly_rate == 60
    assert submit_with_defaults(page, form="form.plan-draw-form", path=draw, method="POST") == 302
    shoot(page, "judge-plan-drawn-390.png")
    assert page.url.endswith(reverse("evaluation:run_list", args=[campaign.slug]))
    assert "Shares drawn: 1; judge runs started: 1." in page.content()
    (share,) = JudgeShare.objects.filter(campaign=campaign)
    assert share.judge.name == "dear" and all(0 < q < 1 for q in share.shares.values())
    assert JudgeRun.objects.filter(campaign=campaign, scope=JudgeRun.Scope.SHARE).count() == 1
    assert problems == []
    context.close()
