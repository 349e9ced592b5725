"""One current sample per criterion: the queue, the label check and the design weights agree on
it while a new draw runs or fails, and while a top-up runs or fails."""

from __future__ import annotations

import pytest
from django.db import connection

from annotation.models import Role, Sample, Stage
from annotation.sampling.current import CURRENT_SAMPLE_SQL, current_sample
from annotation.workflow import next_unit, open_slots
from evaluation.estimates.report import compute_report
from evaluation.models import Judge, Judgment
from tests.factories import member, sample_units, sampled


def _sql_choice(criterion) -> int | None:
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT {CURRENT_SAMPLE_SQL}", {"criterion": criterion.pk})
        return cursor.fetchone()[0]


@pytest.fixture
def world(campaign):
    criterion, units = sampled(campaign=campaign, answers=4)
    first = Sample.objects.get(criterion=criterion)
    judge = Judge.objects.create(campaign=campaign, name="imported", kind=Judge.Kind.IMPORTED)
    for unit in units:
        Judgment.objects.create(unit=unit, criterion=criterion, judge=judge, value=1)
    annotator = member(campaign, Role.ANNOTATOR)
    return criterion, units, first, judge, annotator


def _agree(criterion, judge, annotator, expected: Sample | None) -> None:
    """Every reader of the rule names ``expected``."""
    chosen = current_sample(criterion=criterion)
    assert (chosen.pk if chosen else None) == (expected.pk if expected else None)
    assert _sql_choice(criterion) == (expected.pk if expected else None)
    assert compute_report(criterion=criterion, judge=judge).sample_id == (expected.pk if expected else None)
    unit = next_unit(user=annotator, criterion=criterion, stage=Stage.LABEL)
    if expected is None:
        assert unit is None
    else:
        assert expected.items.filter(unit=unit).exists()


def test_without_items_no_sample_is_current(campaign):
    criterion, _ = sampled(campaign=campaign, answers=2)
    Sample.objects.all().delete()
    open_slots.rebuild(criterion=criterion)
    Sample.objects.create(campaign=campaign, criterion=criterion, status=Sample.Status.PENDING)
    judge = Judge.objects.create(campaign=campaign, name="imported", kind=Judge.Kind.IMPORTED)
    _agree(criterion, judge, member(campaign, Role.ANNOTATOR), None)


@pytest.mark.parametrize("status", [Sample.Status.PENDING, Sample.Status.RUNNING, Sample.Status.FAILED])
def test_a_new_draw_that_runs_or_failed_leaves_the_previous_sample_current(status, world):
    criterion, _, first, judge, annotator = world
    Sample.objects.create(campaign=criterion.campaign, criterion=criterion, status=status)
    _agree(criterion, judge, annotator, first)


@pytest.mark.parametrize("status", [Sample.Status.PENDING, Sample.Status.RUNNING, Sample.Status.FAILED])
def test_a_sample_being_topped_up_or_whose_top_up_failed_stays_current(status, world):
    criterion, _, first, judge, annotator = world
    # A top-up marks the sample itself; its items stay those of the last successful draw.
    Sample.objects.filter(pk=first.pk).update(status=status)
    _agree(criterion, judge, annotator, first)


def test_a_new_draw_with_items_becomes_current(world):
    criterion, units, _, judge, annotator = world
    second = sample_units(criterion=criterion, units=units[2:])
    _agree(criterion, judge, annotator, second)
