"""Campaigns with two judges of different quality on one criterion, one of them possibly on a
recorded random share of the answers: for the estimates that combine judges and their pages."""

from __future__ import annotations

import numpy as np

from annotation.models import Criterion, Label, Stage
from evaluation.models import Judge, JudgeShare, JudgeShareItem, Judgment
from tests.factories import make_answer_units, make_campaign

THEMES = {"Finance": 30, "IT": 24}
LABELED = 12
SHARE = 0.4


def two_judges(
    *, share: bool, themes: dict[str, int] = THEMES, name: str = "Two judges"
) -> tuple[Criterion, Judge, Judge, dict[int, int]]:
    """Relevance on every answer of two themes; the first 12 answers of each labeled (imported
    labels); a cheap judge on every answer (wrong one time in four) and a strong one (wrong one
    time in twenty) on the labeled answers and, with ``share``, on a recorded random share of the
    others (else on the same answers, with no share recorded)."""
    rng = np.random.default_rng(3)
    campaign = make_campaign(name=name)
    criterion = Criterion.objects.get(campaign=campaign, name="relevance")
    cheap = Judge.objects.create(campaign=campaign, name="cheap", kind=Judge.Kind.IMPORTED)
    strong = Judge.objects.create(campaign=campaign, name="strong", kind=Judge.Kind.IMPORTED)
    recorded = (
        JudgeShare.objects.create(
            campaign=campaign, criterion=criterion, judge=strong, seed=1, shares=dict.fromkeys(themes, SHARE)
        )
        if share
        else None
    )
    truths = {}
    for theme, count in themes.items():
        for index, unit in enumerate(make_answer_units(campaign=campaign, theme=theme, count=count)):
            truth = int(rng.random() < 0.65)
            truths[unit.pk] = truth
            if index < LABELED:
                Label.objects.create(unit=unit, criterion=criterion, stage=Stage.IMPORTED, value=truth)
            cheap_value = truth if rng.random() > 0.25 else 1 - truth
            Judgment.objects.create(unit=unit, criterion=criterion, judge=cheap, value=cheap_value)
            drawn = rng.random() < SHARE
            if index < LABELED or drawn:
                strong_value = truth if rng.random() > 0.05 else 1 - truth
                Judgment.objects.create(unit=unit, criterion=criterion, judge=strong, value=strong_value)
            if drawn and recorded is not None:
                JudgeShareItem.objects.create(share=recorded, unit=unit, probability=SHARE)
    return criterion, cheap, strong, truths
