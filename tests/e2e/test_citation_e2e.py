"""A citation unit in Chromium with DEBUG off: an annotator labels it with the criterion's default
keys (1 supports, 0 does not), the page showing the sentence in its paragraph and the one chunk it
cites; a manager then reads citation precision beside recall on the report, its form submitted
with its defaults. English and French, 1440 and 390 px."""

from __future__ import annotations

import pytest
from django.conf import settings
from django.urls import reverse

from annotation.models import Criterion, Label, Level, Role, Stage, Unit
from evaluation.models import Judge, Judgment
from tests.e2e.conftest import needs_chromium, settle, shoot
from tests.e2e.test_pages_e2e import open_context, overflow, visit
from tests.factories import add_member, make_answer, make_campaign, make_user, sample_units

pytestmark = [pytest.mark.e2e, needs_chromium]


def citation_campaign():
    campaign = make_campaign(name="Velmont citations (e2e)")
    criterion = Criterion.objects.select_related("campaign").get(campaign=campaign, name="citation_support")
    for n in range(5):
        make_answer(
            campaign=campaign,
            theme=["Finance", "RH"][n % 2],
            text=(
                f"Le loyer annuel du siège est de {100 + n} k€ [^c1^] [^c3^]. "
                "Il est indexé sur l'ICC <script>window.__pwned = 1</script> [^c2^]."
            ),
            sentences=[
                (f"Le loyer annuel du siège est de {100 + n} k€ [^c1^] [^c3^].", ["c1", "c3"]),
                ("Il est indexé sur l'ICC <script>window.__pwned = 1</script> [^c2^].", ["c2"]),
            ],
            chunk_ids=("c1", "c2", "c3", "c4"),
            citations=True,
        )
    units = list(Unit.objects.filter(campaign=campaign, level=Level.CITATION).order_by("id"))
    sample_units(criterion=criterion, units=units)
    judge = Judge.objects.create(campaign=campaign, name="imported", kind=Judge.Kind.IMPORTED)
    for n, unit in enumerate(units):
        Judgment.objects.create(unit=unit, criterion=criterion, judge=judge, value=int(n % 4 != 3))
    return campaign, criterion, units


def shown(page) -> str:
    return page.get_attribute("#work", "data-unit") or ""


@pytest.mark.django_db(transaction=True)
def test_an_annotator_labels_citation_units_with_the_default_keys(live_server, browser):
    assert not settings.DEBUG
    campaign, criterion, units = citation_campaign()
    claire, manon = make_user(username="claire"), make_user(username="manon")
    add_member(campaign=campaign, user=claire, roles=[Role.ANNOTATOR])
    add_member(campaign=campaign, user=manon, roles=[Role.MANAGER])
    annotate = live_server.url + reverse(
        "annotation:annotate", args=[campaign.slug, criterion.name, Stage.LABEL]
    )
    report = live_server.url + reverse("evaluation:report", args=[campaign.slug, criterion.name])
    labelled: list[tuple[int, int]] = []
    for locale in ("en-GB", "fr-FR"):
        for width in (1440, 390):
            context, page, problems = open_context(
                browser, live_server, width=width, locale=locale, user=claire
            )
            visit(page, annotate, problems)
            unit = Unit.objects.select_related("chunk").get(pk=int(shown(page)))
            # The sentence highlighted in its paragraph, and the one chunk of the citation.
            assert page.is_visible("mark.target")
            cards = page.locator(".evidence article.source")
            assert cards.count() == 1
            assert cards.first.locator(".source-id").inner_text() == unit.chunk.external_id
            assert page.locator("article.source").count() == 1  # no other retrieved source
            assert page.evaluate("window.__pwned") is None
            shoot(page, f"citation-{locale}-{width}.png")
            # The default keys, past the guard against double presses.
            for key, value in (("1", 1), ("0", 0)):
                before = shown(page)
                page.wait_for_timeout(settings.LABEL_KEY_GUARD_MS + 150)
                page.keyboard.press(key)
                page.wait_for_function(
                    "before => document.getElementById('work').dataset.unit !== before", arg=before
                )
                page.wait_for_function("() => !document.documentElement.hasAttribute('data-saving')")
                labelled.append((int(before), value))
            assert overflow(page) <= 0
            assert page.evaluate("window.__violations") == [] and problems == []
            context.close()

            context, page, problems = open_context(
                browser, live_server, width=width, locale=locale, user=manon
            )
            visit(page, report, problems)
            with page.expect_response(lambda r: r.request.headers.get("hx-request") == "true"):
                page.click("form.report-form [type=submit]")
            settle(page)
            table = page.locator("section.citation-measures table").first  # then ALCE's
            assert table.is_visible()
            assert table.locator("tr.citation-row").count() == 3  # Finance, RH, overall
            assert overflow(page) <= 0
            assert page.evaluate("window.__violations") == [] and problems == []
            shoot(page, f"citation-report-{locale}-{width}.png")
            context.close()
    stored = list(
        Label.objects.filter(criterion=criterion, user=claire, stage=Stage.LABEL)
        .order_by("created_at", "id")
        .values_list("unit_id", "value")
    )
    assert stored == labelled
    assert len({unit for unit, _ in stored}) == 8
