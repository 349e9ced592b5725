"""What the workflow tells the layers above it: ``labels_changed``, once a transaction commits."""

from __future__ import annotations

import pytest
from django.db import transaction

from annotation.models import Role, Stage
from annotation.workflow.events import labels_changed
from tests.factories import label, member, sampled

# Real commits: Django's callbacks run when a transaction commits, as in production.
pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def sent():
    """The announcements received, as (criterion id, stage)."""
    received: list[tuple[int, str]] = []

    def listener(sender, *, criterion_id: int, stage: str, **kwargs) -> None:
        received.append((criterion_id, stage))

    labels_changed.connect(listener, dispatch_uid="test_events")
    yield received
    labels_changed.disconnect(dispatch_uid="test_events")


def test_labels_recorded_in_one_transaction_are_announced_once_per_stage(campaign, sent):
    criterion, _ = sampled(campaign=campaign, answers=4)
    annotator = member(campaign, Role.ANNOTATOR)
    reviewer = member(campaign, Role.REVIEWER)
    with transaction.atomic():
        for _ in range(3):
            label(annotator, criterion, Stage.LABEL, 1)
        label(reviewer, criterion, Stage.REVIEW, 1)
        assert sent == []  # nothing before the commit
    assert sorted(sent) == [(criterion.pk, Stage.LABEL), (criterion.pk, Stage.REVIEW)]


def test_a_label_of_a_savepoint_rolled_back_leaves_the_next_one_announced(campaign, sent):
    criterion, _ = sampled(campaign=campaign, answers=2)
    annotator = member(campaign, Role.ANNOTATOR)
    with transaction.atomic():
        with pytest.raises(RuntimeError), transaction.atomic():
            label(annotator, criterion, Stage.LABEL, 1)
            raise RuntimeError("rolled back")
        label(annotator, criterion, Stage.LABEL, 0)
    assert sent == [(criterion.pk, Stage.LABEL)]


def test_each_transaction_announces_its_own_labels(campaign, sent):
    criterion, _ = sampled(campaign=campaign, answers=2)
    annotator = member(campaign, Role.ANNOTATOR)
    for value in (1, 0):
        label(annotator, criterion, Stage.LABEL, value)  # a transaction of its own
    assert sent == [(criterion.pk, Stage.LABEL)] * 2
