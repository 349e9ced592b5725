"""A real Chromium drives the annotation pages: keyboard labelling, review override, adjudication.

Skipped when the Chromium of tests/chromium.py is missing. With ATTEST_SCREENSHOTS set, leaves a
screenshot of the annotation page (1280 x 800) there (``conftest.shoot``); `make screenshots` makes
those of docs/.
"""

from __future__ import annotations

import pytest
from django.urls import reverse

from annotation.models import (
    Assignment,
    Label,
)
from annotation.workflow import final_labels
from tests.e2e.conftest import COUNT_REQUESTS, needs_chromium, shoot
from tests.e2e.velmont import velmont_campaign
from tests.factories import PASSWORD

pytestmark = [pytest.mark.e2e, needs_chromium]


def log_in(browser, live_server, username: str, target: str, viewport=(1280, 800), locale="fr-FR"):
    """A fresh browser session that logs in through the form, keyboard only, and lands on ``target``."""
    context = browser.new_context(viewport={"width": viewport[0], "height": viewport[1]}, locale=locale)
    context.add_init_script(COUNT_REQUESTS)
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
def test_keyboard_labelling_review_override_and_adjudication(live_server, browser, settings):
    # No key guard here: this test presses keys as fast as the saves allow, on purpose
    # (test_label_keys_are_ignored_just_after_a_unit_is_painted covers the guard).
    settings.LABEL_KEY_GUARD_MS = 0
    campaign, criterion, units, people = velmont_campaign()
    annotate = reverse("annotation:annotate", args=[campaign.slug, "veracity", "label"])
    review = reverse("annotation:annotate", args=[campaign.slug, "veracity", "review"])
    adjudicate = reverse("annotation:adjudicate", args=[campaign.slug, "veracity"])

    # The annotator labels ten sentences, keyboard only; the third one is not supported.
    page, errors = log_in(browser, live_server, "claire", annotate)
    assert page.is_visible("mark.target")
    assert page.is_visible("text=Sources citées")
    labelled = []
    for n in range(10):
        labelled.append(int(shown(page)))
        if n == 2:
            # The third sentence claims a 15 % margin; the source says 12.7 %.
            assert page.is_visible("text=15 %")
            shoot(page, "annotator.png", full_page=False)
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

    # The reviewer overrides the first label of the first sentence, which needs a comment: the key
    # opens the comment box, Shift+Enter makes a new line, Enter saves and gives the label.
    reviewer, errors = log_in(browser, live_server, "marc", review)
    target = int(shown(reviewer))
    assert target == units[0].pk
    assert reviewer.is_visible("text=Première étiquette")
    reviewer.keyboard.press("0")
    assert reviewer.is_visible("#comment-dialog")
    assert reviewer.evaluate("document.activeElement.id") == "comment-dialog-text"
    assert shown(reviewer) == str(target) and not Label.objects.filter(stage="review").exists()
    reviewer.keyboard.type("Le chiffre est exact mais la phrase omet le périmètre consolidé.")
    reviewer.keyboard.press("Shift+Enter")  # a new line in the comment, never a label
    reviewer.keyboard.type("À trancher.")
    assert not Label.objects.filter(stage="review").exists()
    before = shown(reviewer)
    reviewer.keyboard.press("Enter")
    reviewer.wait_for_function(
        "before => document.getElementById('work').dataset.unit !== before", arg=before
    )
    reviewer.wait_for_function("() => !document.documentElement.hasAttribute('data-saving')")
    assert not reviewer.is_visible("#comment-dialog")
    override = Label.objects.get(stage="review")
    assert (override.unit_id, override.value) == (target, 0)
    assert (
        override.comment == "Le chiffre est exact mais la phrase omet le périmètre consolidé.\r\nÀ trancher."
    )
    assert errors == []

    # The adjudicator settles it, with a reason written first (c), and the first label wins.
    adjudicator, errors = log_in(browser, live_server, "sophie", adjudicate)
    assert int(shown(adjudicator)) == target
    assert adjudicator.is_visible("text=Étiquettes en conflit")
    adjudicator.keyboard.press("c")
    adjudicator.keyboard.type("La source donne bien 48,2 M€ consolidés.")
    adjudicator.keyboard.press("Enter")
    assert not adjudicator.is_visible("#comment-dialog")
    assert "48,2 M€ consolidés" in adjudicator.text_content("#comment-attached")
    adjudicator.keyboard.press("1")
    adjudicator.wait_for_selector("text=Plus aucun désaccord")
    assert final_labels(criterion=criterion)[target] == 1
    assert Label.objects.get(stage="adjudication").comment == "La source donne bien 48,2 M€ consolidés."
    assert errors == []

    # The annotator may not open the adjudication page.
    response = page.goto(live_server.url + adjudicate)
    assert response.status == 403


def trail(page) -> list[tuple[str, str]]:
    """The trail of last labels, newest first: (value's name, snippet)."""
    return page.eval_on_selector_all(
        "#trail .trail-item",
        "items => items.map(i => [i.querySelector('.trail-value').textContent,"
        " i.querySelector('.trail-snippet').textContent])",
    )


@pytest.mark.django_db(transaction=True)
def test_each_label_sends_one_request_which_brings_the_unit_after_the_one_shown(
    live_server, browser, settings
):
    settings.LABEL_KEY_GUARD_MS = 0
    campaign, criterion, units, people = velmont_campaign()
    annotate = reverse("annotation:annotate", args=[campaign.slug, "veracity", "label"])
    page, errors = log_in(browser, live_server, "claire", annotate)
    wait_for_prefetch(page)  # the page just opened: it asked for the unit after the first
    sent: list[str] = []
    page.on("request", lambda request: sent.append(f"{request.method} {request.url}"))
    labelled = []
    for _ in range(5):
        # The last label's answer brought the next unit: it is in the page before any key.
        wait_for_prefetch(page)
        labelled.append(int(shown(page)))
        press_and_wait(page, "1")
    assert len(sent) == 5 and all(line.startswith("POST ") and "/submit/" in line for line in sent)
    assert labelled == [u.pk for u in units[:5]]
    stored = Label.objects.filter(user=people["claire"]).order_by("pk").values_list("unit_id", "value")
    assert list(stored) == [(unit_id, 1) for unit_id in labelled]
    # The unit on screen and the one after it are leased to the annotator, nothing more.
    wait_for_prefetch(page)
    assert Assignment.objects.filter(user=people["claire"], label__isnull=True).count() == 2
    assert errors == []


@pytest.mark.django_db(transaction=True)
def test_label_keys_are_ignored_just_after_a_unit_is_painted(live_server, browser, settings):
    settings.LABEL_KEY_GUARD_MS = 300
    campaign, criterion, units, people = velmont_campaign()
    annotate = reverse("annotation:annotate", args=[campaign.slug, "veracity", "label"])
    page, errors = log_in(browser, live_server, "claire", annotate)
    assert page.get_attribute(".bench", "data-key-guard-ms") == "300"
    page.wait_for_timeout(350)
    wait_for_prefetch(page)
    first = shown(page)
    # Two presses 30 ms apart: the second falls on a unit painted 30 ms before, and is ignored.
    page.keyboard.press("1")
    page.wait_for_timeout(30)
    page.keyboard.press("1")
    page.wait_for_function("() => !document.documentElement.hasAttribute('data-saving')")
    page.wait_for_timeout(400)  # whatever a queued key would have done, it has done it now
    second = shown(page)
    assert second != first
    mine = Label.objects.filter(user=people["claire"])
    assert list(mine.values_list("unit_id", "value")) == [(int(first), 1)]
    # A press once the guard is over labels the unit on screen.
    wait_for_prefetch(page)
    press_and_wait(page, "0")
    assert list(mine.order_by("pk").values_list("unit_id", "value")) == [(int(first), 1), (int(second), 0)]
    assert errors == []


@pytest.mark.django_db(transaction=True)
def test_the_trail_shows_the_last_five_labels_and_undoes_the_last(live_server, browser, settings):
    settings.LABEL_KEY_GUARD_MS = 300
    campaign, criterion, units, people = velmont_campaign()
    annotate = reverse("annotation:annotate", args=[campaign.slug, "veracity", "label"])
    page, errors = log_in(browser, live_server, "claire", annotate)
    assert not page.is_visible("#trail")
    names = {}
    for n in range(6):
        page.wait_for_timeout(320)
        key = "0" if n == 4 else "1"
        names[key] = page.text_content(f"#decision button[data-value='{key}'] .choice-name")
        press_and_wait(page, key)
    page.wait_for_function("() => document.querySelectorAll('#trail .trail-item').length === 5")
    shown_trail = trail(page)
    assert len(shown_trail) == 5
    # Newest first: the sixth label, then the fifth (a 0), ...; snippets without citation markers.
    assert [name for name, _ in shown_trail] == [names["1"], names["0"], names["1"], names["1"], names["1"]]
    sixth = units[5].sentence.text
    assert shown_trail[0][1][:20] == sixth[:20] and "[^" not in shown_trail[0][1]
    assert page.locator("#trail .trail-undo").count() == 1
    # A reload keeps the trail (this tab's own labels).
    page.reload()
    assert len(trail(page)) == 5
    # Its undo withdraws the last label: the unit comes back and leaves the trail.
    page.click("#trail .trail-undo")
    page.wait_for_function(
        "unit => document.getElementById('work').dataset.unit === unit", arg=str(units[5].pk)
    )
    page.wait_for_function("() => document.querySelectorAll('#trail .trail-item').length === 4")
    assert trail(page)[0][0] == names["0"]
    last = Label.objects.filter(user=people["claire"]).order_by("pk").last()
    assert last is not None and (last.unit_id, last.value) == (units[5].pk, None)
    assert errors == []


@pytest.mark.django_db(transaction=True)
def test_the_next_unit_is_shown_from_its_top(live_server, browser):
    campaign, criterion, units, people = velmont_campaign()
    annotate = reverse("annotation:annotate", args=[campaign.slug, "veracity", "label"])
    page, errors = log_in(browser, live_server, "claire", annotate, viewport=(1280, 500))
    assert page.get_attribute(".bench", "data-key-guard-ms") == "300"
    for key in ("1", "s"):  # a prefetched unit, then an ordinary htmx swap
        wait_for_prefetch(page)
        page.evaluate("() => window.scrollTo(0, document.documentElement.scrollHeight)")
        page.wait_for_timeout(350)
        assert page.evaluate("() => window.scrollY") > 100
        press_and_wait(page, key)
        # The unit's first lines are on screen, below the sticky top bar.
        top = page.evaluate(
            "() => [document.getElementById('work').getBoundingClientRect().top,"
            " document.querySelector('.topbar').getBoundingClientRect().bottom]"
        )
        assert top[1] <= top[0] <= top[1] + 30, top
    assert errors == []


@pytest.mark.django_db(transaction=True)
def test_the_decision_bar_never_covers_the_unit_text(live_server, browser):
    campaign, criterion, units, people = velmont_campaign()
    annotate = reverse("annotation:annotate", args=[campaign.slug, "veracity", "label"])
    for width, height in ((390, 844), (1440, 900)):
        page, errors = log_in(browser, live_server, "claire", annotate, viewport=(width, height))
        bar = page.evaluate("() => document.getElementById('decision').getBoundingClientRect().height")
        assert bar <= 0.16 * height, f"{bar:.0f} px of {height} at {width} px"
        # The sentence to judge, scrolled to, ends above the bar.
        page.evaluate("() => document.querySelector('mark.target').scrollIntoView({block: 'end'})")
        below = page.evaluate(
            "() => [document.querySelector('mark.target').getBoundingClientRect().bottom,"
            " document.getElementById('decision').getBoundingClientRect().top]"
        )
        assert below[0] <= below[1], below
        # At the end of the page, all of the unit is above the bar.
        page.evaluate("() => window.scrollTo(0, document.documentElement.scrollHeight)")
        end = page.evaluate(
            "() => [document.querySelector('#work .unit').getBoundingClientRect().bottom,"
            " document.getElementById('decision').getBoundingClientRect().top]"
        )
        assert end[0] <= end[1], end
        assert page.evaluate("() => document.documentElement.scrollWidth") <= width
        assert errors == []
        page.context.close()


@pytest.mark.django_db(transaction=True)
def test_cited_sources_sit_beside_the_sentence_on_wide_screens_and_chips_show_their_card(
    live_server, browser
):
    campaign, criterion, units, people = velmont_campaign()
    annotate = reverse("annotation:annotate", args=[campaign.slug, "veracity", "label"])
    boxes = (
        "() => [...document.querySelectorAll('#work .claim, #work .evidence')]"
        ".map(e => e.getBoundingClientRect().toJSON())"
    )
    page, errors = log_in(browser, live_server, "claire", annotate, viewport=(1440, 900))
    claim, evidence = page.evaluate(boxes)
    assert evidence["left"] >= claim["right"] and abs(evidence["top"] - claim["top"]) < 5
    # The guidelines fold away.
    assert page.is_visible(".guidelines")
    page.click(".guidelines-box > summary")
    assert not page.is_visible(".guidelines")
    # A chip in the text focuses and highlights its source's card; the keys still label.
    page.click("#work .claim a.cite-link")
    assert page.evaluate("() => document.activeElement.id") == "source-4ca822"
    assert page.evaluate("() => document.activeElement.classList.contains('source-flash')")
    page.wait_for_timeout(350)
    wait_for_prefetch(page)
    first = shown(page)
    assert press_and_wait(page, "1") != first
    assert errors == []
    page.context.close()

    page, errors = log_in(browser, live_server, "claire", annotate, viewport=(390, 844))
    claim, evidence = page.evaluate(boxes)
    assert evidence["top"] >= claim["bottom"]  # stacked
    assert errors == []
