"""The judge alignment page in Chromium with DEBUG off: an analyst reads the figures worked by
hand in tests/evaluation/measures/test_judge_alignment.py and the flagged drift, in English and
French at 1440 and 390 px (under the content security policy, no error, no sideways scroll, the
judge and its agreement in view on a phone), and submits the form with its defaults; a manager
sets the held-out split aside with its button, and the page then reports on the held-out part
and compares prompts on the selection part, with a drift within one theme."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from django.conf import settings
from django.urls import reverse

from annotation.models import Criterion, Role
from evaluation.models import HeldOutSplit, Judge, Judgment
from tests.e2e.conftest import needs_chromium, shoot
from tests.e2e.test_pages_e2e import open_context, submit_with_defaults, visit
from tests.evaluation.measures.test_judge_alignment import TABLE, labelled
from tests.factories import add_member, make_campaign, make_user

pytestmark = [pytest.mark.e2e, needs_chromium]


def build():
    campaign = make_campaign(name="Velmont judges (e2e)")
    analyst = make_user(username="anna")
    add_member(campaign=campaign, user=analyst, roles=[Role.ANALYST])
    gpt = Judge.objects.create(campaign=campaign, name="gpt-4o-mini-judge", kind=Judge.Kind.OPENAI, model="m")
    labelled(campaign, TABLE, judge=gpt, at=datetime(2026, 9, 5, tzinfo=UTC))
    drifting = Judge.objects.create(campaign=campaign, name="lexical", kind=Judge.Kind.LEXICAL)
    labelled(
        campaign, [(1, 1), (0, 0)] * 15, judge=drifting, theme="IT", at=datetime(2026, 10, 5, tzinfo=UTC)
    )
    labelled(
        campaign, [(1, 0), (0, 0)] * 15, judge=drifting, theme="IT", at=datetime(2026, 11, 5, tzinfo=UTC)
    )
    return campaign, analyst


def text(page, selector: str) -> str:
    return " ".join(page.locator(selector).first.inner_text().split())


def check_figures(page, *, decimal: str) -> None:
    row = "tr.judge-row[data-judge='gpt-4o-mini-judge']"
    assert text(page, f"{row} [data-figure='agreement']").startswith(f"70{decimal}0")
    assert text(page, f"{row} [data-figure='kappa']").startswith(f"0{decimal}40")
    assert page.locator("tr.drift-row[data-flagged='1']").count() == 1
    assert page.locator("#drift-flagged").is_visible()


@pytest.mark.django_db(transaction=True)
def test_the_page_in_english_and_french_at_desktop_and_phone_widths(live_server, browser):
    assert not settings.DEBUG
    campaign, analyst = build()
    path = reverse("evaluation:judge_alignment", args=[campaign.slug, "relevance"])
    for locale in ("en-GB", "fr-FR"):
        for width in (1440, 390):
            context, page, problems = open_context(
                browser, live_server, width=width, locale=locale, user=analyst
            )
            visit(page, live_server.url + path, problems)
            shoot(page, f"judge-alignment-{locale[:2]}-{width}.png")
            assert page.get_attribute("html", "lang") == locale[:2]
            decimal = "," if locale == "fr-FR" else "."
            check_figures(page, decimal=decimal)
            # The judge and its agreement stay in view on a phone: the table scrolls behind them.
            row = page.locator("tr.judge-row[data-judge='gpt-4o-mini-judge']")
            for cell in (row.locator("th"), row.locator("[data-figure='agreement']")):
                box = cell.bounding_box()
                assert box is not None and box["x"] >= 0 and box["x"] + box["width"] <= width + 0.5
            status = submit_with_defaults(page, form="form.judge-alignment-form", path=path, method="GET")
            assert status == 200
            assert "alpha=0.05" in page.url and "clusters=answer" in page.url and "part=all" in page.url
            check_figures(page, decimal=decimal)
            assert problems == []
            context.close()


def build_versions():
    """Two prompt versions of one model on 60 units in two themes, the second missing the
    Finance units labelled 1; and a judge whose Finance agreement drops from October to
    November while its IT agreement holds."""
    campaign = make_campaign(name="Velmont prompts (e2e)")
    manager = make_user(username="maud")
    add_member(campaign=campaign, user=manager, roles=[Role.MANAGER])
    first = Judge.objects.create(
        campaign=campaign, name="gpt-v1", kind=Judge.Kind.OPENAI, model="m", prompt_version="v1"
    )
    second = Judge.objects.create(
        campaign=campaign, name="gpt-v2", kind=Judge.Kind.OPENAI, model="m", prompt_version="v2"
    )
    criterion = Criterion.objects.get(campaign=campaign, name="relevance")
    october, november = datetime(2026, 10, 5, tzinfo=UTC), datetime(2026, 11, 5, tzinfo=UTC)
    for theme, later in (("IT", [(1, 1), (0, 0)]), ("Finance", [(1, 0), (0, 0)])):
        units = labelled(campaign, [(1, 1), (0, 0)] * 15, judge=first, theme=theme, at=october)
        units += labelled(campaign, later * 15, judge=first, theme=theme, at=november)
        for index, unit in enumerate(units):
            human = 1 - index % 2
            verdict = 0 if theme == "Finance" else human
            Judgment.objects.create(unit=unit, criterion=criterion, judge=second, value=verdict)
    return campaign, manager


@pytest.mark.django_db(transaction=True)
def test_a_manager_sets_the_split_aside_and_the_page_reports_on_the_held_out_part(live_server, browser):
    assert not settings.DEBUG
    campaign, manager = build_versions()
    path = reverse("evaluation:judge_alignment", args=[campaign.slug, "relevance"])
    context, page, problems = open_context(browser, live_server, width=1440, locale="en-GB", user=manager)
    visit(page, live_server.url + path, problems)
    assert page.locator("#id_part option").count() == 1
    status = submit_with_defaults(page, form="form.split-form", path=path, method="POST")
    assert status == 302 and HeldOutSplit.objects.filter(criterion__campaign=campaign).count() == 1
    context.close()
    for locale in ("en-GB", "fr-FR"):
        for width in (1440, 390):
            context, page, problems = open_context(
                browser, live_server, width=width, locale=locale, user=manager
            )
            visit(page, live_server.url + path, problems)
            shoot(page, f"judge-split-{locale[:2]}-{width}.png")
            assert page.locator("#held-out").get_attribute("data-part") == "split"
            assert page.locator("#split-record").is_visible()
            assert page.locator("tr.drift-row[data-kind='prompt'][data-part='selection']").count() >= 1
            assert page.locator("tr.theme-drift").count() >= 2
            status = submit_with_defaults(page, form="form.judge-alignment-form", path=path, method="GET")
            assert status == 200 and "part=split" in page.url
            assert page.locator("#held-out").get_attribute("data-part") == "split"
            assert problems == []
            context.close()
