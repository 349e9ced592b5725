"""A real Chromium drives the annotation pages: keyboard labelling, review override, adjudication.

Skipped when /usr/bin/chromium is missing. Writes docs/screenshots/annotator.png (1280 x 800).
"""

from __future__ import annotations

from pathlib import Path

import pytest
from django.urls import reverse

from annotation.campaigns import get_or_create_campaign
from annotation.models import (
    Answer,
    AnswerSource,
    Assignment,
    Criterion,
    Label,
    Level,
    Question,
    Role,
    Sentence,
    SourceChunk,
    Unit,
)
from annotation.workflow import final_labels
from tests.e2e.conftest import needs_chromium
from tests.factories import PASSWORD, add_member, make_user, sample_units

SCREENSHOT = Path(__file__).resolve().parents[2] / "docs" / "screenshots" / "annotator.png"
pytestmark = [pytest.mark.e2e, needs_chromium]

CHUNKS = {
    "4ca822": (
        "Rapport annuel 2023 - Velmont SA.pdf",
        12,
        "Le chiffre d'affaires consolidé de l'exercice 2023 s'établit à 48,2 millions d'euros, en hausse "
        "de 7,9 % par rapport à 2022 (44,7 millions d'euros). La croissance provient principalement de "
        "l'activité de maintenance industrielle, qui représente désormais 61 % du chiffre d'affaires.\n\n"
        "L'excédent brut d'exploitation atteint 6,1 millions d'euros, soit une marge de 12,7 %.",
    ),
    "9be013": (
        "Contrat de crédit syndiqué - avenant n°2.pdf",
        3,
        "L'emprunteur s'engage à maintenir un ratio de levier (dette financière nette / EBE) inférieur à "
        "3,0x à chaque date de test semestrielle. Le non-respect de ce ratio constitue un cas de défaut "
        "au sens de l'article 22.",
    ),
    "c7f5d1": (
        "Procès-verbal du conseil d'administration du 14 mars 2024.docx",
        2,
        "Le conseil prend acte du départ du directeur financier au 30 juin 2024. Un processus de "
        "recrutement est engagé avec l'assistance d'un cabinet spécialisé.",
    ),
    "e12aa0": (
        "Registre du personnel - extrait 2023.xlsx",
        None,
        "Effectif au 31/12/2023 : 312 salariés, dont 287 en CDI. Taux de rotation annuel : 9,4 %.",
    ),
}

ANSWERS = [
    (
        "Quel est le chiffre d'affaires de Velmont en 2023 et comment évolue-t-il ?",
        "Finance",
        [
            ("Le chiffre d'affaires consolidé 2023 s'élève à **48,2 M€** [^4ca822^].", ["4ca822"]),
            (
                "Il progresse de 7,9 % par rapport à 2022, porté par la maintenance industrielle [^4ca822^].",
                ["4ca822"],
            ),
            (
                "La marge d'EBE atteint 15 %, ce qui place Velmont au-dessus de son secteur [^4ca822^].",
                ["4ca822"],
            ),
        ],
        ["4ca822", "9be013", "c7f5d1"],
    ),
    (
        "Existe-t-il des covenants financiers dans la documentation de crédit ?",
        "Finance",
        [
            (
                "Oui, le contrat de crédit syndiqué prévoit un ratio de levier maximal de 3,0x [^9be013^].",
                ["9be013"],
            ),
            ("Ce ratio est testé chaque semestre [^9be013^].", ["9be013"]),
            (
                "Un bris de covenant entraînerait une renégociation automatique des marges [^7f00aa^].",
                ["7f00aa"],
            ),
        ],
        ["9be013", "4ca822"],
    ),
    (
        "Des changements sont-ils prévus au sein de l'équipe de direction ?",
        "Gouvernance",
        [
            ("Le directeur financier quittera ses fonctions le 30 juin 2024 [^c7f5d1^].", ["c7f5d1"]),
            ("Un cabinet de recrutement accompagne la recherche de son successeur [^c7f5d1^].", ["c7f5d1"]),
            ("N'hésitez pas à me solliciter pour toute précision complémentaire.", []),
        ],
        ["c7f5d1", "4ca822"],
    ),
    (
        "Quel est l'effectif de la société ?",
        "RH",
        [
            ("Velmont emploie 312 salariés au 31 décembre 2023 [^e12aa0^].", ["e12aa0"]),
            ("La grande majorité, soit 287 personnes, est en CDI [^e12aa0^].", ["e12aa0"]),
            ("Le taux de rotation s'élève à 9,4 % sur l'année [^e12aa0^].", ["e12aa0"]),
        ],
        ["e12aa0", "c7f5d1"],
    ),
]


def build_campaign():
    campaign, _ = get_or_create_campaign(name="Velmont due diligence (e2e)")
    chunks = {
        cid: SourceChunk.objects.create(campaign=campaign, external_id=cid, title=title, page=page, text=text)
        for cid, (title, page, text) in CHUNKS.items()
    }
    units = []
    for n, (question_text, theme, sentences, retrieved) in enumerate(ANSWERS, start=1):
        question = Question.objects.create(
            campaign=campaign, external_id=f"Q{n}", text=question_text, theme=theme, difficulty="simple"
        )
        paragraph = " ".join(text for text, _ in sentences)
        answer = Answer.objects.create(
            campaign=campaign, question=question, external_id=f"Q{n}-R01", text=paragraph, language="fr"
        )
        for rank, cid in enumerate(retrieved, start=1):
            AnswerSource.objects.create(answer=answer, chunk=chunks[cid], rank=rank)
        Unit.objects.create(
            campaign=campaign, level=Level.ANSWER, answer=answer, theme=theme, difficulty="simple"
        )
        for position, (text, cited) in enumerate(sentences):
            sentence = Sentence.objects.create(
                answer=answer,
                position=position,
                text=text,
                paragraph=paragraph,
                cited_ids=cited,
                citations_ok=all(c in retrieved for c in cited) if cited else None,
            )
            units.append(
                Unit.objects.create(
                    campaign=campaign,
                    level=Level.SENTENCE,
                    answer=answer,
                    sentence=sentence,
                    theme=theme,
                    difficulty="simple",
                )
            )
    criterion = Criterion.objects.select_related("campaign").get(campaign=campaign, name="veracity")
    sample_units(criterion=criterion, units=units)
    people = {}
    for username, role in (("claire", Role.ANNOTATOR), ("marc", Role.REVIEWER), ("sophie", Role.ADJUDICATOR)):
        people[username] = make_user(username=username)
        add_member(campaign=campaign, user=people[username], roles=[role])
    return campaign, criterion, units, people


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
def test_keyboard_labelling_review_override_and_adjudication(live_server, browser):
    campaign, criterion, units, people = build_campaign()
    annotate = reverse("annotation:annotate", args=[campaign.slug, "veracity", "label"])
    review = reverse("annotation:annotate", args=[campaign.slug, "veracity", "review"])
    adjudicate = reverse("annotation:adjudicate", args=[campaign.slug, "veracity"])

    # The annotator labels ten sentences, keyboard only; the third one is not supported.
    page, errors = log_in(browser, live_server, "claire", annotate)
    assert page.is_visible("mark.target")
    assert page.is_visible("text=Cited sources")
    SCREENSHOT.parent.mkdir(parents=True, exist_ok=True)
    labelled = []
    for n in range(10):
        labelled.append(int(shown(page)))
        if n == 2:
            # The third sentence claims a 15 % margin; the source says 12.7 %.
            assert page.is_visible("text=15 %")
            page.screenshot(path=str(SCREENSHOT))
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
    assert page.is_visible("text=withdrawn")
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
