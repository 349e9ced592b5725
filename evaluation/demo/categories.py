"""The demo's criterion with categories: answer correctness in five, with human and judge labels.

The five nominal categories and their groups are ``annotation.corpus.conventions.ANSWER_CORRECTNESS``.
Each demo answer's category follows from what the demo material did to it
(``demo/data/defects.json``): an off-topic answer or one that answers an inappropriate question
is fully incorrect, an unsupported figure makes it partly correct with incorrect details, a
missed answer says there is not enough information, and so does an abstention on an
inappropriate question; two repetitions of each hard question leave out part of the answer
(partly correct, incomplete); the rest is fully correct. The answers that carry a human label
of relevance carry a human label of correctness too (imported, final); the imported judge labels
every answer and is wrong on about one in seven, deterministically. The offline lexical judge
gives 0 or 1 only: it does not judge this criterion.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

from django.db import transaction

from annotation.corpus.conventions import ANSWER_CORRECTNESS
from annotation.criteria.categories import CATEGORICAL
from annotation.criteria.editing import CriterionDraft, save_criterion
from annotation.models import Campaign, Criterion, Label, Level, Stage, Unit
from annotation.workflow import open_slots
from evaluation.judge.imported import imported_judge
from evaluation.models import Judgment

DEFECTS = Path(__file__).resolve().parents[2] / "demo" / "data" / "defects.json"
NAME = ANSWER_CORRECTNESS["name"]
GUIDELINES = (
    "Jugez la réponse entière au regard des documents : 1 si elle dit qu'ils ne contiennent pas "
    "l'information (à raison ou non), 2 si elle est en partie juste mais avec des détails faux, "
    "3 si elle est juste mais incomplète faute d'information, 4 si elle est fausse ou hors sujet, "
    "5 si elle est entièrement juste. Les catégories sont des noms, pas des notes."
)
# What each kind of defect of the demo material makes of an answer.
BY_DEFECT = {
    "off_topic": 4,
    "answered_inappropriate": 4,
    "unsupported_figure": 2,
    "missed_answer": 1,
    "english": 5,
    "corrupted_citation": 5,
}
# The judge's mistakes: what it says instead of the right category.
MISTAKEN = {1: 5, 2: 5, 3: 5, 4: 5, 5: 2}


def category_of(*, answer_id: str, difficulty: str, repetition: int, defect: str | None) -> int:
    """The demo answer's category (see the module docstring)."""
    if defect is not None:
        return BY_DEFECT[defect]
    if difficulty == "inappropriee":
        return 1
    if difficulty == "difficile" and repetition in (2, 5):
        return 3
    return 5


def judge_category(*, answer_id: str, truth: int) -> int:
    """The imported judge's category: right, except on about one answer in seven (by the
    answer id's digest, so that every load gives the same labels)."""
    wrong = hashlib.sha256(answer_id.encode()).digest()[0] % 7 == 0
    return MISTAKEN[truth] if wrong else truth


def correctness_step(campaign: Campaign) -> str | None:
    """Give the demo campaign its five-category criterion with its labels; None when it has it.
    The demo's first version only (its labels follow that version's material)."""
    if Criterion.objects.filter(campaign=campaign, name=NAME).exists():
        return None
    defects = {answer_id: item["kind"] for answer_id, item in json.loads(DEFECTS.read_text()).items()}
    units = list(
        Unit.objects.filter(campaign=campaign, level=Level.ANSWER)
        .select_related("answer")
        .values_list("id", "answer__external_id", "difficulty", "answer__repetition")
    )
    relevance_labelled = set(
        Label.objects.filter(
            criterion__campaign=campaign, criterion__name="relevance", stage=Stage.IMPORTED
        ).values_list("unit_id", flat=True)
    )
    with transaction.atomic():
        criterion, _version = save_criterion(
            campaign=campaign,
            draft=CriterionDraft(
                name=NAME,
                # The conventions' title, which every page shows in the reader's language
                # (annotation.workbench.shown_title): "Justesse de la réponse" in French.
                title=ANSWER_CORRECTNESS["title"],
                level=Level.ANSWER,
                kind=CATEGORICAL,
                guidelines=GUIDELINES,
                categories=[dict(item) for item in ANSWER_CORRECTNESS["categories"]],
                groups={name: list(values) for name, values in ANSWER_CORRECTNESS["groups"].items()},
            ),
        )
        judge = imported_judge(campaign=campaign)
        truths = {
            unit_id: category_of(
                answer_id=answer_id,
                difficulty=difficulty,
                repetition=repetition,
                defect=defects.get(answer_id),
            )
            for unit_id, answer_id, difficulty, repetition in units
        }
        Label.objects.bulk_create(
            Label(unit_id=unit_id, criterion=criterion, stage=Stage.IMPORTED, value=truths[unit_id])
            for unit_id in sorted(relevance_labelled & set(truths))
        )
        Judgment.objects.bulk_create(
            Judgment(
                unit_id=unit_id,
                criterion=criterion,
                judge=judge,
                status=Judgment.Status.OK,
                value=judge_category(answer_id=answer_id, truth=truths[unit_id]),
            )
            for unit_id, answer_id, _difficulty, _repetition in units
        )
        open_slots.rebuild(criterion=Criterion.objects.select_related("campaign").get(pk=criterion.pk))
    labelled = len(relevance_labelled & set(truths))
    return (
        f"criterion {NAME} with five categories: {labelled} human labels, {len(units)} judge labels imported"
    )
