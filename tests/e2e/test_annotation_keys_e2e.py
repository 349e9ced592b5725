"""The stage pages' keys in a real Chromium (DEBUG off), French and English: the comment box (an
override or an adjudication opens it, keys never leak into it, Enter saves, Esc cancels), the
answer given before marked when a unit comes back, and the cue of a key not taken.

Skipped when the Chromium of tests/chromium.py is missing.
"""

from __future__ import annotations

import pytest
from django.urls import reverse

from annotation.models import Label, Stage
from annotation.workflow import submit_label
from tests.e2e.conftest import needs_chromium, settle
from tests.e2e.test_annotation_e2e import log_in, press_and_wait, shown, wait_for_prefetch
from tests.e2e.velmont import velmont_campaign
from tests.factories import label

pytestmark = [pytest.mark.e2e, needs_chromium]

GUARD_MS = 300
# The guard of the tests of keys pressed as the comment box opens: those presses, each a round
# trip to the browser, must follow the opening key within the guard; on a machine whose two cores
# run three browsers, one round trip outlasted 300 ms now and then and the keys were typed.
BURST_GUARD_MS = 1500
# What the pages say, by language.
SAID = {
    "fr-FR": {
        "title": "Commentaire",
        "reason": "Motif",
        "for": "Joint à cette étiquette",
        "required": "obligatoire pour ce choix",
        "not_typed": "non saisi",
        "too_soon": "non prise en compte",
        "nothing": "ne fait rien ici",
        "previous": "votre réponse précédente",
        "skipped": "Vous avez passé cette unité plus tôt.",
        "esc": "Échap",
    },
    "en-GB": {
        "title": "Comment",
        "reason": "Reason",
        "for": "Given with this label",
        "required": "required for this choice",
        "not_typed": "not typed",
        "too_soon": "not taken",
        "nothing": "does nothing here",
        "previous": "your previous answer",
        "skipped": "You skipped this unit earlier.",
        "esc": "Esc",
    },
}
LOCALES = list(SAID)


def ready(page, guard_ms: int = GUARD_MS) -> None:
    """Wait until the unit on screen takes keys: its follower fetched (so it was painted) and the
    guard over."""
    wait_for_prefetch(page)
    page.wait_for_timeout(guard_ms + 100)


def cues(page) -> int:
    return int(page.get_attribute("#key-cue", "data-count") or 0)


def box_open(page) -> bool:
    return page.evaluate("() => document.getElementById('comment-dialog').open")


def reviewed_campaign(*, first: int = 1):
    """Velmont with every sentence labelled ``first`` by claire: marc has them to review."""
    campaign, criterion, units, people = velmont_campaign()
    for unit in units:
        label(people["claire"], criterion, Stage.LABEL, first, unit=unit)
    return campaign, criterion, units, people


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("locale", LOCALES)
def test_keys_pressed_as_the_comment_box_opens_never_reach_it(live_server, browser, settings, locale):
    settings.LABEL_KEY_GUARD_MS = BURST_GUARD_MS
    said = SAID[locale]
    campaign, criterion, units, people = reviewed_campaign()
    review = reverse("annotation:annotate", args=[campaign.slug, "veracity", "review"])
    page, errors = log_in(browser, live_server, "marc", review, locale=locale)
    ready(page, BURST_GUARD_MS)
    target = shown(page)
    # The override key opens the box, labelled and modal; then, at once, the keys of a person who
    # thinks they are still labelling: none is typed, each is said not typed. The keys follow the
    # opening one with nothing read in between: each read is a round trip to the browser, and a
    # few of them on a loaded machine outlast the guard, after which keys are typed on purpose.
    for key in ("0", "0", "0", "u", "u", "s", "9", "c"):
        page.keyboard.press(key)
    assert box_open(page)
    dialog = page.locator("#comment-dialog")
    assert dialog.get_attribute("aria-labelledby") == "comment-dialog-title"
    assert page.text_content("#comment-dialog-title") == said["title"]
    assert said["for"] in page.text_content("#comment-dialog-for")
    assert page.evaluate("() => document.activeElement.id") == "comment-dialog-text"
    assert page.input_value("#comment-dialog-text") == ""
    assert page.get_attribute("#comment-dialog-cue", "data-count") == "7"
    assert said["not_typed"] in page.text_content("#comment-dialog-cue")
    # No shortcut fired: the same unit, nothing stored, the box still open.
    assert shown(page) == target and box_open(page)
    assert not Label.objects.filter(stage=Stage.REVIEW).exists()
    # Tab stays in the box.
    for _ in range(4):
        page.keyboard.press("Tab")
        assert page.evaluate("() => !!document.activeElement.closest('#comment-dialog')")
    page.focus("#comment-dialog-text")
    page.wait_for_timeout(BURST_GUARD_MS + 200)
    page.keyboard.type("Chiffre 148,6 vérifié p.4")
    page.keyboard.press("Shift+Enter")
    page.keyboard.type("u s 0 1")  # shortcut letters are text here
    typed = page.input_value("#comment-dialog-text")
    assert typed == "Chiffre 148,6 vérifié p.4\nu s 0 1"
    page.keyboard.press("Enter")
    page.wait_for_function("before => document.getElementById('work').dataset.unit !== before", arg=target)
    page.wait_for_function("() => !document.documentElement.hasAttribute('data-saving')")
    assert not box_open(page)
    stored = Label.objects.get(stage=Stage.REVIEW)
    # Exactly what was typed (a form sends a line break as CR LF, as it always did).
    assert (stored.unit_id, stored.value, stored.comment) == (int(target), 0, typed.replace("\n", "\r\n"))
    assert errors == []


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("locale", LOCALES)
def test_esc_cancels_the_comment_box_and_stores_nothing(live_server, browser, settings, locale):
    settings.LABEL_KEY_GUARD_MS = GUARD_MS
    said = SAID[locale]
    campaign, criterion, units, people = reviewed_campaign()
    review = reverse("annotation:annotate", args=[campaign.slug, "veracity", "review"])
    page, errors = log_in(browser, live_server, "marc", review, locale=locale)
    ready(page)
    target = shown(page)
    page.keyboard.press("0")
    page.wait_for_timeout(GUARD_MS + 200)
    page.keyboard.type("Un brouillon")
    page.keyboard.press("Escape")
    assert not box_open(page)
    page.wait_for_timeout(200)
    assert shown(page) == target and not Label.objects.filter(stage=Stage.REVIEW).exists()
    assert page.input_value("#comment") == ""
    # Enter on an empty box saves nothing either: the comment is required for an override.
    page.keyboard.press("0")
    page.wait_for_timeout(GUARD_MS + 200)
    assert page.input_value("#comment-dialog-text") == ""  # the draft went with the Esc
    page.keyboard.press("Enter")
    assert box_open(page) and said["required"] in page.text_content("#comment-dialog-cue")
    page.click("[data-comment-cancel]")
    assert not box_open(page)
    # Back on the unit, keys label again: the confirming key needs no comment.
    assert press_and_wait(page, "1") != target
    stored = Label.objects.get(stage=Stage.REVIEW)
    assert (stored.unit_id, stored.value, stored.comment) == (int(target), 1, "")
    assert errors == []


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("locale", LOCALES)
def test_an_adjudication_key_asks_for_the_reason_and_enter_gives_it(live_server, browser, settings, locale):
    settings.LABEL_KEY_GUARD_MS = BURST_GUARD_MS
    said = SAID[locale]
    campaign, criterion, units, people = reviewed_campaign()
    submit_label(
        user=people["marc"],
        unit_id=units[2].pk,
        criterion=criterion,
        stage=Stage.REVIEW,
        value=0,
        comment="La source dit 12,7 %.",
    )
    adjudicate = reverse("annotation:adjudicate", args=[campaign.slug, "veracity"])
    page, errors = log_in(browser, live_server, "sophie", adjudicate, locale=locale)
    settle(page)
    page.wait_for_timeout(BURST_GUARD_MS + 200)
    assert shown(page) == str(units[2].pk)
    # The key opens the box, then one pressed as it opens, nothing read in between: not typed.
    page.keyboard.press("0")
    page.keyboard.press("1")
    assert box_open(page) and page.text_content("#comment-dialog-title") == said["reason"]
    page.wait_for_timeout(BURST_GUARD_MS + 200)
    page.keyboard.type("Marge de 12,7 % dans le rapport, pas 15 %.")
    page.keyboard.press("Enter")
    page.wait_for_selector("#work .empty-queue")
    decision = Label.objects.get(stage=Stage.ADJUDICATION)
    assert (decision.value, decision.comment) == (0, "Marge de 12,7 % dans le rapport, pas 15 %.")
    assert errors == []


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("locale", LOCALES)
def test_the_comment_box_fits_a_phone(live_server, browser, settings, locale):
    settings.LABEL_KEY_GUARD_MS = GUARD_MS
    campaign, criterion, units, people = reviewed_campaign()
    review = reverse("annotation:annotate", args=[campaign.slug, "veracity", "review"])
    page, errors = log_in(browser, live_server, "marc", review, viewport=(390, 844), locale=locale)
    # A tap on the override button opens the box too.
    page.click("#decision button[data-needs-comment='true']")
    assert box_open(page)
    box = page.evaluate("() => document.getElementById('comment-dialog').getBoundingClientRect().toJSON()")
    assert box["left"] >= 0 and box["right"] <= 390 and box["top"] >= 0 and box["bottom"] <= 844, box
    for selector in ("[data-comment-save]", "[data-comment-cancel]", "#comment-dialog-text"):
        part = page.evaluate(f"() => document.querySelector('{selector}').getBoundingClientRect().toJSON()")
        assert part["left"] >= box["left"] and part["right"] <= box["right"], (selector, part)
    assert page.evaluate("() => document.documentElement.scrollWidth") <= 390
    assert not Label.objects.filter(stage=Stage.REVIEW).exists()
    assert errors == []


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("locale", LOCALES)
def test_the_previous_answer_is_marked_after_undo_and_when_a_skipped_unit_comes_back(
    live_server, browser, settings, locale
):
    settings.LABEL_KEY_GUARD_MS = GUARD_MS
    said = SAID[locale]
    campaign, criterion, units, people = velmont_campaign()
    annotate = reverse("annotation:annotate", args=[campaign.slug, "veracity", "label"])
    page, errors = log_in(browser, live_server, "claire", annotate, locale=locale)
    ready(page)
    first = shown(page)
    assert page.locator(".choice-previous").count() == 0
    press_and_wait(page, "0")
    ready(page)
    assert press_and_wait(page, "u") == first

    def marked() -> None:
        previous = page.locator("#decision .choice-previous")
        assert previous.count() == 1 and previous.get_attribute("data-value") == "0"
        assert said["previous"] in previous.text_content()
        assert previous.get_attribute("aria-describedby") == "previous-note"
        note = page.text_content("#previous-note")
        # Said to screen readers, and nothing selected: no button has the focus.
        page.wait_for_function("note => document.getElementById('work-said').textContent === note", arg=note)
        assert page.evaluate("() => document.activeElement === document.body")

    marked()
    # Skipped, it comes back after every other unit, still marked.
    ready(page)
    assert press_and_wait(page, "s") != first
    # The page's fetch of the unit after it is answered before labels are written behind its back:
    # that fetch takes a lease, which a label written at the same moment could collide with.
    wait_for_prefetch(page)
    for unit in units:
        if str(unit.pk) != first:
            submit_label(
                user=people["claire"], unit_id=unit.pk, criterion=criterion, stage=Stage.LABEL, value=1
            )
    page.reload()
    assert shown(page) == first
    marked()
    assert said["skipped"] in page.text_content("#previous-note")
    # A key labels it as ever: one press, the one meant.
    ready(page)
    page.keyboard.press("1")
    page.wait_for_selector("#work .empty-queue")
    last = Label.objects.filter(user=people["claire"], unit_id=int(first)).order_by("pk")
    assert list(last.values_list("value", flat=True)) == [0, None, 1]
    assert errors == []


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("locale", LOCALES)
def test_a_key_not_taken_is_said_and_none_of_24_at_once_is_lost(live_server, browser, settings, locale):
    settings.LABEL_KEY_GUARD_MS = GUARD_MS
    said = SAID[locale]
    campaign, criterion, units, people = velmont_campaign()
    annotate = reverse("annotation:annotate", args=[campaign.slug, "veracity", "label"])
    page, errors = log_in(browser, live_server, "claire", annotate, locale=locale)
    ready(page)
    # A key that does nothing here is said so.
    page.keyboard.press("x")
    assert cues(page) == 1 and said["nothing"] in page.text_content("#key-cue")
    assert page.is_visible("#key-cue")
    # A double press: the second key falls in the guard of the unit it brought; it is said not taken.
    page.keyboard.press("1")
    page.wait_for_timeout(30)
    page.keyboard.press("1")
    page.wait_for_function("() => !document.documentElement.hasAttribute('data-saving')")
    assert cues(page) == 2 and said["too_soon"] in page.text_content("#key-cue")
    assert Label.objects.filter(user=people["claire"]).count() == 1
    # The cue goes away by itself.
    page.wait_for_function("() => !document.getElementById('key-cue').classList.contains('shown')")
    # 24 keys at once: each is taken (a label) or said not taken, never lost without a word, and
    # the guard still keeps a key from labelling a unit nobody saw.
    ready(page)
    before = cues(page)
    for _ in range(24):
        page.keyboard.press("1")
    page.wait_for_timeout(1500)
    page.wait_for_function("() => !document.documentElement.hasAttribute('data-saving')")
    taken = Label.objects.filter(user=people["claire"]).count() - 1
    cued = cues(page) - before
    assert taken >= 1 and taken + cued == 24, (taken, cued)
    assert errors == []


@pytest.mark.django_db(transaction=True)
def test_labels_an_undo_and_a_skip_break_no_rule_of_the_security_policy(live_server, browser, settings):
    """Each swap of a unit keeps the page within its policy: the style a person gives the comment
    box by dragging its corner (a style attribute) is not carried over to the next unit's box."""
    settings.LABEL_KEY_GUARD_MS = GUARD_MS
    campaign, criterion, units, people = velmont_campaign()
    annotate = reverse("annotation:annotate", args=[campaign.slug, "veracity", "label"])
    page, errors = log_in(browser, live_server, "claire", annotate, locale="en-GB")
    page.on("console", lambda message: errors.append(message.text) if message.type == "error" else None)
    page.evaluate(
        "window.__violations = [];"
        "document.addEventListener('securitypolicyviolation',"
        " e => window.__violations.push(e.violatedDirective))"
    )
    for key in ("1", "1", "1", "u", "s"):
        ready(page)
        page.evaluate("document.getElementById('comment').style.height = '6em'")  # its corner dragged
        press_and_wait(page, key)
    ready(page)
    assert page.evaluate("window.__violations") == []
    assert errors == []


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("locale", LOCALES)
def test_the_keys_dialog_shows_its_esc_cap_and_the_trail_ends_long_names_with_an_ellipsis(
    live_server, browser, locale
):
    said = SAID[locale]
    campaign, criterion, units, people = velmont_campaign()
    annotate = reverse("annotation:annotate", args=[campaign.slug, "veracity", "label"])
    page, errors = log_in(browser, live_server, "claire", annotate, locale=locale)
    page.keyboard.press("?")
    cap = page.locator("#shortcuts-dialog form kbd")
    assert cap.text_content() == said["esc"]
    colours = cap.evaluate("k => [getComputedStyle(k).color, getComputedStyle(k).backgroundColor]")
    assert colours[0] != colours[1], colours
    page.keyboard.press("Escape")
    # A category name longer than the side panel: cut with an ellipsis, whole in its title and text.
    name = "Partiellement correcte, avec des détails incorrects et des chiffres sans source"
    page.evaluate(
        "([key, name]) => sessionStorage.setItem(key,"
        " JSON.stringify([{unit: '1', value: '3', name, snippet: 'x'}]))",
        [f"attest-trail:{annotate}", name],
    )
    page.reload()
    value = page.locator("#trail .trail-value")
    assert value.text_content() == name and value.get_attribute("title") == name
    style = value.evaluate(
        "v => [getComputedStyle(v).textOverflow, v.scrollWidth > v.clientWidth,"
        " v.getBoundingClientRect().right <= v.closest('.trail').getBoundingClientRect().right]"
    )
    assert style == ["ellipsis", True, True], style
    assert errors == []
