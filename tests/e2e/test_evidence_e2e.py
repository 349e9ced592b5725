"""The evidence page in Chromium with DEBUG off: a manager comes from the campaign's overview,
reads the coverage, ranking and calibration worked by hand, submits the form with its defaults
and gets the same numbers; the page in English and French at 1440 and 390 px, without sideways
scroll."""

from __future__ import annotations

from urllib.parse import urlparse

import pytest
from django.conf import settings
from django.urls import reverse

from annotation.models import Criterion, Level, Role, Unit
from tests.e2e.conftest import mark_document, needs_chromium, settle, shoot
from tests.e2e.test_annotators_e2e import open_page
from tests.factories import add_member, import_label, make_answer, make_campaign, make_user

pytestmark = [pytest.mark.e2e, needs_chromium]


def build():
    """Finance: gold passage "Texte c1." (id c1); answers retrieving c1, c2 (label 1) and c2,
    c3 (label 0)."""
    campaign = make_campaign(name="Velmont evidence (e2e)")
    manager = make_user(username="manon")
    add_member(campaign=campaign, user=manager, roles=[Role.MANAGER])
    first = make_answer(campaign=campaign, theme="Finance", chunk_ids=("c1", "c2"))
    first.question.gold_evidence = [{"text": "Texte c1.", "chunk_id": "c1"}]
    first.question.save()
    second = make_answer(campaign=campaign, question=first.question, chunk_ids=("c2", "c3"))
    relevance = Criterion.objects.get(campaign=campaign, name="relevance")
    import_label(unit=Unit.objects.get(answer=first, level=Level.ANSWER), criterion=relevance, value=1)
    import_label(unit=Unit.objects.get(answer=second, level=Level.ANSWER), criterion=relevance, value=0)
    # Another campaign of the manager's (another retriever): the form offers it side by side.
    other = make_campaign(name="Velmont evidence, other retriever with a long name (e2e)")
    add_member(campaign=other, user=manager, roles=[Role.MANAGER])
    return campaign, manager


def cells(page, theme: str) -> list[str]:
    row = page.locator(f".evidence-coverage tr[data-theme='{theme}'] td")
    return [" ".join(text.split()) for text in row.all_inner_texts()]


@pytest.mark.django_db(transaction=True)
def test_a_manager_reads_the_numbers_and_submits_the_form_with_its_defaults(live_server, browser):
    assert not settings.DEBUG
    campaign, manager = build()
    path = reverse("evaluation:evidence", args=[campaign.slug])
    context, page, problems = open_page(browser, live_server, manager)
    page.goto(live_server.url + reverse("evaluation:campaign_overview", args=[campaign.slug]))
    with page.expect_navigation():
        page.click(f"a[href='{path}']")
    assert urlparse(page.url).path == path

    def check_numbers():
        # (1 + 7/9) / 2 = 88.9% at 1000 tokens; both answers hold the passage's "Texte c" at 100.
        finance = cells(page, "Finance")
        assert len(finance) == 10 and finance[-1].startswith("88.9%")
        ranking = " ".join(page.locator(".evidence-retrieval tr[data-theme='overall']").inner_text().split())
        assert "50.0%" in ranking
        assert page.locator(".evidence-calibration svg").count() == 1
        assert page.locator(".evidence-coverage svg").count() == 1

    check_numbers()
    mark_document(page)
    with page.expect_request(lambda r: r.method == "GET" and urlparse(r.url).path == path) as sent:
        page.locator("form.evidence-form button[type=submit]").click()
    assert sent.value.response().status == 200
    settle(page, sent.value)
    assert "criterion=relevance" in page.url
    check_numbers()
    assert problems == []
    context.close()


@pytest.mark.django_db(transaction=True)
def test_the_page_in_english_and_french_at_desktop_and_phone_widths(live_server, browser):
    campaign, manager = build()
    path = reverse("evaluation:evidence", args=[campaign.slug])
    for locale in ("en-GB", "fr-FR"):
        for width in (1440, 390):
            context, page, problems = open_page(browser, live_server, manager, width=width, locale=locale)
            page.goto(live_server.url + path)
            settle(page)
            shoot(page, f"evidence-{locale[:2]}-{width}.png")
            assert page.get_attribute("html", "lang") == locale[:2]
            assert page.evaluate("document.documentElement.scrollWidth - window.innerWidth") <= 0
            assert cells(page, "Finance")[-1].startswith("88,9" if locale == "fr-FR" else "88.9%")
            with page.expect_navigation():
                page.locator("form.evidence-form button[type=submit]").click()
            # The other campaign chosen: the side-by-side section, and still no sideways scroll.
            page.select_option("#id_other", index=0)
            with page.expect_navigation():
                page.locator("form.evidence-form button[type=submit]").click()
            assert page.locator("#side-title").count() == 1
            shoot(page, f"evidence-side-{locale[:2]}-{width}.png")
            assert page.evaluate("document.documentElement.scrollWidth - window.innerWidth") <= 0
            assert problems == []
            context.close()
