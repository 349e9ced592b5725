"""Campaigns with a criterion in named categories (answer correctness), labeled by people and a judge."""

from __future__ import annotations

import numpy as np

from annotation.corpus.conventions import ANSWER_CORRECTNESS
from annotation.models import Campaign, Criterion, Label, Level, Stage
from evaluation.models import Judge, Judgment
from tests.factories import make_answer_units

THEMES = {"Finance": (24, 40), "IT": (18, 30)}  # (labeled, judge-only) answers
# How often each category is the truth (1 not enough information ... 5 fully correct).
SHARES = [0.15, 0.1, 0.1, 0.05, 0.6]


def correctness(campaign: Campaign) -> Criterion:
    """The campaign's five-category answer correctness criterion, grouped."""
    return Criterion.objects.create(
        campaign=campaign,
        name=ANSWER_CORRECTNESS["name"],
        title=ANSWER_CORRECTNESS["title"],
        level=Level.ANSWER,
        kind="categorical",
        categories=ANSWER_CORRECTNESS["categories"],
        category_groups=ANSWER_CORRECTNESS["groups"],
    )


def categorical_campaign(campaign: Campaign, *, seed: int = 11) -> tuple[Criterion, Judge, dict]:
    """Imported correctness labels on some answers per theme and an imported judge on every answer,
    right three times in four (else a category drawn at random). Returns the criterion, the judge
    and per theme the rows ``{"labeled": [(unit_id, human, judge)], "unlabeled": [(unit_id, judge)]}``."""
    rng = np.random.default_rng(seed)
    criterion = correctness(campaign)
    judge = Judge.objects.create(campaign=campaign, name="imported", kind=Judge.Kind.IMPORTED)
    rows: dict[str, dict[str, list]] = {}
    for theme, (labeled, unlabeled) in THEMES.items():
        rows[theme] = {"labeled": [], "unlabeled": []}
        units = make_answer_units(campaign=campaign, theme=theme, count=labeled + unlabeled)
        for index, unit in enumerate(units):
            truth = int(rng.choice([1, 2, 3, 4, 5], p=SHARES))
            verdict = truth if rng.random() < 0.75 else int(rng.integers(1, 6))
            Judgment.objects.create(unit=unit, criterion=criterion, judge=judge, value=verdict)
            if index < labeled:
                Label.objects.create(unit=unit, criterion=criterion, stage=Stage.IMPORTED, value=truth)
                rows[theme]["labeled"].append((unit.pk, truth, verdict))
            else:
                rows[theme]["unlabeled"].append((unit.pk, verdict))
    return criterion, judge, rows
