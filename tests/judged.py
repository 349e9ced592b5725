"""Campaigns with human labels and judge labels, ready for estimates, reports and exports."""

from __future__ import annotations

import re

import numpy as np
from django.utils.html import escape

from annotation.models import Criterion, Label, Question, Stage
from evaluation.models import Judge, Judgment
from tests.factories import answer_units, make_answer_units, make_answers, make_campaign

HOSTILE = "<script>alert('x')</script> & RH"
THEMES = {"Finance": (14, 30), "IT": (12, 20), HOSTILE: (16, 24)}  # (labeled, judge-only) answers


def judged_campaign(campaign, *, second_judge: bool = False) -> tuple[Criterion, Judge, Judge | None]:
    """Relevance labels imported for a few answers per theme; an imported judge on every answer
    (wrong about one time in six) and, optionally, a lexical judge wrong one time in three."""
    rng = np.random.default_rng(7)
    criterion = Criterion.objects.get(campaign=campaign, name="relevance")
    imported = Judge.objects.create(campaign=campaign, name="imported", kind=Judge.Kind.IMPORTED)
    lexical = (
        Judge.objects.create(campaign=campaign, name="lexical", kind=Judge.Kind.LEXICAL)
        if second_judge
        else None
    )
    labels, judgments = [], []
    for theme, (labeled, unlabeled) in THEMES.items():
        for index, unit in enumerate(
            make_answer_units(campaign=campaign, theme=theme, count=labeled + unlabeled)
        ):
            truth = int(rng.random() < 0.7)
            if index < labeled:
                labels.append(Label(unit=unit, criterion=criterion, stage=Stage.IMPORTED, value=truth))
            verdict = truth if rng.random() > 1 / 6 else 1 - truth
            judgments.append(Judgment(unit=unit, criterion=criterion, judge=imported, value=verdict))
            if lexical is not None:
                verdict = truth if rng.random() > 1 / 3 else 1 - truth
                judgments.append(Judgment(unit=unit, criterion=criterion, judge=lexical, value=verdict))
    Label.objects.bulk_create(labels)
    Judgment.objects.bulk_create(judgments)
    return criterion, imported, lexical


def pct(value: float) -> str:
    return f"{value * 100:.1f}%"


# Per theme: (human, judge) pairs on labeled units (judge None: no judgment), then judge labels
# on units without a human label (None: a unit nobody labeled and the judge failed on).
DESIGN = {
    "Finance": (
        [(1, 1), (1, 1), (0, 0), (1, 0), (0, 0), (1, 1), (1, 1), (0, 1), (1, None)],
        [1, 0, 1, 1, 1, 0, 1, 1, 0, 1],
    ),
    "IT": (
        [(1, 1), (1, 1), (1, 1), (0, 1), (1, 1), (0, 0), (0, None)],
        [1, 1, 1, 1, 0, 1, 1, 1, 1, None],
    ),
    "RH": (
        [(1, 1), (0, 0), (0, 0), (1, 1), (1, 0), (0, 0), (1, 1)],
        [0, 0, 1, 0, 1, 0, 0, 1],
    ),
}


# Two versions of an assistant for the release gate: the same IT theme, and a Finance theme whose
# estimate is high in one (18 of 20 labels true) and about half in the other.
GATE_LOW = {
    "Finance": ([(1, 1)] * 10 + [(0, 0)] * 10, [1] * 10 + [0] * 10),
    "IT": ([(1, 1), (0, 0)] * 6, [1, 0] * 6),
}
GATE_HIGH = {
    "Finance": ([(1, 1)] * 18 + [(0, 0)] * 2, [1] * 17 + [0] * 3),
    "IT": ([(1, 1), (0, 0)] * 6, [1, 0] * 6),
}


def study_campaign(*, design=DESIGN, name: str = "Imported study"):
    """Answers, imported human labels (relevance) and imported judge labels, as an import writes them."""
    campaign = make_campaign(name=name)
    criterion = Criterion.objects.get(campaign=campaign, name="relevance")
    judge = Judge.objects.create(campaign=campaign, name="imported", kind=Judge.Kind.IMPORTED)
    units: dict[str, dict[str, list]] = {}
    labels, judgments = [], []
    for theme, (labeled, unlabeled) in design.items():
        rows = units.setdefault(theme, {"labeled": [], "unlabeled": []})
        pairs = [*labeled, *[(None, j) for j in unlabeled]]
        answers = make_answers(
            campaign=campaign,
            about=[(theme, "simple" if index % 2 else "hard") for index in range(len(pairs))],
        )
        for (human, verdict), unit in zip(pairs, answer_units(answers), strict=True):
            if human is not None:
                labels.append(Label(unit=unit, criterion=criterion, stage=Stage.IMPORTED, value=human))
            if verdict is not None:
                judgments.append(Judgment(unit=unit, criterion=criterion, judge=judge, value=verdict))
            elif human is None:
                judgments.append(
                    Judgment(
                        unit=unit, criterion=criterion, judge=judge, status=Judgment.Status.FAILED, value=None
                    )
                )
            rows["labeled" if human is not None else "unlabeled"].append((unit, human, verdict))
    Label.objects.bulk_create(labels)
    Judgment.objects.bulk_create(judgments)
    return campaign, criterion, judge, units


def version_campaign(
    name: str,
    *,
    seed: int,
    share: float = 0.7,
    questions: int = 12,
    answers: int = 3,
    snapshot: bool = True,
    labelled: int = 2,
):
    """A version of the assistant: questions ``Q-0``, ``Q-1``... (the first half Finance, the rest IT),
    each answered ``answers`` times, so that two versions share their question ids; relevance true
    for about ``share`` of the answers, labelled by people on the first ``labelled`` answers of each
    question (imported, final; none with 0), an imported judge on every answer, wrong one time in
    six (seeded by ``seed``). With ``snapshot``, the relevance estimates are snapshotted, as after an
    import. The campaign, its relevance criterion and its judge."""
    from evaluation.estimates.snapshots import record_snapshots
    from evaluation.models import ReportSnapshot

    rng = np.random.default_rng(seed)
    campaign = make_campaign(name=name)
    criterion = Criterion.objects.get(campaign=campaign, name="relevance")
    judge = Judge.objects.create(campaign=campaign, name="imported", kind=Judge.Kind.IMPORTED)
    labels, judgments = [], []
    asked = Question.objects.bulk_create(
        Question(
            campaign=campaign,
            external_id=f"Q-{q}",
            text=f"Question {q} ?",
            theme="Finance" if q < questions // 2 else "IT",
            difficulty="simple",
        )
        for q in range(questions)
    )
    units = answer_units(make_answers(campaign=campaign, about=[q for q in asked for _ in range(answers)]))
    for q in range(questions):
        for index, unit in enumerate(units[q * answers : (q + 1) * answers]):
            truth = int(rng.random() < share)
            if index < labelled:
                labels.append(Label(unit=unit, criterion=criterion, stage=Stage.IMPORTED, value=truth))
            verdict = truth if rng.random() > 1 / 6 else 1 - truth
            judgments.append(Judgment(unit=unit, criterion=criterion, judge=judge, value=verdict))
    Label.objects.bulk_create(labels)
    Judgment.objects.bulk_create(judgments)
    if snapshot:
        record_snapshots(criterion=criterion, trigger=ReportSnapshot.Trigger.IMPORT)
    return campaign, criterion, judge


# Reading report pages


def row_html(content: str, *, css: str, attribute: str, value: str) -> str:
    match = re.search(
        rf'<tr class="{css}[^"]*" data-{attribute}="{re.escape(escape(value))}">(.*?)</tr>', content, re.S
    )
    assert match, f"no {css} row for {value!r}"
    return match.group(1)
