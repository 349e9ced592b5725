"""The judge alignment page in Chromium with DEBUG off: an analyst reads the figures worked by
hand in tests/evaluation/measures/test_judge_alignment.py and the flagged drift, in English and
French at 1440 and 390 px (under the content security policy, no error, no sideways scroll, the
judge and its agreement in view on a phone), and submits the form with its defaults
(screenshots in the test's temporary directory)."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from django.conf import settings
from django.urls import reverse

from annotation.models import Role
from evaluation.models import Judge
from tests.e2e.conftest import needs_chromium
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
def test_the_page_in_english_and_french_at_desktop_and_phone_widths(live_server, browser, tmp_path):
    assert not settings.DEBUG
    campaign, analyst = build()
    path = reverse("evaluation:judge_alignment", args=[campaign.slug, "relevance"])
    for locale in ("en-GB", "fr-FR"):
        for width in (1440, 390):
            context, page, problems = open_context(
                browser, live_server, width=width, locale=locale, user=analyst
            )
            visit(page, live_server.url + path, problems)
            page.screenshot(path=str(tmp_path / f"judge-alignment-{locale[:2]}-{width}.png"), full_page=True)
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
            assert "alpha=0.05" in page.url and "clusters=answer" in page.url
            check_figures(page, decimal=decimal)
            assert problems == []
            context.close()
