"""A real Chromium drives the annotation pages: keyboard labelling, review override, adjudication.

Skipped when /usr/bin/chromium is missing. Leaves a screenshot of the annotation page (1280 x 800) in
the test's temporary directory; `make screenshots` makes the ones of docs/screenshots/.
"""

from __future__ import annotations

import pytest
from django.urls import reverse

from annotation.models import (
    Assignment,
    Label,
)
from annotation.workflow import final_labels
from tests.e2e.conftest import needs_chromium
from tests.e2e.velmont import velmont_campaign
from tests.factories import PASSWORD

pytestmark = [pytest.mark.e2e, needs_chromium]


def log_in(browser, live_server, username: str, target: str):
    """A fresh browser session that logs in through the form, keyboard only, and lands on ``target``."""
    context = browser.new_context(viewport={"width": 1280, "height": 800}, locale="fr-FR")
    page = context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda error: errors.append(str(error)))
    page.goto(live_server.url + target)
    assert "/login/" in page.url
    page.focus("#id_username")
    page.keyboard.type(username)
    page.keyboard.press("Tab")
    page.keyboard.type(PASSWORD)
    page.keyboard.press("Enter")
    page.wait_for_url(live_server.url + target)
    return page, errors


def shown(page) -> str:
    return page.get_attribute("#work", "data-unit") or ""


def press_and_wait(page, key: str) -> str:
    """Press ``key`` and wait until the next unit replaced this one and the label is saved (a
    prefetched unit shows at once, before the save is confirmed); return the new unit id."""
    before = shown(page)
    page.keyboard.press(key)
    page.wait_for_function("before => document.getElementById('work').dataset.unit !== before", arg=before)
    page.wait_for_function("() => !document.documentElement.hasAttribute('data-saving')")
    return shown(page)


def wait_for_prefetch(page) -> None:
    """Wait until the page holds the unit after the one on screen, fetched in the background."""
    page.wait_for_function(
        "() => document.documentElement.dataset.prefetched === document.getElementById('work').dataset.unit"
    )


@pytest.mark.django_db(transaction=True)
def test_keyboard_labelling_review_override_and_adjudication(live_server, browser, tmp_path):
    campaign, criterion, units, people = velmont_campaign()
    annotate = reverse("annotation:annotate", args=[campaign.slug, "veracity", "label"])
    review = reverse("annotation:annotate", args=[campaign.slug, "veracity", "review"])
    adjudicate = reverse("annotation:adjudicate", args=[campaign.slug, "veracity"])

    # The annotator labels ten sentences, keyboard only; the third one is not supported.
    page, errors = log_in(browser, live_server, "claire", annotate)
    assert page.is_visible("mark.target")
    assert page.is_visible("text=Cited sources")
    labelled = []
    for n in range(10):
        labelled.append(int(shown(page)))
        if n == 2:
            # The third sentence claims a 15 % margin; the source says 12.7 %.
            assert page.is_visible("text=15 %")
            page.screenshot(path=str(tmp_path / "annotator.png"))
        if n % 2:
            # Every other unit the next one is already in the page: it shows before the save ends.
            wait_for_prefetch(page)
        press_and_wait(page, "0" if n == 2 else "1")
    stored = list(Label.objects.filter(user=people["claire"]).order_by("pk").values_list("unit_id", "value"))
    assert stored == [(unit_id, 0 if n == 2 else 1) for n, unit_id in enumerate(labelled)]
    assert labelled == [u.pk for u in units[:10]]
    # The unit on screen and the prefetched one are leased to the annotator, nothing more.
    wait_for_prefetch(page)
    assert Assignment.objects.filter(user=people["claire"], label__isnull=True).count() == 2

    # The other keys: ? shows them, u gives the last unit back, s skips.
    page.keyboard.press("?")
    assert page.is_visible("#shortcuts-dialog")
    page.keyboard.press("Escape")
    assert not page.is_visible("#shortcuts-dialog")
    assert press_and_wait(page, "u") == str(labelled[-1])
    # The page speaks the browser's language (fr-FR here).
    assert page.is_visible("text=Votre dernière étiquette a été retirée")
    press_and_wait(page, "1")
    eleventh = shown(page)
    assert press_and_wait(page, "s") != eleventh
    values = list(Label.objects.filter(user=people["claire"]).order_by("pk").values_list("value", flat=True))
    assert values[-2:] == [None, 1]  # the withdrawal, then the same unit labelled again
    assert errors == []

    # Keys pressed faster than the saves are kept, in order.
    wait_for_prefetch(page)
    fast = [int(shown(page))]
    page.keyboard.press("1")
    page.wait_for_function(
        "before => document.getElementById('work').dataset.unit !== before", arg=str(fast[0])
    )
    fast.append(int(shown(page)))
    page.keyboard.press("0")
    page.wait_for_function(
        "before => document.getElementById('work').dataset.unit !== before", arg=str(fast[1])
    )
    page.wait_for_function("() => !document.documentElement.hasAttribute('data-saving')")
    quick = list(Label.objects.filter(user=people["claire"]).order_by("pk").values_list("unit_id", "value"))
    assert quick[-2:] == [(fast[0], 1), (fast[1], 0)]

    # The reviewer overrides the first label of the first sentence, which needs a comment.
    reviewer, errors = log_in(browser, live_server, "marc", review)
    target = int(shown(reviewer))
    assert target == units[0].pk
    assert reviewer.is_visible("text=First label")
    reviewer.keyboard.press("0")
    assert reviewer.evaluate("document.activeElement.id") == "comment"
    assert shown(reviewer) == str(target) and not Label.objects.filter(stage="review").exists()
    reviewer.keyboard.type("Le chiffre est exact mais la phrase omet le périmètre consolidé.")
    reviewer.keyboard.press("Enter")  # a new line in the comment, never a label
    reviewer.keyboard.type("À trancher.")
    reviewer.keyboard.press("Escape")
    press_and_wait(reviewer, "0")
    override = Label.objects.get(stage="review")
    assert (override.unit_id, override.value) == (target, 0)
    assert override.comment.startswith("Le chiffre est exact") and override.comment.endswith("À trancher.")
    assert errors == []

    # The adjudicator settles it, with a reason, and the first label wins.
    adjudicator, errors = log_in(browser, live_server, "sophie", adjudicate)
    assert int(shown(adjudicator)) == target
    assert adjudicator.is_visible("text=Labels in conflict")
    adjudicator.keyboard.press("c")
    adjudicator.keyboard.type("La source donne bien 48,2 M€ consolidés.")
    adjudicator.keyboard.press("Escape")
    adjudicator.keyboard.press("1")
    adjudicator.wait_for_selector("text=No disagreement left")
    assert final_labels(criterion=criterion)[target] == 1
    assert Label.objects.get(stage="adjudication").comment == "La source donne bien 48,2 M€ consolidés."
    assert errors == []

    # The annotator may not open the adjudication page.
    response = page.goto(live_server.url + adjudicate)
    assert response.status == 403
