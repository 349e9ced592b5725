"""The queues of many criteria counted at once: the same numbers as one by one, in one query."""

from __future__ import annotations

import pytest
from django.utils import timezone

from annotation.models import Criterion, Role, Stage, Unit
from annotation.workflow import next_unit
from annotation.workflow.queue import available_count, available_counts, criteria_progress, criterion_progress
from tests.factories import add_member, label, make_campaign, member, sample_units, sampled

pytestmark = pytest.mark.django_db


def test_the_counts_of_every_queue_at_once_are_those_of_each_queue(campaign, annotator, reviewer):
    relevance, _ = sampled(campaign=campaign, answers=4)
    veracity = Criterion.objects.select_related("campaign").get(campaign=campaign, name="veracity")
    sample_units(criterion=veracity, units=list(Unit.objects.filter(campaign=campaign, level="sentence")))
    other = make_campaign(name="Other")
    add_member(campaign=other, user=annotator, roles=[Role.ANNOTATOR, Role.REVIEWER])
    elsewhere, _ = sampled(campaign=other, answers=3)
    label(annotator, relevance, Stage.LABEL, 1)  # one unit labelled: left out of their label queue
    next_unit(user=annotator, criterion=veracity, stage=Stage.LABEL)  # one held: still theirs
    label(member(campaign, Role.ANNOTATOR), relevance, Stage.LABEL, 0)  # one to review
    criteria = [relevance, veracity, elsewhere]
    stages = [Stage.LABEL, Stage.REVIEW]
    now = timezone.now()
    counts = available_counts(user=annotator, criteria=criteria, stages=stages, now=now)
    one_by_one = {
        (c.pk, stage): available_count(user=annotator, criterion=c, stage=stage, now=now)
        for c in criteria
        for stage in stages
    }
    assert counts == {key: n for key, n in one_by_one.items() if n}
    assert counts[(relevance.pk, Stage.LABEL)] == 2 and counts[(elsewhere.pk, Stage.LABEL)] == 3
    assert counts[(relevance.pk, Stage.REVIEW)] == 1
    assert available_counts(user=annotator, criteria=[], stages=stages, now=now) == {}


def test_counting_every_queue_is_one_query_whatever_their_number(
    campaign, annotator, django_assert_num_queries
):
    criteria = []
    for n in range(4):
        other = make_campaign(name=f"Campaign {n}")
        criteria.append(sampled(campaign=other, answers=2)[0])
    with django_assert_num_queries(1):
        counts = available_counts(
            user=annotator, criteria=criteria, stages=[Stage.LABEL, Stage.REVIEW], now=timezone.now()
        )
    assert sorted(counts.values()) == [2, 2, 2, 2]


def test_the_progress_of_every_criterion_at_once_is_that_of_each(
    campaign, annotator, reviewer, django_assert_num_queries
):
    relevance, _ = sampled(campaign=campaign, answers=3)
    label(annotator, relevance, Stage.LABEL, 1)
    label(reviewer, relevance, Stage.REVIEW, 1)
    criteria = list(Criterion.objects.select_related("campaign").filter(campaign=campaign))
    with django_assert_num_queries(1):
        progress = criteria_progress(criteria=criteria)
    assert progress == {c.pk: criterion_progress(criterion=c) for c in criteria}
    assert (progress[relevance.pk].settled, progress[relevance.pk].total) == (1, 3)


def test_a_unit_the_person_opened_still_waits_for_them_not_for_the_others(campaign, annotator, reviewer):
    relevance, _ = sampled(campaign=campaign, answers=2)

    def waiting(user, stage=Stage.LABEL) -> int:
        return available_count(user=user, criterion=relevance, stage=stage, now=timezone.now())

    other = member(campaign, Role.ANNOTATOR)
    held = next_unit(user=annotator, criterion=relevance, stage=Stage.LABEL)
    assert held is not None and waiting(annotator) == 2  # the unit they opened, and the other one
    assert waiting(other) == 1  # held by someone else under a live lease
    label(annotator, relevance, Stage.LABEL, 1, unit=held)
    assert waiting(annotator) == 1 and waiting(other) == 1
    # The reviewer holds the labelled unit at the review stage: not at the label stage.
    add_member(campaign=campaign, user=reviewer, roles=[Role.ANNOTATOR])
    assert next_unit(user=reviewer, criterion=relevance, stage=Stage.REVIEW) == held
    assert waiting(reviewer, Stage.REVIEW) == 1 and waiting(reviewer) == 1
