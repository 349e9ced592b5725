"""The start page of each role in Chromium with DEBUG off, in English and French, at 1440 and 390
px: no console error, no failed request, nothing wider than the window; the annotator's, the
reviewer's and the adjudicator's Start buttons open their annotation pages, the manager's next
action opens the page it names, the analyst's criterion opens its report, whose headline card
loaded after the page (a criterion with categories) holds its figures."""

from __future__ import annotations

from urllib.parse import urlparse

import pytest
from django.conf import settings
from django.test import Client
from django.urls import reverse

from annotation.models import Criterion, Label, Role, Stage, Unit
from evaluation.models import Judgment
from tests.categorical import correctness
from tests.e2e.conftest import COUNT_REQUESTS, needs_chromium, settle, shoot
from tests.factories import add_member, label, make_user, sample_units
from tests.judged import version_campaign

pytestmark = [pytest.mark.e2e, needs_chromium]

LOCALES = ("en-GB", "fr-FR")
WIDTHS = (1440, 390)
# The section headings each role reads first, in both languages.
HEADINGS = {
    "claire": ("To label", "À étiqueter"),
    "marc": ("To review", "À relire"),
    "sophie": ("To adjudicate", "À arbitrer"),
    "manon": ("Campaigns you manage", "Les campagnes que vous gérez"),
    "anna": ("How good is the assistant?", "L’assistant est-il bon\u00a0?"),
}


def build():
    """Two versions of the assistant sharing their questions; in the second, a relevance sample
    with one unit labelled (to review) and one overridden (to adjudicate), and answer correctness
    in five categories; one person per role."""
    first, _, _ = version_campaign("Assistant v1 (e2e)", seed=1, share=0.6)
    second, relevance, judge = version_campaign("Assistant v2 (e2e)", seed=2, share=0.85)
    # Answer correctness in five categories: people on one answer in three, the judge on all.
    categories = correctness(second)
    for index, unit in enumerate(Unit.objects.filter(campaign=second, level="answer").order_by("pk")):
        truth = (5, 5, 1, 5, 2, 4)[index % 6]
        Judgment.objects.create(unit=unit, criterion=categories, judge=judge, value=truth if index % 5 else 5)
        if index % 3 == 0:
            Label.objects.create(unit=unit, criterion=categories, stage=Stage.IMPORTED, value=truth)
    people = {name: make_user(username=name) for name in HEADINGS}
    for name, role in (
        ("claire", Role.ANNOTATOR),
        ("marc", Role.REVIEWER),
        ("sophie", Role.ADJUDICATOR),
        ("manon", Role.MANAGER),
        ("anna", Role.ANALYST),
    ):
        add_member(campaign=second, user=people[name], roles=[role])
    add_member(campaign=first, user=people["anna"], roles=[Role.ANALYST])
    # Answers without a human label yet, for people to label.
    relevance = Criterion.objects.select_related("campaign").get(pk=relevance.pk)
    free = (
        Unit.objects.filter(campaign=second, level="answer")
        .exclude(labels__criterion=relevance)
        .order_by("pk")
    )
    sample_units(criterion=relevance, units=list(free[:8]))
    other = make_user(username="olivier")
    add_member(campaign=second, user=other, roles=[Role.ANNOTATOR])
    label(other, relevance, Stage.LABEL, 1)
    label(other, relevance, Stage.LABEL, 1)
    label(people["marc"], relevance, Stage.REVIEW, 0, comment="Hors sujet.")
    return second, people


def open_start(browser, live_server, user, *, width: int, locale: str):
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
    page.goto(live_server.url + reverse("evaluation:start"))
    settle(page)
    return context, page, problems


def clicked(page, selector: str) -> str:
    """Click the element and return the path the browser lands on."""
    with page.expect_navigation():
        page.locator(selector).first.click()
    settle(page)
    return urlparse(page.url).path + (
        f"#{urlparse(page.url).fragment}" if urlparse(page.url).fragment else ""
    )


@pytest.mark.django_db(transaction=True)
def test_each_role_reads_its_start_page_and_its_button_leads_to_the_right_page(live_server, browser):
    assert not settings.DEBUG
    campaign, people = build()
    slug = campaign.slug
    lands = {
        "claire": (
            "[data-section='label'] .start-queue a.button",
            reverse("annotation:annotate", args=[slug, "relevance", "label"]),
        ),
        "marc": (
            "[data-section='review'] .start-queue a.button",
            reverse("annotation:annotate", args=[slug, "relevance", "review"]),
        ),
        "sophie": (
            "[data-section='adjudication'] .start-queue a.button",
            reverse("annotation:adjudicate", args=[slug, "relevance"]),
        ),
        # The sample is not settled and someone labels: the labelling is followed on the annotators' page.
        "manon": ("[data-section='manage'] li.next a.button", reverse("evaluation:annotators", args=[slug])),
        "anna": (
            f"[data-section='estimates'] [data-campaign='{slug}'] [data-criterion='relevance'] h4 a",
            reverse("evaluation:report", args=[slug, "relevance"]),
        ),
    }
    for name, (selector, target) in lands.items():
        for locale in LOCALES:
            for width in WIDTHS:
                context, page, problems = open_start(
                    browser, live_server, people[name], width=width, locale=locale
                )
                heading = HEADINGS[name][LOCALES.index(locale)]
                assert page.locator("h2").first.inner_text() == heading, (name, locale)
                assert page.evaluate("document.documentElement.scrollWidth - window.innerWidth") <= 0, (
                    name,
                    width,
                )
                shoot(page, f"start-{name}-{locale[:2]}-{width}.png")
                if name == "anna":
                    # The criterion with categories comes after the page, with its groups' figures.
                    card = page.locator(f"[data-campaign='{slug}'] [data-criterion='correctness']")
                    card.locator("[data-part='correct']").wait_for()
                    assert "%" in card.locator("[data-part='correct']").inner_text()
                    change = page.locator(
                        f"[data-campaign='{slug}'] [data-criterion='relevance'] [data-figure='change']"
                    )
                    assert ("pts" in change.inner_text()) and change.locator(
                        "[data-significant]"
                    ).count() == 1
                if width == 1440:
                    assert clicked(page, selector) == target, (name, locale)
                assert problems == [], (name, locale, width, problems)
                context.close()
