"""Eight people labelling at once on PostgreSQL: no slot handed out twice, no label lost.

Each thread has its own database connection (Django opens one per thread), so the row locks,
``SKIP LOCKED`` and the unique slot rows are exercised for real. SQLite serialises every
transaction, so there is nothing to prove there.
"""

from __future__ import annotations

import threading
import uuid
from collections import Counter, defaultdict

import pytest
from django.conf import settings
from django.db import connection

from annotation.models import AnnotationMode, Criterion, Label, Role, Stage, Unit
from annotation.workflow import WorkflowError, final_labels, next_unit, submit_label
from tests.factories import add_member, make_answer, make_campaign, make_user, sample_units

THREADS = 8
UNITS = 40

pytestmark = [
    pytest.mark.postgres,
    pytest.mark.skipif(
        "postgresql" not in settings.DATABASES["default"]["ENGINE"], reason="needs PostgreSQL row locks"
    ),
]


def build(*, mode: str, lease_minutes: int = 15, roles: tuple[str, ...] = (Role.ANNOTATOR,)):
    campaign = make_campaign(name=f"Concurrent {uuid.uuid4().hex[:8]}", annotation_mode=mode)
    campaign.lease_minutes = lease_minutes
    campaign.save()
    for _ in range(UNITS):
        make_answer(campaign=campaign, sentences=[])
    criterion = Criterion.objects.select_related("campaign").get(campaign=campaign, name="relevance")
    units = list(Unit.objects.filter(campaign=campaign, level="answer").order_by("pk"))
    sample_units(criterion=criterion, units=units)
    users = []
    for _ in range(THREADS):
        user = make_user()
        add_member(campaign=campaign, user=user, roles=list(roles))
        users.append(user)
    return criterion, units, users


def run_threads(*, users, criterion, stage: str):
    """Every user labels at ``stage`` until the queue is empty; what they were handed and stored."""
    handed: list[tuple[int, int]] = []
    stored: list[int] = []
    refused: list[str] = []
    errors: list[BaseException] = []
    start = threading.Barrier(len(users))

    def work(user):
        try:
            start.wait()
            while (unit := next_unit(user=user, criterion=criterion, stage=stage)) is not None:
                handed.append((user.pk, unit.pk))
                key = uuid.uuid4().hex
                kwargs = {"user": user, "unit_id": unit.pk, "criterion": criterion, "stage": stage}
                try:
                    label = submit_label(**kwargs, value=unit.pk % 2, comment="revu", request_key=key)
                except WorkflowError as exc:
                    refused.append(exc.code)
                    continue
                # A double click: the same request again must give the same row.
                assert (
                    submit_label(**kwargs, value=unit.pk % 2, comment="revu", request_key=key).pk == label.pk
                )
                stored.append(label.pk)
        except BaseException as exc:  # the main thread reports it
            errors.append(exc)
        finally:
            connection.close()

    threads = [threading.Thread(target=work, args=(user,)) for user in users]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    assert not errors, errors
    return handed, stored, refused


@pytest.mark.django_db(transaction=True)
def test_review_mode_each_unit_is_handed_to_one_labeller_and_then_one_other_reviewer():
    criterion, units, users = build(mode=AnnotationMode.REVIEW, roles=(Role.ANNOTATOR, Role.REVIEWER))
    handed, stored, refused = run_threads(users=users, criterion=criterion, stage=Stage.LABEL)
    per_unit = defaultdict(set)
    for user_id, unit_id in handed:
        per_unit[unit_id].add(user_id)
    assert all(len(people) == 1 for people in per_unit.values())
    assert len(handed) == UNITS and refused == []
    assert sorted(stored) == sorted(Label.objects.filter(stage=Stage.LABEL).values_list("pk", flat=True))
    assert Counter(Label.objects.values_list("unit_id", flat=True)) == {u.pk: 1 for u in units}

    handed, stored, refused = run_threads(users=users, criterion=criterion, stage=Stage.REVIEW)
    assert len(handed) == UNITS and refused == []
    labeller = dict(Label.objects.filter(stage=Stage.LABEL).values_list("unit_id", "user_id"))
    reviewer = dict(Label.objects.filter(stage=Stage.REVIEW).values_list("unit_id", "user_id"))
    assert len(reviewer) == Label.objects.filter(stage=Stage.REVIEW).count() == UNITS
    assert all(reviewer[unit_id] != labeller[unit_id] for unit_id in reviewer)
    assert len(final_labels(criterion=criterion)) == UNITS


@pytest.mark.django_db(transaction=True)
def test_blind_mode_each_unit_gets_two_labels_from_two_people():
    criterion, units, users = build(mode=AnnotationMode.BLIND_DOUBLE)
    handed, stored, refused = run_threads(users=users, criterion=criterion, stage=Stage.LABEL)
    assert refused == [] and len(handed) == 2 * UNITS
    assert len(set(handed)) == len(handed)  # nobody got the same unit twice
    people = defaultdict(list)
    for unit_id, user_id in Label.objects.values_list("unit_id", "user_id"):
        people[unit_id].append(user_id)
    assert len(people) == UNITS
    assert all(len(ids) == 2 and len(set(ids)) == 2 for ids in people.values())
    assert sorted(stored) == sorted(Label.objects.values_list("pk", flat=True))


@pytest.mark.django_db(transaction=True)
def test_leases_expiring_at_once_still_give_one_label_per_unit():
    # Leases of zero minutes expire as soon as they are taken: everyone fights for the same units.
    criterion, units, users = build(mode=AnnotationMode.REVIEW, lease_minutes=0)
    handed, stored, refused = run_threads(users=users, criterion=criterion, stage=Stage.LABEL)
    assert set(refused) <= {"taken"}
    assert len(stored) == UNITS
    assert sorted(stored) == sorted(Label.objects.values_list("pk", flat=True))
    assert sorted(Label.objects.values_list("unit_id", flat=True)) == sorted(u.pk for u in units)
