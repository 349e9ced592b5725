"""A campaign ready for the planner of several judges: relevance on two themes, people who label
and review at a steady pace, a cheap judge run on every answer and a dear one run on the labelled
answers, each with its recorded spend."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from unittest import mock

import numpy as np

from annotation.models import Campaign, Criterion, Label, Role, Stage
from evaluation.models import Judge, JudgeRun, Judgment
from tests.factories import add_member, make_answer_units, make_user

THEMES = {"Finance": 40, "IT": 30}
LABELED = 15
SECONDS = 30
CHEAP, DEAR = 0.001, 0.05
START = datetime(2026, 11, 2, 9, tzinfo=UTC)


def planned(
    *,
    campaign: Campaign,
    themes: dict[str, int] = THEMES,
    labeled: int = LABELED,
    rate: float | None = 60.0,
    prefix: str = "pace",
):
    """Relevance on every answer of ``themes``; the first ``labeled`` of each labelled by one
    person and confirmed by another, a label every ``SECONDS`` seconds each; judge ``cheap``
    (wrong one time in four) on every answer, spending ``CHEAP`` per unit, judge ``dear`` (wrong
    one time in twenty) on the labelled answers, ``DEAR`` per unit; the campaign's hourly rate
    ``rate``. Returns the criterion and the two judges."""
    rng = np.random.default_rng(5)
    campaign.label_hourly_rate = rate
    campaign.save(update_fields=["label_hourly_rate"])
    criterion = Criterion.objects.select_related("campaign").get(campaign=campaign, name="relevance")
    labeller = make_user(username=f"{prefix}-labeller")
    checker = make_user(username=f"{prefix}-reviewer")
    add_member(campaign=campaign, user=labeller, roles=[Role.ANNOTATOR])
    add_member(campaign=campaign, user=checker, roles=[Role.REVIEWER])
    cheap = Judge.objects.create(campaign=campaign, name="cheap", kind=Judge.Kind.OPENAI, model="small")
    dear = Judge.objects.create(campaign=campaign, name="dear", kind=Judge.Kind.OPENAI, model="large")
    at = START
    units = {judge.pk: 0 for judge in (cheap, dear)}
    for theme, count in themes.items():
        for index, unit in enumerate(make_answer_units(campaign=campaign, theme=theme, count=count)):
            truth = int(rng.random() < 0.6)
            if index < labeled:
                at += timedelta(seconds=SECONDS)
                with mock.patch("django.utils.timezone.now", return_value=at):
                    Label.objects.create(
                        unit=unit, criterion=criterion, stage=Stage.LABEL, value=truth, user=labeller
                    )
                    Label.objects.create(
                        unit=unit, criterion=criterion, stage=Stage.REVIEW, value=truth, user=checker
                    )
                value = truth if rng.random() > 0.05 else 1 - truth
                Judgment.objects.create(unit=unit, criterion=criterion, judge=dear, value=value)
                units[dear.pk] += 1
            value = truth if rng.random() > 0.25 else 1 - truth
            Judgment.objects.create(unit=unit, criterion=criterion, judge=cheap, value=value)
            units[cheap.pk] += 1
    for judge, price in ((cheap, CHEAP), (dear, DEAR)):
        JudgeRun.objects.create(
            campaign=campaign,
            criterion=criterion,
            judge=judge,
            status=JudgeRun.Status.DONE,
            total_units=units[judge.pk],
            done_units=units[judge.pk],
            cost=price * units[judge.pk],
        )
    return criterion, cheap, dear
